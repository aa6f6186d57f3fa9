//! Helpers shared by the readers: JSON access with paths for errors, timestamps, invocation
//! numbering, session validation and critical-event heuristics.
//!
//! # Critical-event heuristics
//! Transcripts rarely label approvals or refusals, so readers flag them with these rules
//! (the same ones behind the counts in `shared/corpus/stats.json`, which they reproduce):
//! - **Confirmation**: a person's message whose first word(s), after any leading
//!   non-alphanumeric characters, are `yes`, `yeah`, `yep`, `sure`, `ok`, `okay` or
//!   `that's correct` (case-insensitive, whole words), or a word starting with `confirm`.
//!   (`I confirm …` is deliberately not matched: the corpus counts leave it out.)
//! - **Approval**: the same for `approve`, `approved`, `i approve`, `go ahead`, `proceed`,
//!   `please proceed`, and tool approvals a format records explicitly.
//! - **Refusal**: a message starting with `no`, `nope`, `don't`, `do not`, `cancel`, `deny`,
//!   `denied`, `reject` or `i decline`; and tool calls the user rejected or cancelled.
//! - **ToolError**: a tool result the format marks as an error (`error: true`, status
//!   `error`), or whose text starts with `Error` / `Traceback`.
//! - **Interruption**: a person's message that is an interruption marker such as
//!   `[Request interrupted by user]`, or a turn the format records as aborted.
//!
//! Only people's messages are checked for the word rules, never tool output or system text.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::pyjson::{self, PyNumber};
use super::{Critical, Event, Part, ReadError, Role, MAX_SESSION_TOKENS, MAX_TOKENS};

/// Parse a whole file as one JSON document; the error names the line and column.
pub fn parse_json(file: &str, text: &str) -> Result<Value, ReadError> {
    serde_json::from_str(text).map_err(|e| json_error(file, &e))
}

/// A serde_json error as a one-line [`ReadError`] with `line L column C`.
pub fn json_error(file: &str, e: &serde_json::Error) -> ReadError {
    let what = match e.classify() {
        serde_json::error::Category::Io => "I/O error",
        serde_json::error::Category::Syntax => "malformed JSON",
        serde_json::error::Category::Data => "wrong shape",
        serde_json::error::Category::Eof => {
            // The place a cut-off file ends is the useful fact; say it first.
            return ReadError::new(
                file,
                "",
                format!(
                    "truncated at line {} column {}: {}",
                    e.line(),
                    e.column(),
                    strip_position(&e.to_string())
                ),
            );
        }
    };
    ReadError::new(
        file,
        format!("line {} column {}", e.line(), e.column()),
        format!("{what}: {}", strip_position(&e.to_string())),
    )
}

/// serde_json appends " at line L column C" to its messages; the location already says it.
fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

/// `s` with its control characters (escape sequences, newlines, NUL) written as Rust
/// escapes (`\u{1b}`, `\n`) and everything else, non-ASCII text included, as it is: what
/// may reach a terminal or a one-line message from untrusted input.
pub fn escape_control(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Make an error one short line whatever the input put in it: control characters (a newline
/// in an id or a path) are escaped and the text is cut at `max` characters.
pub fn one_line(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", escape_control(&s[..i])),
        None => escape_control(s).into_owned(),
    }
}

/// [`one_line`] applied to every field of an error (messages up to 400 characters), with
/// any `pyjson` tag a parser quoted (`string "\u{fdd0}NaN"`) shown as the number it stands
/// for: the tag is internal and never reaches users.
pub fn tidy(e: ReadError) -> ReadError {
    ReadError {
        file: one_line(&e.file, 4096),
        location: one_line(&pyjson::untag_message(&e.location), 200),
        message: one_line(&pyjson::untag_message(&e.message), 400),
        kind: e.kind,
    }
}

/// A short description of a JSON value's kind, for "expected X, found Y" messages. A
/// Python-only number (a `pyjson` tag) is described as the number it is, not as a string.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(s) => match pyjson::tagged(s) {
            None => "a string",
            Some(PyNumber::NaN) => "the number NaN",
            Some(PyNumber::Infinity | PyNumber::NegInfinity) => {
                "a number beyond the 64-bit float range (Infinity, or a literal like 1e309)"
            }
            Some(PyNumber::Int(_)) => "an integer beyond 64 bits",
        },
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// What is wrong with a number read from a file (the caller adds the file and place).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct BadNumber(pub String);

