//! Hand-made sessions pinning the provider-scale sizes and the backtest's matching.

use super::*;
use crate::transcript::{Event, Format, Part, RecordedCompaction, Role, Usage};

/// [`super::fixtures::read_rounds`] with 40-character results; tokens 50 a message, 500 a result.
fn session(rounds: usize) -> (Session, Vec<u32>) {
    let s = super::fixtures::read_rounds(rounds, |_| "x".repeat(40));
    let toks = std::iter::once(50)
        .chain((0..rounds).flat_map(|_| [50, 500]))
        .collect();
    (s, toks)
}

/// Recorded sizes `1,000 + 1.2 × counted` before a recorded compaction (after it, the small
/// post-compaction sizes the framework really sent).
fn recorded(rounds: usize, compacted_from: usize) -> (Session, Vec<u32>, Vec<(u32, u64)>) {
    let (mut s, toks) = session(rounds);
    let counted: Vec<(u32, u64)> = {
        let sizes = SessionSizes::new(&s, Some(&toks));
        sizes::request_sizes(&s, &sizes)
            .into_iter()
            .map(|(k, c, _)| (k, c))
            .collect()
    };
    for (q, &(k, c)) in counted.iter().enumerate() {
        let e = &mut s.events[k as usize];
        let post = q >= compacted_from;
        e.post_compaction_usage = post;
        e.usage = Some(Usage {
            prompt_tokens: if post { 2_000 } else { 1_000 + c * 6 / 5 },
            ..Default::default()
        });
    }
    let at = counted[compacted_from].0 as usize;
    let mut c = RecordedCompaction::new(at, "claude-code compact_boundary");
    c.trigger = Some("auto".into());
    s.recorded_compactions.push(c);
    (s, toks, counted)
}

/// Issue 37's test: sizes `1,000 + 1.2 × counted` give overhead 1,000 and scale 1.2, and a
/// request after the recorded compaction is sized on that scale.
#[test]
fn a_request_after_a_recorded_compaction_is_sized_on_the_fitted_scale() {
    let (s, toks, counted) = recorded(12, 8);
    let sizes = SessionSizes::new(&s, Some(&toks));
    let p = sizes::provider_sizes(&s, &sizes);
    let fit = p.fit.expect("fitted");
    assert_eq!(fit.overhead, 1_000);
    assert!((fit.scale - 1.2).abs() < 1e-9, "{fit:?}");
    assert_eq!(fit.requests, 8);
    for (q, &(k, c)) in counted.iter().enumerate() {
        let want = 1_000 + c * 6 / 5;
        assert_eq!(
            p.sizes.recorded_prompt[k as usize],
            Some(want),
            "request {q}"
        );
    }
    // what a policy removes is on the same scale
    assert_eq!(p.sizes.tokens[2], 600);
}

/// A session that records too few sizes keeps the run tokenizer's counts, labelled so.
#[test]
fn too_few_sizes_keep_the_counts() {
    let (s, toks, _) = recorded(4, 2);
    let sizes = SessionSizes::new(&s, Some(&toks));
    let p = sizes::provider_sizes(&s, &sizes);
    assert!(p.fit.is_none());
    assert!(p.basis().starts_with("run tokenizer"));
    assert_eq!(p.sizes.tokens, sizes.tokens);
}

/// [`recorded`]`(12, 8)` with the context before its compaction recorded (`pre`: what
/// request 8 would have sent, `1,000 + 1.2 × counted`), replayed as recorded under Codex's
/// limit `limit(pre)`; and `pre`.
fn codex_run(limit: impl Fn(u64) -> u64) -> (Session, SessionReplay, u64) {
    let (mut s, toks, counted) = recorded(12, 8);
    let pre = 1_000 + counted[8].1 * 6 / 5;
    s.recorded_compactions[0].pre_tokens = Some(pre);
    let sizes = SessionSizes::new(&s, Some(&toks));
    let policy = AsRecorded::Codex { limit: limit(pre) };
    let sized = sizes::provider_sizes(&s, &sizes);
    let replay = replay_as(&s, &sized, &policy);
    let run = SessionReplay {
        policy,
        sized,
        replay,
    };
    (s, run, pre)
}

