//! compaction-sim's own canonical JSONL: every other format converts to it
//! (`inspect --emit jsonl`), and it reads back into the same [`Session`].
//!
//! A file holds one or more sessions. Each starts with a header line
//! `{"compaction_sim":1,"session":{"id":…,"format_of_origin":…,"source":…,"model":…,
//! "synthetic_timestamps":…,"recorded_compactions":[…]}}`, followed by one [`Event`] per line
//! exactly as serde serialises it. Blank lines are ignored. See docs/formats.md "Canonical JSONL".

use serde::{Deserialize, Serialize};

use super::{
    readutil, util, Event, Format, ReadError, RecordedCompaction, RecordedPolicy, Session, Usage,
};

/// The schema version written in every header.
pub const VERSION: u64 = 1;

#[derive(Serialize, Deserialize)]
struct Header {
    compaction_sim: u64,
    session: HeaderSession,
}

#[derive(Serialize, Deserialize)]
struct HeaderSession {
    id: String,
    /// The format the session was first read from; `canonical` when written by hand.
    #[serde(default = "canonical_format")]
    format_of_origin: Format,
    /// The file it was first read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    #[serde(default)]
    synthetic_timestamps: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    approval_policies: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    recorded_compactions: Vec<RecordedCompaction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    recorded_policy: Option<RecordedPolicy>,
}

fn canonical_format() -> Format {
    Format::Canonical
}

/// True when the first non-blank line is a canonical header.
pub fn sniff(text: &str) -> bool {
    util::scan::first_line_keys(text).is_some_and(|k| k.iter().any(|k| k == "compaction_sim"))
}

/// Write one session as canonical JSONL (header line, then one event per line, each ending
/// in `\n`). Same session → same bytes.
pub fn write_canonical(s: &Session) -> String {
    let header = Header {
        compaction_sim: VERSION,
        session: HeaderSession {
            id: s.id.clone(),
            format_of_origin: s.format,
            source: Some(s.source.clone()),
            model: s.model.clone(),
            synthetic_timestamps: s.synthetic_timestamps,
            approval_policies: s.approval_policies.clone(),
            recorded_compactions: s.recorded_compactions.clone(),
            recorded_policy: s.recorded_policy.clone(),
        },
    };
    let mut out = String::new();
    // Serialising these plain structs cannot fail (string keys, finite or null floats).
    out.push_str(&serde_json::to_string(&header).unwrap_or_default());
    out.push('\n');
    for e in &s.events {
        // NaN / Infinity / big integers go back to the bare literals they were read from
        // (reading the file again tags them again, see `pyjson`).
        let line = serde_json::to_string(e).unwrap_or_default();
        out.push_str(&super::pyjson::untag_json_text(&line));
        out.push('\n');
    }
    out
}

struct Pending {
    session: Session,
    /// Line number of each event, for errors.
    lines: Vec<usize>,
}

/// Read canonical JSONL. A session keeps the format it was first read from
/// (`format_of_origin`), so per-format views still work after conversion; `source` is this
/// file (plus `#id` when it holds several sessions).
pub fn read(file: &str, text: &str) -> Result<Vec<Session>, ReadError> {
    let mut done: Vec<Pending> = Vec::new();
    let mut cur: Option<Pending> = None;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        let is_header = t.contains("\"compaction_sim\"")
            && util::scan::top_keys(t).is_some_and(|k| k.iter().any(|k| k == "compaction_sim"));
        if is_header {
            let h: Header = serde_json::from_str(t).map_err(|e| line_error(file, n, &e))?;
            if h.compaction_sim != VERSION {
                return Err(ReadError::new(
                    file,
                    format!("line {n}"),
                    format!(
                        "unsupported canonical version {} (this build reads {VERSION})",
                        h.compaction_sim
                    ),
                ));
            }
            if let Some(p) = cur.take() {
                done.push(p);
            }
            cur = Some(Pending {
                session: Session {
                    id: h.session.id,
                    source: h.session.source.unwrap_or_default(),
                    format: h.session.format_of_origin,
                    events: Vec::new(),
                    recorded_compactions: h.session.recorded_compactions,
                    model: h.session.model,
                    synthetic_timestamps: h.session.synthetic_timestamps,
                    approval_policies: h.session.approval_policies,
                    recorded_policy: h.session.recorded_policy,
                    notes: Vec::new(),
                    timing_adjusted_s: None,
                },
                lines: Vec::new(),
            });
            continue;
        }
        let Some(p) = cur.as_mut() else {
            return Err(ReadError::new(
                file,
                format!("line {n}"),
                "wrong shape: expected a {\"compaction_sim\":1,…} header before the first event",
            ));
        };
        let e: Event = serde_json::from_str(t)
            .map_err(|e| usage_error(file, n, t).unwrap_or_else(|| line_error(file, n, &e)))?;
        if e.usage.as_ref().and_then(Usage::over_limit).is_some() {
            if let Some(err) = usage_error(file, n, t) {
                return Err(err);
            }
        }
        p.session.events.push(e);
        p.lines.push(n);
    }
    if let Some(p) = cur.take() {
        done.push(p);
    }
    if done.is_empty() {
        return Err(ReadError::new(file, "", "empty file: no canonical header"));
    }
    let many = done.len() > 1;
    let mut out = Vec::with_capacity(done.len());
    for mut p in done {
        util::validate_events(file, &p.session.events, |i| {
            format!("line {}", p.lines.get(i).copied().unwrap_or(0))
        })?;
        for c in &p.session.recorded_compactions {
            let n = p.session.events.len();
            if let Some(e) = c.cleared.iter().find(|&&e| e >= n) {
                return Err(ReadError::new(
                    file,
                    format!("session {}", p.session.id),
                    format!("recorded microcompaction clears event {e} beyond the {n} events"),
                ));
            }
            if c.at_event > p.session.events.len() {
                return Err(ReadError::new(
                    file,
                    format!("session {}", p.session.id),
                    format!(
                        "recorded compaction at event {} beyond the {} events",
                        c.at_event,
                        p.session.events.len()
                    ),
                ));
            }
        }
        p.session.source = if many {
            format!("{file}#{}", p.session.id)
        } else {
            file.to_string()
        };
        out.push(p.session);
    }
    Ok(out)
}