/// A recorded token count: a whole number from 0 to [`MAX_TOKENS`] (2^53; an integral float
/// such as `12.0` is accepted). Err says what was found, for the caller to place (file and
/// JSON path): negative, fractional, non-finite, too large, or not a number.
pub fn token_count(v: &Value) -> Result<u64, BadNumber> {
    let found = match v {
        Value::Number(n) => match (n.as_u64(), n.as_f64()) {
            (Some(u), _) if u <= MAX_TOKENS => return Ok(u),
            (Some(u), _) => format!("{u}, over the limit of 2^53 = {MAX_TOKENS}"),
            (None, Some(f)) if f >= 0.0 && f.fract() == 0.0 && f <= MAX_TOKENS as f64 => {
                return Ok(f as u64)
            }
            (None, Some(f)) if f > MAX_TOKENS as f64 => {
                format!("{n}, over the limit of 2^53 = {MAX_TOKENS}")
            }
            (None, Some(f)) if f < 0.0 => format!("{n}, a negative number"),
            _ => format!("{n}, not a whole number"),
        },
        Value::String(s) => match pyjson::tagged(s) {
            Some(PyNumber::Int(d)) if d.starts_with('-') => format!("{d}, a negative number"),
            Some(PyNumber::Int(d)) => format!("{d}, an integer beyond 64 bits"),
            Some(_) => kind(v).to_string(),
            None => "a string".to_string(),
        },
        other => kind(other).to_string(),
    };
    Err(BadNumber(format!(
        "expected a token count (a whole number from 0 to 2^53), found {found}"
    )))
}

/// Longest recorded duration: a day, in milliseconds (docs/cli.md "Input limits": recorded
/// latencies 0 to 86,400 s).
pub const MAX_DURATION_MS: u64 = 86_400_000;

/// A recorded duration in milliseconds: a whole number from 0 to [`MAX_DURATION_MS`]; Err says
/// what was found, as [`token_count`] does, in a duration's words.
pub fn duration_ms(v: &Value) -> Result<u64, BadNumber> {
    match token_count(v) {
        Ok(ms) if ms <= MAX_DURATION_MS => Ok(ms),
        Ok(ms) => Err(BadNumber(format!(
            "expected a duration in milliseconds (a whole number from 0 to {MAX_DURATION_MS}, a day), found {ms}"
        ))),
        Err(BadNumber(m)) => Err(BadNumber(m.replace(
            "expected a token count (a whole number from 0 to 2^53)",
            &format!("expected a duration in milliseconds (a whole number from 0 to {MAX_DURATION_MS}, a day)"),
        ))),
    }
}

/// Typed access to JSON values that reports errors as `FILE: $.json.path: what is wrong`.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    pub file: &'a str,
}

impl<'a> Ctx<'a> {
    pub fn new(file: &'a str) -> Self {
        Ctx { file }
    }

    pub fn err(&self, path: impl Into<String>, msg: impl Into<String>) -> ReadError {
        ReadError::new(self.file, path, msg)
    }

    /// Message `mp`'s time `t` is earlier than the one before it, `prev`.
    pub fn out_of_order(&self, mp: &str, t: f64, prev: f64) -> ReadError {
        self.err(format!("{mp}.timestamp"), out_of_order(t, prev))
    }

    /// Each message's recorded `timestamp` (at `{path}.messages[i]`), read before the
    /// messages: their times decide order.
    pub fn message_times(&self, msgs: &[Value], path: &str) -> Result<Vec<Option<f64>>, ReadError> {
        let mut times: Vec<Option<f64>> = Vec::with_capacity(msgs.len());
        for (i, m) in msgs.iter().enumerate() {
            let mp = format!("{path}.messages[{i}]");
            times.push(self.opt_time(self.obj(m, &mp)?, "timestamp", &mp)?);
        }
        Ok(times)
    }