/// A threshold rule fires at the request whose context reaches it: recorded before the
/// compaction, the fitted growth after the last recorded size at it; one match.
#[test]
fn a_threshold_rule_matches_the_recorded_compaction() {
    let (s, run, pre) = codex_run(|pre| pre);
    let by_rule = threshold_replay(&s, &run, Some(pre));
    let got = compare::predicted(&by_rule, Some(1_000));
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].request, 8);
    assert_eq!(got[0].before, pre);
    let mut out = Backtest::default();
    compare::add_session(&mut out, &s, &run);
    compare::summarize_frameworks(&mut out);
    let f = &out.frameworks["claude-code"];
    assert_eq!((f.auto_recorded, f.auto_matched), (1, 1));
    assert_eq!(out.compactions[0].recorded_request, Some(8));
}

/// Where the rule misses (a limit no request reaches), the row matched with the fitted
/// threshold carries that replay's prediction as a matched row carries the rule's: tokens
/// before and after (the fitted overhead plus the summary, on the provider's scale), the
/// summary and the summarizer call's duration.
#[test]
fn a_row_matched_with_a_fitted_threshold_has_its_predicted_sizes_and_duration() {
    let (s, run, pre) = codex_run(|pre| 10 * pre);
    let mut out = Backtest::default();
    compare::add_session(&mut out, &s, &run);
    let row = &out.compactions[0];
    assert_eq!(row.matched, Some(false), "{row:?}");
    assert_eq!(row.predicted_tokens_after, None);
    assert_eq!(row.matched_with_fit, Some(true), "{row:?}");
    // the default summary (16,000 chars: 4,000 tokens counted) on the fitted scale 1.2
    assert_eq!(row.predicted_summary_tokens_with_fit, Some(4_800));
    assert_eq!(row.predicted_tokens_after_with_fit, Some(1_000 + 4_800));
    let before = row.predicted_tokens_before_with_fit.expect("tokens before");
    assert!(before <= pre && before + 1_000 > pre, "{before} vs {pre}");
    assert!(
        row.predicted_duration_s_with_fit.is_some_and(|d| d > 0.0),
        "{row:?}"
    );
}

/// SWE-agent `last_n_observations n=5` is replayed as masking window 5: the prompt tokens of a
/// hand-made trajectory, each observation older than 5 turns a 10-token notice, summed over
/// its requests (what `info.model_stats.tokens_sent` records), come out within 2 %.
#[test]
fn swe_agent_last_n_observations_reproduce_tokens_sent() {
    use crate::transcript::{HistoryProcessor, PolicyRule, RecordedPolicy};
    let rounds = 30;
    let (mut s, toks) = session(rounds);
    s.format = Format::SweAgent;
    s.recorded_policy = Some(RecordedPolicy {
        source: "swe-agent agent.history_processors".into(),
        versions: Vec::new(),
        rule: PolicyRule::SweAgent {
            processors: vec![HistoryProcessor::LastNObservations { n: 5 }],
            model_stats: None,
        },
    });
    // SWE-agent's own sum: request q (0-based) reads the task, q calls and q results, the
    // results of turns before q - 5 as a 10-token notice.
    let tokens_sent: u64 = (0..rounds as u64)
        .map(|q| {
            let masked = q.saturating_sub(5);
            50 + q * 50 + masked * 10 + (q - masked) * 500
        })
        .sum();
    assert_eq!(as_recorded(&s), AsRecorded::Mask { window: 5 });
    let sizes = SessionSizes::new(&s, Some(&toks));
    let run = session_replay(&s, &sizes);
    let replayed: u64 = run.replay.requests.iter().map(|r| r.prompt_tokens).sum();
    let err = (replayed as f64 - tokens_sent as f64).abs() / tokens_sent as f64;
    assert!(err < 0.02, "replayed {replayed}, tokens_sent {tokens_sent}");
    let none: u64 = run
        .replay
        .requests
        .iter()
        .map(|r| r.baseline_prompt_tokens)
        .sum();
    assert!(
        none as f64 > 1.5 * tokens_sent as f64,
        "{none} vs {tokens_sent}"
    );
}

