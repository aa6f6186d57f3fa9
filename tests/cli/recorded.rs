//! What transcripts record about their framework's own compaction (issue 37): the recorded
//! compactions and policies the readers keep for the backtest, checked against the corpus's
//! SOURCE.md figures and against small hand-made fixtures (tests/fixtures/recorded/).

use std::collections::BTreeMap;

use compaction_sim::transcript::detect::{expand_paths, load_file, load_paths};
use compaction_sim::transcript::{
    CompactionTrigger, Condenser, HistoryProcessor, Part, PolicyRule, RawPos, RecordedPolicy,
    Session,
};

use crate::common::{corpus_dir, root};

fn load(paths: &[std::path::PathBuf]) -> Vec<Session> {
    let args: Vec<String> = paths
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let l = load_paths(&args, None);
    assert!(
        l.skipped.is_empty(),
        "unexpected bad files: {:?}",
        l.skipped.iter().map(|e| e.to_string()).collect::<Vec<_>>()
    );
    l.sessions
}

fn fixture(rel: &str) -> std::path::PathBuf {
    root().join("tests/fixtures/recorded").join(rel)
}

/// 10 automatic and 7 manual Claude Code compactions (SOURCE.md of both folders), with their
/// `preTokens`, each pointing at the request after it and carrying its summary.
#[test]
fn claude_code_corpus_compactions_are_recorded_with_trigger_and_pre_tokens() {
    let sessions = load(&[
        corpus_dir("claude_code_spotter"),
        corpus_dir("real_compactions/claude_code"),
    ]);
    let mut auto = Vec::new();
    let mut manual = Vec::new();
    for s in &sessions {
        for c in &s.recorded_compactions {
            match c.trigger_kind() {
                CompactionTrigger::Auto => auto.push(c.pre_tokens),
                CompactionTrigger::Manual => manual.push(c.pre_tokens),
                CompactionTrigger::Unknown => panic!("{}: unknown trigger", s.source),
            }
            assert!(c.summary.starts_with("This session is being continued"));
            assert!(matches!(c.boundary_raw, Some(RawPos::Line(_))));
            assert!(
                matches!(c.summary_raw, Some(RawPos::Line(n)) if Some(RawPos::Line(n - 1)) == c.boundary_raw)
            );
            assert_eq!(c.forgotten, vec![0..c.at_event]);
            // The first request after it is the replay's request of that index.
            let q = c
                .request
                .expect("a request follows every corpus compaction");
            let (k, e) = s
                .events
                .iter()
                .enumerate()
                .filter(|(_, e)| e.model_request)
                .nth(q)
                .expect("request exists");
            assert!(k >= c.at_event && e.post_compaction_usage, "{}", s.source);
            assert_eq!(c.tokens_after, e.usage.map(|u| u.prompt_tokens));
            let d = c.duration_s().expect("both ends recorded");
            assert!(d > 0.0 && d < 600.0, "{}: {d}", s.source);
        }
    }
    auto.sort();
    manual.sort();
    let auto: Vec<u64> = auto.into_iter().map(|p| p.expect("preTokens")).collect();
    assert_eq!(
        auto,
        [
            123_096, 124_249, 126_389, 126_764, 127_141, 128_127, 167_094, 167_117, 167_731,
            170_251
        ]
    );
    let manual: Vec<u64> = manual.into_iter().map(|p| p.expect("preTokens")).collect();
    assert_eq!(
        manual,
        [116_717, 121_367, 138_270, 142_431, 148_146, 150_655, 197_184]
    );
}

