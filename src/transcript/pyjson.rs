//! Python's JSON numbers that serde_json cannot hold, kept exactly.
//!
//! Python's `json.loads` accepts `NaN`, `Infinity` and `-Infinity`, keeps integers of any size,
//! and reads a float literal beyond f64 (`1e400`) as `inf`; ADK then measures them as Python
//! prints them (`json.dumps`: `NaN` / `Infinity` / every digit; `str()`: `nan` / `inf`;
//! pydantic's `model_dump_json`: `null` for the non-finite ones, every digit for ints).
//! serde_json refuses the first three and turns big integers into floats (`1e+23`).
//!
//! [`normalize`] is a pre-pass over the raw text, before any reader parses it: outside
//! strings it rewrites each such literal into a *tagged string* — U+FDD0 followed by the
//! literal (`"\uFDD0NaN"`, `"\uFDD0123456789012345678901234"`) — which the size functions
//! (`tokens::adk`, `tokens::count`) print the Python way ([`tagged`]). U+FDD0 is a Unicode
//! noncharacter, reserved for exactly this kind of internal use; a file that already holds it
//! (raw or as a `\ufdd0` escape, at any escaping depth) is refused, so a tag can never be a
//! string the transcript really contained. Lines are never split or joined, so parse errors
//! after the rewrite still name the right line.
//!
//! The pre-pass applies to every JSON format (Python-written exports of any of them can hold
//! these literals, and the measures are ADK's whatever the source format). Where they land:
//! - tool arguments and results (what ADK measures): kept exactly, printed the Python way;
//! - number fields the ADK reader reads (timestamps, usage) go through [`as_f64`] (a NaN
//!   timestamp is then refused by the loader's finite-time check); other readers' number
//!   helpers see a non-number (a NaN token count reads as missing);
//! - string fields: the ADK reader refuses a tag where ADK's pydantic models require a string
//!   (text, names, ids, author, invocation id), as ADK would; other readers do not check and
//!   would read it as a short text (U+FDD0 + the literal).
//!
//! JSON nested inside string fields (OpenAI / Codex `arguments`) is not rewritten: such a
//! string keeps the readers' existing fallback (kept as text when serde cannot parse it).

use std::borrow::Cow;

use serde_json::Value;

use super::ReadError;

/// The tag character (a Unicode noncharacter).
pub const TAG: char = '\u{FDD0}';
/// The tag as written in the rewritten JSON text (ASCII, so the text stays valid UTF-8 and
/// the byte offsets of the rest of the line barely move).
const TAG_ESCAPE: &str = "\\uFDD0";
/// Python 3.11's `int` string-conversion limit: `json.loads` refuses longer integers.
pub const MAX_INT_DIGITS: usize = 4300;

/// A Python-only JSON number, as a tagged string holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PyNumber<'a> {
    NaN,
    Infinity,
    NegInfinity,
    /// An integer outside i64 and u64: its literal digits (with a leading `-` if negative).
    Int(&'a str),
}

impl<'a> PyNumber<'a> {
    /// `json.dumps` text (allow_nan=True, the default).
    pub fn json(self) -> &'a str {
        match self {
            PyNumber::NaN => "NaN",
            PyNumber::Infinity => "Infinity",
            PyNumber::NegInfinity => "-Infinity",
            PyNumber::Int(d) => d,
        }
    }

    /// `repr` / `str` text.
    pub fn repr(self) -> &'a str {
        match self {
            PyNumber::NaN => "nan",
            PyNumber::Infinity => "inf",
            PyNumber::NegInfinity => "-inf",
            PyNumber::Int(d) => d,
        }
    }

    /// pydantic-core's JSON text (`ser_json_inf_nan='null'`, the genai models' default).
    pub fn pydantic(self) -> &'a str {
        match self {
            PyNumber::NaN | PyNumber::Infinity | PyNumber::NegInfinity => "null",
            PyNumber::Int(d) => d,
        }
    }

    /// The value as a float (what Python's `float(x)` gives).
    pub fn as_f64(self) -> f64 {
        match self {
            PyNumber::NaN => f64::NAN,
            PyNumber::Infinity => f64::INFINITY,
            PyNumber::NegInfinity => f64::NEG_INFINITY,
            PyNumber::Int(d) => d.parse().unwrap_or(f64::NAN),
        }
    }
}