/// What a real summary kept, on a session counted by hand. The compaction at event 5 forgot
/// events 0..5 (a user message naming two paths, two reads, a result naming a URL); its
/// summary holds `/srv/app/config.yaml` only. After it, event 5 reads config.yaml again (a
/// re-fetch; its reference is at risk, held by the summary) and event 7 fetches the URL and
/// reads main.py again (a re-fetch; two references at risk, neither in the summary). So: 3 at
/// risk, 2 broken, 2 re-fetches, 1 of them (event 7's) marked broken; the `agent` estimate
/// lies within [0 unseen, 3 at risk].
#[test]
fn a_real_summary_is_measured_at_its_own_cut_with_the_refetches_after_it() {
    let call = |t: f64, id: &str, path: &str, text: Option<&str>| {
        let mut m = Event::new("agent", Role::Model, "i1", t);
        m.model_request = true;
        if let Some(text) = text {
            m.parts.push(Part::Text { text: text.into() });
        }
        m.parts.push(Part::ToolCall {
            id: Some(id.into()),
            name: "read".into(),
            args: serde_json::json!({ "path": path }),
        });
        m
    };
    let result = |t: f64, id: &str, out: &str| {
        let mut r = Event::new("agent", Role::User, "i1", t);
        r.parts.push(Part::ToolResponse {
            id: Some(id.into()),
            name: "read".into(),
            response: serde_json::json!({ "out": out }),
        });
        r
    };
    let mut u = Event::new("user", Role::User, "i1", 0.0);
    u.parts.push(Part::Text {
        text: "read /srv/app/config.yaml and /srv/app/main.py".into(),
    });
    let events = vec![
        u,
        call(1.0, "c1", "/srv/app/config.yaml", None),
        result(1.5, "c1", "the api is https://example.com/api"),
        call(2.0, "c2", "/srv/app/main.py", None),
        result(2.5, "c2", "ok"),
        call(3.0, "c3", "/srv/app/config.yaml", None),
        result(3.5, "c3", "ok"),
        call(
            4.0,
            "c4",
            "/srv/app/main.py",
            Some("fetch https://example.com/api"),
        ),
        result(4.5, "c4", "ok"),
    ];
    let toks = vec![50; events.len()];
    let mut c = RecordedCompaction::new(5, "claude-code compact_boundary");
    c.trigger = Some("auto".into());
    c.summary = "Read /srv/app/config.yaml first.".into();
    c.forgotten = std::iter::once(0..5).collect();
    let mut s = Session {
        recorded_compactions: vec![c],
        ..Session::new("k", "k.jsonl", Format::ClaudeCode, events)
    };
    s.index_recorded();
    let sizes = SessionSizes::new(&s, Some(&toks));
    let run = session_replay(&s, &sizes);
    let got = kept::SessionKept::new(&s)
        .expect("a summary is recorded")
        .at(&run.sized.sizes, 0)
        .expect("measured");
    assert_eq!(
        (
            got.refs_at_risk,
            got.refs_broken,
            got.refetches,
            got.refetches_marked_broken
        ),
        (3, 2, 2, 1),
        "{got:?}"
    );
    let a = got.agent_estimate;
    assert_eq!((a.low, a.high), (0, 3), "{a:?}");
    assert!(a.low as f64 <= a.value && a.value <= a.high as f64, "{a:?}");
    // the row of `backtest --json` carries the same figures
    let b = backtest(std::slice::from_ref(&s), std::slice::from_ref(&sizes));
    let row = &b.compactions[0];
    assert_eq!(
        (
            row.summary_refs_broken,
            row.refetches,
            row.refetches_marked_broken
        ),
        (Some(2), Some(2), Some(1))
    );
    // issue 45: the config re-read returned something else (changed), the main.py one "ok"
    // again (same result), made by the last model request: no later prompt carries it
    assert_eq!(
        (
            row.refetches_same_result,
            row.refetches_same_result_marked,
            row.refetch_tokens
        ),
        (Some(1), Some(1), Some(0))
    );
    assert_eq!(got.refetch.same_result, 1);
}