    pub fn obj<'v>(&self, v: &'v Value, path: &str) -> Result<&'v Map<String, Value>, ReadError> {
        v.as_object().ok_or_else(|| {
            self.err(
                path,
                format!("wrong shape: expected an object, found {}", kind(v)),
            )
        })
    }

    pub fn arr<'v>(&self, v: &'v Value, path: &str) -> Result<&'v Vec<Value>, ReadError> {
        v.as_array().ok_or_else(|| {
            self.err(
                path,
                format!("wrong shape: expected an array, found {}", kind(v)),
            )
        })
    }

    /// A required field of an object.
    pub fn field<'v>(
        &self,
        m: &'v Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<&'v Value, ReadError> {
        m.get(key)
            .ok_or_else(|| self.err(path, format!("wrong shape: missing field `{key}`")))
    }

    /// An optional string field: absent or null gives `None`; another kind is an error.
    pub fn opt_str<'v>(
        &self,
        m: &'v Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<Option<&'v str>, ReadError> {
        match m.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(self.err(
                format!("{path}.{key}"),
                format!("wrong shape: expected a string, found {}", kind(v)),
            )),
        }
    }

    /// A required string field.
    pub fn req_str<'v>(
        &self,
        m: &'v Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<&'v str, ReadError> {
        self.opt_str(m, key, path)?
            .ok_or_else(|| self.err(path, format!("wrong shape: missing string field `{key}`")))
    }

    /// An optional array field: absent or null gives an empty slice.
    pub fn opt_arr<'v>(
        &self,
        m: &'v Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<&'v [Value], ReadError> {
        match m.get(key) {
            None | Some(Value::Null) => Ok(&[]),
            Some(Value::Array(a)) => Ok(a),
            Some(v) => Err(self.err(
                format!("{path}.{key}"),
                format!("wrong shape: expected an array, found {}", kind(v)),
            )),
        }
    }

    /// An optional token-count field (see [`token_count`]): absent or null gives `None`.
    pub fn opt_tokens(
        &self,
        m: &Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<Option<u64>, ReadError> {
        match m.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => token_count(v)
                .map(Some)
                .map_err(|m| self.err(format!("{path}.{key}"), m.0)),
        }
    }

    /// An optional timestamp field (RFC 3339 string, or epoch seconds / milliseconds).
    pub fn opt_time(
        &self,
        m: &Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<Option<f64>, ReadError> {
        match m.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => time_value(v).map(Some).ok_or_else(|| {
                self.err(
                    format!("{path}.{key}"),
                    format!("bad timestamp {}", short(v)),
                )
            }),
        }
    }
}

/// A value shortened for an error message.
pub fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 40 {
        let cut: String = s.chars().take(40).collect();
        format!("{cut}…")
    } else {
        s
    }
}

/// A timestamp value: RFC 3339 / ISO 8601 text, or a number of epoch seconds (values above
/// 1e11 are taken as milliseconds, as JavaScript writes them).
pub fn time_value(v: &Value) -> Option<f64> {
    match v {
        Value::String(s) => parse_timestamp(s),
        Value::Number(n) => {
            let f = n.as_f64()?;
            if !f.is_finite() || f < 0.0 {
                None
            } else if f > 1e11 {
                Some(f / 1000.0)
            } else {
                Some(f)
            }
        }
        _ => None,
    }
}

/// Parse RFC 3339 (`2025-09-25T01:22:25.361Z`, with any offset) or an ISO date-time with no
/// zone (`2026-04-05T23:38:13.711688`, taken as UTC because the offset is unknown), to
/// seconds since the epoch.
pub fn parse_timestamp(s: &str) -> Option<f64> {
    let s = s.trim();
    if let Ok(dt) = chrono::DateTime::parse_from_rfc3339(s) {
        return Some(secs(dt.timestamp(), dt.timestamp_subsec_nanos()));
    }
    for fmt in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f%#z",
        "%Y-%m-%d %H:%M:%S%.f%#z",
    ] {
        if let Ok(dt) = chrono::NaiveDateTime::parse_from_str(s, fmt) {
            let u = dt.and_utc();
            return Some(secs(u.timestamp(), u.timestamp_subsec_nanos()));
        }
    }
    None
}

fn secs(s: i64, nanos: u32) -> f64 {
    s as f64 + f64::from(nanos) / 1e9
}

/// Start of synthetic time (1700000000 s = 2023-11-14T22:13:20Z, the same origin the ADK
/// reader and the oracle use). Readers that find no timestamps number events
/// [`SYNTHETIC_STEP_S`] apart from here and set `Session::synthetic_timestamps`.
pub const SYNTHETIC_EPOCH_S: f64 = 1_700_000_000.0;
/// Gap between synthetic timestamps, in seconds.
pub const SYNTHETIC_STEP_S: f64 = 1.0;

/// The `i`-th synthetic timestamp: strictly increasing in `i`.
pub fn synthetic_time(i: usize) -> f64 {
    SYNTHETIC_EPOCH_S + i as f64 * SYNTHETIC_STEP_S
}

