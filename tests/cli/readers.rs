//! Readers against the real corpus (counts checked against `shared/corpus/stats.json`, which
//! was computed independently with python3) and canonical round trips. Damaged files are
//! the `mutations` module's.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use compaction_sim::transcript::detect::{detect, load_file, load_paths, read_as};
use compaction_sim::transcript::{canonical, Critical, Format, Part, Role, Session};
use serde_json::Value;

use crate::common::corpus;

fn stats() -> Value {
    let text = std::fs::read_to_string(corpus().join("stats.json")).expect("stats.json");
    serde_json::from_str(&text).expect("stats.json parses")
}

/// stats.json's per-session rows of a folder, keyed by their `session` name.
fn stat_rows(folder: &str) -> BTreeMap<String, Value> {
    let s = stats();
    let rows = s[folder]["sessions"].as_array().expect("sessions").clone();
    rows.into_iter()
        .map(|r| (r["session"].as_str().unwrap().to_string(), r))
        .collect()
}

fn load_folder(folder: &str) -> Vec<Session> {
    let dir = corpus().join(folder);
    let l = load_paths(&[dir.to_string_lossy().into_owned()], None);
    assert!(
        l.skipped.is_empty(),
        "unexpected bad files: {:?}",
        l.skipped.iter().map(|e| e.to_string()).collect::<Vec<_>>()
    );
    l.sessions
}

/// Counts a reader's output the way stats.json counts the source.
#[derive(Debug, Default, PartialEq)]
struct Counts {
    events: u64,
    user_turns: u64,
    model_requests: u64,
    tool_calls: u64,
    tool_results: u64,
    usage_records: u64,
    sum_prompt: u64,
    sum_output: u64,
    max_prompt: u64,
    confirmations: u64,
    refusals: u64,
    max_tool_result_chars: u64,
}

fn counts(s: &Session) -> Counts {
    let mut c = Counts::default();
    let mut invs = BTreeSet::new();
    for e in &s.events {
        c.events += 1;
        if e.role == Role::User
            && e.author == "user"
            && e.parts.iter().any(|p| matches!(p, Part::Text { .. }))
        {
            invs.insert(e.invocation_id.clone());
        }
        if e.model_request {
            c.model_requests += 1;
        }
        if let Some(u) = e.usage {
            c.usage_records += 1;
            c.sum_prompt += u.prompt_tokens;
            c.sum_output += u.output_tokens;
            c.max_prompt = c.max_prompt.max(u.prompt_tokens);
        }
        for p in &e.parts {
            match p {
                Part::ToolCall { .. } => c.tool_calls += 1,
                Part::ToolResponse { response, .. } => {
                    c.tool_results += 1;
                    if let Value::String(s) = response {
                        c.max_tool_result_chars =
                            c.max_tool_result_chars.max(s.chars().count() as u64);
                    }
                }
                _ => {}
            }
        }
        for f in &e.critical {
            match f {
                Critical::Approval | Critical::Confirmation => c.confirmations += 1,
                Critical::Refusal => c.refusals += 1,
                _ => {}
            }
        }
    }
    c.user_turns = invs.len() as u64;
    c
}

fn n(v: &Value, k: &str) -> u64 {
    v[k].as_u64()
        .unwrap_or_else(|| panic!("stats field {k} in {v}"))
}