/// A session re-reading after its compaction a file the compaction forgot, then using a
/// number only that file holds: `src/limits.rs` (events 0-1) says `const LIMIT: u32 = 4711;`;
/// the compaction at event 3 forgets events 0..3 with `summary`; event 3 reads the file
/// again, returning `again`; event 5 sets the limit from 4711 to 5000.
fn reread_then_use(summary: &str, again: &str) -> Session {
    let model = |t: f64, parts: Vec<Part>| {
        let mut m = Event::new("agent", Role::Model, "i1", t);
        m.model_request = true;
        m.parts = parts;
        m
    };
    let read = |id: &str| Part::ToolCall {
        id: Some(id.into()),
        name: "Read".into(),
        args: serde_json::json!({ "file_path": "src/limits.rs" }),
    };
    let result = |t: f64, id: &str, out: &str| {
        let mut r = Event::new("user", Role::User, "i1", t);
        r.parts.push(Part::ToolResponse {
            id: Some(id.into()),
            name: "Read".into(),
            response: serde_json::json!({ "content": out }),
        });
        r
    };
    let before = "pub const LIMIT: u32 = 4711;";
    let text = |t: &str| Part::Text { text: t.into() };
    let events = vec![
        model(1.0, vec![read("c1")]),
        result(1.5, "c1", before),
        model(2.0, vec![text("Read it.")]),
        model(3.0, vec![read("c2")]),
        result(3.5, "c2", again),
        model(4.0, vec![text("Raising LIMIT from 4711 to 5000.")]),
    ];
    let mut c = RecordedCompaction::new(3, "claude-code compact_boundary");
    c.trigger = Some("auto".into());
    c.summary = summary.into();
    c.forgotten = std::iter::once(0..3).collect();
    let mut s = Session {
        recorded_compactions: vec![c],
        ..Session::new("r", "r.jsonl", Format::ClaudeCode, events)
    };
    s.index_recorded();
    s
}

/// Issue 45: a fact the agent used from a same-result re-read of what the compaction forgot
/// was lost to the compaction and paid for again: it is a reference at risk (the re-read
/// response does not spare it), broken where the summary lost it, and the re-read is marked
/// by it. Where the summary held the fact, or the re-read returned something new, neither.
#[test]
fn a_fact_used_from_a_reread_of_what_was_forgotten_is_at_risk_and_marks_the_reread() {
    let measure = |s: &Session| {
        let sizes = SessionSizes::new(s, Some(&[50; 6]));
        let run = session_replay(s, &sizes);
        let k = kept::SessionKept::new(s).expect("a summary is recorded");
        let got = k.at(&run.sized.sizes, 0).expect("measured");
        (
            got.refs_at_risk,
            got.refs_broken,
            got.refetch.same_result,
            got.refetches_same_result_marked,
        )
    };
    let same = "pub const LIMIT: u32 = 4711;";
    // the path is held by the summary; 4711 only by the forgotten read and its re-read
    let lost = reread_then_use("Read src/limits.rs.", same);
    assert_eq!(measure(&lost), (2, 1, 1, 1));
    // the summary kept the number: at risk, held, and the re-read is not marked
    let held = reread_then_use("Read src/limits.rs: LIMIT is 4711.", same);
    assert_eq!(measure(&held), (2, 0, 1, 0));
    // the re-read returned something new (a changed result): it is an observation that
    // holds 4711 in view, so nothing after it is at risk but the path
    let changed = reread_then_use("Read src/limits.rs.", "pub const LIMIT: u32 = 4711; // v2");
    assert_eq!(measure(&changed), (1, 0, 0, 0));
}

/// Issue 43 item 4: a manual compaction (`/compact`) is applied in the `as recorded` replay at
/// the first request after it, never predicted nor counted as a miss. That request's prompt is
/// the fitted prompt of the raw history less the events before the boundary, plus the summary,
/// all on the provider's scale (overhead 1,000, scale 1.2; no `Read` to re-attach).
#[test]
fn a_manual_compaction_is_applied_where_it_happened_in_the_as_recorded_replay() {
    let (mut s, toks, counted) = recorded(12, 8);
    let c = &mut s.recorded_compactions[0];
    c.trigger = Some("manual".into());
    c.summary = "s".repeat(4_000); // 1,000 tokens counted, 1,200 on the provider's scale
    s.recorded_policy = Some(crate::transcript::RecordedPolicy {
        source: "claude-code version".into(),
        versions: vec!["2.1.39".into()],
        rule: crate::transcript::PolicyRule::ClaudeCodeAuto {
            settings: Default::default(),
        },
    });
    s.index_recorded();
    let at = s.recorded_compactions[0].at_event;
    let sizes = SessionSizes::new(&s, Some(&toks));
    let run = session_replay(&s, &sizes);
    assert!(
        matches!(run.policy, AsRecorded::ClaudeCode { .. }),
        "{:?}",
        run.policy
    );
    assert_eq!(run.replay.compactions.len(), 1, "applied once");
    let r = &run.replay.requests[8];
    assert_eq!(r.event_index as usize, counted[8].0 as usize);
    let removed: u64 = run.sized.sizes.tokens[..at]
        .iter()
        .map(|&t| u64::from(t))
        .sum();
    assert_eq!(r.summary_tokens, 1_200);
    assert_eq!(r.baseline_prompt_tokens, 1_000 + counted[8].1 * 6 / 5);
    assert_eq!(r.prompt_tokens, r.baseline_prompt_tokens - removed + 1_200);
    // before it, nothing is applied
    let r7 = &run.replay.requests[7];
    assert_eq!(r7.prompt_tokens, r7.baseline_prompt_tokens);
    // listed, not predicted, not a miss
    let b = backtest(std::slice::from_ref(&s), std::slice::from_ref(&sizes));
    let row = &b.compactions[0];
    assert_eq!(
        (row.trigger.as_str(), row.matched),
        ("manual", None),
        "{row:?}"
    );
    let f = &b.frameworks["claude-code"];
    assert_eq!((f.manual, f.auto_recorded), (1, 0));
}

