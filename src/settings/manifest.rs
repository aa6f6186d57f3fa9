//! `Compaction(...)`: the manifest's fields, their validation and its words
//! (shared/spec/platform-compaction-guide.txt; ADK's `EventsCompactionConfig`, adk-compaction.md §2).

use serde::{Deserialize, Serialize};
use std::fmt;

use super::number::python_int;

/// One compaction setting as the platform manifest spells it. The pairs map onto ADK's
/// `token_threshold`/`event_retention_size` and `compaction_interval`/`overlap_size`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Compaction {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_recent_events: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_invocations: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap: Option<u64>,
    /// Summarizer reference as written (e.g. `.summarizers.terse`); `None` = the agent's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarizer: Option<String>,
}

/// A refused setting: which field, and why (the guide's words).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The field at fault (`after_tokens`, ..., or `compaction` for the whole block).
    pub field: String,
    pub message: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for Refusal {}

/// The guide's words for half of the size pair.
pub const HALF_TOKENS: &str =
    "`after_tokens` and `keep_recent_events` go together: the first says when to compact, \
the second how much of the recent conversation to leave alone. Set both, or neither.";
/// Its twin for the turns pair.
pub const HALF_INVOCATIONS: &str =
    "`after_invocations` and `overlap` go together: the first says when to compact, \
the second how many earlier turns each summary re-includes. Set both, or neither.";
/// The guide's words for a pair written half, by the field written (platform guide, "Both, and
/// half of one").
pub fn half_pair(written: &str) -> &'static str {
    match written {
        "after_tokens" | "keep_recent_events" => HALF_TOKENS,
        _ => HALF_INVOCATIONS,
    }
}

/// A `Compaction()` with no trigger.
pub const NO_TRIGGER: &str = "a Compaction() with no trigger at all would never compact while reading as though it \
were working. Set `after_tokens` with `keep_recent_events`, `after_invocations` with `overlap`, or both.";
/// The guide's reason for refusing compaction on a workflow.
pub const WORKFLOW_REFUSAL: &str = "A WorkflowManifest has no compaction field, and declaring one is refused as an \
unknown field. ADK builds its default summarizer from the root agent's model and raises when the root is not an \
LlmAgent — which a graph never is — and it raises after the run has answered, so every run past the threshold \
would be marked failed having worked.";

/// The fields a `Compaction(...)` accepts.
pub const FIELDS: [&str; 5] = [
    "after_tokens",
    "keep_recent_events",
    "after_invocations",
    "overlap",
    "summarizer",
];

/// A `Compaction(...)` as written, before validation (integers may be negative or missing).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Written {
    pub after_tokens: Option<i64>,
    pub keep_recent_events: Option<i64>,
    pub after_invocations: Option<i64>,
    pub overlap: Option<i64>,
    pub summarizer: Option<String>,
    /// Keyword arguments that are not fields, in order.
    pub unknown: Vec<String>,
}

fn refuse(field: &str, message: impl Into<String>) -> Refusal {
    Refusal {
        field: field.to_string(),
        message: message.into(),
    }
}

impl Written {
    /// Validate in the manifest's order: unknown fields, bounds (each field), half pairs
    /// (size pair first, as ADK's validator), then "no trigger".
    pub fn validate(&self) -> Result<Compaction, Refusal> {
        if let Some(u) = self.unknown.first() {
            return Err(refuse(
                u,
                format!(
                    "`{u}` is not a field of Compaction (it accepts {}).",
                    FIELDS.join(", ")
                ),
            ));
        }
        let positive = |name: &str, v: Option<i64>| -> Result<Option<u64>, Refusal> {
            match v {
                Some(x) if x <= 0 => Err(refuse(
                    name,
                    format!("`{name}` must be greater than 0 (got {x})."),
                )),
                Some(x) => Ok(Some(x as u64)),
                None => Ok(None),
            }
        };
        let non_negative = |name: &str, v: Option<i64>| -> Result<Option<u64>, Refusal> {
            match v {
                Some(x) if x < 0 => Err(refuse(
                    name,
                    format!("`{name}` must be 0 or more (got {x})."),
                )),
                Some(x) => Ok(Some(x as u64)),
                None => Ok(None),
            }
        };
        let c = Compaction {
            after_tokens: positive("after_tokens", self.after_tokens)?,
            keep_recent_events: non_negative("keep_recent_events", self.keep_recent_events)?,
            after_invocations: positive("after_invocations", self.after_invocations)?,
            overlap: non_negative("overlap", self.overlap)?,
            summarizer: self.summarizer.clone().filter(|s| !s.is_empty()),
        };
        c.validate()?;
        Ok(c)
    }
}

