//! Counting what the model sees of each event, once per distinct content, in parallel.
//!
//! What is counted per part (the text the model reads):
//! - text and thought: the text;
//! - tool call: the tool name + the JSON of its args (a string value is counted as the string
//!   itself, since that is what the model wrote; objects as compact JSON);
//! - tool response: the tool name + the JSON of the response (same rule for strings);
//! - attachment: its text when recorded, else `size_bytes / 4` tokens (no text to count; a
//!   byte per 4 is the usual rule of thumb for English-like content).
//!
//! Each piece is tokenized on its own and the counts are summed, so an event's size is the sum
//! of its parts' sizes (API messages carry names and arguments as separate fields too).
//! `adk-chars` counts ADK's characters instead (see [`adk_chars_of_parts`]) and returns
//! `floor(chars / 4)` per event.

use super::cache::{CacheOpts, CountCache};
use crate::transcript::{Part, Session};
use rayon::prelude::*;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

/// Which counter sizes the events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub enum Tokenizer {
    /// tiktoken `o200k_base` (GPT-4o, GPT-5, Codex models): the default.
    #[default]
    O200k,
    /// tiktoken `cl100k_base` (GPT-4, GPT-3.5).
    Cl100k,
    /// ADK's own estimate: floor(characters / 4) with ADK's character rules.
    AdkChars,
}

impl Tokenizer {
    pub const ALL: [Tokenizer; 3] = [Tokenizer::O200k, Tokenizer::Cl100k, Tokenizer::AdkChars];

    /// The name used on the command line and in cache file names.
    pub fn name(self) -> &'static str {
        match self {
            Tokenizer::O200k => "o200k",
            Tokenizer::Cl100k => "cl100k",
            Tokenizer::AdkChars => "adk-chars",
        }
    }
}

impl fmt::Display for Tokenizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Tokenizer {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Tokenizer::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| format!("unknown tokenizer `{s}` (expected o200k, cl100k or adk-chars)"))
    }
}

/// How many events were tokenized in this run versus served from the on-disk cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CountStats {
    /// Events counted (all sessions).
    pub events: u64,
    /// Distinct event contents actually tokenized in this run (cache misses, deduplicated).
    pub tokenized: u64,
    /// Events whose count came from the on-disk cache.
    pub cached: u64,
}

/// Counts `text` with `tok` (summary texts, summarizer prompts). Not cached: callers count
/// short, generated texts.
pub fn count_text(tok: Tokenizer, text: &str) -> u32 {
    match tok {
        Tokenizer::AdkChars => saturate(text.chars().count() / 4),
        Tokenizer::O200k => bpe_count(tiktoken_rs::o200k_base_singleton(), text),
        Tokenizer::Cl100k => bpe_count(tiktoken_rs::cl100k_base_singleton(), text),
    }
}

/// Per session, per event token counts (`result[s][e]` for `sessions[s].events[e]`).
pub fn count_sessions(
    sessions: &[Session],
    tok: Tokenizer,
    cache: &CacheOpts,
) -> anyhow::Result<Vec<Vec<u32>>> {
    Ok(count_sessions_with_stats(sessions, tok, cache)?.0)
}

/// [`count_sessions`], plus how many events were tokenized versus read from the cache.
pub fn count_sessions_with_stats(
    sessions: &[Session],
    tok: Tokenizer,
    cache: &CacheOpts,
) -> anyhow::Result<(Vec<Vec<u32>>, CountStats)> {
    // One flat list of (session, event) so rayon balances long and short sessions alike.
    let flat: Vec<(usize, usize)> = sessions
        .iter()
        .enumerate()
        .flat_map(|(s, sess)| (0..sess.events.len()).map(move |e| (s, e)))
        .collect();
    let keys: Vec<u64> = flat
        .par_iter()
        .map(|&(s, e)| content_key(&sessions[s].events[e].parts))
        .collect();

    let mut disk = CountCache::load(cache, tok);
    // Distinct contents not in the cache: tokenize each once.
    let mut todo: Vec<usize> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut cached = 0u64;
    for (i, k) in keys.iter().enumerate() {
        if disk.get(*k).is_some() {
            cached += 1;
        } else if seen.insert(*k) {
            todo.push(i);
        }
    }
    let fresh: Vec<(u64, u32)> = todo
        .par_iter()
        .map(|&i| {
            let (s, e) = flat[i];
            (keys[i], count_parts(tok, &sessions[s].events[e].parts))
        })
        .collect();
    let tokenized = fresh.len() as u64;
    for (k, n) in &fresh {
        disk.insert(*k, *n);
    }
    if !fresh.is_empty() {
        disk.save();
    }

    let mut out: Vec<Vec<u32>> = sessions
        .iter()
        .map(|s| Vec::with_capacity(s.events.len()))
        .collect();
    for (i, &(s, _)) in flat.iter().enumerate() {
        // Every key is either cached or was just inserted.
        out[s].push(disk.get(keys[i]).unwrap_or(0));
    }
    let stats = CountStats {
        events: flat.len() as u64,
        tokenized,
        cached,
    };
    Ok((out, stats))
}