/// The hand-made Claude Code 2.1.23 session of `tests/fixtures/recorded/claude_micro.jsonl`
/// (shape of the CLI's `microcompact_boundary`; the corpus has none) with the counts it was
/// written on: each 40,000-character `Read` result 10,000 tokens (Claude Code's length / 4),
/// everything else 50; recorded prompts 100,000 + 10,050 per request, less the two results
/// cleared (plus their 60-token pointers) from request 6 on.
fn micro_session() -> (Session, Vec<u32>) {
    let p = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/recorded/claude_micro.jsonl"
    );
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{p}: {e}"));
    let mut s = crate::transcript::claude_code::read("claude_micro.jsonl", &text)
        .expect("reads")
        .remove(0);
    s.index_recorded();
    let toks = s
        .events
        .iter()
        .map(|e| {
            let result = e
                .parts
                .iter()
                .any(|p| matches!(p, Part::ToolResponse { .. }));
            if result {
                10_000
            } else {
                50
            }
        })
        .collect();
    (s, toks)
}

/// Issue 43 item 3: a `microcompact_boundary` is read (kind micro, the events of the results
/// its `compactedToolIds` name) and replayed: in the `as recorded` replay exactly those
/// results are cleared from the first request after it on (the prompt then equals the
/// recorded one; it was 20,000 over), not before; the `claude-code` policy's own rule clears
/// the same two at the same request; the backtest matches the record, listed as `micro`.
#[test]
fn a_micro_record_is_read_and_replayed() {
    let (s, toks) = micro_session();
    let c = &s.recorded_compactions[0];
    assert_eq!(c.kind_name(), "micro");
    assert_eq!((c.pre_tokens, c.tokens_saved), (Some(60_000), Some(20_000)));
    assert_eq!(c.cleared, vec![2, 4], "the results of toolu_0 and toolu_1");
    assert_eq!(c.request, Some(6));
    let sizes = SessionSizes::new(&s, Some(&toks));
    let run = session_replay(&s, &sizes);
    for (q, r) in run.replay.requests.iter().enumerate() {
        let rec = s.events[r.event_index as usize]
            .usage
            .unwrap()
            .prompt_tokens;
        let hidden = &run.replay.hidden[r.hidden.start as usize..r.hidden.end as usize];
        if q < 6 {
            assert!(hidden.is_empty(), "request {q}: {hidden:?}");
            assert!(
                r.prompt_tokens.abs_diff(rec) <= 1,
                "request {q}: {} vs {rec}",
                r.prompt_tokens
            );
        } else {
            assert_eq!(hidden, &[(2, 2), (4, 4)], "request {q}");
            assert!(
                r.prompt_tokens.abs_diff(rec) <= 1,
                "request {q}: {} vs {rec}",
                r.prompt_tokens
            );
            assert_eq!(r.baseline_prompt_tokens - r.prompt_tokens, 20_000 - 120);
        }
    }
    // the sweep's `claude-code` policy, by the CLI's rule
    let ctx = crate::policy::Ctx {
        sizes: &run.sized.sizes,
        session: &s,
        window: None,
    };
    let spec = crate::policy::PolicySpec::ClaudeCode {
        pct: None,
        window: crate::policy::claude_code::AUTO_COMPACT_WINDOW,
    };
    let summarizer = super::summarizer(&s);
    let own = crate::policy::replay_spec(&spec, &ctx, &summarizer);
    let cleared: Vec<usize> = own
        .requests
        .iter()
        .map(|r| (r.baseline_prompt_tokens - r.prompt_tokens) as usize)
        .collect();
    assert_eq!(cleared, [0, 0, 0, 0, 0, 0, 19_880, 19_880]);
    // the backtest
    let b = backtest(std::slice::from_ref(&s), std::slice::from_ref(&sizes));
    let row = &b.compactions[0];
    assert_eq!(
        (row.kind.name(), row.matched),
        ("micro", Some(true)),
        "{row:?}"
    );
    assert_eq!(row.predicted_request, Some(6));
    assert_eq!(
        (row.recorded_cleared, row.predicted_cleared),
        (Some(2), Some(2))
    );
    assert_eq!(
        (row.predicted_tokens_before, row.predicted_tokens_after),
        (Some(60_000), Some(40_000))
    );
    let f = &b.frameworks["claude-code"];
    assert_eq!(
        (f.micro_recorded, f.micro_matched, f.auto_recorded),
        (1, 1, 0)
    );
    assert_eq!(b.sessions[0].predicted_microcompactions, Some(1));
}