/// SOURCE.md: "ctx after" of the first automatic compaction in b566e56e is 47,479 tokens,
/// and every line records the CLI version (2.0.57 there).
#[test]
fn claude_code_records_tokens_after_and_the_cli_version() {
    let p = corpus_dir("real_compactions/claude_code")
        .join("smartagent-pai__b566e56e-94a7-425e-a662-d701321e27ce.jsonl");
    let s = load_file(&p, None).expect("reads");
    let cs = &s[0].recorded_compactions;
    let got: Vec<(Option<u64>, Option<u64>)> =
        cs.iter().map(|c| (c.pre_tokens, c.tokens_after)).collect();
    assert_eq!(
        got,
        [
            (Some(127_141), Some(47_479)),
            (Some(124_249), Some(45_043)),
            (Some(128_127), Some(47_884)),
            (Some(126_764), Some(50_603)),
        ]
    );
    assert!(cs.iter().all(|c| c.version.as_deref() == Some("2.0.57")));
    let p = s[0].recorded_policy.as_ref().expect("version recorded");
    assert!(
        matches!(p.rule, PolicyRule::ClaudeCodeAuto { .. }),
        "{:?}",
        p.rule
    );
    assert_eq!(p.versions, ["2.0.57"]);
}

/// The hand-made session: an automatic compaction, then a manual one whose `/compact` echo,
/// written after the summary, dates its start; the version changes in between.
#[test]
fn claude_code_fixture_places_both_compactions() {
    let s = load_file(fixture("claude_two_compactions.jsonl"), None).expect("reads");
    assert_eq!(s.len(), 1);
    let s = &s[0];
    let t0 = 1_767_225_600.0;
    let c = &s.recorded_compactions;
    assert_eq!(c.len(), 2);
    let got: Vec<_> = c
        .iter()
        .map(|c| {
            (
                c.trigger_kind(),
                c.at_event,
                c.request,
                c.pre_tokens,
                c.tokens_after,
                c.boundary_raw,
                c.summary_raw,
                c.version.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                CompactionTrigger::Auto,
                4,
                Some(2),
                Some(1200),
                Some(370),
                Some(RawPos::Line(5)),
                Some(RawPos::Line(6)),
                Some("2.0.57")
            ),
            (
                CompactionTrigger::Manual,
                7,
                Some(4),
                Some(410),
                Some(300),
                Some(RawPos::Line(10)),
                Some(RawPos::Line(11)),
                Some("2.0.58")
            ),
        ]
    );
    // Auto: from the last event before it (3 s) to the boundary (10 s). Manual: from the
    // `/compact` echo (40 s), not the last event (21 s), to the boundary (60 s).
    assert_eq!(
        (c[0].start_timestamp, c[0].end_timestamp),
        (Some(t0 + 3.0), Some(t0 + 10.0))
    );
    assert_eq!(
        (c[1].start_timestamp, c[1].end_timestamp),
        (Some(t0 + 40.0), Some(t0 + 60.0))
    );
    assert_eq!(c[1].duration_s(), Some(20.0));
    assert_eq!(c[0].forgotten, vec![0..4]);
    assert!(c[0].summary.ends_with("SUMMARY-A") && c[1].summary.ends_with("SUMMARY-B"));
    // The summaries are not events: the replay keeps the raw history.
    assert!(s
        .events
        .iter()
        .flat_map(|e| &e.parts)
        .all(|p| !matches!(p, Part::Text { text } if text.contains("SUMMARY"))));
    assert_eq!(s.events.len(), 11);
    let policy = s.recorded_policy.as_ref().expect("versions recorded");
    assert_eq!(policy.versions, ["2.0.57", "2.0.58"]);
}

fn openhands_v1_dirs() -> Vec<std::path::PathBuf> {
    let root = corpus_dir("real_compactions/openhands");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .expect("folder")
        .filter_map(|e| e.ok().map(|e| e.path().join("event_service")))
        .collect();
    dirs.sort();
    dirs
}