/// Numbers invocations: a person's turn starts a new one; events recorded before the first
/// person's turn (system prompt, greeting) belong to the first invocation.
#[derive(Debug, Default)]
pub struct Invocations {
    n: usize,
    has_turn: bool,
}

impl Invocations {
    pub fn new() -> Self {
        Invocations {
            n: 1,
            has_turn: false,
        }
    }

    /// A person's turn: returns the id of the invocation it opens.
    pub fn user_turn(&mut self) -> String {
        if self.has_turn {
            self.n += 1;
        }
        self.has_turn = true;
        self.current()
    }

    /// The id of the invocation in progress.
    pub fn current(&self) -> String {
        format!("inv-{}", self.n.max(1))
    }
}

/// What is wrong with time `t` coming after `prev`.
pub fn out_of_order(t: f64, prev: f64) -> String {
    format!(
        "timestamps out of order: {} comes after {}",
        fmt_time(t),
        fmt_time(prev)
    )
}

/// Check what the engine relies on: finite, non-decreasing timestamps. `loc(i)` names event
/// `i`'s place in the source (a line or JSON path) for the error. A tool response without its
/// call is not refused: ADK 2.13.0 reads such sessions (a call recorded before a rewind, a
/// session resumed from another) and drops the response from requests; see
/// [`orphan_responses`] for the count the loaders warn with.
pub fn validate_events(
    file: &str,
    events: &[Event],
    loc: impl Fn(usize) -> String,
) -> Result<(), ReadError> {
    let mut prev = f64::NEG_INFINITY;
    for (i, e) in events.iter().enumerate() {
        if !e.timestamp.is_finite() {
            return Err(ReadError::new(
                file,
                loc(i),
                "timestamp is not a finite number",
            ));
        }
        if e.timestamp < prev {
            return Err(ReadError::new(
                file,
                loc(i),
                out_of_order(e.timestamp, prev),
            ));
        }
        prev = e.timestamp;
    }
    session_tokens_within_limit(file, events, loc)
}

/// Refuse a session whose recorded token counts sum past [`MAX_SESSION_TOKENS`], at the
/// event where the sum crosses it.
fn session_tokens_within_limit(
    file: &str,
    events: &[Event],
    loc: impl Fn(usize) -> String,
) -> Result<(), ReadError> {
    let mut sum: u64 = 0;
    for (i, e) in events.iter().enumerate() {
        let Some(u) = &e.usage else { continue };
        sum = [u.prompt_tokens, u.cache_write_tokens, u.output_tokens]
            .iter()
            .fold(sum, |a, b| a.saturating_add(*b));
        if sum > MAX_SESSION_TOKENS {
            return Err(ReadError::new(
                file,
                loc(i),
                format!(
                    "the session's recorded token counts sum to {sum} by this request, over the \
                     limit of 10^12 tokens a session may record (a run folder holds figures up \
                     to 1e15; docs/cli.md \"Input limits\")"
                ),
            ));
        }
    }
    Ok(())
}

/// How many tool responses answer no earlier call, by ADK 2.13.0's own rule
/// (`drop_orphaned_function_responses`): a response with an id needs an earlier call with that
/// id; one without an id needs an earlier id-less call of its name; an event's own calls count
/// only for later events. ADK keeps such a response in the session and leaves it out of every
/// request; the loaders warn with this count, per session.
pub fn orphan_responses(events: &[Event]) -> usize {
    let mut ids: HashSet<&str> = HashSet::new();
    let mut idless_names: HashSet<&str> = HashSet::new();
    let mut orphans = 0;
    for e in events {
        for p in &e.parts {
            if let Part::ToolResponse { id, name, .. } = p {
                let matched = match id.as_deref().filter(|id| !id.is_empty()) {
                    Some(id) => ids.contains(id),
                    None => !name.is_empty() && idless_names.contains(name.as_str()),
                };
                orphans += usize::from(!matched);
            }
        }
        for p in &e.parts {
            if let Part::ToolCall { id, name, .. } = p {
                match id.as_deref().filter(|id| !id.is_empty()) {
                    Some(id) => {
                        ids.insert(id);
                    }
                    None if !name.is_empty() => {
                        idless_names.insert(name);
                    }
                    None => {}
                }
            }
        }
    }
    orphans
}