/// One thing the model reads: a string to tokenize, or a size already known in tokens.
enum Piece<'a> {
    Text(Cow<'a, str>),
    Tokens(u64),
}

/// Bumped whenever [`pieces`] changes what is counted, so stale cache entries never match.
const SCHEME: &[u8] = b"compaction-sim pieces v1";

fn json_text(v: &Value) -> Option<Cow<'_, str>> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(Cow::Borrowed(s.as_str())),
        other => Some(Cow::Owned(other.to_string())),
    }
}

fn pieces(parts: &[Part]) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    for p in parts {
        match p {
            Part::Text { text } | Part::Thought { text } => {
                out.push(Piece::Text(Cow::Borrowed(text)))
            }
            Part::ToolCall { name, args, .. } => {
                out.push(Piece::Text(Cow::Borrowed(name)));
                if let Some(t) = json_text(args) {
                    out.push(Piece::Text(t));
                }
            }
            Part::ToolResponse { name, response, .. } => {
                out.push(Piece::Text(Cow::Borrowed(name)));
                if let Some(t) = json_text(response) {
                    out.push(Piece::Text(t));
                }
            }
            Part::Attachment { text: Some(t), .. } => out.push(Piece::Text(Cow::Borrowed(t))),
            Part::Attachment {
                text: None,
                size_bytes,
                ..
            } => out.push(Piece::Tokens(size_bytes.unwrap_or(0) / 4)),
        }
    }
    out
}

/// The cache key of an event: xxh3 of exactly what is counted (so two events with the same
/// content share one entry, and a change of counting rules changes every key).
fn content_key(parts: &[Part]) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(SCHEME);
    for p in pieces(parts) {
        match p {
            Piece::Text(t) => {
                h.update(b"T");
                h.update(&(t.len() as u64).to_le_bytes());
                h.update(t.as_bytes());
            }
            Piece::Tokens(n) => {
                h.update(b"N");
                h.update(&n.to_le_bytes());
            }
        }
    }
    // ADK's rules also depend on which parts carry names versus text, and on whether a
    // payload was a JSON string or the same text as structured JSON: hash the kinds too.
    let kind = |v: &Value| -> &'static [u8] {
        match v {
            Value::String(_) => b"s",
            Value::Null => b"n",
            _ => b"j",
        }
    };
    for p in parts {
        match p {
            Part::Text { .. } => h.update(b"t"),
            Part::Thought { .. } => h.update(b"h"),
            Part::ToolCall { args, .. } => {
                h.update(b"c");
                h.update(kind(args));
            }
            Part::ToolResponse { response, .. } => {
                h.update(b"r");
                h.update(kind(response));
            }
            Part::Attachment { .. } => h.update(b"a"),
        }
    }
    h.digest()
}

/// Counts one event's parts (no cache).
pub fn count_parts(tok: Tokenizer, parts: &[Part]) -> u32 {
    if tok == Tokenizer::AdkChars {
        return saturate((adk_chars_of_parts(parts) / 4) as usize);
    }
    let mut n: u64 = 0;
    for p in pieces(parts) {
        n += match p {
            Piece::Text(t) => count_text(tok, &t) as u64,
            Piece::Tokens(k) => k,
        };
    }
    saturate(n.min(u32::MAX as u64) as usize)
}

/// ADK's `_count_chars_in_content` over one event's parts (adk-compaction.md §5): text
/// length, plus call name and `len(json.dumps(args))`, plus response name and
/// `len(json.dumps(response))`, in code points, with Python's default `json.dumps` (`", "`/`": "` separators, ASCII escaping).
/// Empty args / responses are skipped as ADK does (`if part.function_call.args:`).
/// Attachments count their text when recorded (ADK sends it as a text part) and nothing
/// otherwise (inline data has no text).
pub fn adk_chars_of_parts(parts: &[Part]) -> u64 {
    let mut n: u64 = 0;
    for p in parts {
        match p {
            Part::Text { text } | Part::Thought { text } => n += text.chars().count() as u64,
            Part::ToolCall { name, args, .. } => {
                n += name.chars().count() as u64;
                if python_truthy(args) {
                    n += python_json_dumps_len(args) as u64;
                }
            }
            Part::ToolResponse { name, response, .. } => {
                n += name.chars().count() as u64;
                if python_truthy(response) {
                    n += python_json_dumps_len(response) as u64;
                }
            }
            Part::Attachment { text, .. } => {
                n += text
                    .as_deref()
                    .map(|t| t.chars().count() as u64)
                    .unwrap_or(0)
            }
        }
    }
    n
}

