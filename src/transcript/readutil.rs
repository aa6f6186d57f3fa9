//! Small helpers the line-oriented readers share: line splitting with a size cap, RFC 3339
//! timestamps, and the clock that keeps event times in order.

use super::util::{BadNumber, SYNTHETIC_EPOCH_S, SYNTHETIC_STEP_S};
use super::ReadError;
use serde_json::Value;

// One timestamp parser and one kind-name for all readers.
pub(crate) use super::util::{kind, parse_timestamp};

/// Longest line (bytes) a JSONL reader accepts. Real lines top out at a few MB (a base64
/// screenshot); anything near 1 GB is a broken file, and parsing it would exhaust memory.
pub(crate) const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Non-empty lines of `text` with their 1-based line numbers, rejecting over-long lines.
pub(crate) fn lines<'t>(file: &str, text: &'t str) -> Result<Vec<(usize, &'t str)>, ReadError> {
    let mut out = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.len() > MAX_LINE_BYTES {
            return Err(ReadError::new(
                file,
                format!("line {}", i + 1),
                format!(
                    "line is {} bytes, over the {} MiB limit",
                    line.len(),
                    MAX_LINE_BYTES / (1024 * 1024)
                ),
            ));
        }
        if !line.trim().is_empty() {
            out.push((i + 1, line));
        }
    }
    Ok(out)
}

/// Parse one JSONL line into a JSON object, or a one-line error naming the line.
pub(crate) fn parse_object_line(
    file: &str,
    line_no: usize,
    line: &str,
) -> Result<serde_json::Map<String, Value>, ReadError> {
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(ReadError::new(
            file,
            format!("line {line_no}"),
            format!("expected a JSON object, found {}", kind(&other)),
        )),
        Err(e) => Err(ReadError::new(
            file,
            format!("line {line_no}"),
            json_error(&e),
        )),
    }
}

/// serde_json's message without its own "at line L column C" (the caller names the line);
/// a line that ends before its JSON does says "truncated".
pub(crate) fn json_error(e: &serde_json::Error) -> String {
    let mut msg = e.to_string();
    if let Some(i) = msg.rfind(" at line ") {
        msg.truncate(i);
    }
    if e.is_eof() {
        format!("truncated at column {}: {msg}", e.column())
    } else {
        format!("malformed JSON at column {}: {msg}", e.column())
    }
}

/// A record's time the [`Clock`] refuses (the reader adds file and location).
/// A field of a record with the wrong shape, named by its JSON path, for the reader to place
/// at its file and line (the Claude Code micro and attachment records).
#[derive(Debug, thiserror::Error)]
pub enum FieldError {
    /// `record` lacks `field`; `shape` is what it should have been (`" object"` or empty).
    #[error("{record} has no \"{field}\"{shape}")]
    Missing {
        record: &'static str,
        field: &'static str,
        shape: &'static str,
    },
    #[error("{path} is {found}, expected {expected}")]
    Kind {
        path: String,
        found: &'static str,
        expected: &'static str,
    },
    #[error("{path}: {source}")]
    Count { path: String, source: BadNumber },
    #[error("{path} cannot be measured: {source}")]
    Json {
        path: &'static str,
        source: serde_json::Error,
    },
}

