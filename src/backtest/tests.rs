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
