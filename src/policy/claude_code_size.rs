//! The size Claude Code checks against its auto-compact threshold (issue 43 item 2), as its
//! `cli.js` computes it before each main-loop request (docs/policies.md "What Claude Code compares"):
//! the usage of the last response that reports one, input + cache creation + cache read
//! **+ output**, and, from 2.1.2, a length/4 estimate (`Math.round(length / 4)` per text)
//! of the text, tool results and images of every message after it (2.1.1 adds nothing),
//! and from 2.1.33 of its `attachment` messages ([`ATTACHMENTS_SINCE`]).
//! `compactMetadata.preTokens` is that same figure. A response that reports usage 0 (a
//! third-party endpoint) counts 0: the size stays near 0 until one reports a real usage.
//! A compaction empties the history the CLI holds: the first request after a recorded
//! compaction was checked on the history before it, later ones on the history after it.
//!
//! The transcript often keeps a response's output count from its start (1-13 tokens)
//! while the CLI checked the final one: the final output is then estimated from the
//! recorded content, [`OUTPUT_CHARS_PER_TOKEN`] characters of its text, thinking and tool
//! input JSON a token (fitted on the corpus, docs/validation.md, [`fit_chars_per_token`]).

use crate::policy::claude_code_rule::{parse_version, Version};
use crate::tokens::sizes::SessionSizes;
use crate::transcript::claude_code_attach::ATTACHMENT_MIME;
use crate::transcript::claude_code_settings::result_text;
use crate::transcript::{Event, Part, Session};

/// Characters of a response's text, thinking and tool-input JSON per output token: the
/// ratio estimator over the corpus's Claude Code responses whose recorded output is final
/// (above [`START_OUTPUT_MAX`]); docs/validation.md gives the fit in sample and
/// leave-one-session-out.
pub const OUTPUT_CHARS_PER_TOKEN: f64 = 2.85;
/// The largest output count a transcript keeps from a response's start (1-13 tokens): the
/// fit of [`OUTPUT_CHARS_PER_TOKEN`] reads only responses recording more.
pub const START_OUTPUT_MAX: u64 = 13;
/// From this release the size adds the estimate of the messages after the last usage
/// (`cli.js` 2.1.2; 2.1.1 returns the usage alone).
pub const APPENDED_SINCE: Version = (2, 1, 2);
/// From this release the estimate counts `attachment` messages too, as `Math.round(length /
/// 4)` of their `JSON.stringify` (`cli.js` 2.1.33; 2.1.32 counts user and assistant
/// messages only).
pub const ATTACHMENTS_SINCE: Version = (2, 1, 33);
/// From this release an attachment counts as the user-message content the CLI sends for it
/// (its `normalizeAttachmentForAPI`), estimated like any message (`cli.js` 2.1.45; 2.1.44
/// still its JSON).
pub const ATTACHMENTS_AS_SENT_SINCE: Version = (2, 1, 45);
/// From this release the estimate starts after the last response's first line, not its last
/// (`cli.js` 2.1.64, and 2.1.69-2.1.112; 2.1.67 and 2.1.68 still after its last): the text
/// of its later content blocks counts too (one block a line, as the CLI writes them).
pub const FROM_FIRST_LINE_SINCE: Version = (2, 1, 64);
const FROM_LAST_LINE_AGAIN: [Version; 2] = [(2, 1, 67), (2, 1, 68)];

/// The estimate of a response's own text the CLI counts after its usage in `version`: its
/// text blocks after the first, from [`FROM_FIRST_LINE_SINCE`]; else nothing.
fn own_later_blocks(e: &Event, version: Version) -> u64 {
    if version < FROM_FIRST_LINE_SINCE || FROM_LAST_LINE_AGAIN.contains(&version) {
        return 0;
    }
    e.parts
        .iter()
        .skip(1)
        .map(|p| match p {
            Part::Text { text } => quarter(text),
            _ => 0,
        })
        .sum()
}