impl FieldError {
    /// `path` holds `found` where `expected` belongs.
    pub fn kind(path: impl Into<String>, found: &Value, expected: &'static str) -> FieldError {
        FieldError::Kind {
            path: path.into(),
            found: kind(found),
            expected,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub(crate) enum ClockError {
    #[error("timestamp is not a finite number")]
    NotFinite,
    #[error("timestamps out of order: {by_s:.3} s earlier than an earlier record")]
    OutOfOrder { by_s: f64 },
    #[error("timestamps out of order: {by_s:.3} s earlier than an earlier record, more than the {MAX_ADJUSTED_STEP_BACK_S} s a record of this format may step back and still be read in file order")]
    TooFarBack { by_s: f64 },
}

/// Largest step back a clock in file order adjusts (an hour): a format whose file order is the
/// order things happened (Claude Code appends each record as the conversation moves on; a
/// resumed or queued step can carry an earlier time) is read in that order, its times held at
/// the latest. A larger step back is refused: no resumed step was seen that far back
/// (issue 47: up to 3,227 s in held-out real sessions).
pub(crate) const MAX_ADJUSTED_STEP_BACK_S: f64 = 3600.0;

/// Hands out event times in file order: recorded times must not go backwards (beyond a
/// per-format tolerance), missing ones are synthesised strictly increasing.
pub(crate) struct Clock {
    /// Latest recorded (not synthesised) time seen; order is checked against it.
    last_recorded: Option<f64>,
    /// Latest time handed out; outputs never go below it.
    last_out: Option<f64>,
    /// How far (seconds) a recorded time may fall behind the latest one before it is an error.
    tolerance_s: f64,
    /// True once any time had to be invented.
    pub synthetic: bool,
    /// How far (seconds) a recorded time may fall behind and still be read, adjusted (a
    /// format in file order, [`Clock::file_ordered`]); at most `tolerance_s` otherwise.
    adjust_up_to_s: f64,
    /// The largest step back beyond `tolerance_s` that was adjusted.
    pub stepped_back_s: Option<f64>,
}

impl Clock {
    pub fn new(tolerance_s: f64) -> Self {
        Clock {
            last_recorded: None,
            last_out: None,
            tolerance_s,
            synthetic: false,
            adjust_up_to_s: tolerance_s,
            stepped_back_s: None,
        }
    }

    /// A clock for a format whose file order is the order things happened: a step back past
    /// `tolerance_s` of up to [`MAX_ADJUSTED_STEP_BACK_S`] is read in file order (its time held
    /// at the latest) and remembered in [`Clock::stepped_back_s`].
    pub fn file_ordered(tolerance_s: f64) -> Self {
        Clock {
            adjust_up_to_s: MAX_ADJUSTED_STEP_BACK_S.max(tolerance_s),
            ..Clock::new(tolerance_s)
        }
    }

    /// Mark `session` as read with adjusted times, when they were: the largest step back, and
    /// a note saying so once.
    pub fn mark_adjusted(&self, session: &mut super::Session) {
        let Some(by) = self.stepped_back_s else {
            return;
        };
        session.timing_adjusted_s = Some(by);
        session.notes.push(format!(
            "{}: timing adjusted: records step back in time by up to {by:.3} s; read in file order \
             (the order the conversation happened), each such record at the latest earlier time",
            session.source
        ));
    }

    /// The time for the next record. `recorded` is its own timestamp, if it has one.
    pub fn next(&mut self, recorded: Option<f64>) -> Result<f64, ClockError> {
        match recorded {
            Some(t) => {
                if !t.is_finite() {
                    return Err(ClockError::NotFinite);
                }
                if let Some(prev) = self.last_recorded {
                    let by_s = prev - t;
                    if by_s > self.adjust_up_to_s && self.adjust_up_to_s > self.tolerance_s {
                        return Err(ClockError::TooFarBack { by_s });
                    }
                    if by_s > self.adjust_up_to_s {
                        return Err(ClockError::OutOfOrder { by_s });
                    }
                    if by_s > self.tolerance_s {
                        self.stepped_back_s =
                            Some(self.stepped_back_s.map_or(by_s, |s| s.max(by_s)));
                    }
                }
                self.last_recorded = Some(self.last_recorded.map_or(t, |p| p.max(t)));
                let out = self.last_out.map_or(t, |o| o.max(t));
                self.last_out = Some(out);
                Ok(out)
            }
            None => {
                self.synthetic = true;
                let out = match self.last_out {
                    // A millisecond after a recorded time keeps it close to its neighbours.
                    Some(o) if self.last_recorded.is_some() => o + 1e-3,
                    // No recorded time yet: the shared synthetic clock (see `util`).
                    Some(o) => o + SYNTHETIC_STEP_S,
                    None => SYNTHETIC_EPOCH_S,
                };
                self.last_out = Some(out);
                Ok(out)
            }
        }
    }
}

/// A string field, if present and a string.
pub(crate) fn str_field<'a>(m: &'a serde_json::Map<String, Value>, key: &str) -> Option<&'a str> {
    m.get(key).and_then(Value::as_str)
}

/// A token-count field of `parent` (missing or null: 0). Err names the field by its JSON
/// path (`parent_path.key`) and says what is wrong ([`super::util::token_count`]); the
/// caller adds the file and line.
pub(crate) fn tokens_field(
    parent: Option<&Value>,
    parent_path: &str,
    key: &str,
) -> Result<u64, BadNumber> {
    match parent.and_then(|o| o.get(key)) {
        None | Some(Value::Null) => Ok(0),
        Some(v) => super::util::token_count(v)
            .map_err(|m| BadNumber(format!("{parent_path}.{key}: {}", m.0))),
    }
}

/// Approximate decoded size of base64 data.
pub(crate) fn base64_decoded_len(data: &str) -> u64 {
    let trimmed = data.trim_end_matches('=');
    (trimmed.len() as u64 * 3) / 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_with_and_without_offset() {
        assert_eq!(parse_timestamp("1970-01-01T00:00:01Z"), Some(1.0));
        assert_eq!(parse_timestamp("1970-01-01T01:00:01+01:00"), Some(1.0));
        let t = parse_timestamp("2025-04-30T16:32:57.5").unwrap_or(0.0);
        assert!((t - 1_746_030_777.5).abs() < 1e-6, "{t}");
        assert_eq!(parse_timestamp("yesterday"), None);
    }

    #[test]
    fn clock_orders_clamps_and_synthesises() {
        let mut c = Clock::new(10.0);
        assert_eq!(c.next(Some(100.0)), Ok(100.0));
        // Within tolerance: clamped to the latest time, never backwards.
        assert_eq!(c.next(Some(95.0)), Ok(100.0));
        assert!(c.next(Some(80.0)).is_err());
        assert!(!c.synthetic);
        let s = c.next(None).unwrap_or(0.0);
        assert!(s > 100.0 && c.synthetic);
        let mut strict = Clock::new(0.0);
        assert!(strict.next(Some(5.0)).is_ok());
        assert!(strict.next(Some(4.999)).is_err());
        let mut none = Clock::new(0.0);
        assert_eq!(none.next(None), Ok(SYNTHETIC_EPOCH_S));
        assert_eq!(none.next(None), Ok(SYNTHETIC_EPOCH_S + SYNTHETIC_STEP_S));
    }

    /// Issue 47 item 10: in file order, a step back of up to an hour is read at the latest
    /// time and remembered; beyond an hour it is refused.
    #[test]
    fn a_file_ordered_clock_holds_steps_back_of_up_to_an_hour_and_remembers_the_largest() {
        let mut c = Clock::file_ordered(120.0);
        assert_eq!(c.next(Some(10_000.0)), Ok(10_000.0));
        assert_eq!(c.next(Some(9_950.0)), Ok(10_000.0));
        assert_eq!(
            c.stepped_back_s, None,
            "within the tolerance: no adjustment"
        );
        assert_eq!(c.next(Some(7_000.0)), Ok(10_000.0));
        assert_eq!(c.next(Some(9_000.0)), Ok(10_000.0));
        assert_eq!(c.next(Some(10_001.0)), Ok(10_001.0));
        assert_eq!(c.stepped_back_s, Some(3_000.0));
        let e = c.next(Some(10_001.0 - 3_601.0)).unwrap_err();
        assert!(e.to_string().contains("more than the 3600 s"), "{e}");
    }

    #[test]
    fn long_lines_are_refused() {
        let text = format!("{{}}\n{}\n", "x".repeat(MAX_LINE_BYTES + 1));
        let e = lines("f.jsonl", &text).err().map(|e| e.location);
        assert_eq!(e.as_deref(), Some("line 2"));
    }
}

/// Corpus access for the readers' unit tests.
#[cfg(test)]
pub(crate) mod testutil {
    use crate::transcript::{Critical, Part, ReadError, Session, Usage};
    use serde_json::Value;
    use std::collections::HashMap;
    use std::path::PathBuf;