impl Compaction {
    /// The pair rules (bounds hold by type once built from [`Written`]).
    pub fn validate(&self) -> Result<(), Refusal> {
        match (self.after_tokens, self.keep_recent_events) {
            (Some(0), _) => {
                return Err(refuse(
                    "after_tokens",
                    "`after_tokens` must be greater than 0 (got 0).",
                ))
            }
            (Some(_), None) => return Err(refuse("after_tokens", HALF_TOKENS)),
            (None, Some(_)) => return Err(refuse("keep_recent_events", HALF_TOKENS)),
            _ => {}
        }
        match (self.after_invocations, self.overlap) {
            (Some(0), _) => {
                return Err(refuse(
                    "after_invocations",
                    "`after_invocations` must be greater than 0 (got 0).",
                ))
            }
            (Some(_), None) => return Err(refuse("after_invocations", HALF_INVOCATIONS)),
            (None, Some(_)) => return Err(refuse("overlap", HALF_INVOCATIONS)),
            _ => {}
        }
        if self.after_tokens.is_none() && self.after_invocations.is_none() {
            return Err(refuse("compaction", NO_TRIGGER));
        }
        Ok(())
    }

    /// The setting as a manifest would write it, digits grouped with `_`.
    pub fn normalised(&self) -> String {
        let mut args = Vec::new();
        let mut push = |k: &str, v: Option<u64>| {
            if let Some(v) = v {
                args.push(format!("{k}={}", py_int(v)));
            }
        };
        push("after_tokens", self.after_tokens);
        push("keep_recent_events", self.keep_recent_events);
        push("after_invocations", self.after_invocations);
        push("overlap", self.overlap);
        if let Some(s) = &self.summarizer {
            args.push(format!("summarizer={s:?}"));
        }
        format!("Compaction({})", args.join(", "))
    }

    /// ADK's spelling of the same setting.
    pub fn adk(&self) -> String {
        let mut args = Vec::new();
        if let (Some(t), Some(r)) = (self.after_tokens, self.keep_recent_events) {
            args.push(format!("token_threshold={t}, event_retention_size={r}"));
        }
        if let (Some(i), Some(o)) = (self.after_invocations, self.overlap) {
            args.push(format!("compaction_interval={i}, overlap_size={o}"));
        }
        format!("EventsCompactionConfig({})", args.join(", "))
    }
}

/// Python integer literal with `_` thousands separators, as the guide writes them (four
/// digits or fewer stay plain).
pub fn py_int(v: u64) -> String {
    let s = v.to_string();
    if s.len() <= 4 {
        return s;
    }
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push('_');
        }
        out.push(c);
    }
    out
}

/// Errors reading a setting (not refusals: the text is not a setting at all).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

/// Skip whitespace and `#` comments.
fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
        } else if b[i] == b'#' {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else {
            break;
        }
    }
    i
}

/// Parse a Python string literal at `i` (single or double quotes, simple escapes).
fn parse_str(t: &str, i: usize) -> Result<(String, usize), ParseError> {
    let b = t.as_bytes();
    let q = b[i];
    let mut out = String::new();
    let mut j = i + 1;
    let chars: Vec<(usize, char)> = t[j..].char_indices().map(|(k, c)| (k + j, c)).collect();
    let mut k = 0;
    while k < chars.len() {
        let (pos, c) = chars[k];
        if c == q as char {
            return Ok((out, pos + 1));
        }
        if c == '\\' && k + 1 < chars.len() {
            k += 1;
            out.push(match chars[k].1 {
                'n' => '\n',
                't' => '\t',
                o => o,
            });
        } else if c == '\n' {
            break;
        } else {
            out.push(c);
        }
        k += 1;
        j = pos;
    }
    let _ = j;
    Err(ParseError(format!(
        "unterminated string starting at offset {i}"
    )))
}