/// An image block's estimate: 1,334 tokens, 2,000 from 2.1.39 (2.1.37 still 1,334).
pub const IMAGE_TOKENS: u64 = 1_334;
pub const IMAGE_TOKENS_LATER: u64 = 2_000;
pub const IMAGE_TOKENS_LATER_SINCE: Version = (2, 1, 39);

/// `Math.round(units / 4)` on a JavaScript string's length (UTF-16 code units): every
/// estimate the CLI makes of a text (this size check's, microcompaction's).
pub fn quarter(s: &str) -> u64 {
    (s.encode_utf16().count() as u64 + 2) / 4
}

/// What the CLI's estimate counts of one message after the last usage: its text, its tool
/// results, its images; never tool calls or thinking.
fn appended_estimate(e: &Event, version: Version) -> u64 {
    let image = if version >= IMAGE_TOKENS_LATER_SINCE {
        IMAGE_TOKENS_LATER
    } else {
        IMAGE_TOKENS
    };
    e.parts
        .iter()
        .map(|p| match p {
            Part::Text { text } => quarter(text),
            Part::ToolResponse { response, .. } => match result_text(response) {
                Some(s) => quarter(s),
                None => quarter(&response.to_string()),
            },
            Part::Attachment {
                mime_type,
                text,
                size_bytes,
                ..
            } if mime_type.as_deref() == Some(ATTACHMENT_MIME) => {
                if version >= ATTACHMENTS_AS_SENT_SINCE {
                    text.as_deref().map_or(0, quarter)
                } else if version >= ATTACHMENTS_SINCE {
                    // `size_bytes` is its JSON's length in UTF-16 code units
                    (size_bytes.unwrap_or(0) + 2) / 4
                } else {
                    0
                }
            }
            Part::Attachment { mime_type, .. } => {
                if mime_type.as_deref().is_some_and(|m| m.starts_with("image")) {
                    image
                } else {
                    0
                }
            }
            Part::ToolCall { .. } | Part::Thought { .. } => 0,
        })
        .sum()
}

/// Characters (UTF-16 code units) of a response's text, thinking and tool-input JSON.
pub fn response_chars(e: &Event) -> u64 {
    e.parts
        .iter()
        .map(|p| match p {
            Part::Text { text } | Part::Thought { text } => text.encode_utf16().count() as u64,
            Part::ToolCall { args, .. } => args.to_string().encode_utf16().count() as u64,
            _ => 0,
        })
        .sum()
}

/// A response's final output tokens: the larger of the recorded count and the estimate from
/// its content at `chars_per_token`. The recorded count is never above the final one (the
/// transcript keeps the count of the response's start, 1-13 tokens, or one from mid-stream:
/// 25 where the CLI held 145 in the corpus), so a larger estimate replaces it.
pub fn final_output(e: &Event, chars_per_token: f64) -> u64 {
    let recorded = e.usage.map_or(0, |u| u.output_tokens);
    let estimate = (response_chars(e) as f64 / chars_per_token).round() as u64;
    recorded.max(estimate)
}

/// The CLI version whose size rule applies (the session's recorded one; the latest read
/// rule's when none parses).
fn version_of(session: &Session) -> Version {
    crate::policy::claude_code::session_version(session)
        .and_then(|v| parse_version(&v))
        .unwrap_or((2, 1, 50))
}