    /// Parts of a session that match `f` (tool calls, responses...), for checks against
    /// stats.json.
    pub fn count_parts(s: &Session, f: impl Fn(&Part) -> bool) -> u64 {
        s.events
            .iter()
            .flat_map(|e| e.parts.iter())
            .filter(|p| f(p))
            .count() as u64
    }

    /// `../shared/corpus` next to the repo, or `/work/shared/corpus` from a worktree.
    pub fn corpus() -> PathBuf {
        let near = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus"));
        if near.exists() {
            near
        } else {
            PathBuf::from("/work/shared/corpus")
        }
    }

    pub fn read_corpus(rel: &str) -> String {
        let p = corpus().join(rel);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
    }

    /// The per-session entries stats.json holds for one corpus folder.
    pub fn stats_sessions(folder: &str) -> Vec<Value> {
        let stats: Value =
            serde_json::from_str(&read_corpus("stats.json")).expect("stats.json parses");
        stats
            .get(folder)
            .and_then(|f| f.get("sessions"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_else(|| panic!("stats.json has no sessions for {folder}"))
    }

    pub fn num(v: &Value, key: &str) -> u64 {
        v.get(key)
            .and_then(Value::as_u64)
            .unwrap_or_else(|| panic!("stats entry lacks {key}: {v}"))
    }

    /// Events of a session carrying critical flag `c`.
    pub fn count_flag(s: &Session, c: Critical) -> u64 {
        s.events.iter().filter(|e| e.critical.contains(&c)).count() as u64
    }

    /// One comparison with stats.json: what, the reader's count, stats.json's count.
    pub type Check = (&'static str, u64, u64);

    /// The usage checks every format with recorded usage shares: how many requests carry
    /// usage, the largest and the summed prompt.
    pub fn usage_checks(s: &Session, st: &Value) -> [Check; 3] {
        let usages: Vec<Usage> = s.events.iter().filter_map(|e| e.usage).collect();
        [
            (
                "usage records",
                usages.len() as u64,
                num(st, "usage_records"),
            ),
            (
                "max prompt",
                usages.iter().map(|u| u.prompt_tokens).max().unwrap_or(0),
                num(st, "max_input_tokens"),
            ),
            (
                "sum prompt",
                usages.iter().map(|u| u.prompt_tokens).sum(),
                num(st, "sum_input_tokens"),
            ),
        ]
    }

    /// The one corpus-counts comparison the readers share: every stats.json session entry of
    /// `folder` that `include` accepts is read with `read` (each file once), its session found
    /// (by source `file#fragment`, or the file's only session), checked for event times that
    /// go backwards, and compared with the counts `checks` returns for it. Panics listing every
    /// mismatch; returns how many sessions were compared (callers assert it, so a renamed
    /// folder cannot pass by checking nothing).
    pub fn assert_counts_match_stats(
        folder: &str,
        include: impl Fn(&str) -> bool,
        read: impl Fn(&str, &str) -> Result<Vec<Session>, ReadError>,
        mut checks: impl FnMut(&Value, &Session) -> Vec<Check>,
    ) -> usize {
        let mut problems = Vec::new();
        let mut files: HashMap<String, Vec<Session>> = HashMap::new();
        let mut compared = 0;
        for st in stats_sessions(folder) {
            let name = st
                .get("session")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let rel = name.split_once('#').map_or(name.as_str(), |(r, _)| r);
            if !include(rel) {
                continue;
            }
            if !files.contains_key(rel) {
                match read(rel, &read_corpus(rel)) {
                    Ok(s) => {
                        files.insert(rel.to_string(), s);
                    }
                    Err(e) => {
                        problems.push(e.to_string());
                        continue;
                    }
                }
            }
            let sessions = files.get(rel).map(Vec::as_slice).unwrap_or_default();
            let found = sessions
                .iter()
                .find(|s| s.source == name)
                .or(match sessions {
                    [only] if !name.contains('#') => Some(only),
                    _ => None,
                });
            let Some(s) = found else {
                problems.push(format!(
                    "{name}: no such session among the file's {}",
                    sessions.len()
                ));
                continue;
            };
            compared += 1;
            if s.events.windows(2).any(|w| w[1].timestamp < w[0].timestamp) {
                problems.push(format!("{name}: event times go backwards"));
            }
            for (what, got, want) in checks(&st, s) {
                if got != want {
                    problems.push(format!("{name}: {what} {got}, stats.json says {want}"));
                }
            }
        }
        assert!(problems.is_empty(), "{problems:#?}");
        compared
    }
}