/// Parse `Compaction(k=v, ...)` (optionally prefixed by `compaction=`): Python keyword
/// arguments, integers with `_` digit separators, strings, `None`.
pub fn parse(text: &str) -> Result<Written, ParseError> {
    let mut r = Reader::open(text)?;
    let mut w = Written::default();
    let mut seen: Vec<&str> = Vec::new();
    while let Some(key) = r.key()? {
        if seen.contains(&key) {
            return Err(ParseError(format!("`{key}` is given twice")));
        }
        seen.push(key);
        let v = r.value(key)?;
        w.assign(key, v)?;
        r.separator(key)?;
    }
    let rest = r.t[r.i..].trim();
    if !rest.is_empty() {
        return Err(ParseError(format!(
            "unexpected text after Compaction(...): `{rest}`"
        )));
    }
    Ok(w)
}

/// One keyword argument's value as written.
enum Value {
    Int(i64),
    Str(String),
    None,
}

/// A cursor over the text after `Compaction`.
struct Reader<'a> {
    t: &'a str,
    i: usize,
}

impl<'a> Reader<'a> {
    /// Past an optional `compaction=` and `Compaction` to just after its `(`.
    fn open(text: &'a str) -> Result<Reader<'a>, ParseError> {
        let t = text.trim();
        let t = t
            .strip_prefix("compaction")
            .map(|r| r.trim_start())
            .and_then(|r| r.strip_prefix('='))
            .map_or(t, str::trim);
        let t = t.split_once("Compaction").filter(|(pre, _)| pre.is_empty() || pre.ends_with('.')).map(|(_, r)| r).ok_or_else(|| {
            ParseError("expected `Compaction(...)`, e.g. Compaction(after_tokens=80_000, keep_recent_events=20)".into())
        })?;
        let i = skip_ws(t.as_bytes(), 0);
        if t.as_bytes().get(i) != Some(&b'(') {
            return Err(ParseError("expected `(` after `Compaction`".into()));
        }
        Ok(Reader { t, i: i + 1 })
    }

    fn peek(&self) -> Option<u8> {
        self.t.as_bytes().get(self.i).copied()
    }

    fn skip_ws(&mut self) {
        self.i = skip_ws(self.t.as_bytes(), self.i);
    }

    /// The next keyword and its `=`; `None` at the closing `)`.
    fn key(&mut self) -> Result<Option<&'a str>, ParseError> {
        self.skip_ws();
        match self.peek() {
            None => {
                return Err(ParseError(
                    "missing `)` at the end of Compaction(...)".into(),
                ))
            }
            Some(b')') => {
                self.i += 1;
                return Ok(None);
            }
            _ => {}
        }
        let start = self.i;
        let b = self.t.as_bytes();
        while self.i < b.len() && (b[self.i].is_ascii_alphanumeric() || b[self.i] == b'_') {
            self.i += 1;
        }
        let key = &self.t[start..self.i];
        if key.is_empty() || key.as_bytes()[0].is_ascii_digit() {
            return Err(ParseError(format!(
                "expected `name=value` at offset {start}: Compaction takes keyword arguments only"
            )));
        }
        self.skip_ws();
        if self.peek() != Some(b'=') {
            return Err(ParseError(format!(
                "expected `=` after `{key}`: Compaction takes keyword arguments only"
            )));
        }
        self.i += 1;
        self.skip_ws();
        Ok(Some(key))
    }