/// Python truthiness of a JSON value (`if args:`).
fn python_truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().map(|f| f != 0.0).unwrap_or(true),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// `len(json.dumps(v))` with Python's defaults. With `ensure_ascii=True` the output is ASCII,
/// so its length in code points equals its length in bytes.
pub fn python_json_dumps_len(v: &Value) -> usize {
    match v {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => python_number_len(n),
        Value::String(s) => python_str_len(s),
        Value::Array(a) => {
            if a.is_empty() {
                2
            } else {
                2 + a.iter().map(python_json_dumps_len).sum::<usize>() + 2 * (a.len() - 1)
            }
        }
        Value::Object(o) => {
            if o.is_empty() {
                2
            } else {
                2 + o
                    .iter()
                    .map(|(k, v)| python_str_len(k) + 2 + python_json_dumps_len(v))
                    .sum::<usize>()
                    + 2 * (o.len() - 1)
            }
        }
    }
}

/// Length of a JSON string literal as Python writes it with `ensure_ascii=True`.
fn python_str_len(s: &str) -> usize {
    let mut n = 2;
    for c in s.chars() {
        n += match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{08}' | '\u{0C}' => 2,
            c if (c as u32) < 0x20 => 6,
            c if (c as u32) < 0x7f => 1,
            // DEL and everything above are escaped; astral chars as a surrogate pair.
            c if (c as u32) > 0xFFFF => 12,
            _ => 6,
        };
    }
    n
}

/// Python's `repr` of the number: integers as is; floats with Python's shortest repr
/// (`1e+16`, `1.5`, `100.0`).
fn python_number_len(n: &serde_json::Number) -> usize {
    if n.is_i64() || n.is_u64() {
        return n.to_string().len();
    }
    let f = n.as_f64().unwrap_or(0.0);
    python_float_repr(f).len()
}

/// Python `float.__repr__`: shortest round-trip digits; scientific when exp < -4 or >= 16.
pub fn python_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    // `{:e}` gives the shortest round-trip digits, e.g. `1.5e0`, `1e16`.
    let e = format!("{f:e}");
    let (mant, exp) = match e.split_once('e') {
        Some((m, x)) => (m.to_string(), x.parse::<i32>().unwrap_or(0)),
        None => return e,
    };
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = if neg { "-" } else { "" };
    if !(-4..16).contains(&exp) {
        let m = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits.clone()
        };
        let es = if exp < 0 { "-" } else { "+" };
        return format!("{sign}{m}e{es}{:02}", exp.abs());
    }
    if exp >= 0 {
        let point = exp as usize + 1;
        if digits.len() <= point {
            format!("{sign}{}{}.0", digits, "0".repeat(point - digits.len()))
        } else {
            format!("{sign}{}.{}", &digits[..point], &digits[point..])
        }
    } else {
        format!("{sign}0.{}{}", "0".repeat((-exp - 1) as usize), digits)
    }
}

fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// BPE count. tiktoken-rs unwraps regex errors (fancy-regex backtrack limits on pathological
/// input), so a panic is caught and the text counted in smaller pieces, then by chars/4.
fn bpe_count(bpe: &tiktoken_rs::CoreBPE, text: &str) -> u32 {
    if text.is_empty() {
        return 0;
    }
    let whole = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        bpe.encode_ordinary(text).len()
    }));
    match whole {
        Ok(n) => saturate(n),
        Err(_) => {
            let mut n = 0usize;
            for chunk in char_chunks(text, 4096) {
                n += std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    bpe.encode_ordinary(chunk).len()
                }))
                .unwrap_or_else(|_| chunk.chars().count() / 4);
            }
            saturate(n)
        }
    }
}