/// Per event: the size Claude Code checked before it, for each model request (`None` on
/// other events). Only a full compaction of the file empties the history it is taken on; a
/// microcompaction keeps the responses and their usage.
pub fn checked_sizes(session: &Session) -> Vec<Option<u64>> {
    let version = version_of(session);
    let estimates = version >= APPENDED_SINCE;
    let mut starts: Vec<usize> = session
        .recorded_compactions
        .iter()
        .filter(|c| c.is_full_in_file())
        .map(|c| c.at_event)
        .collect();
    starts.sort_unstable();
    let mut out = vec![None; session.events.len()];
    // the last usage (with its final output) in the history held, and the estimate since
    let mut last: Option<u64> = None;
    let mut appended = 0u64;
    // the size checked before the compaction that emptied the history, for the first
    // request after it
    let mut before_compaction: Option<u64> = None;
    let mut next = starts.iter().peekable();
    for (k, e) in session.events.iter().enumerate() {
        while next.next_if(|&&s| s <= k).is_some() {
            let held = last.unwrap_or(0) + appended;
            before_compaction = before_compaction.or(Some(held));
            last = None;
            appended = 0;
        }
        let with_usage = e.model_request && e.usage.is_some();
        if e.model_request {
            out[k] = Some(
                before_compaction
                    .take()
                    .unwrap_or(last.unwrap_or(0) + appended),
            );
        }
        if with_usage {
            let u = e.usage.unwrap_or_default();
            last = Some(u.prompt_tokens + final_output(e, OUTPUT_CHARS_PER_TOKEN));
            appended = own_later_blocks(e, version);
        } else if estimates {
            appended += appended_estimate(e, version);
        }
    }
    out
}

/// Per model request of `sizes` (replay order): its event and the size Claude Code checked
/// before it ([`checked_sizes`]), as `measured::measured_context` gives other frameworks'
/// contexts; `None` for a session that is not Claude Code's or records no usage.
pub fn checked_context(session: &Session, sizes: &SessionSizes) -> Option<Vec<(u32, u64)>> {
    let is_cc = crate::transcript::claude_code_settings::settings_of(session).is_some();
    if !is_cc || session.events.iter().all(|e| e.usage.is_none()) {
        return None;
    }
    let checked = checked_sizes(session);
    let base = sizes
        .baseline
        .get_or_init(|| crate::engine::contents::baseline(sizes));
    Some(
        base.request_event
            .iter()
            .map(|&k| (k, checked.get(k as usize).copied().flatten().unwrap_or(0)))
            .collect(),
    )
}

/// One response whose recorded output is final: (characters, output tokens).
pub fn final_responses(session: &Session) -> Vec<(u64, u64)> {
    session
        .events
        .iter()
        .filter(|e| e.model_request)
        .filter_map(|e| e.usage.map(|u| (response_chars(e), u.output_tokens)))
        .filter(|&(_, out)| out > START_OUTPUT_MAX)
        .collect()
}