#[test]
fn tau_bench_matches_stats() {
    let sessions = load_folder("tau_bench");
    let rows = stat_rows("tau_bench");
    assert_eq!(sessions.len(), 200);
    assert_eq!(rows.len(), 200);
    for s in &sessions {
        assert_eq!(s.format, Format::OpenaiChat);
        let frag = s.source.rsplit_once('#').unwrap().1;
        let key = format!("gpt-4o-airline.json#{frag}");
        let r = &rows[&key];
        let c = counts(s);
        assert_eq!(c.events, n(r, "events"), "{key}");
        assert_eq!(c.user_turns, n(r, "user_turns"), "{key}");
        assert_eq!(c.model_requests, n(r, "assistant_turns"), "{key}");
        assert_eq!(c.tool_calls, n(r, "tool_calls"), "{key}");
        assert_eq!(c.tool_results, n(r, "tool_results"), "{key}");
        assert_eq!(c.confirmations, n(r, "approvals_or_confirmations"), "{key}");
        assert_eq!(c.refusals, n(r, "rejections_or_refusals"), "{key}");
        assert_eq!(
            c.max_tool_result_chars,
            n(r, "max_tool_result_chars"),
            "{key}"
        );
        assert!(s.synthetic_timestamps);
        assert!(s.events.windows(2).all(|w| w[0].timestamp < w[1].timestamp));
    }
}

#[test]
fn tau2_matches_stats() {
    let sessions = load_folder("tau2_oscaralvaro_fork");
    let rows = stat_rows("tau2_oscaralvaro_fork");
    assert_eq!(sessions.len(), 184);
    let mut seen = BTreeSet::new();
    for s in &sessions {
        assert_eq!(s.format, Format::Tau2);
        let (file, frag) = s.source.rsplit_once('#').unwrap();
        let name = Path::new(file).file_name().unwrap().to_string_lossy();
        let key = format!("{name}#{frag}");
        assert!(seen.insert(key.clone()), "duplicate {key}");
        let r = &rows[&key];
        let c = counts(s);
        assert_eq!(c.events, n(r, "events"), "{key}");
        assert_eq!(c.user_turns, n(r, "user_turns"), "{key}");
        assert_eq!(c.model_requests, n(r, "assistant_turns"), "{key}");
        assert_eq!(c.tool_calls, n(r, "tool_calls"), "{key}");
        assert_eq!(c.tool_results, n(r, "tool_results"), "{key}");
        assert_eq!(c.usage_records, n(r, "usage_records"), "{key}");
        assert_eq!(c.sum_prompt, n(r, "sum_input_tokens"), "{key}");
        assert_eq!(c.max_prompt, n(r, "max_input_tokens"), "{key}");
        assert_eq!(c.confirmations, n(r, "approvals_or_confirmations"), "{key}");
        assert_eq!(c.refusals, n(r, "rejections_or_refusals"), "{key}");
        assert_eq!(
            c.max_tool_result_chars,
            n(r, "max_tool_result_chars"),
            "{key}"
        );
        // Zone-less times are read as UTC, as stats.json did.
        let first = r["first_ts"].as_f64().unwrap();
        assert!(
            (s.events[0].timestamp - first).abs() < 1e-3,
            "{key}: {} vs {first}",
            s.events[0].timestamp
        );
        let last = r["last_ts"].as_f64().unwrap();
        assert!(
            (s.events.last().unwrap().timestamp - last).abs() < 1e-3,
            "{key}"
        );
    }
    assert_eq!(seen.len(), rows.len());
}

#[test]
fn gemini_cli_matches_stats() {
    let sessions = load_folder("agentcmd_cli_sessions/gemini");
    let rows = stat_rows("agentcmd_cli_sessions/gemini");
    assert_eq!(sessions.len(), rows.len());
    for s in &sessions {
        assert_eq!(s.format, Format::GeminiCli);
        let idx = s.source.find("agentcmd_cli_sessions/").unwrap();
        let key = &s.source[idx..];
        let r = &rows[key];
        let c = counts(s);
        assert_eq!(c.user_turns, n(r, "user_turns"), "{key}");
        assert_eq!(c.model_requests, n(r, "assistant_turns"), "{key}");
        assert_eq!(c.tool_calls, n(r, "tool_calls"), "{key}");
        assert_eq!(c.tool_results, n(r, "tool_results"), "{key}");
        assert_eq!(c.usage_records, n(r, "usage_records"), "{key}");
        assert_eq!(c.sum_prompt, n(r, "sum_input_tokens"), "{key}");
        // stats.json sums output + thoughts, as the reader normalises it.
        assert_eq!(c.sum_output, n(r, "sum_output_tokens"), "{key}");
        assert_eq!(c.max_prompt, n(r, "max_input_tokens"), "{key}");
        assert_eq!(c.refusals, n(r, "rejections_or_refusals"), "{key}");
        let first = r["first_ts"].as_f64().unwrap();
        assert!((s.events[0].timestamp - first).abs() < 1e-3, "{key}");
        assert_eq!(s.model.as_deref(), Some("gemini-2.5-pro"));
        // Every model request records usage, and cached tokens never exceed the prompt.
        for e in s.events.iter().filter(|e| e.model_request) {
            let u = e.usage.expect("usage");
            assert!(u.cached_read_tokens <= u.prompt_tokens, "{key}");
        }
    }
}