fn char_chunks(text: &str, max_bytes: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + max_bytes).min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        if end == start {
            // A single char wider than max_bytes cannot happen (max 4 bytes), but never loop.
            end = text.len();
        }
        out.push(&text[start..end]);
        start = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tokenizer_names_round_trip() {
        for t in Tokenizer::ALL {
            assert_eq!(t.to_string().parse::<Tokenizer>(), Ok(t));
        }
        assert!("gpt2".parse::<Tokenizer>().is_err());
        assert_eq!(Tokenizer::default(), Tokenizer::O200k);
    }

    #[test]
    fn known_tiktoken_counts() {
        // Reference values from Python tiktoken: "hello world" is 2 tokens in both encodings;
        // "tiktoken is great!" is 6 tokens in cl100k_base (the tiktoken README example).
        assert_eq!(count_text(Tokenizer::O200k, "hello world"), 2);
        assert_eq!(count_text(Tokenizer::Cl100k, "hello world"), 2);
        assert_eq!(count_text(Tokenizer::Cl100k, "tiktoken is great!"), 6);
        assert_eq!(count_text(Tokenizer::O200k, ""), 0);
        // Special-token text is ordinary text for counting, never an error.
        assert!(count_text(Tokenizer::O200k, "<|endoftext|>") > 1);
    }

    #[test]
    fn adk_chars_is_floor_of_code_points() {
        assert_eq!(count_text(Tokenizer::AdkChars, "abcdefg"), 1);
        assert_eq!(count_text(Tokenizer::AdkChars, "ééééé ééé"), 2); // 9 code points
    }

    #[test]
    fn python_json_dumps_lengths() {
        // Lengths of Python's json.dumps(...) output, worked out by hand:
        // {"a": 1, "b": [true, null]} -> 27 chars
        assert_eq!(
            python_json_dumps_len(&json!({"a": 1, "b": [true, null]})),
            27
        );
        // "é" -> "\u00e9" quoted: 8; "😀" -> surrogate pair "\ud83d\ude00" quoted: 14
        assert_eq!(python_json_dumps_len(&json!("é")), 8);
        assert_eq!(python_json_dumps_len(&json!("😀")), 14);
        // "a\nb" -> "a\\nb" quoted: 6; control char \u0001 -> 6 + 2 quotes
        assert_eq!(python_json_dumps_len(&json!("a\nb")), 6);
        assert_eq!(python_json_dumps_len(&json!("\u{1}")), 8);
        assert_eq!(python_json_dumps_len(&json!({})), 2);
        assert_eq!(python_json_dumps_len(&json!([1.5, 100.0])), 12); // [1.5, 100.0]
    }

    #[test]
    fn python_float_reprs() {
        assert_eq!(python_float_repr(1.5), "1.5");
        assert_eq!(python_float_repr(100.0), "100.0");
        assert_eq!(python_float_repr(1e16), "1e+16");
        assert_eq!(python_float_repr(1.25e-5), "1.25e-05");
        assert_eq!(python_float_repr(0.0001), "0.0001");
        assert_eq!(python_float_repr(-2.5), "-2.5");
        assert_eq!(python_float_repr(123456789012345.6), "123456789012345.6");
    }

    #[test]
    fn adk_chars_rules() {
        let parts = vec![
            Part::Text {
                text: "hi there".into(),
            },
            Part::ToolCall {
                id: None,
                name: "get".into(),
                args: json!({"q": "x"}),
            },
            Part::ToolResponse {
                id: None,
                name: "get".into(),
                response: json!({}),
            },
        ];
        // 8 + 3 + len('{"q": "x"}')=10 + 3 + 0 (empty response skipped)
        assert_eq!(adk_chars_of_parts(&parts), 24);
        assert_eq!(count_parts(Tokenizer::AdkChars, &parts), 6);
    }

    #[test]
    fn event_count_is_sum_of_pieces() {
        let parts = vec![
            Part::Text {
                text: "hello world".into(),
            },
            Part::ToolCall {
                id: None,
                name: "search".into(),
                args: json!({"query": "hello world"}),
            },
            Part::Attachment {
                name: "a.png".into(),
                mime_type: None,
                text: None,
                size_bytes: Some(4000),
            },
        ];
        let tok = Tokenizer::O200k;
        let expected = count_text(tok, "hello world")
            + count_text(tok, "search")
            + count_text(tok, r#"{"query":"hello world"}"#)
            + 1000;
        assert_eq!(count_parts(tok, &parts), expected);
        // A string response is counted as the string itself, not its quoted JSON.
        let s = vec![Part::ToolResponse {
            id: None,
            name: "sh".into(),
            response: json!("a \"b\"\n"),
        }];
        assert_eq!(
            count_parts(tok, &s),
            count_text(tok, "sh") + count_text(tok, "a \"b\"\n")
        );
    }

    #[test]
    fn keys_follow_content_not_metadata() {
        let a = vec![Part::Text {
            text: "same".into(),
        }];
        let b = vec![Part::Thought {
            text: "same".into(),
        }];
        assert_ne!(content_key(&a), content_key(&b));
        assert_eq!(
            content_key(&a),
            content_key(&[Part::Text {
                text: "same".into()
            }])
        );
        assert_ne!(
            content_key(&a),
            content_key(&[Part::Text {
                text: "same!".into()
            }])
        );
    }

    #[test]
    fn pathological_whitespace_never_panics() {
        let s = " ".repeat(200_000) + "x";
        assert!(count_text(Tokenizer::O200k, &s) >= 1);
    }
}