    /// The value of `key`: a string, a whole number or `None`.
    fn value(&mut self, key: &str) -> Result<Value, ParseError> {
        let (t, i) = (self.t, self.i);
        match self.peek() {
            Some(b'"') | Some(b'\'') => {
                let (s, j) = parse_str(t, i)?;
                self.i = j;
                Ok(Value::Str(s))
            }
            Some(c) if c.is_ascii_digit() || c == b'-' || c == b'+' => self.int(key),
            _ if t[i..].starts_with("None") => {
                self.i += 4;
                Ok(Value::None)
            }
            _ => {
                let end = t[i..].find([',', ')']).map_or(t.len(), |k| k + i);
                Err(ParseError(format!(
                    "`{key}={}`: expected a whole number or a string",
                    t[i..end].trim()
                )))
            }
        }
    }

    /// A signed integer as Python writes one ([`python_int`]): the sign, blanks after it,
    /// then the literal's letters, digits and `_`.
    fn int(&mut self, key: &str) -> Result<Value, ParseError> {
        let b = self.t.as_bytes();
        let s0 = self.i;
        if matches!(b[self.i], b'-' | b'+') {
            self.i += 1;
            while self.i < b.len() && matches!(b[self.i], b' ' | b'\t') {
                self.i += 1;
            }
        }
        while self.i < b.len() && (b[self.i].is_ascii_alphanumeric() || b[self.i] == b'_') {
            self.i += 1;
        }
        let raw = &self.t[s0..self.i];
        python_int(raw)
            .map(Value::Int)
            .map_err(|e| ParseError(format!("`{key}={raw}`: {e}")))
    }

    /// The `,` after a value, or the `)` that ends the call (left for [`Reader::key`]).
    fn separator(&mut self, key: &str) -> Result<(), ParseError> {
        self.skip_ws();
        match self.peek() {
            Some(b',') => self.i += 1,
            Some(b')') => {}
            _ => return Err(ParseError(format!("expected `,` or `)` after `{key}=...`"))),
        }
        Ok(())
    }
}

impl Written {
    /// Store `key`'s value (a field that is not one is kept as unknown, refused later).
    fn assign(&mut self, key: &str, v: Value) -> Result<(), ParseError> {
        let int = |v: Value| -> Result<Option<i64>, ParseError> {
            match v {
                Value::Int(x) => Ok(Some(x)),
                Value::None => Ok(None),
                Value::Str(s) => Err(ParseError(format!(
                    "`{key}={s:?}`: expected a whole number"
                ))),
            }
        };
        match key {
            "after_tokens" => self.after_tokens = int(v)?,
            "keep_recent_events" => self.keep_recent_events = int(v)?,
            "after_invocations" => self.after_invocations = int(v)?,
            "overlap" => self.overlap = int(v)?,
            "summarizer" => {
                self.summarizer = match v {
                    Value::Str(s) => Some(s),
                    Value::None => None,
                    Value::Int(_) => {
                        return Err(ParseError(
                            "`summarizer` must be a dotted path string".into(),
                        ))
                    }
                }
            }
            other => self.unknown.push(other.to_string()),
        }
        Ok(())
    }
}