/// SOURCE.md: 3 conversations, 15 condensations (LLMSummarizingCondenser, max_size 80,
/// keep_first 4), the first at event 82 forgetting 43 events and each later one 43 events
/// on forgetting 42, all with `summary_offset` 4; input tokens before → after as listed.
#[test]
fn openhands_v1_corpus_conversations_are_one_session_each_with_their_condensations() {
    let sessions = load(&[corpus_dir("real_compactions/openhands")]);
    assert_eq!(sessions.len(), 3);
    let mut by_id: BTreeMap<String, &Session> = BTreeMap::new();
    for s in &sessions {
        by_id.insert(s.id.chars().filter(|c| *c != '-').take(8).collect(), s);
    }
    // (conversation, events, condensations, per condensation (tokens before, after, summary chars))
    type Expected<'a> = (&'a str, usize, usize, &'a [(u64, u64, usize)]);
    let want: [Expected; 3] = [
        (
            "0535c419",
            167,
            7,
            &[
                (51_648, 36_600, 1588),
                (50_547, 28_174, 2337),
                (37_576, 25_604, 1821),
                (36_832, 27_682, 2105),
                (44_886, 31_733, 2176),
                (45_412, 29_789, 1921),
                (46_058, 31_833, 2011),
            ],
        ),
        (
            "40c95fc3",
            116,
            4,
            &[
                (33_813, 20_599, 1234),
                (43_882, 32_547, 1763),
                (51_270, 25_137, 1827),
                (38_776, 22_462, 1849),
            ],
        ),
        (
            "88ca1e54",
            106,
            4,
            &[
                (37_724, 24_915, 1157),
                (35_866, 19_300, 1653),
                (31_524, 19_796, 1978),
                (40_644, 27_672, 1883),
            ],
        ),
    ];
    let mut total = 0;
    for (id, calls, n, figures) in want {
        let s = by_id.get(id).unwrap_or_else(|| panic!("{id} read"));
        assert_eq!(s.events.iter().filter(|e| e.model_request).count(), calls);
        let cs = &s.recorded_compactions;
        assert_eq!(cs.len(), n, "{id}");
        for (k, (c, &(before, after, chars))) in cs.iter().zip(figures).enumerate() {
            assert_eq!(
                c.boundary_raw,
                Some(RawPos::Index(82 + 43 * k)),
                "{id} #{k}"
            );
            assert_eq!(c.forgotten_ids.len(), if k == 0 { 43 } else { 42 });
            assert_eq!(c.summary_offset, Some(4));
            assert_eq!(c.trigger_kind(), CompactionTrigger::Auto);
            assert_eq!((c.pre_tokens, c.tokens_after), (Some(before), Some(after)));
            assert_eq!(c.summary.chars().count(), chars, "{id} #{k}");
            // Every forgotten id is an event of the session (none is a condensation).
            let forgotten: usize = c.forgotten.iter().map(|r| r.len()).sum();
            assert!(forgotten > 0 && forgotten <= c.forgotten_ids.len());
            assert!(c.duration_s().is_some_and(|d| d > 0.0));
            total += 1;
        }
        let p = s.recorded_policy.as_ref().expect("condenser recorded");
        match &p.rule {
            PolicyRule::Openhands(Condenser {
                kind,
                max_size,
                keep_first,
                ..
            }) => assert_eq!(
                (kind.as_str(), *max_size, *keep_first),
                ("LLMSummarizingCondenser", Some(80), Some(4))
            ),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(total, 15);
}

/// A batch over the corpus takes each conversation folder whole: none of its ~800 files is
/// reported as an unknown format.
#[test]
fn openhands_v1_folders_are_inputs_not_their_event_files() {
    let root = corpus_dir("real_compactions")
        .to_string_lossy()
        .into_owned();
    let (files, errors) = expand_paths(std::slice::from_ref(&root));
    assert!(errors.is_empty());
    let dirs: Vec<_> = files.iter().filter(|f| f.is_dir()).cloned().collect();
    assert_eq!(dirs, openhands_v1_dirs());
    assert!(!files
        .iter()
        .any(|f| f.to_string_lossy().contains("/events/")));
    let l = load_paths(&[root], None);
    assert!(l.skipped.is_empty(), "{:?}", l.skipped);
    assert_eq!(l.sessions.len(), 6 + 3);
    // Named alone, a file of a conversation points at its folder.
    let dir = &openhands_v1_dirs()[0];
    let event = std::fs::read_dir(dir.join("events"))
        .expect("events")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .next()
        .expect("an event file");
    for f in [dir.join("base_state.json"), event] {
        let e = load_file(&f, None).expect_err("not a transcript alone");
        assert_eq!(
            e.message,
            format!(
                "part of an OpenHands SDK v1 conversation: read its folder {}",
                dir.display()
            )
        );
    }
}

/// The hand-made conversation: parallel calls are one request, usage adds cache writes to
/// LiteLLM's prompt, the condensation forgets events 1..4 and is followed by request 2.
#[test]
fn openhands_v1_fixture_reads_usage_flags_and_the_condensation() {
    let dir = fixture("openhands_v1/conv-1");
    let s = load_file(&dir, None).expect("a conversation folder reads");
    assert_eq!(s.len(), 1);
    let s = &s[0];
    assert_eq!(
        (s.id.as_str(), s.model.as_deref()),
        ("conv-1", Some("m-agent"))
    );
    assert_eq!(s.source, dir.to_string_lossy());
    assert_eq!(s.events.len(), 8, "{:#?}", s.events);
    let requests: Vec<_> = s.events.iter().filter(|e| e.model_request).collect();
    assert_eq!(requests.len(), 3);
    let u = requests[0].usage.expect("usage of r1");
    assert_eq!(
        (
            u.prompt_tokens,
            u.cached_read_tokens,
            u.cache_write_tokens,
            u.output_tokens
        ),
        (110, 90, 10, 5)
    );
    assert_eq!(requests[0].latency_s, Some(1.5));
    assert_eq!(
        requests[0]
            .parts
            .iter()
            .filter(|p| matches!(p, Part::ToolCall { .. }))
            .count(),
        2
    );
    assert!(matches!(&s.events[2].parts[0],
        Part::ToolResponse { response, .. } if response["content"] == "a.py\n[exit 0]"));
    let flagged: Vec<usize> = (0..s.events.len())
        .filter(|&i| !s.events[i].critical.is_empty())
        .collect();
    assert_eq!(flagged, [3, 5]);
    let c = &s.recorded_compactions;
    assert_eq!(c.len(), 1);
    let c = &c[0];
    assert_eq!(
        (c.at_event, c.request, c.pre_tokens, c.tokens_after),
        (6, Some(2), Some(170), Some(85))
    );
    assert_eq!(c.forgotten, vec![1..4]);
    assert_eq!(c.summary, "ran ls; false failed");
    assert_eq!(c.boundary_raw, Some(RawPos::Index(8)));
    assert_eq!(c.duration_s(), Some(4.0));
    let after: Vec<bool> = requests.iter().map(|e| e.post_compaction_usage).collect();
    assert_eq!(after, [false, false, true]);
    assert_eq!(
        s.recorded_policy,
        Some(RecordedPolicy {
            source: "openhands base_state.json agent.condenser".into(),
            versions: vec![],
            rule: PolicyRule::Openhands(Condenser {
                kind: "LLMSummarizingCondenser".into(),
                max_size: Some(6),
                keep_first: Some(1),
                model: Some("m-cond".into()),
                ..Condenser::default()
            }),
        })
    );
}

/// Six corpus trajectories record `history_processors: last_n_observations, n: 5`; the two
/// real 0.x GPT-4 runs record no config and get their release's default (issue 43: before
/// v0.3.0, no processor); the others record nothing.
#[test]
fn swe_agent_trajectories_record_their_observation_window() {
    let sessions = load(&[corpus_dir("swe_agent")]);
    let mut windows = Vec::new();
    let mut zero_x = 0;
    for s in &sessions {
        let Some(p) = &s.recorded_policy else {
            continue;
        };
        if p.source.starts_with("swe-agent 0.x default config") {
            zero_x += 1;
            assert_eq!(p.versions, ["0.1.0-0.2.0"], "{}", s.source);
            assert!(
                matches!(&p.rule, PolicyRule::SweAgent { processors, .. } if processors.is_empty()),
                "{}: {:?}",
                s.source,
                p.rule
            );
            continue;
        }
        match &p.rule {
            PolicyRule::SweAgent { processors, .. } => {
                assert_eq!(processors.len(), 1, "{}", s.source);
                match &processors[0] {
                    HistoryProcessor::LastNObservations { n } => windows.push(*n),
                    other => panic!("{}: {other:?}", s.source),
                }
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(windows, [5; 6]);
    assert_eq!(zero_x, 2, "the corpus's two 0.x runs");
}

/// OpenHands v0 rows record `metadata.condenser_config` (`noop` in the corpus); Codex
/// rollouts record their CLI version and the model's context window.
#[test]
fn openhands_v0_and_codex_record_their_settings() {
    let oh = load(&[corpus_dir(
        "openhands/evaluation/benchmarks/multi_swe_bench/examples",
    )]);
    assert!(!oh.is_empty());
    for s in &oh {
        let p = s.recorded_policy.as_ref().expect("condenser_config");
        assert!(matches!(&p.rule, PolicyRule::Openhands(c) if c.kind == "noop"));
    }
    let codex = load(&[corpus_dir("agentcmd_cli_sessions/codex")]);
    assert_eq!(codex.len(), 5);
    for s in &codex {
        let p = s.recorded_policy.as_ref().expect("cli_version");
        assert!(!p.versions.is_empty());
        assert!(matches!(
            p.rule,
            PolicyRule::Codex {
                auto_compact_token_limit: None,
                context_window: Some(272_000)
            }
        ));
    }
}

/// A copy of a fixture conversation folder with its `base_state.json` changed by `edit`.
fn conversation_with(
    tmp: &std::path::Path,
    edit: impl Fn(&mut serde_json::Value),
) -> std::path::PathBuf {
    let src = fixture("openhands_v1/conv-1");
    let dir = tmp.join("conv-1");
    std::fs::create_dir_all(dir.join("events")).unwrap();
    std::fs::copy(src.join("meta.json"), dir.join("meta.json")).unwrap();
    for e in std::fs::read_dir(src.join("events")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join("events").join(e.file_name())).unwrap();
    }
    let mut state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(src.join("base_state.json")).unwrap())
            .unwrap();
    edit(&mut state);
    std::fs::write(dir.join("base_state.json"), state.to_string()).unwrap();
    dir
}

/// Issue 47 item 6: a condenser size that is no size (`-1`, `"abc"`) is said, with where,
/// and the recorded condenser is not used (never read as the shipped `max_size=240`).
#[test]
fn an_invalid_recorded_condenser_size_is_reported_and_not_used() {
    for bad in [serde_json::json!(-1), serde_json::json!("abc")] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = conversation_with(tmp.path(), |s| {
            s["agent"]["condenser"]["max_size"] = bad.clone()
        });
        let s = &load_file(&dir, None).expect("the conversation still reads")[0];
        assert_eq!(s.recorded_policy, None, "{bad}");
        assert_eq!(s.notes.len(), 1, "{:?}", s.notes);
        let shown = bad.to_string();
        assert!(
            s.notes[0].contains(&format!(
                "base_state.json: agent.condenser.max_size: {shown} is not a whole number from 0 to 2^53; the recorded condenser is not used"
            )),
            "{:?}",
            s.notes
        );
        let out = crate::common::bin()
            .args(["backtest", "--json", "--tokenizer", "adk-chars"])
            .arg(&dir)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("warning:") && err.contains("agent.condenser.max_size"),
            "{err}"
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!stdout.contains("max_size=240"), "{stdout}");
    }
}

/// Issue 47 item 6: SWE-agent `info.model_stats` that are no counts are said and not used.
#[test]
fn invalid_swe_agent_model_stats_are_reported_and_not_used() {
    let text = std::fs::read_to_string(fixture("swe_agent_last5.traj")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    for (key, bad) in [
        ("tokens_sent", serde_json::json!(-1)),
        ("tokens_sent", serde_json::json!(18446744073709551615u64)),
        ("tokens_sent", serde_json::json!("abc")),
        ("api_calls", serde_json::json!(-1)),
    ] {
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let mut stats = serde_json::json!({"tokens_sent": 7141, "api_calls": 5});
        stats[key] = bad.clone();
        v["info"] = serde_json::json!({ "model_stats": stats });
        let p = tmp.path().join("run.traj");
        std::fs::write(&p, v.to_string()).unwrap();
        let s = &load_file(&p, None).expect("the trajectory still reads")[0];
        match &s.recorded_policy.as_ref().map(|p| &p.rule) {
            Some(PolicyRule::SweAgent { model_stats, .. }) => {
                assert_eq!(*model_stats, None, "{key}={bad}")
            }
            other => panic!("{other:?}"),
        }
        assert!(
            s.notes.len() == 1
                && s.notes[0].contains(&format!(
                    "info.model_stats.{key}: {bad} is not a whole number"
                ))
                && s.notes[0].contains("not used"),
            "{key}={bad}: {:?}",
            s.notes
        );
    }
}

/// Issue 47 item 10: a Claude Code session whose records step back by an hour (a resumed or
/// queued step) is read in file order and replayed, its timing marked adjusted (said once),
/// not skipped.
#[test]
fn a_claude_code_session_stepping_back_an_hour_is_read_replayed_and_marked_adjusted() {
    let text = std::fs::read_to_string(fixture("claude_two_compactions.jsonl")).unwrap();
    let stepped = text.replacen("2026-01-01T00:00:12.000Z", "2025-12-31T23:00:13.000Z", 1);
    assert_ne!(stepped, text);
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("resumed.jsonl");
    std::fs::write(&p, &stepped).unwrap();
    let s = &load_file(&p, None).expect("read in file order, not refused")[0];
    // The latest time before it (the records at 00:00:10 are a compaction's, not events).
    let by = s.timing_adjusted_s.expect("timing marked adjusted");
    assert!((3500.0..3600.0).contains(&by), "{by}");
    assert!(
        s.events
            .windows(2)
            .all(|w| w[0].timestamp <= w[1].timestamp),
        "times go backwards"
    );
    assert_eq!(s.notes.len(), 1, "{:?}", s.notes);
    assert!(
        s.notes[0].contains(&format!(
            "timing adjusted: records step back in time by up to {by:.3} s"
        )),
        "{:?}",
        s.notes
    );
    let original = &load_file(fixture("claude_two_compactions.jsonl"), None).unwrap()[0];
    assert_eq!(original.timing_adjusted_s, None);
    assert_eq!(
        s.recorded_compactions.len(),
        original.recorded_compactions.len()
    );
    let out = crate::common::bin()
        .args([
            "replay",
            "--tokenizer",
            "adk-chars",
            "--after-invocations",
            "1",
            "--overlap",
            "0",
        ])
        .arg(&p)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(err.matches("timing adjusted").count(), 1, "{err}");
    // More than an hour back is still refused, naming the limit.
    let far = text.replacen("2026-01-01T00:00:12.000Z", "2025-12-31T22:00:00.000Z", 1);
    std::fs::write(&p, far).unwrap();
    let e = load_file(&p, None).unwrap_err().to_string();
    assert!(e.contains("more than the 3600 s"), "{e}");
}