/// A timestamp for messages: RFC 3339 with milliseconds, or the raw number when out of range.
pub fn fmt_time(t: f64) -> String {
    if t.is_finite() && t.abs() < 1e12 {
        let whole = t.floor();
        let nanos = ((t - whole) * 1e9).round().clamp(0.0, 999_999_999.0) as u32;
        if let Some(dt) = chrono::DateTime::from_timestamp(whole as i64, nanos) {
            return dt.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        }
    }
    format!("{t}")
}

/// Skip leading characters Python's `\W` would match (anything but letters, digits, `_`).
fn skip_non_word(s: &str) -> &str {
    s.trim_start_matches(|c: char| !(c.is_alphanumeric() || c == '_'))
}

/// True when `s` starts with `word` (ASCII case-insensitive) followed by a word boundary.
fn starts_with_word(s: &str, word: &str) -> bool {
    let Some(head) = s.get(..word.len()) else {
        return false;
    };
    if !head.eq_ignore_ascii_case(word) {
        return false;
    }
    match s[word.len()..].chars().next() {
        None => true,
        Some(c) => !(c.is_alphanumeric() || c == '_'),
    }
}

const CONFIRM_WORDS: [&str; 7] = ["yes", "yeah", "yep", "sure", "ok", "okay", "that's correct"];
const APPROVE_WORDS: [&str; 6] = [
    "approve",
    "approved",
    "i approve",
    "go ahead",
    "proceed",
    "please proceed",
];
const REFUSE_WORDS: [&str; 9] = [
    "no",
    "nope",
    "don't",
    "do not",
    "cancel",
    "deny",
    "denied",
    "reject",
    "i decline",
];

/// Critical flags for a person's message (see the module docs for the rules).
pub fn user_text_flags(text: &str) -> Vec<Critical> {
    let s = skip_non_word(text);
    let mut out = Vec::new();
    if is_interruption_text(text) {
        out.push(Critical::Interruption);
        return out;
    }
    if APPROVE_WORDS.iter().any(|w| starts_with_word(s, w)) {
        out.push(Critical::Approval);
    } else if CONFIRM_WORDS.iter().any(|w| starts_with_word(s, w))
        || s.get(..7)
            .is_some_and(|h| h.eq_ignore_ascii_case("confirm"))
    {
        out.push(Critical::Confirmation);
    } else if REFUSE_WORDS.iter().any(|w| starts_with_word(s, w)) {
        out.push(Critical::Refusal);
    }
    out
}

/// Interruption markers agents write into the user's turn.
pub fn is_interruption_text(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("[Request interrupted by user") || t.starts_with("[Operation Cancelled]")
}

/// True when a tool result's text reads as an error.
pub fn looks_like_tool_error(text: &str) -> bool {
    let t = text.trim_start();
    starts_with_word(t, "error") || t.starts_with("Traceback (most recent call last)")
}

/// Add `c` to an event's flags once.
pub fn flag(e: &mut Event, c: Critical) {
    if !e.critical.contains(&c) {
        e.critical.push(c);
    }
}

/// The text of an OpenAI-style `content`: a string, or a list of `{type, text}` parts.
pub fn content_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            let mut out = String::new();
            for p in parts {
                let t = match p {
                    Value::String(s) => Some(s.as_str()),
                    Value::Object(m) => m.get("text").and_then(Value::as_str),
                    _ => None,
                };
                if let Some(t) = t {
                    if !out.is_empty() {
                        out.push('\n');
                    }
                    out.push_str(t);
                }
            }
            out
        }
        _ => String::new(),
    }
}

/// Tool-call arguments recorded as a JSON string: parsed when valid, else kept as the string.
pub fn parse_args(v: Option<&Value>) -> Value {
    match v {
        Some(Value::String(s)) => {
            if s.trim().is_empty() {
                Value::Object(Map::new())
            } else {
                serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
            }
        }
        Some(v) => v.clone(),
        None => Value::Object(Map::new()),
    }
}

/// A new event whose role is `role` and author `author`.
pub fn event(author: &str, role: Role, invocation: String, t: f64) -> Event {
    Event::new(author, role, invocation, t)
}