/// A file that starts with a `compact_boundary` (a resumed session, `claude_resumed.jsonl`):
/// the history it summarized is not in the file, so its summary is the file's first event
/// (what the model saw first), the requests after it are on the history the file holds (not
/// post-compaction), and the backtest lists it, neither predicted nor an automatic miss.
#[test]
fn a_file_starting_with_a_boundary_is_a_resumed_session() {
    let p = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/recorded/claude_resumed.jsonl"
    );
    let s = crate::transcript::load_file(p, None)
        .expect("reads")
        .remove(0);
    let c = &s.recorded_compactions[0];
    assert!(c.resumed, "{c:?}");
    assert_eq!((c.at_event, c.request, c.kind_name()), (0, Some(0), "full"));
    let first = &s.events[0];
    assert!(
        matches!(&first.parts[..], [Part::Text { text }] if text.contains("parser was fixed")),
        "{first:?}"
    );
    assert!(s.events.iter().all(|e| !e.post_compaction_usage));
    let sizes = SessionSizes::new(&s, None);
    let b = backtest(std::slice::from_ref(&s), std::slice::from_ref(&sizes));
    let row = &b.compactions[0];
    assert!(row.resumed && row.matched.is_none(), "{row:?}");
    let f = &b.frameworks["claude-code"];
    assert_eq!((f.resumed, f.auto_recorded, f.auto_matched), (1, 0, 0));
}

/// From CLI 2.1.9 every clearing is recorded, so a session of such a CLI that records none
/// where the rule would have cleared had microcompaction off (a flag the file does not
/// record): the `claude-code` policy leaves it off there. A CLI before 2.1.9 records no
/// clearing, so nothing tells: the rule runs.
#[test]
fn microcompaction_is_left_off_where_a_recording_cli_recorded_none() {
    let (mut s, toks) = micro_session();
    s.recorded_compactions.clear();
    let cleared_by_policy = |s: &Session| {
        let sizes = SessionSizes::new(s, Some(&toks));
        let sized = sizes::provider_sizes(s, &sizes);
        let ctx = crate::policy::Ctx {
            sizes: &sized.sizes,
            session: s,
            window: None,
        };
        let spec = crate::policy::PolicySpec::ClaudeCode {
            pct: None,
            window: crate::policy::claude_code::AUTO_COMPACT_WINDOW,
        };
        let own = crate::policy::replay_spec(&spec, &ctx, &super::summarizer(s));
        // request 6: where the rule clears (request 7 passes 167,000 and compacts in full)
        let r = &own.requests[6];
        r.baseline_prompt_tokens - r.prompt_tokens
    };
    assert_eq!(cleared_by_policy(&s), 0, "2.1.23 recorded no clearing: off");
    let sizes = SessionSizes::new(&s, Some(&toks));
    let ctx = crate::policy::Ctx {
        sizes: &sizes,
        session: &s,
        window: None,
    };
    let checked = crate::policy::microcompact::checked_sizes(&s);
    let rule = crate::policy::microcompact::Microcompact::new(&ctx, 167_000);
    let off = |v: &str| crate::policy::microcompact::off_in(&ctx, Some(v), &rule, &checked);
    assert!(off("2.1.23") && off("2.1.9"));
    assert!(
        !off("2.1.1"),
        "2.1.1 records no clearing: nothing tells it was off"
    );
}