/// The number a tagged string stands for; `None` for every other string.
pub fn tagged(s: &str) -> Option<PyNumber<'_>> {
    let lit = s.strip_prefix(TAG)?;
    match lit {
        "NaN" => Some(PyNumber::NaN),
        "Infinity" => Some(PyNumber::Infinity),
        "-Infinity" => Some(PyNumber::NegInfinity),
        _ => {
            let digits = lit.strip_prefix('-').unwrap_or(lit);
            (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
                .then_some(PyNumber::Int(lit))
        }
    }
}

/// [`tagged`] of a JSON value.
pub fn tagged_value(v: &Value) -> Option<PyNumber<'_>> {
    match v {
        Value::String(s) => tagged(s),
        _ => None,
    }
}

/// A JSON number, or a tagged one, as f64.
pub fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => tagged(s).map(PyNumber::as_f64),
        _ => None,
    }
}

/// Write `s` (serde_json's own compact JSON text of some value) with every tagged string
/// replaced by its bare `json.dumps` literal. serde writes non-ASCII raw, so a tag shows up
/// as `"` U+FDD0 literal `"`; the literals hold no quote or backslash.
pub fn untag_json_text(s: &str) -> Cow<'_, str> {
    if !s.contains(TAG) {
        return Cow::Borrowed(s);
    }
    let open = format!("\"{TAG}");
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(&open) {
        out.push_str(&rest[..i]);
        let after = &rest[i + open.len()..];
        match after.find('"') {
            Some(j) => {
                out.push_str(&after[..j]);
                rest = &after[j + 1..];
            }
            None => {
                out.push_str(&rest[i..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// An error message with every tag a parser quoted shown as the number it stands for:
/// serde's `string "\u{fdd0}NaN"` (Debug-escaped or raw) reads `number NaN`, and a bare
/// tagged literal reads as the literal. Users never see the tag.
pub fn untag_message(msg: &str) -> Cow<'_, str> {
    const ESCAPES: [&str; 4] = ["\\u{fdd0}", "\\u{FDD0}", "\\uFDD0", "\\ufdd0"];
    if !msg.contains(TAG) && !ESCAPES.iter().any(|e| msg.contains(e)) {
        return Cow::Borrowed(msg);
    }
    let mut s = msg.to_string();
    for e in ESCAPES {
        s = s.replace(e, "\u{FDD0}");
    }
    let s = s.replace(&format!("string \"{TAG}"), &format!("number \"{TAG}"));
    // `"<TAG>literal"` → `literal` (literals hold no quote); then any stray tag goes.
    let quoted = format!("\"{TAG}");
    let mut out = String::with_capacity(s.len());
    let mut rest = s.as_str();
    while let Some(i) = rest.find(&quoted) {
        out.push_str(&rest[..i]);
        let after = &rest[i + quoted.len()..];
        match after.find('"') {
            Some(j) => {
                out.push_str(&after[..j]);
                rest = &after[j + 1..];
            }
            None => {
                out.push_str(after);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out.replace(TAG, ""))
}

/// True when the bytes at `b[i..]` (just after one or more backslashes) spell `ufdd0`,
/// case-insensitively.
fn is_tag_escape(b: &[u8], i: usize) -> bool {
    b.get(i..i + 5)
        .is_some_and(|w| w[0] == b'u' && w[1..].eq_ignore_ascii_case(b"fdd0"))
}

/// Bytes of U+FDD0 in UTF-8.
const TAG_UTF8: [u8; 3] = [0xEF, 0xB7, 0x90];

fn is_value_end(c: Option<&u8>) -> bool {
    match c {
        None => true,
        Some(c) => matches!(c, b',' | b']' | b'}' | b' ' | b'\t' | b'\r' | b'\n'),
    }
}

/// Rewrite Python-only number literals outside strings into tagged strings (see the module
/// doc). Text without them comes back borrowed, unchanged. Errors: the file already holds
/// U+FDD0, or an integer longer than Python accepts.
pub fn normalize<'t>(file: &str, text: &'t str) -> Result<Cow<'t, str>, ReadError> {
    let b = text.as_bytes();
    // (start, end, literal) of each rewrite.
    let mut edits: Vec<(usize, usize, Cow<'t, str>)> = Vec::new();
    let (mut i, mut line, mut in_str) = (0usize, 1usize, false);
    let reserved = |line: usize| {
        ReadError::new(
            file,
            format!("line {line}"),
            "holds U+FDD0, the Unicode noncharacter compaction-sim reserves to mark NaN, \
             Infinity and integers beyond 64 bits; refusing rather than misreading it",
        )
    };
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            // A JSON string never holds a raw newline: resynchronise on every line (JSONL).
            line += 1;
            in_str = false;
            i += 1;
            continue;
        }
        if c == TAG_UTF8[0] && b[i..].starts_with(&TAG_UTF8) {
            return Err(reserved(line));
        }
        if c == b'\\' {
            let mut j = i;
            while j < b.len() && b[j] == b'\\' {
                j += 1;
            }
            if is_tag_escape(b, j) {
                return Err(reserved(line));
            }
        }
        if in_str {
            match c {
                b'\\' => i += 2,
                b'"' => {
                    in_str = false;
                    i += 1
                }
                _ => i += 1,
            }
            continue;
        }
        match c {
            b'"' => {
                in_str = true;
                i += 1;
            }
            b'N' | b'I' | b'-' if literal_at(b, i).is_some() && at_value_start(b, i) => {
                let lit = literal_at(b, i).unwrap_or_default();
                let end = i + lit.len();
                if is_value_end(b.get(end)) {
                    edits.push((i, end, Cow::Borrowed(lit)));
                }
                i = end;
            }
            b'-' | b'0'..=b'9' => {
                let (end, edit) = number_at(file, text, i, line)?;
                if let Some(lit) = edit {
                    edits.push((i, end, lit));
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    if edits.is_empty() {
        return Ok(Cow::Borrowed(text));
    }
    Ok(Cow::Owned(with_edits(text, edits)))
}

/// The number literal at `text[start..]` (outside a string, on line `line`): where it ends,
/// and the literal to tag when Python reads it but serde would not (a float beyond f64, an
/// integer beyond 64 bits). Only well-formed literals are rewritten; anything else is left
/// for the parser to report.
fn number_at<'t>(
    file: &str,
    text: &'t str,
    start: usize,
    line: usize,
) -> Result<(usize, Option<Cow<'t, str>>), ReadError> {
    let b = text.as_bytes();
    let mut i = start;
    if b[i] == b'-' {
        i += 1;
    }
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_digits = i - int_start;
    let mut float = false;
    while i < b.len() && matches!(b[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') {
        float = true;
        i += 1;
    }
    let lit = &text[start..i];
    let leading_zero = int_digits > 1 && b[int_start] == b'0';
    if int_digits == 0 || leading_zero || !is_value_end(b.get(i)) || !at_value_start(b, start) {
        return Ok((i, None));
    }
    if float {
        // Python reads a float beyond f64 as ±inf; serde refuses it. Only an exponent or
        // ~309 digits can get there, so most floats are not parsed.
        let may_overflow = int_digits > 300 || lit.bytes().any(|c| matches!(c, b'e' | b'E'));
        return Ok(
            match may_overflow.then(|| lit.parse::<f64>().ok()).flatten() {
                Some(f) if f.is_infinite() => {
                    let inf = if f > 0.0 { "Infinity" } else { "-Infinity" };
                    (i, Some(Cow::Borrowed(inf)))
                }
                _ => (i, None),
            },
        );
    }
    if lit.parse::<i64>().is_ok() || lit.parse::<u64>().is_ok() {
        return Ok((i, None));
    }
    if int_digits > MAX_INT_DIGITS {
        return Err(ReadError::new(
            file,
            format!("line {line}"),
            format!(
                "an integer of {int_digits} digits: Python's json refuses \
                 integers over {MAX_INT_DIGITS} digits, so ADK cannot load it"
            ),
        ));
    }
    Ok((i, Some(Cow::Borrowed(lit))))
}

/// `text` with each edit's span replaced by its literal as a tagged string.
fn with_edits(text: &str, edits: Vec<(usize, usize, Cow<'_, str>)>) -> String {
    let mut out = String::with_capacity(text.len() + edits.len() * 10);
    let mut at = 0;
    for (s, e, lit) in edits {
        out.push_str(&text[at..s]);
        out.push('"');
        out.push_str(TAG_ESCAPE);
        out.push_str(&lit);
        out.push('"');
        at = e;
    }
    out.push_str(&text[at..]);
    out
}

/// Whether a JSON value may start at `b[i]`: after `:`, `[`, `,` or at a line's start
/// (whitespace aside), so `-NaN` or `x123…` are left for the parser to refuse.
fn at_value_start(b: &[u8], i: usize) -> bool {
    let before = b[..i]
        .iter()
        .rev()
        .find(|c| !matches!(c, b' ' | b'\t' | b'\r'));
    matches!(before, None | Some(b':' | b'[' | b',' | b'\n'))
}

/// `NaN`, `Infinity` or `-Infinity` starting at `b[i]`.
fn literal_at(b: &[u8], i: usize) -> Option<&'static str> {
    let rest = b.get(i..)?;
    ["NaN", "Infinity", "-Infinity"]
        .into_iter()
        .find(|l| rest.starts_with(l.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(t: &str) -> String {
        normalize("f.json", t)
            .map(|c| c.into_owned())
            .unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn plain_json_is_borrowed_unchanged() {
        let t = r#"{"a": [1, -2, 1.5e300, 18446744073709551615, -9223372036854775808, "NaN Infinity 123456789012345678901234"], "b": true}"#;
        assert!(matches!(normalize("f", t), Ok(Cow::Borrowed(_))));
    }

    #[test]
    fn literals_outside_strings_become_tags() {
        let t = "{\"x\": NaN, \"y\": [Infinity,-Infinity], \"s\": \"NaN\",\n \"z\": 18446744073709551616, \"w\": -9223372036854775809, \"f\": 1e400, \"g\": -2E999}";
        let n = norm(t);
        assert_eq!(n.lines().count(), 2, "lines are kept");
        let v: Value = serde_json::from_str(&n).expect("valid JSON after the rewrite");
        assert_eq!(tagged_value(&v["x"]), Some(PyNumber::NaN));
        assert_eq!(tagged_value(&v["y"][0]), Some(PyNumber::Infinity));
        assert_eq!(tagged_value(&v["y"][1]), Some(PyNumber::NegInfinity));
        assert_eq!(v["s"], Value::String("NaN".into()));
        assert_eq!(
            tagged_value(&v["z"]),
            Some(PyNumber::Int("18446744073709551616"))
        );
        assert_eq!(
            tagged_value(&v["w"]),
            Some(PyNumber::Int("-9223372036854775809"))
        );
        assert_eq!(tagged_value(&v["f"]), Some(PyNumber::Infinity));
        assert_eq!(tagged_value(&v["g"]), Some(PyNumber::NegInfinity));
        // 401 digits and no exponent: still beyond f64 (Python: inf / -inf)
        let long = format!("[1{0}.5, -1{0}.0, 1.5e308]", "0".repeat(400));
        let v: Value = serde_json::from_str(&norm(&long)).expect("valid");
        assert_eq!(tagged_value(&v[0]), Some(PyNumber::Infinity));
        assert_eq!(tagged_value(&v[1]), Some(PyNumber::NegInfinity));
        assert_eq!(v[2].as_f64(), Some(1.5e308));
    }

    #[test]
    fn escaped_quotes_in_strings_do_not_confuse_the_scan() {
        let t = r#"{"s": "a \"NaN\" \\", "n": NaN}"#;
        let v: Value = serde_json::from_str(&norm(t)).expect("valid");
        assert_eq!(v["s"], Value::String("a \"NaN\" \\".into()));
        assert_eq!(tagged_value(&v["n"]), Some(PyNumber::NaN));
    }

    #[test]
    fn malformed_literals_are_left_for_the_parser() {
        for t in [
            "{\"x\": NaNa}",
            "{\"x\": Nan}",
            "{\"x\": -NaN}",
            "{\"x\": 0123456789012345678901}",
            "{\"x\": 123456789012345678901x}",
        ] {
            let n = norm(t);
            assert!(!n.contains(TAG_ESCAPE), "{t} -> {n}");
            assert!(serde_json::from_str::<Value>(&n).is_err(), "{t}");
        }
    }

    #[test]
    fn the_tag_character_in_input_is_refused() {
        for t in [
            "{\"x\": 1,\n\"s\": \"\u{FDD0}NaN\"}",
            "{\"x\": 1,\n\"s\": \"\\uFDD0NaN\"}",
            "{\"x\": 1,\n\"s\": \"\\ufdd0\"}",
            // nested JSON in a string: an escaped escape
            "{\"x\": 1,\n\"s\": \"{\\\"a\\\": \\\"\\\\uFdD0x\\\"}\"}",
        ] {
            let e = normalize("f.json", t).err().map(|e| e.to_string());
            assert!(
                e.as_deref()
                    .is_some_and(|e| e.starts_with("f.json: line 2: holds U+FDD0")),
                "{t}: {e:?}"
            );
        }
        // `fdd0` without the escape is ordinary text (uuids hold it).
        assert!(normalize("f", "{\"id\": \"3afdd0b6\"}").is_ok());
    }

    #[test]
    fn integers_python_refuses_are_refused() {
        let t = format!("{{\"x\":\n{}}}", "7".repeat(MAX_INT_DIGITS + 1));
        let e = normalize("f.json", &t).err().map(|e| e.to_string());
        assert!(
            e.as_deref()
                .is_some_and(|e| e.contains("line 2") && e.contains("4301 digits")),
            "{e:?}"
        );
        let ok = format!("{{\"x\": {}}}", "7".repeat(MAX_INT_DIGITS));
        assert!(normalize("f", &ok).is_ok());
    }

    #[test]
    fn printing_follows_python() {
        let n = PyNumber::Int("-36893488147419103232");
        assert_eq!(
            (n.json(), n.repr(), n.pydantic()),
            (n.json(), n.json(), n.json())
        );
        assert_eq!(
            (
                PyNumber::NaN.json(),
                PyNumber::NaN.repr(),
                PyNumber::NaN.pydantic()
            ),
            ("NaN", "nan", "null")
        );
        assert_eq!(PyNumber::NegInfinity.repr(), "-inf");
        assert_eq!(PyNumber::Infinity.json(), "Infinity");
        assert_eq!(tagged("\u{FDD0}12x"), None);
        assert_eq!(tagged("NaN"), None);
        assert_eq!(tagged("\u{FDD0}-"), None);
    }

    #[test]
    fn error_messages_never_show_the_tag() {
        let v: Value = serde_json::from_str(&norm("{\"x\": NaN}")).unwrap();
        let e = serde_json::from_value::<u64>(v["x"].clone())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains('\u{FDD0}') || e.to_lowercase().contains("fdd0"),
            "{e}"
        );
        let shown = untag_message(&e);
        assert!(
            !shown.contains(TAG) && !shown.to_lowercase().contains("fdd0"),
            "{shown}"
        );
        assert!(shown.contains("number NaN"), "{shown}");
        assert_eq!(
            untag_message("found \"\u{FDD0}123456789012345678901\" here"),
            "found 123456789012345678901 here"
        );
        assert!(matches!(untag_message("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn untagging_serde_text() {
        let v =
            serde_json::json!({"a": "\u{FDD0}NaN", "b": ["\u{FDD0}-123456789012345678901", "x"]});
        assert_eq!(
            untag_json_text(&v.to_string()),
            r#"{"a":NaN,"b":[-123456789012345678901,"x"]}"#
        );
        assert!(matches!(untag_json_text("{\"a\":1}"), Cow::Borrowed(_)));
    }
}