/// The first `usage` field of event line `t` that is not a token count, as an error naming
/// it (serde's own message names only the column).
fn usage_error(file: &str, n: usize, t: &str) -> Option<ReadError> {
    let v: serde_json::Value = serde_json::from_str(t).ok()?;
    let usage = v.get("usage")?.as_object()?;
    usage.iter().find_map(|(k, x)| {
        util::token_count(x)
            .err()
            .map(|m| ReadError::new(file, format!("line {n}"), format!("usage.{k}: {}", m.0)))
    })
}

fn line_error(file: &str, n: usize, e: &serde_json::Error) -> ReadError {
    if e.is_eof() {
        return ReadError::new(file, format!("line {n}"), readutil::json_error(e));
    }
    let mut r = util::json_error(file, e);
    r.location = format!("line {n} column {}", e.column());
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::{Critical, Format, Part, Role, Usage};

    fn sample() -> Session {
        let mut u = Event::new("user", Role::User, "inv-1", 10.5);
        u.parts.push(Part::Text {
            text: "yes \"quoted\" ünïcode".into(),
        });
        u.critical.push(Critical::Confirmation);
        let mut m = Event::new("agent", Role::Model, "inv-1", 11.25);
        m.model_request = true;
        m.usage = Some(Usage {
            prompt_tokens: 120,
            cached_read_tokens: 100,
            cache_write_tokens: 0,
            output_tokens: 7,
        });
        m.parts.push(Part::Thought { text: "hmm".into() });
        m.parts.push(Part::ToolCall {
            id: Some("c1".into()),
            name: "f".into(),
            args: serde_json::json!({"z": 1, "a": [1.5, null]}),
        });
        let mut t = Event::new("agent", Role::User, "inv-1", 11.25);
        t.parts.push(Part::ToolResponse {
            id: Some("c1".into()),
            name: "f".into(),
            response: serde_json::json!("ok"),
        });
        m.isolation_scope = Some("task1".into());
        t.rewind_before_invocation_id = Some("inv-0".into());
        Session {
            recorded_compactions: vec![RecordedCompaction {
                at_event: 2,
                source: "claude-code compact_boundary".into(),
                trigger: Some("auto".into()),
                pre_tokens: Some(170_000),
                start_timestamp: None,
                end_timestamp: None,
                summary: "sum".into(),
                ..RecordedCompaction::new(0, "")
            }],
            model: Some("m".into()),
            approval_policies: vec!["on-request".into()],
            ..Session::new("s1", "orig.jsonl", Format::ClaudeCode, vec![u, m, t])
        }
    }

    #[test]
    fn round_trips_a_session_byte_for_byte() {
        let s = sample();
        let text = write_canonical(&s);
        assert!(sniff(&text));
        assert!(text.starts_with("{\"compaction_sim\":1,"));
        assert_eq!(text.lines().count(), 4);
        // ADK 2.13 fields are carried (and the replay reads them back)
        assert!(text.contains(r#""isolation_scope":"task1""#), "{text}");
        assert!(
            text.contains(r#""rewind_before_invocation_id":"inv-0""#),
            "{text}"
        );
        let back = read("x.jsonl", &text).unwrap();
        assert_eq!(back.len(), 1);
        let mut expect = s.clone();
        expect.source = "x.jsonl".into();
        assert_eq!(back[0], expect);
        assert_eq!(
            write_canonical(&back[0]).replace("x.jsonl", "orig.jsonl"),
            text
        );
    }

    /// A microcompaction's fields round-trip; one that clears an event the session does not
    /// hold is refused in one line naming the session (the replay would index past the end).
    #[test]
    fn a_microcompaction_round_trips_and_one_clearing_past_the_events_is_refused() {
        let mut s = sample();
        let mut c = RecordedCompaction::new(2, "claude-code microcompact_boundary");
        c.kind = crate::transcript::CompactionKind::Micro;
        c.cleared = vec![1];
        c.cleared_ids = vec!["t1".into()];
        c.tokens_saved = Some(20_000);
        s.recorded_compactions.push(c);
        let text = write_canonical(&s);
        let back = read("x.jsonl", &text).unwrap();
        assert_eq!(back[0].recorded_compactions, s.recorded_compactions);
        s.recorded_compactions[1].cleared = vec![99];
        let e = read("x.jsonl", &write_canonical(&s))
            .unwrap_err()
            .to_string();
        assert!(e.contains("clears event 99 beyond the 3 events"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }

    /// NaN / big integers are written back as the bare literals they were read from, and read
    /// again to the same tagged values.
    #[test]
    fn python_only_numbers_round_trip() {
        let mut s = sample();
        let args = "{\"a\": [NaN, -Infinity, 123456789012345678901234567890]}";
        let args: serde_json::Value =
            serde_json::from_str(&crate::transcript::pyjson::normalize("t", args).unwrap())
                .unwrap();
        s.events[1].parts.push(Part::ToolCall {
            id: Some("n".into()),
            name: "f".into(),
            args,
        });
        let text = write_canonical(&s);
        assert!(
            text.contains(r#"{"a":[NaN,-Infinity,123456789012345678901234567890]}"#),
            "{text}"
        );
        assert!(!text.contains(crate::transcript::pyjson::TAG));
        let back = crate::transcript::detect::read_as(Format::Canonical, "x.jsonl", &text).unwrap();
        let mut expect = s.clone();
        expect.source = "x.jsonl".into();
        assert_eq!(back[0], expect);
    }

    #[test]
    fn several_sessions_and_bad_lines() {
        let s = sample();
        let mut s2 = sample();
        s2.id = "s2".into();
        let text = format!("{}\n{}", write_canonical(&s), write_canonical(&s2));
        let back = read("x.jsonl", &text).unwrap();
        assert_eq!(
            back.iter().map(|s| s.source.as_str()).collect::<Vec<_>>(),
            ["x.jsonl#s1", "x.jsonl#s2"]
        );

        let e = read("x.jsonl", "{\"author\":\"u\"}\n").unwrap_err();
        assert!(
            e.to_string().starts_with("x.jsonl: line 1: wrong shape"),
            "{e}"
        );
        let written = write_canonical(&s);
        let mut lines: Vec<&str> = written.lines().collect();
        lines.swap(1, 2); // model event (t=11.25) before the user event (t=10.5)
        let e = read("x.jsonl", &lines.join("\n")).unwrap_err();
        assert_eq!(e.location, "line 3");
        assert!(e.message.contains("out of order"), "{e}");
        let lines: Vec<&str> = written.lines().collect();
        // A response without its call is read, as ADK reads it, and counted.
        let back = read("x.jsonl", &[lines[0], lines[1], lines[3]].join("\n")).unwrap();
        assert_eq!(util::orphan_responses(&back[0].events), 1);
        let e = read(
            "x.jsonl",
            "{\"compaction_sim\":2,\"session\":{\"id\":\"a\"}}",
        )
        .unwrap_err();
        assert!(e.message.contains("unsupported canonical version 2"), "{e}");
    }

    #[test]
    fn the_readme_example_reads() {
        // The example in docs/formats.md (it was in the README before the docs moved).
        let readme = include_str!("../../docs/formats.md");
        let sec = &readme[readme.find("## Canonical JSONL").expect("section")..];
        let start = sec.find("```json\n").expect("example") + 8;
        let end = start + sec[start..].find("```").expect("end");
        let s = &read("ex.jsonl", &sec[start..end]).expect("docs/formats.md example parses")[0];
        assert_eq!(s.format, Format::ClaudeCode);
        assert_eq!(s.events.len(), 3);
        assert_eq!(s.recorded_compactions[0].pre_tokens, Some(170_000));
        let u = s.events[1].usage.expect("usage");
        assert_eq!(
            u.prompt_tokens,
            3 + u.cached_read_tokens + u.cache_write_tokens
        );
    }
}