/// Characters per output token over `responses` (the ratio estimator, Σ chars / Σ tokens);
/// `None` without any.
pub fn fit_chars_per_token(responses: &[(u64, u64)]) -> Option<f64> {
    let chars: u64 = responses.iter().map(|r| r.0).sum();
    let tokens: u64 = responses.iter().map(|r| r.1).sum();
    (tokens > 0).then(|| chars as f64 / tokens as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::{
        ClaudeCodeSettings, Format, PolicyRule, RecordedCompaction, RecordedPolicy, Role, Usage,
    };

    fn cc(version: &str, events: Vec<Event>) -> Session {
        let mut s = Session::new("s", "s.jsonl", Format::ClaudeCode, events);
        s.recorded_policy = Some(RecordedPolicy {
            source: "claude-code version".into(),
            versions: vec![version.into()],
            rule: PolicyRule::ClaudeCodeAuto {
                settings: ClaudeCodeSettings::default(),
            },
        });
        s
    }

    fn response(prompt: u64, output: u64, text: &str) -> Event {
        let mut e = Event::new("claude", Role::Model, "i", 0.0);
        e.model_request = true;
        e.usage = Some(Usage {
            prompt_tokens: prompt,
            output_tokens: output,
            ..Default::default()
        });
        e.parts.push(Part::Text { text: text.into() });
        e
    }

    fn result(chars: usize) -> Event {
        let mut e = Event::new("claude", Role::User, "i", 0.0);
        e.parts.push(Part::ToolResponse {
            id: Some("t".into()),
            name: "Bash".into(),
            response: serde_json::Value::String("x".repeat(chars)),
        });
        e
    }

    /// The size checked is the last usage with its output, plus from 2.1.2 the rounded
    /// length/4 of what came after it (2.1.1: the usage alone).
    #[test]
    fn claude_code_checks_the_last_usage_with_output_plus_appended_estimate() {
        let events = vec![response(1_000, 200, "a"), result(4_002), response(0, 0, "")];
        let s = cc("2.1.39", events.clone());
        assert_eq!(checked_sizes(&s)[2], Some(1_000 + 200 + 1_001));
        let s = cc("2.1.1", events);
        assert_eq!(checked_sizes(&s)[2], Some(1_200));
    }

    /// A recorded output of a response's start (or from mid-stream) is replaced by the
    /// estimate from its content, [`OUTPUT_CHARS_PER_TOKEN`] characters a token; a recorded
    /// count above the estimate is kept.
    #[test]
    fn a_start_output_count_is_estimated_from_the_response() {
        let text = "y".repeat(2_850);
        let e = response(1_000, 3, &text);
        assert_eq!(final_output(&e, OUTPUT_CHARS_PER_TOKEN), 1_000);
        let e = response(1_000, 1_400, &text);
        assert_eq!(final_output(&e, OUTPUT_CHARS_PER_TOKEN), 1_400);
        // the size checked after it carries the estimate
        let s = cc("2.1.39", vec![e.clone(), result(0), response(0, 0, "")]);
        assert_eq!(checked_sizes(&s)[2], Some(1_000 + 1_400));
        let s = cc(
            "2.1.39",
            vec![response(1_000, 3, &text), response(0, 0, "")],
        );
        assert_eq!(checked_sizes(&s)[1], Some(2_000));
    }

    /// A third-party endpoint that reports usage 0 keeps the size near 0 (the estimate of
    /// what came since) until a response reports a real usage.
    #[test]
    fn zero_usage_responses_keep_the_checked_size_near_zero() {
        let events = vec![
            response(0, 0, ""),
            result(400),
            response(0, 0, ""),
            result(400),
            response(150_000, 500, ""),
            result(400),
            response(0, 0, ""),
        ];
        let got = checked_sizes(&cc("2.1.39", events));
        assert_eq!(got[2], Some(100));
        assert_eq!(got[4], Some(100));
        assert_eq!(got[6], Some(150_600));
    }

    /// A response of 160,000 prompt tokens and its 40,000-char result, one of 9,000 and its
    /// 400-char result, then a request.
    fn two_rounds() -> Vec<Event> {
        vec![
            response(160_000, 500, ""),
            result(40_000),
            response(9_000, 100, ""),
            result(400),
            response(0, 0, ""),
        ]
    }

    /// The first request after a compaction was checked on the history before it; later
    /// ones on the history after it.
    #[test]
    fn the_request_after_a_compaction_carries_the_size_before_it() {
        let mut s = cc("2.1.39", two_rounds());
        s.recorded_compactions
            .push(RecordedCompaction::new(2, "claude-code compact_boundary"));
        let got = checked_sizes(&s);
        assert_eq!(got[2], Some(170_500));
        assert_eq!(got[4], Some(9_200));
    }

    /// A microcompaction clears old tool results but keeps the responses and their usage, so
    /// the size the CLI checks does not start again after it (a resumed file's opening
    /// record neither): the request after it carries the last usage plus what came since,
    /// the result after the boundary included.
    #[test]
    fn a_microcompaction_does_not_empty_the_checked_history() {
        let mut s = cc("2.1.39", two_rounds());
        let mut micro = RecordedCompaction::new(3, "claude-code microcompact_boundary");
        micro.kind = crate::transcript::CompactionKind::Micro;
        s.recorded_compactions.push(micro);
        let got = checked_sizes(&s);
        assert_eq!(got[2], Some(170_500));
        assert_eq!(got[4], Some(9_200));
    }

    /// A hand-made session of CLI `version` (the shapes `cli.js` writes; no corpus file has
    /// one): a response, two `attachment` records (a prompt hook's output, which the CLI
    /// sends, and a tool hook's, which it never sends), the next request. Returns the
    /// session and the two attachments' JSON.
    fn with_attachments(version: &str) -> (Session, [String; 2]) {
        let sent = format!(
            r#"{{"type":"hook_success","hookName":"UserPromptSubmit","toolUseID":"t1","hookEvent":"UserPromptSubmit","content":"{}"}}"#,
            "c".repeat(398)
        );
        let silent = format!(
            r#"{{"type":"hook_success","hookName":"PostToolUse:Bash","toolUseID":"t2","hookEvent":"PostToolUse","content":"","stdout":"{}"}}"#,
            "s".repeat(801)
        );
        let head = format!(r#""sessionId":"s","version":"{version}","cwd":"/w""#);
        let lines = [
            format!(
                r#"{{"type":"user","uuid":"u0",{head},"timestamp":"2026-01-01T00:00:00Z","message":{{"role":"user","content":"go"}}}}"#
            ),
            format!(
                r#"{{"type":"assistant","uuid":"a1",{head},"requestId":"r1","timestamp":"2026-01-01T00:00:01Z","message":{{"id":"m1","model":"claude-opus-4-5","role":"assistant","content":[{{"type":"text","text":"ok"}}],"usage":{{"input_tokens":1000,"output_tokens":200}}}}}}"#
            ),
            format!(
                r#"{{"type":"attachment","uuid":"x1",{head},"timestamp":"2026-01-01T00:00:02Z","attachment":{sent}}}"#
            ),
            format!(
                r#"{{"type":"attachment","uuid":"x2",{head},"timestamp":"2026-01-01T00:00:03Z","attachment":{silent}}}"#
            ),
            format!(
                r#"{{"type":"assistant","uuid":"a2",{head},"requestId":"r2","timestamp":"2026-01-01T00:00:04Z","message":{{"id":"m2","model":"claude-opus-4-5","role":"assistant","content":[{{"type":"text","text":"ok"}}],"usage":{{"input_tokens":1500,"output_tokens":200}}}}}}"#
            ),
        ];
        let s = crate::transcript::claude_code::read("s.jsonl", &lines.join("\n"))
            .expect("reads")
            .remove(0);
        (s, [sent, silent])
    }

    /// From 2.1.33 the size checked adds `Math.round(JSON.stringify(attachment).length / 4)`
    /// of each attachment after the last response, sent or not; from 2.1.45 the content the
    /// CLI sends for it (a tool hook's output: nothing); 2.1.32 counts none.
    #[test]
    fn an_attachment_after_the_last_response_counts_in_the_checked_size_from_2_1_33() {
        let request = |s: &Session| {
            let k = s.events.iter().rposition(|e| e.model_request).expect("r2");
            checked_sizes(s)[k]
        };
        let (s, [sent, silent]) = with_attachments("2.1.32");
        assert_eq!(request(&s), Some(1_200));
        for v in ["2.1.33", "2.1.37", "2.1.44"] {
            let (s, _) = with_attachments(v);
            let json = (sent.len() as u64 + 2) / 4 + (silent.len() as u64 + 2) / 4;
            assert_eq!(request(&s), Some(1_200 + json), "{v}");
        }
        // what is sent: the hook's name and output (less the CLI's wording)
        let (s, _) = with_attachments("2.1.50");
        let shown = ("UserPromptSubmit\n".len() as u64 + 398 + 2) / 4;
        assert_eq!(request(&s), Some(1_200 + shown));
    }

    /// From 2.1.64 (not 2.1.67-2.1.68) the estimate starts after the last response's first
    /// content block: its later text blocks count too.
    #[test]
    fn a_responses_later_text_blocks_count_from_2_1_64() {
        let mut r = response(1_000, 1_000, &"a".repeat(400));
        r.parts.push(Part::Text {
            text: "b".repeat(800),
        });
        let events = vec![r, response(0, 0, "")];
        for (v, extra) in [
            ("2.1.63", 0),
            ("2.1.64", 200),
            ("2.1.68", 0),
            ("2.1.69", 200),
        ] {
            assert_eq!(
                checked_sizes(&cc(v, events.clone()))[1],
                Some(2_000 + extra),
                "{v}"
            );
        }
    }

    /// The corpus's Claude Code sessions, read.
    fn corpus_sessions() -> Vec<Session> {
        let root = crate::transcript::readutil::testutil::corpus();
        let mut files = Vec::new();
        for dir in ["claude_code_spotter", "real_compactions/claude_code"] {
            let d = root.join(dir);
            let entries = std::fs::read_dir(&d).unwrap_or_else(|e| {
                panic!("the recorded corpus is missing at {}: {e}", d.display())
            });
            for e in entries.flatten() {
                let p = e.path();
                if p.extension().is_some_and(|x| x == "jsonl") {
                    files.push(p);
                }
            }
        }
        files.sort();
        files
            .iter()
            .flat_map(|p| {
                let text = std::fs::read_to_string(p).expect("readable");
                crate::transcript::claude_code::read(&p.display().to_string(), &text)
                    .expect("a Claude Code session")
            })
            .collect()
    }

    /// Median |estimate − recorded| / recorded over `responses` at `k`, %.
    fn median_error(responses: &[(u64, u64)], k: f64) -> f64 {
        let mut e: Vec<f64> = responses
            .iter()
            .map(|&(c, o)| ((c as f64 / k) - o as f64).abs() / o as f64 * 100.0)
            .collect();
        e.sort_by(f64::total_cmp);
        e[e.len() / 2]
    }

    /// The final-output estimate's figure: fitted on the corpus's final responses (in
    /// sample) and per session on the others (leave-one-session-out), the shipped
    /// [`OUTPUT_CHARS_PER_TOKEN`] is within 3 % of every fit, and the held-out error is no
    /// worse than 1.1x the in-sample one. Prints both (docs/validation.md).
    #[test]
    fn output_estimate_holds_leave_one_session_out() {
        let sessions: Vec<Vec<(u64, u64)>> = corpus_sessions()
            .iter()
            .map(final_responses)
            .filter(|r| !r.is_empty())
            .collect();
        assert!(sessions.len() >= 10, "{} sessions", sessions.len());
        let all: Vec<(u64, u64)> = sessions.iter().flatten().copied().collect();
        let k = fit_chars_per_token(&all).expect("fit");
        let in_sample = median_error(&all, k);
        let mut held_out = Vec::new();
        let mut ks = Vec::new();
        for i in 0..sessions.len() {
            let others: Vec<(u64, u64)> = sessions
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .flat_map(|(_, r)| r.iter().copied())
                .collect();
            let ki = fit_chars_per_token(&others).expect("fit");
            ks.push(ki);
            held_out.extend(
                sessions[i]
                    .iter()
                    .map(|&(c, o)| ((c as f64 / ki) - o as f64).abs() / o as f64 * 100.0),
            );
        }
        held_out.sort_by(f64::total_cmp);
        let loso = held_out[held_out.len() / 2];
        let (lo, hi) = ks
            .iter()
            .fold((f64::MAX, 0f64), |(a, b), &x| (a.min(x), b.max(x)));
        println!(
            "chars/token: in sample {k:.3} ({} responses, {} sessions), median |error| \
             {in_sample:.1} %; leave-one-session-out k {lo:.3}-{hi:.3}, median |error| {loso:.1} %",
            all.len(),
            sessions.len()
        );
        for ki in ks.iter().chain([&k]) {
            assert!((OUTPUT_CHARS_PER_TOKEN / ki - 1.0).abs() < 0.03, "{ki}");
        }
        assert!(loso <= in_sample * 1.1, "{loso} vs {in_sample}");
    }
}