/// Minimal JSON structure scanning for cheap format sniffing: no allocation of values, no
/// recursion, never panics on garbage.
pub mod scan {
    /// Index of the first non-whitespace byte at or after `i`.
    fn ws(b: &[u8], mut i: usize) -> usize {
        while let Some(c) = b.get(i) {
            if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                i += 1;
            } else {
                break;
            }
        }
        i
    }

    /// Skip a string starting at `b[i] == '"'`; returns the index after the closing quote.
    fn skip_string(b: &[u8], i: usize) -> Option<usize> {
        let mut j = i + 1;
        loop {
            match b.get(j)? {
                b'"' => return Some(j + 1),
                b'\\' => j += 2,
                _ => j += 1,
            }
        }
    }

    /// Skip one JSON value starting at `i`; returns the index after it.
    fn skip_value(b: &[u8], i: usize) -> Option<usize> {
        let i = ws(b, i);
        match b.get(i)? {
            b'"' => skip_string(b, i),
            b'{' | b'[' => {
                let mut depth = 0usize;
                let mut j = i;
                loop {
                    match b.get(j)? {
                        b'"' => {
                            j = skip_string(b, j)?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                return Some(j + 1);
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
            }
            _ => {
                let mut j = i;
                while let Some(c) = b.get(j) {
                    if matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    j += 1;
                }
                Some(j)
            }
        }
    }

    /// The keys of the object starting at `i` (`b[i] == '{'`), in order, up to the first
    /// syntax problem; and for each key the index where its value starts.
    fn object_keys(b: &[u8], i: usize) -> Vec<(String, usize)> {
        let mut out = Vec::new();
        let mut j = ws(b, i + 1);
        while let Some(&c) = b.get(j) {
            if c != b'"' {
                break;
            }
            let Some(end) = skip_string(b, j) else { break };
            let key = String::from_utf8_lossy(&b[j + 1..end - 1]).into_owned();
            let k = ws(b, end);
            if b.get(k) != Some(&b':') {
                break;
            }
            let vstart = ws(b, k + 1);
            out.push((key, vstart));
            let Some(vend) = skip_value(b, vstart) else {
                break;
            };
            let n = ws(b, vend);
            if b.get(n) != Some(&b',') {
                break;
            }
            j = ws(b, n + 1);
        }
        out
    }

    /// Keys of the top-level object, or `None` when the text is not an object.
    pub fn top_keys(text: &str) -> Option<Vec<String>> {
        let b = text.as_bytes();
        let i = ws(b, skip_bom(b));
        (b.get(i) == Some(&b'{')).then(|| object_keys(b, i).into_iter().map(|(k, _)| k).collect())
    }

    /// Keys of the first element of the top-level array when that element is an object.
    pub fn first_elem_keys(text: &str) -> Option<Vec<String>> {
        let b = text.as_bytes();
        let i = ws(b, skip_bom(b));
        if b.get(i) != Some(&b'[') {
            return None;
        }
        let j = ws(b, i + 1);
        (b.get(j) == Some(&b'{')).then(|| object_keys(b, j).into_iter().map(|(k, _)| k).collect())
    }

    /// Keys of the first element of the array held by top-level key `key`, when both exist.
    pub fn first_elem_keys_of(text: &str, key: &str) -> Option<Vec<String>> {
        let b = text.as_bytes();
        let i = ws(b, skip_bom(b));
        if b.get(i) != Some(&b'{') {
            return None;
        }
        let (_, v) = object_keys(b, i).into_iter().find(|(k, _)| k == key)?;
        if b.get(v) != Some(&b'[') {
            return None;
        }
        let j = ws(b, v + 1);
        (b.get(j) == Some(&b'{')).then(|| object_keys(b, j).into_iter().map(|(k, _)| k).collect())
    }

    /// Keys of the object on the first non-blank line (JSONL sniffing).
    pub fn first_line_keys(text: &str) -> Option<Vec<String>> {
        let line = text.lines().find(|l| !l.trim().is_empty())?;
        top_keys(line)
    }

    fn skip_bom(b: &[u8]) -> usize {
        if b.starts_with(&[0xEF, 0xBB, 0xBF]) {
            3
        } else {
            0
        }
    }
}

/// Untrusted text for property tests of every escaping: ASCII, every C0 and C1 control
/// character (newlines, ESC, DEL, CSI), the line and paragraph separators, non-ASCII.
#[cfg(test)]
pub(crate) const HOSTILE_TEXT: &str = "(?s)[\\x00-\\x{a0}\\x{2028}\\x{2029}é中🦀]{0,40}";

/// The file part of a session's `source` (`file#fragment` → `file`).
pub fn source_file(source: &str) -> &str {
    match source.find('#') {
        Some(i) if i > 0 => &source[..i],
        _ => source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts_are_whole_numbers_up_to_2_pow_53() {
        let v = |t: &str| -> Value {
            let n = pyjson::normalize("f", t).expect("normalizes");
            serde_json::from_str(&n).expect("parses")
        };
        assert_eq!(token_count(&v("12")), Ok(12));
        assert_eq!(token_count(&v("12.0")), Ok(12));
        assert_eq!(token_count(&v("9007199254740992")), Ok(MAX_TOKENS));
        for (t, says) in [
            ("9007199254740993", "9007199254740993, over the limit"),
            (
                "18446744073709551615",
                "18446744073709551615, over the limit",
            ),
            (
                "18446744073709551616",
                "18446744073709551616, an integer beyond 64 bits",
            ),
            ("-1", "-1, a negative number"),
            ("-99999999999999999999", "a negative number"),
            ("1.5", "1.5, not a whole number"),
            ("NaN", "the number NaN"),
            ("1e309", "beyond the 64-bit float range"),
            ("-Infinity", "beyond the 64-bit float range"),
            ("\"12\"", "a string"),
            ("null", "null"),
        ] {
            let e = token_count(&v(t)).expect_err(t).0;
            assert!(e.contains(says), "{t}: {e}");
        }
    }

    #[test]
    fn tagged_numbers_are_not_called_strings() {
        let v = |t: &str| -> Value {
            serde_json::from_str(&pyjson::normalize("f", t).expect("normalizes")).expect("parses")
        };
        assert_eq!(kind(&v("NaN")), "the number NaN");
        assert!(kind(&v("1e309")).contains("1e309"));
        assert_eq!(
            kind(&v("123456789012345678901234")),
            "an integer beyond 64 bits"
        );
        assert_eq!(kind(&v("\"x\"")), "a string");
    }

    #[test]
    fn timestamps_parse_with_and_without_zone() {
        assert_eq!(parse_timestamp("1970-01-01T00:00:01Z"), Some(1.0));
        assert_eq!(parse_timestamp("1970-01-01T00:00:01.5+00:00"), Some(1.5));
        assert_eq!(parse_timestamp("1970-01-01T01:00:00+01:00"), Some(0.0));
        // No zone: UTC assumed.
        assert_eq!(parse_timestamp("1970-01-02T00:00:00.25"), Some(86400.25));
        assert_eq!(parse_timestamp("not a time"), None);
        assert_eq!(
            time_value(&serde_json::json!(1_700_000_000_123u64)),
            Some(1_700_000_000.123)
        );
    }

    #[test]
    fn word_rules_match_whole_words_only() {
        assert_eq!(
            user_text_flags("Yes, please book it."),
            vec![Critical::Confirmation]
        );
        assert_eq!(
            user_text_flags("**Okay** then"),
            vec![Critical::Confirmation]
        );
        assert_eq!(
            user_text_flags("Confirming to proceed"),
            vec![Critical::Confirmation]
        );
        assert_eq!(user_text_flags("Please proceed"), vec![Critical::Approval]);
        assert_eq!(user_text_flags("No, thanks"), vec![Critical::Refusal]);
        assert!(user_text_flags("None of them").is_empty());
        assert!(user_text_flags("Yesterday I flew").is_empty());
        assert!(user_text_flags("Nobody").is_empty());
        assert!(user_text_flags("").is_empty());
        assert_eq!(
            user_text_flags("[Request interrupted by user]"),
            vec![Critical::Interruption]
        );
    }

    #[test]
    fn errors_are_made_one_short_line() {
        let e = tidy(ReadError::new(
            "a\nb.json",
            "$[0]",
            format!("unknown role `x\ny`{}", "z".repeat(1000)),
        ));
        let s = e.to_string();
        assert!(!s.contains('\n'), "{s}");
        assert!(
            s.starts_with("a\\nb.json: $[0]: unknown role `x\\ny`"),
            "{s}"
        );
        assert!(s.chars().count() < 450, "{}", s.len());
    }

    #[test]
    fn invocations_start_at_person_turns() {
        let mut inv = Invocations::new();
        assert_eq!(inv.current(), "inv-1"); // system prompt before the first turn
        assert_eq!(inv.user_turn(), "inv-1");
        assert_eq!(inv.current(), "inv-1");
        assert_eq!(inv.user_turn(), "inv-2");
    }

    #[test]
    fn validation_catches_order_and_counts_orphans_as_adk_does() {
        let mut a = Event::new("user", Role::User, "inv-1", 2.0);
        a.parts.push(Part::Text { text: "hi".into() });
        let b = Event::new("agent", Role::Model, "inv-1", 1.0);
        let e = validate_events("f", &[a.clone(), b], |i| format!("event {i}")).unwrap_err();
        assert_eq!(e.location, "event 1");
        assert!(e.message.contains("out of order"), "{e}");
        let response = |id: Option<&str>, name: &str, t: f64| {
            let mut r = Event::new("tool", Role::Tool, "inv-1", t);
            r.parts.push(Part::ToolResponse {
                id: id.map(str::to_string),
                name: name.into(),
                response: Value::Null,
            });
            r
        };
        let call = |id: Option<&str>, name: &str, t: f64| {
            let mut c = Event::new("agent", Role::Model, "inv-1", t);
            c.parts.push(Part::ToolCall {
                id: id.map(str::to_string),
                name: name.into(),
                args: Value::Null,
            });
            c
        };
        // A response without its call is read (ADK reads it), and counted.
        let r = response(Some("c1"), "f", 3.0);
        validate_events("f", &[a.clone(), r.clone()], |i| format!("event {i}")).unwrap();
        assert_eq!(orphan_responses(&[a.clone(), r.clone()]), 1);
        assert_eq!(
            orphan_responses(&[a.clone(), call(Some("c1"), "f", 2.0), r]),
            0
        );
        // By name only between id-less ones; an id-ful call does not answer an id-less
        // response of its name, nor does a call in the response's own event.
        let idless = response(None, "f", 3.0);
        assert_eq!(orphan_responses(&[call(None, "f", 2.0), idless.clone()]), 0);
        assert_eq!(orphan_responses(&[call(Some("c1"), "f", 2.0), idless]), 1);
        let mut both = response(Some("c2"), "g", 3.0);
        both.parts.push(Part::ToolCall {
            id: Some("c2".into()),
            name: "g".into(),
            args: Value::Null,
        });
        assert_eq!(orphan_responses(&[both]), 1);
        // An empty id is no id (Python's falsy string).
        assert_eq!(
            orphan_responses(&[call(None, "f", 2.0), response(Some(""), "f", 3.0)]),
            0
        );
    }

    #[test]
    fn scanner_reads_keys_and_survives_garbage() {
        assert_eq!(
            scan::top_keys(r#" {"a": {"x": [1, "}"]}, "b" : 2}"#),
            Some(vec!["a".into(), "b".into()])
        );
        assert_eq!(
            scan::first_elem_keys(r#"[{"traj": [], "k": 1}]"#),
            Some(vec!["traj".into(), "k".into()])
        );
        assert_eq!(
            scan::first_elem_keys_of(r#"{"h": 1, "m": [{"role": "u"}]}"#, "m"),
            Some(vec!["role".into()])
        );
        for g in [
            "{",
            "{\"",
            "{\"a\"",
            "{\"a\":",
            "{\"a\":[",
            "[",
            "[{",
            "\u{feff}{\"a\":\"\\",
            "]]]}}}",
        ] {
            let _ = scan::top_keys(g);
            let _ = scan::first_elem_keys(g);
            let _ = scan::first_elem_keys_of(g, "a");
        }
    }

    proptest::proptest! {
        #[test]
        fn sniff_helpers_never_panic(s in ".{0,64}", j in r#"[\[\]{}",:\\ a-z0-9\n]{0,64}"#) {
            for t in [&s, &j] {
                let _ = scan::top_keys(t);
                let _ = scan::first_elem_keys(t);
                let _ = scan::first_elem_keys_of(t, "a");
                let _ = scan::first_line_keys(t);
                let _ = user_text_flags(t);
                let _ = parse_timestamp(t);
                let _ = looks_like_tool_error(t);
                proptest::prop_assert!(!one_line(t, 10).contains('\n'));
                use crate::transcript::{canonical, gemini_cli, openai_chat, swe_agent, tau2};
                for (sniff, read) in [
                    (canonical::sniff as fn(&str) -> bool, canonical::read as fn(&str, &str) -> Result<Vec<crate::transcript::Session>, ReadError>),
                    (gemini_cli::sniff, gemini_cli::read),
                    (openai_chat::sniff, openai_chat::read),
                    (swe_agent::sniff, swe_agent::read),
                    (tau2::sniff, tau2::read),
                ] {
                    let _ = sniff(t);
                    if let Err(e) = read("f", t) {
                        proptest::prop_assert!(e.to_string().starts_with("f"));
                    }
                }
            }
        }
    }
}