/// `trajectory` steps of a `.traj` file beyond its `history`'s (non-demonstration)
/// `assistant` messages (0 without a `history`).
fn steps_beyond_history(path: &str) -> u64 {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let Some(h) = v["history"].as_array().filter(|h| !h.is_empty()) else {
        return 0;
    };
    let calls = h
        .iter()
        .filter(|m| m["role"] == "assistant" && m["is_demo"] != true)
        .count();
    let steps = v["trajectory"].as_array().map_or(0, Vec::len);
    steps.saturating_sub(calls) as u64
}

#[test]
fn swe_agent_matches_stats() {
    let sessions = load_folder("swe_agent");
    let rows = stat_rows("swe_agent");
    assert_eq!(sessions.len(), 22);
    for s in &sessions {
        assert_eq!(s.format, Format::SweAgent);
        let idx = s.source.find("swe_agent/").unwrap();
        let key = &s.source[idx..];
        let r = &rows[key];
        let c = counts(s);
        // stats.json counts `history`; the reader also reads the `trajectory` steps after
        // the last one `history` holds (a final `submit` call with its observation)
        let extra = steps_beyond_history(&s.source);
        assert_eq!(c.events, n(r, "events") + 2 * extra, "{key}");
        assert_eq!(c.user_turns, 1, "{key}");
        assert_eq!(c.user_turns, n(r, "user_turns"), "{key}");
        assert_eq!(c.model_requests, n(r, "assistant_turns") + extra, "{key}");
        assert_eq!(c.tool_calls, n(r, "tool_calls") + extra, "{key}");
        // stats counts `trajectory` observations; history can lack the final one.
        assert!(c.tool_results <= c.tool_calls, "{key}");
        assert!(s.synthetic_timestamps);
    }
}

#[test]
fn every_file_in_my_folders_detects_as_its_format() {
    let cases: [(&str, Format); 4] = [
        ("tau_bench", Format::OpenaiChat),
        ("tau2_oscaralvaro_fork", Format::Tau2),
        ("agentcmd_cli_sessions/gemini", Format::GeminiCli),
        ("swe_agent", Format::SweAgent),
    ];
    for (folder, f) in cases {
        let (files, _) = compaction_sim::transcript::detect::expand_paths(&[corpus()
            .join(folder)
            .to_string_lossy()
            .into_owned()]);
        assert!(!files.is_empty());
        for p in files {
            let text = std::fs::read_to_string(&p).unwrap();
            assert_eq!(detect(&text), Some(f), "{}", p.display());
        }
    }
    // Nothing in the other folders claims to be one of these formats.
    for folder in [
        "agentcmd_cli_sessions/codex",
        "agentcmd_cli_sessions/claude",
        "claude_code_spotter",
        "openhands",
        "adk",
    ] {
        let (files, _) = compaction_sim::transcript::detect::expand_paths(&[corpus()
            .join(folder)
            .to_string_lossy()
            .into_owned()]);
        assert!(!files.is_empty(), "{folder}");
        for p in files {
            let text = std::fs::read_to_string(&p).unwrap();
            for mine in [
                Format::OpenaiChat,
                Format::Tau2,
                Format::GeminiCli,
                Format::SweAgent,
                Format::Canonical,
            ] {
                assert!(
                    !compaction_sim::transcript::detect::sniff(mine, &text),
                    "{} sniffed as {mine:?}",
                    p.display()
                );
            }
        }
    }
}