/// Balanced `(...)` span starting at byte `open` (which holds `(`), skipping strings/comments.
fn balanced(t: &str, open: usize) -> Option<usize> {
    let b = t.as_bytes();
    let mut depth = 0i32;
    let mut i = open;
    while i < b.len() {
        match b[i] {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'"' | b'\'' => {
                let q = b[i];
                i += 1;
                while i < b.len() && b[i] != q {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// What a manifest file says about compaction.
#[derive(Debug, Clone, PartialEq)]
pub enum ManifestCompaction {
    /// No `compaction=` in the file.
    Absent,
    /// `compaction=` inside a `WorkflowManifest(...)`.
    OnWorkflow,
    /// The `Compaction(...)` text found.
    Found(String),
}

/// Find `compaction=Compaction(...)` in a manifest `.py` file's text.
pub fn find_in_manifest(text: &str) -> ManifestCompaction {
    let b = text.as_bytes();
    let mut search = 0;
    while let Some(k) = text[search..].find("compaction") {
        let pos = search + k;
        search = pos + 10;
        // must be a keyword argument `compaction=` (not part of another identifier)
        if pos > 0
            && (b[pos - 1].is_ascii_alphanumeric() || b[pos - 1] == b'_' || b[pos - 1] == b'.')
        {
            continue;
        }
        let after = skip_ws(b, pos + 10);
        if b.get(after) != Some(&b'=') || b.get(after + 1) == Some(&b'=') {
            continue;
        }
        let vstart = skip_ws(b, after + 1);
        let Some(open) = text[vstart..].find('(').map(|o| o + vstart) else {
            continue;
        };
        let Some(close) = balanced(text, open) else {
            continue;
        };
        // which manifest constructor encloses it?
        for (kind, name) in [(true, "WorkflowManifest("), (false, "AgentManifest(")] {
            let mut s2 = 0;
            while let Some(m) = text[s2..pos].find(name) {
                let mpos = s2 + m;
                s2 = mpos + name.len();
                let o = mpos + name.len() - 1;
                if balanced(text, o).is_some_and(|end| end > pos) && kind {
                    return ManifestCompaction::OnWorkflow;
                }
            }
        }
        return ManifestCompaction::Found(text[vstart..close].to_string());
    }
    ManifestCompaction::Absent
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(s: &str) -> Result<Compaction, Refusal> {
        parse(s).expect("parses").validate()
    }

    #[test]
    fn parses_the_guide_examples() {
        let c = check("Compaction(after_tokens=80_000, keep_recent_events=20)").unwrap();
        assert_eq!(c.after_tokens, Some(80_000));
        assert_eq!(c.keep_recent_events, Some(20));
        assert_eq!(
            c.normalised(),
            "Compaction(after_tokens=80_000, keep_recent_events=20)"
        );
        let c = check("Compaction(after_tokens=80_000, keep_recent_events=20,\n   summarizer=\".summarizers.terse\")").unwrap();
        assert_eq!(c.summarizer.as_deref(), Some(".summarizers.terse"));
        let c = check("compaction=Compaction(after_invocations=20, overlap=0,)").unwrap();
        assert_eq!((c.after_invocations, c.overlap), (Some(20), Some(0)));
    }

    #[test]
    fn refusals_name_the_written_field() {
        let r = check("Compaction(after_tokens=1000)").unwrap_err();
        assert_eq!(
            (r.field.as_str(), r.message.as_str()),
            ("after_tokens", HALF_TOKENS)
        );
        let r = check("Compaction(keep_recent_events=2)").unwrap_err();
        assert_eq!(r.field, "keep_recent_events");
        let r = check("Compaction(overlap=1)").unwrap_err();
        assert_eq!(
            (r.field.as_str(), r.message.as_str()),
            ("overlap", HALF_INVOCATIONS)
        );
        assert_eq!(check("Compaction()").unwrap_err().message, NO_TRIGGER);
        let r = check("Compaction(after_invocations=0, overlap=1)").unwrap_err();
        assert_eq!(r.field, "after_invocations");
        assert!(r.message.contains("greater than 0"));
        let r = check("Compaction(after_tokens=10, keep_recent_events=-1)").unwrap_err();
        assert_eq!(r.field, "keep_recent_events");
        assert!(r.message.contains("0 or more"));
        assert_eq!(
            check("Compaction(after_invocations=2, overlap=1, bogus=1)")
                .unwrap_err()
                .field,
            "bogus"
        );
        assert!(parse("Compaction(1000, 2)").is_err());
        assert!(parse("Compaction(after_tokens=8__0)").is_err());
    }

    #[test]
    fn manifest_search() {
        let agent = "MANIFEST = AgentManifest(\n  name='x',\n  compaction=Compaction(after_tokens=80_000, keep_recent_events=20),\n)\n";
        assert_eq!(
            find_in_manifest(agent),
            ManifestCompaction::Found(
                "Compaction(after_tokens=80_000, keep_recent_events=20)".into()
            )
        );
        let wf =
            "M = WorkflowManifest(graph=g, compaction=Compaction(after_invocations=2, overlap=1))";
        assert_eq!(find_in_manifest(wf), ManifestCompaction::OnWorkflow);
        assert_eq!(
            find_in_manifest("M = AgentManifest(name='x')"),
            ManifestCompaction::Absent
        );
    }
}