#[test]
fn canonical_round_trips_every_session_of_my_formats() {
    for folder in [
        "tau_bench",
        "tau2_oscaralvaro_fork",
        "agentcmd_cli_sessions/gemini",
        "swe_agent",
    ] {
        for s in load_folder(folder) {
            let text = canonical::write_canonical(&s);
            assert_eq!(detect(&text), Some(Format::Canonical));
            let back =
                canonical::read("c.jsonl", &text).unwrap_or_else(|e| panic!("{}: {e}", s.source));
            assert_eq!(back.len(), 1);
            let mut b = back.into_iter().next().unwrap();
            assert_eq!(b.source, "c.jsonl");
            b.source = s.source.clone();
            assert_eq!(b, s);
        }
    }
}

/// Python-written ADK transcripts holding NaN / Infinity / integers beyond 64 bits (D10/D11,
/// the oracle-extra fixtures) load through detection, keep every literal, and survive a
/// canonical round trip (written back as the bare literals, detected as canonical).
#[test]
fn python_only_numbers_load_and_round_trip() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oracle-extra");
    for (name, literal) in [
        (
            "n01_big_ints_nested.session.json",
            "-8888888888888888888888888888888",
        ),
        ("n02_nan_inf.session.json", "-Infinity"),
        (
            "n03_sensor_nan.events.jsonl",
            "340282366920938463463374607431768211455",
        ),
        ("n04_other_agent_nan.session.json", "NaN"),
        ("r13_big_ints.session.json", "12345678901234567890123456789"),
        ("r14_nan_payload.session.json", "Infinity"),
    ] {
        let p = dir.join(name);
        let s = load_file(&p, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.len(), 1, "{name}");
        assert_eq!(s[0].format, Format::Adk, "{name}");
        let text = canonical::write_canonical(&s[0]);
        assert!(text.contains(literal), "{name}: {literal} kept");
        assert!(!text.contains('\u{FDD0}'), "{name}: no tag leaks out");
        assert_eq!(detect(&text), Some(Format::Canonical), "{name}");
        let back =
            read_as(Format::Canonical, "c.jsonl", &text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut b = back.into_iter().next().expect("one session");
        b.source = s[0].source.clone();
        assert_eq!(b, s[0], "{name}");
    }
}

#[test]
fn every_corpus_file_is_read_or_reported_with_a_reason() {
    let root = corpus().to_string_lossy().into_owned();
    let (files, expand_errors) =
        compaction_sim::transcript::detect::expand_paths(std::slice::from_ref(&root));
    assert!(expand_errors.is_empty());
    assert!(
        files.len() >= 126,
        "the corpus has 126 data files plus stats.json: {}",
        files.len()
    );
    let l = load_paths(&[root], None);
    let mut read: BTreeSet<String> = BTreeSet::new();
    for s in &l.sessions {
        read.insert(s.source.split('#').next().unwrap().to_string());
    }
    let bad: BTreeSet<String> = l.skipped.iter().map(|e| e.file.clone()).collect();
    assert_eq!(bad.len(), l.skipped.len(), "a file reported twice");
    for f in &files {
        let f = f.to_string_lossy().into_owned();
        assert!(
            read.contains(&f) != bad.contains(&f),
            "{f}: read {} / reported {}",
            read.contains(&f),
            bad.contains(&f)
        );
    }
    for e in &l.skipped {
        assert!(
            !e.message.is_empty() && !e.to_string().contains('\n'),
            "{e}"
        );
    }
    // stats.json is not a transcript: reported, never silently dropped.
    assert!(l
        .skipped
        .iter()
        .any(|e| e.file.ends_with("stats.json") && e.message.contains("unknown format")));
    // SOURCE.md and README.md are passed over silently.
    assert!(!l.skipped.iter().any(|e| e.file.ends_with(".md")));
}
