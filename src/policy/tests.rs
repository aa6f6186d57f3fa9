//! Hand-made sessions pinning each policy's firing point and the next prompt's contents.

use super::*;
use crate::engine::summarizer::{Deterministic, Policy};
use crate::transcript::{Event, Format, Part, Role, Usage};

const RESULT_TOKENS: u32 = 500;

/// user message; then per round: a model request calling a tool, its result; then a final
/// model request. `prompts[j]` is request j's recorded prompt (`None`: not recorded).
/// Tokens: user 10, call 10, result 500, final answer 10.
fn session(rounds: usize, prompts: &[Option<u64>]) -> (Session, Vec<u32>) {
    let mut events = Vec::new();
    let mut toks = Vec::new();
    let mut u = Event::new("user", Role::User, "i1", 0.0);
    u.parts.push(Part::Text {
        text: "please look at the logs".into(),
    });
    events.push(u);
    toks.push(10);
    let mut t = 1.0;
    let mut req = 0usize;
    let mut model = |events: &mut Vec<Event>, toks: &mut Vec<u32>, t: f64, call: Option<usize>| {
        let mut m = Event::new("agent", Role::Model, "i1", t);
        m.model_request = true;
        if let Some(Some(p)) = prompts.get(req) {
            m.usage = Some(Usage {
                prompt_tokens: *p,
                output_tokens: 10,
                ..Default::default()
            });
        }
        req += 1;
        match call {
            Some(i) => m.parts.push(Part::ToolCall {
                id: Some(format!("c{i}")),
                name: "read".into(),
                args: serde_json::json!({"file": format!("f{i}")}),
            }),
            None => m.parts.push(Part::Text {
                text: "done".into(),
            }),
        }
        events.push(m);
        toks.push(10);
    };
    for i in 0..rounds {
        model(&mut events, &mut toks, t, Some(i));
        let mut r = Event::new("user", Role::User, "i1", t + 0.5);
        r.parts.push(Part::ToolResponse {
            id: Some(format!("c{i}")),
            name: "read".into(),
            response: serde_json::json!({"content": format!("line {i} of the log")}),
        });
        events.push(r);
        toks.push(RESULT_TOKENS);
        t += 1.0;
    }
    model(&mut events, &mut toks, t, None);
    let s = Session::new("s", "test", Format::Adk, events);
    (s, toks)
}

fn run(s: &Session, toks: &[u32], spec: &PolicySpec, window: Option<u64>) -> Replay {
    let sizes = SessionSizes::new(s, Some(toks));
    let ctx = Ctx {
        sizes: &sizes,
        session: s,
        window,
    };
    let summ = Deterministic::new(Policy::Fixed(400), Vec::new(), Vec::<String>::new());
    replay_spec(spec, &ctx, &summ)
}

/// Result events (index of the i-th tool result).
fn result(i: u32) -> u32 {
    2 + 2 * i
}

#[test]
fn clear_tool_results_clears_the_oldest_at_the_request_that_passes_the_trigger() {
    // four results of 500 tokens; the recorded prompt first passes 1,000 at the last request
    let prompts = [Some(100), Some(200), Some(300), Some(400), Some(2_100)];
    let (s, toks) = session(4, &prompts);
    let clear = |keep, at_least| PolicySpec::ClearToolResults {
        trigger: 1_000,
        keep,
        clear_at_least: at_least,
        exclude_tools: Vec::new(),
    };
    let r = run(&s, &toks, &clear(1, 0), None);
    assert_eq!(r.requests.len(), 5);
    for q in &r.requests[..4] {
        assert!(r.hidden(q).is_empty());
        assert_eq!(q.prompt_tokens, q.baseline_prompt_tokens);
    }
    let last = &r.requests[4];
    let want: Vec<(u32, u32)> = (0..3).map(|i| (result(i), result(i))).collect();
    assert_eq!(r.hidden(last), &want[..]);
    assert_eq!(last.hidden_tokens, 3 * RESULT_TOKENS as u64);
    let ph = clear::PLACEHOLDER_TOKENS;
    assert_eq!(
        last.prompt_tokens,
        2_100 - 3 * RESULT_TOKENS as u64 + 3 * ph
    );
    // the cached prefix breaks at the first cleared result
    let tp = tok_prefix(&s, &toks);
    assert_eq!(last.shared_prefix_tokens, tp[result(0) as usize]);
    assert!(r.calls.is_empty() && r.compactions.is_empty());
    // keep 3 clears one; clear_at_least above what 3 results free clears none
    let r3 = run(&s, &toks, &clear(3, 0), None);
    assert_eq!(r3.hidden(&r3.requests[4]), &[(result(0), result(0))]);
    let none = run(&s, &toks, &clear(1, 3 * RESULT_TOKENS as u64), None);
    assert!(none.hidden(&none.requests[4]).is_empty());
    // excluded tools are never cleared
    let ex = PolicySpec::ClearToolResults {
        trigger: 1_000,
        keep: 1,
        clear_at_least: 0,
        exclude_tools: vec!["read".into()],
    };
    let rx = run(&s, &toks, &ex, None);
    assert!(rx.hidden(&rx.requests[4]).is_empty());
}

fn sizes_of(s: &Session, toks: &[u32]) -> SessionSizes {
    let sizes = SessionSizes::new(s, Some(toks));
    sizes
        .baseline
        .get_or_init(|| crate::engine::contents::baseline(&sizes));
    sizes
}

/// Tokens of the events before each index, with no compaction.
fn tok_prefix(s: &Session, toks: &[u32]) -> Vec<u64> {
    let sizes = sizes_of(s, toks);
    sizes.baseline.get().unwrap().tok_prefix.clone()
}

#[test]
fn mask_observations_keeps_the_last_window_turns_always() {
    let (s, toks) = session(5, &[]);
    let r = run(&s, &toks, &PolicySpec::MaskObservations { window: 2 }, None);
    // request q masks the results of requests before q - 2: none before request 3
    for (q, req) in r.requests.iter().enumerate() {
        let masked = q.saturating_sub(2);
        let want: Vec<(u32, u32)> = (0..masked as u32).map(|i| (result(i), result(i))).collect();
        assert_eq!(r.hidden(req), &want[..], "request {q}");
        let ph = mask::PLACEHOLDER_TOKENS;
        assert_eq!(
            req.prompt_tokens,
            req.baseline_prompt_tokens - masked as u64 * (RESULT_TOKENS as u64 - ph),
            "request {q}"
        );
    }
    assert!(r.calls.is_empty());
}

#[test]
fn claude_code_threshold_and_whole_history_summary() {
    assert_eq!(claude_code::threshold(200_000, None), 167_000);
    assert_eq!(claude_code::threshold(200_000, Some(50)), 90_000);
    // the override can only lower it
    assert_eq!(claude_code::threshold(200_000, Some(95)), 167_000);
    let prompts = [Some(50_000), Some(100_000), Some(170_000), Some(120_000)];
    let (s, toks) = session(3, &prompts);
    let r = run(
        &s,
        &toks,
        &PolicySpec::ClaudeCode {
            pct: None,
            window: 200_000,
        },
        None,
    );
    assert_eq!(r.calls.len(), 1);
    let c = &r.compactions[0];
    assert_eq!(c.before_event_index, Some(r.requests[2].event_index));
    let at = &r.requests[2];
    let k = at.event_index;
    // everything before the request is in the summary
    assert_eq!(r.hidden(at), &[(0, k - 1)]);
    let tp = tok_prefix(&s, &toks);
    assert_eq!(at.hidden_tokens, tp[k as usize]);
    assert_eq!(
        at.prompt_tokens,
        170_000 - tp[k as usize] + c.summary_tokens
    );
    assert_eq!(r.carried(at), &[1]);
    assert!(r.requests[..2]
        .iter()
        .all(|q| q.prompt_tokens == q.baseline_prompt_tokens));
    // pct 50 fires at the second request already (100,000 >= 90,000)
    let r50 = run(
        &s,
        &toks,
        &PolicySpec::ClaudeCode {
            pct: Some(50),
            window: 200_000,
        },
        None,
    );
    assert_eq!(
        r50.compactions[0].before_event_index,
        Some(r.requests[1].event_index)
    );
    // the price table's window (1M for claude-opus-4-6) is not the auto-compact window
    let big = PolicySpec::ClaudeCode {
        pct: None,
        window: 200_000,
    };
    let r1m = run(&s, &toks, &big, Some(1_000_000));
    assert_eq!(r1m.compactions.len(), 1);
    // a 1,000,000-token auto-compact window: 967,000, never reached
    let wide = PolicySpec::ClaudeCode {
        pct: None,
        window: 1_000_000,
    };
    assert!(run(&s, &toks, &wide, None).calls.is_empty());
}

#[test]
fn codex_keeps_the_newest_user_messages_and_the_summary() {
    let prompts = [Some(10_000), Some(95_000), Some(20_000), Some(30_000)];
    let (s, toks) = session(3, &prompts);
    let codex = |pct, retain| PolicySpec::Codex { pct, retain };
    let r = run(&s, &toks, &codex(90, 20_000), Some(100_000));
    assert_eq!(r.compactions.len(), 1);
    let at = &r.requests[1];
    assert!(at.pre_request_compacted);
    // the user message (event 0) is re-attached: hidden is everything else before it
    let k = at.event_index;
    assert_eq!(r.hidden(at), &[(1, k - 1)]);
    let tp = tok_prefix(&s, &toks);
    assert_eq!(at.hidden_tokens, tp[k as usize] - 10);
    // 96 % is clamped to 90 %: it fires at the same request (openai/codex#11516)
    let r96 = run(&s, &toks, &codex(96, 20_000), Some(100_000));
    assert_eq!(fired_at(&r96), vec![1]);
    // 95,000 is below 96 % of 110,000 (105,600) but not below its 90 % (99,000): no firing
    assert!(run(&s, &toks, &codex(96, 20_000), Some(110_000))
        .compactions
        .is_empty());
}

/// user messages of 30,000 tokens before each request (the tool results turned into user
/// text), so that the retained budget cuts them.
fn codex_session(prompts: &[Option<u64>]) -> (Session, Vec<u32>) {
    let (mut s, mut toks) = session(prompts.len() - 1, prompts);
    for (e, ev) in s.events.iter_mut().enumerate() {
        if let Some(Part::ToolResponse { .. }) = ev.parts.first() {
            ev.parts = vec![Part::Text {
                text: format!("user turn {e}"),
            }];
            toks[e] = 30_000;
        }
    }
    (s, toks)
}

/// Remote compaction v2 (64,000, the default for OpenAI) keeps two whole 30,000-token user
/// messages and 4,000 of a third; the local path (20,000) 20,000 of the newest; the next
/// prompt is the recorded one less what was hidden plus the summary.
#[test]
fn codex_retains_64k_of_user_messages_on_remote_v2_and_20k_locally() {
    let prompts = [
        Some(10_000),
        Some(50_000),
        Some(100_000),
        Some(180_000),
        Some(185_000),
    ];
    let (s, toks) = codex_session(&prompts);
    let tp = tok_prefix(&s, &toks);
    for (retain, kept) in [
        (64_000u64, vec![4_000u64, 30_000, 30_000]),
        (20_000, vec![20_000]),
    ] {
        let r = run(
            &s,
            &toks,
            &PolicySpec::Codex { pct: 90, retain },
            Some(200_000),
        );
        // 90 % of 200,000: the request recording 180,000 fires, not the one at 100,000
        assert_eq!(fired_at(&r), vec![3], "retain {retain}");
        let at = &r.requests[3];
        let k = at.event_index as usize;
        let kept_sum: u64 = kept.iter().sum();
        assert_eq!(at.hidden_tokens, tp[k] - kept_sum, "retain {retain}");
        let summary = r.compactions[0].summary_tokens;
        assert_eq!(at.prompt_tokens, 180_000 - (tp[k] - kept_sum) + summary);
        // the request after carries the same history: its recorded size less the same
        let next = &r.requests[4];
        assert_eq!(next.prompt_tokens, 185_000 - (tp[k] - kept_sum) + summary);
        // the kept user messages (results 2, 1, 0 for 64k; 2 for 20k) are not hidden
        let kept_events: Vec<u32> = (0..kept.len() as u32).map(|i| result(2 - i)).collect();
        for e in kept_events {
            assert!(
                r.hidden(at).iter().all(|&(a, b)| e < a || e > b),
                "retain {retain}: event {e} hidden"
            );
        }
    }
}

/// Gemini CLI's generalist profile: nothing happens at 150,000 tokens, at 150,001 every
/// event with more than 65,000 tokens after it (before the request) goes into one snapshot.
#[test]
fn gemini_generalist_profile_compresses_above_150k_keeping_65k() {
    let prompts = [
        Some(1_000),
        Some(2_000),
        Some(3_000),
        Some(4_000),
        Some(150_000),
        Some(150_001),
    ];
    let (s, mut toks) = session(5, &prompts);
    for i in 0..5 {
        toks[result(i) as usize] = 20_000;
    }
    let spec = PolicySpec::GeminiCli {
        threshold_pct: 50,
        profile: GeminiProfile::Generalist,
    };
    // the window plays no part (no window known: the default profile would never fire)
    let r = run(&s, &toks, &spec, None);
    assert_eq!(fired_at(&r), vec![5]);
    assert_eq!(r.calls.len(), 1);
    let at = &r.requests[5];
    assert_eq!(at.event_index, 11);
    // after event 3 come 20,000 + 10 + 20,000 + 10 + 20,000 + 10 + 20,000 = 80,030 > 65,000;
    // after event 4, 60,030: events 0..=3 are folded
    assert_eq!(r.compactions[0].summarized_events, 0..4);
    assert_eq!(r.hidden(at), &[(0, 3)]);
    let folded = 10 + 10 + 20_000 + 10;
    assert_eq!(
        at.prompt_tokens,
        150_001 - folded + r.compactions[0].summary_tokens
    );
    let default = PolicySpec::GeminiCli {
        threshold_pct: 50,
        profile: GeminiProfile::Default,
    };
    assert!(run(&s, &toks, &default, None).calls.is_empty());
}

/// Anthropic `compact_20260112`: the request whose input exceeds the trigger (not the one
/// equal to it) is compacted; the summary replaces every block before it.
#[test]
fn anthropic_compaction_replaces_everything_above_the_trigger() {
    let prompts = [Some(50_000), Some(150_000), Some(150_001), Some(60_000)];
    let (s, toks) = session(3, &prompts);
    let spec = PolicySpec::AnthropicCompaction { trigger: 150_000 };
    let r = run(&s, &toks, &spec, Some(1_000_000));
    assert_eq!(fired_at(&r), vec![2]);
    let at = &r.requests[2];
    let k = at.event_index;
    assert_eq!(r.hidden(at), &[(0, k - 1)]);
    let tp = tok_prefix(&s, &toks);
    let summary = r.compactions[0].summary_tokens;
    assert_eq!(at.prompt_tokens, 150_001 - tp[k as usize] + summary);
    // the next request sends the summary and what came after it
    let next = &r.requests[3];
    assert_eq!(r.carried(next), &[1]);
    assert_eq!(next.prompt_tokens, 60_000 - tp[k as usize] + summary);
    // a lower trigger fires earlier
    let low = PolicySpec::AnthropicCompaction { trigger: 50_000 };
    assert_eq!(fired_at(&run(&s, &toks, &low, None)).first(), Some(&1));
}

/// `trim_tokens_to_summarize`: the summarizer reads only the newest events of what it
/// replaces that fit the budget; everything replaced is hidden all the same.
#[test]
fn langchain_summarizer_reads_only_the_trimmed_tail() {
    let (s, toks) = session(6, &[]);
    let spec = |trim| PolicySpec::Langchain {
        trigger: LcTrigger::Messages(8),
        keep: 4,
        trim,
    };
    let all = run(&s, &toks, &spec(None), None);
    assert_eq!(all.compactions[0].summarized_events, 0..5);
    // events 0..5 hold 10 + 10 + 500 + 10 + 500 = 1,030 tokens; 600 fit events 3 and 4
    let trimmed = run(&s, &toks, &spec(Some(600)), None);
    assert_eq!(trimmed.compactions[0].summarized_events, 3..5);
    let at = trimmed
        .requests
        .iter()
        .find(|q| q.pre_request_compacted)
        .unwrap();
    assert_eq!(trimmed.hidden(at), &[(0, 4)]);
    assert!(trimmed.calls[0].summarizer_history_chars < all.calls[0].summarizer_history_chars);
    // a budget below the newest event still reads that one
    let tiny = run(&s, &toks, &spec(Some(100)), None);
    assert_eq!(tiny.compactions[0].summarized_events, 4..5);
    // a later summary reads the one before only when everything it replaces fits the budget;
    // unread, that summary is replaced all the same
    let (s10, toks10) = session(10, &[]);
    let twice = run(&s10, &toks10, &spec(Some(600)), None);
    assert!(twice.compactions.len() >= 2);
    assert!(!twice.compactions[1].seeded_with_previous_summary);
    assert!(!twice.compactions[0].retained);
    assert_eq!(twice.compactions[0].subsumed_by, Some(2));
    let seeded = run(&s10, &toks10, &spec(None), None);
    assert!(seeded.compactions[1].seeded_with_previous_summary);
}

/// deepagents' default trigger: 0.85 of the window when known, 170,000 tokens otherwise.
#[test]
fn langchain_auto_trigger_is_85_percent_or_170k() {
    let prompts = [Some(84_999), Some(85_000), Some(169_999), Some(170_000)];
    let (s, toks) = session(3, &prompts);
    let spec = PolicySpec::Langchain {
        trigger: LcTrigger::Auto,
        keep: 1,
        trim: None,
    };
    let r = run(&s, &toks, &spec, Some(100_000));
    assert_eq!(fired_at(&r).first(), Some(&1));
    // keep 1 message: the newest before event 3 is a result (2), so its call (1) stays too
    let at = &r.requests[1];
    assert_eq!(r.hidden(at), &[(0, 0)]);
    assert_eq!(
        at.prompt_tokens,
        85_000 - 10 + r.compactions[0].summary_tokens
    );
    assert_eq!(fired_at(&run(&s, &toks, &spec, None)).first(), Some(&3));
}

/// OpenHands' token trigger: above `max_tokens` it forgets, after the kept head, the
/// shortest prefix whose tokens pass `total - max_tokens / 2`.
#[test]
fn openhands_max_tokens_condenses_to_half_the_limit() {
    let prompts = [
        Some(100),
        Some(200),
        Some(300),
        Some(400),
        Some(2_000),
        Some(2_001),
    ];
    let (s, toks) = session(5, &prompts);
    let spec = |max_tokens| PolicySpec::Openhands {
        max_size: 240,
        keep_first: 2,
        max_tokens,
    };
    assert!(run(&s, &toks, &spec(None), None).calls.is_empty());
    let r = run(&s, &toks, &spec(Some(2_000)), None);
    // 2,000 is not above the limit; 2,001 is
    assert_eq!(fired_at(&r), vec![5]);
    // reduce by 2,001 - 1,000 = 1,001: events 2 (500), 3 (10), 4 (500) pass it
    assert_eq!(r.compactions[0].summarized_events, 2..5);
    let at = &r.requests[5];
    assert_eq!(r.hidden(at), &[(2, 4)]);
    assert_eq!(
        at.prompt_tokens,
        2_001 - 1_010 + r.compactions[0].summary_tokens
    );
}

#[test]
fn openhands_keeps_head_and_tail_of_half_max_size() {
    // 1 + 2 * 10 + 1 = 22 events; max_size 12 fires when the view holds 13
    let (s, toks) = session(10, &[]);
    let spec = PolicySpec::Openhands {
        max_size: 12,
        keep_first: 2,
        max_tokens: None,
    };
    let r = run(&s, &toks, &spec, None);
    let first = r.compactions.first().expect("fires");
    let at = r.requests.iter().find(|q| q.pre_request_compacted).unwrap();
    // first time the view passes 12 events: request at event 13 (events 0..13 exist)
    assert_eq!(at.event_index, 13);
    // head: events 0..2; tail: 12 / 2 - 2 - 1 = 3 events before the request
    assert_eq!(first.summarized_events, 2..10);
    assert_eq!(r.hidden(at), &[(2, 9)]);
}

#[test]
fn langchain_keeps_the_newest_messages_without_orphan_results() {
    let (s, toks) = session(6, &[]);
    let spec = PolicySpec::Langchain {
        trigger: LcTrigger::Messages(8),
        keep: 4,
        trim: None,
    };
    let r = run(&s, &toks, &spec, None);
    let at = r.requests.iter().find(|q| q.pre_request_compacted).unwrap();
    // 8 messages exist before event 8
    assert_eq!(at.event_index, 9);
    // keep the newest 4 of events 0..9: 5..9, and 5 is a call (not a result): cut at 5
    assert_eq!(r.compactions[0].summarized_events, 0..5);
    // keep 3: the newest 3 start at a result (6), so the cut moves back to its call (5)
    let r3 = run(
        &s,
        &toks,
        &PolicySpec::Langchain {
            trigger: LcTrigger::Messages(8),
            keep: 3,
            trim: None,
        },
        None,
    );
    assert_eq!(r3.compactions[0].summarized_events, 0..5);
}

#[test]
fn gemini_cli_compresses_the_oldest_seventy_percent_in_two_calls() {
    // one user message per invocation so that there are split points
    let (mut s, toks) = session(4, &[Some(100), Some(200), Some(600), Some(300), Some(300)]);
    // results become plain user messages (split points need user text)
    for e in s.events.iter_mut() {
        if let Some(Part::ToolResponse { .. }) = e.parts.first() {
            e.parts = vec![Part::Text {
                text: "x".repeat(400),
            }];
        }
        if e.model_request {
            e.parts = vec![Part::Text { text: "ok".into() }];
        }
    }
    let r = run(
        &s,
        &toks,
        &PolicySpec::GeminiCli {
            threshold_pct: 50,
            profile: GeminiProfile::Default,
        },
        Some(1_000),
    );
    // fires at the request whose prompt first reaches 500, with a summary and a verification
    let at = r.requests.iter().find(|q| q.pre_request_compacted).unwrap();
    assert_eq!(at.event_index, r.requests[2].event_index);
    assert_eq!(r.calls.len(), 2);
    assert_eq!(r.compactions[1].seed, Some(1));
    assert_eq!(r.carried(at), &[2]);
    // the split is a user message at or past 70 % of the chars before the request
    let cut = r.compactions[1].summarized_events.end as usize;
    assert!(s.events[cut].author == "user");
    assert!(cut < at.event_index as usize);
}

#[test]
fn every_family_parses_and_labels() {
    for f in FAMILIES {
        assert!(!f.is_empty());
    }
    assert_eq!(
        LcTrigger::parse("fraction:0.8"),
        Some(LcTrigger::FractionPermille(800))
    );
    assert_eq!(
        LcTrigger::parse("tokens:50k"),
        Some(LcTrigger::Tokens(50_000))
    );
    assert_eq!(LcTrigger::parse("fraction:1.5"), None);
    let p = PolicySpec::MaskObservations { window: 10 };
    assert!(p.label().contains("not an ADK setting"));
}

/// A Claude Code session recording CLI `version` on claude-opus-4-5 (max output 64,000).
fn claude_code_session(prompts: &[Option<u64>], version: Option<&str>) -> (Session, Vec<u32>) {
    let (mut s, toks) = session(prompts.len() - 1, prompts);
    s.format = Format::ClaudeCode;
    s.model = Some("claude-opus-4-5-20251101".into());
    s.recorded_policy = version.map(|v| crate::transcript::RecordedPolicy {
        source: "claude-code version".into(),
        versions: vec![v.into()],
        rule: crate::transcript::PolicyRule::ClaudeCodeAuto {
            settings: Default::default(),
        },
    });
    (s, toks)
}

/// The request index each compaction of `r` preceded.
fn fired_at(r: &Replay) -> Vec<usize> {
    r.compactions
        .iter()
        .filter_map(|c| {
            let k = c.before_event_index?;
            Some(r.requests.partition_point(|q| q.event_index < k))
        })
        .collect()
}

/// On a 200,000-token auto-compact window: CLI 2.0.57 reserves the whole output cap (32,000
/// by default: 155,000; 64,000 when the settings it read set CLAUDE_CODE_MAX_OUTPUT_TOKENS=64000:
/// 123,000), 2.1.21 and later at most 20,000 (167,000), and a session recording no version
/// gets the current rule; the price table's window (1,000,000) plays no part.
#[test]
fn claude_code_fires_at_its_recorded_versions_threshold_on_a_200k_window() {
    let prompts = [
        Some(50_000),
        Some(122_999),
        Some(123_000),
        Some(166_999),
        Some(167_000),
    ];
    let spec = PolicySpec::ClaudeCode {
        pct: None,
        window: 200_000,
    };
    // the first firing (the hand-made history is too small for a summary to bring the
    // recorded prompt back under the threshold, so it fires again after)
    let fired = |version: Option<&str>| {
        let (s, toks) = claude_code_session(&prompts, version);
        fired_at(&run(&s, &toks, &spec, Some(1_000_000)))
            .first()
            .copied()
    };
    // the CLI checks the last response's usage with its output (10 here) before a request:
    // 166,999 + 10 before request 4 is the first past 155,000
    assert_eq!(fired(Some("2.0.57")), Some(4));
    let (mut s, toks) = claude_code_session(&prompts, Some("2.0.57"));
    if let Some(crate::transcript::PolicyRule::ClaudeCodeAuto { settings }) =
        s.recorded_policy.as_mut().map(|p| &mut p.rule)
    {
        settings
            .env
            .insert("CLAUDE_CODE_MAX_OUTPUT_TOKENS".into(), "64000".into());
    }
    // 122,999 + 10 before request 2 passes 123,000
    assert_eq!(
        fired_at(&run(&s, &toks, &spec, None)).first().copied(),
        Some(2)
    );
    assert_eq!(fired(Some("2.1.39")), Some(4));
    assert_eq!(fired(None), Some(4));
    // a 150,000 window under 2.1.39: 150,000 - 20,000 - 13,000 = 117,000, passed by the
    // 122,999 (+ 10) checked before request 2
    let (s, toks) = claude_code_session(&prompts, Some("2.1.39"));
    let narrow = PolicySpec::ClaudeCode {
        pct: None,
        window: 150_000,
    };
    assert_eq!(fired_at(&run(&s, &toks, &narrow, None)).first(), Some(&2));
}

/// Hand-made sessions of each release and model fire where the CLI's rule puts them: 2.0.74
/// at 155,000 (the 32,000 default output reserved), 2.1.23 at 167,000, a model the CLI does
/// not know (a third-party model behind it) at 155,000 on 2.1.19 and 167,000 on 2.1.50, a
/// Sonnet 4.5 session whose recorded prompts passed 200,000 at the 1M window's 967,000 (an
/// Opus 4.5 one, which does not take the 1M beta, still at 167,000), and a recorded
/// CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=50 at 90,000, never above the default.
#[test]
fn claude_code_sessions_fire_at_their_releases_threshold() {
    let prompts = [
        Some(50_000),
        Some(89_999),
        Some(90_000),
        Some(154_999),
        Some(155_000),
        Some(166_999),
        Some(167_000),
        Some(250_000),
        Some(966_999),
        Some(967_000),
    ];
    let spec = PolicySpec::ClaudeCode {
        pct: None,
        window: 200_000,
    };
    let fired = |version: &str, model: &str, env: &[(&str, &str)]| {
        let (mut s, toks) = claude_code_session(&prompts, Some(version));
        s.model = Some(model.into());
        if let Some(crate::transcript::PolicyRule::ClaudeCodeAuto { settings }) =
            s.recorded_policy.as_mut().map(|p| &mut p.rule)
        {
            for (k, v) in env {
                settings.env.insert(k.to_string(), v.to_string());
            }
        }
        fired_at(&run(&s, &toks, &spec, None)).first().copied()
    };
    let opus = "claude-opus-4-5-20251101";
    assert_eq!(fired("2.0.74", opus, &[]), Some(4));
    assert_eq!(fired("2.1.23", opus, &[]), Some(6));
    assert_eq!(fired("2.1.19", "glm-4.6", &[]), Some(4));
    assert_eq!(fired("2.1.50", "glm-4.6", &[]), Some(6));
    assert_eq!(fired("2.1.23", "claude-sonnet-4-5-20250929", &[]), Some(9));
    assert_eq!(fired("2.1.39", "claude-opus-4-6", &[]), Some(9));
    let pct = [("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "50")];
    assert_eq!(fired("2.1.39", opus, &pct), Some(2));
    let pct = [("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "99")];
    assert_eq!(fired("2.1.39", opus, &pct), Some(6));
}

/// A recorded CLAUDE_AUTOCOMPACT_PCT_OVERRIDE is kept as its percentage: a sweep's window
/// applies it anew (50 % of a 1M window's 980,000 is 490,000, not the 90,000 it gave on
/// 200,000), and a sweep's `pct` replaces it, above the recorded one as below.
#[test]
fn a_recorded_pct_override_follows_a_sweep_s_window_and_pct() {
    use super::claude_code::VersionRule;
    let (mut s, _) = claude_code_session(&[Some(50_000)], Some("2.1.39"));
    s.model = Some("claude-opus-4-5-20251101".into());
    if let Some(crate::transcript::PolicyRule::ClaudeCodeAuto { settings }) =
        s.recorded_policy.as_mut().map(|p| &mut p.rule)
    {
        settings
            .env
            .insert("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE".into(), "50".into());
    }
    let own = VersionRule::of_session(&s, 200_000);
    assert_eq!(own.threshold(), 90_000);
    assert!(own
        .text()
        .ends_with("lowered by CLAUDE_AUTOCOMPACT_PCT_OVERRIDE to 90000 = 90000"));
    assert_eq!(VersionRule::of_session(&s, 1_000_000).threshold(), 490_000);
    assert_eq!(own.threshold_at(Some(80)), 144_000);
    assert_eq!(own.threshold_at(Some(30)), 54_000);
    assert_eq!(own.threshold_at(Some(100)), 167_000);
}

/// A session that records its own automatic compaction: the request after it went out
/// compacted (its recorded size is small), yet the policy fires there, as Claude Code did: the
/// size it checked is the last response's usage with its output (plus the estimate of what
/// came after it), on the history before the compaction.
#[test]
fn claude_code_fires_where_the_recorded_compaction_was() {
    // request 3 is the first after the compaction: its recorded 40,000 is the compacted
    // prompt
    let prompts = [
        None,
        Some(150_000),
        Some(166_800),
        Some(40_000),
        Some(45_000),
    ];
    let (mut s, toks) = claude_code_session(&prompts, Some("2.1.39"));
    let requests: Vec<usize> = (0..s.events.len())
        .filter(|&e| s.events[e].model_request)
        .collect();
    let at = requests[3];
    // the response before the compaction wrote 300 tokens: 166,800 + 300 >= 167,000
    if let Some(u) = s.events[requests[2]].usage.as_mut() {
        u.output_tokens = 300;
    }
    for &e in &requests[3..] {
        s.events[e].post_compaction_usage = true;
    }
    let mut c = crate::transcript::RecordedCompaction::new(at, "claude-code compact_boundary");
    c.trigger = Some("auto".into());
    s.recorded_compactions.push(c);
    let spec = PolicySpec::ClaudeCode {
        pct: None,
        window: 200_000,
    };
    assert_eq!(fired_at(&run(&s, &toks, &spec, None)), vec![3]);
    // without the record the size checked is the same (the response before it, not the
    // compacted 40,000 request 3 sent): it fires there too
    s.recorded_compactions.clear();
    assert_eq!(fired_at(&run(&s, &toks, &spec, None)), vec![3]);
}

/// Request `q`'s model event in [`session`].
fn request_event(q: u32) -> u32 {
    1 + 2 * q
}

#[test]
fn turn_summary_fires_at_n_plus_m_turns_and_keeps_the_last_m() {
    let (s, toks) = session(6, &[]);
    let tp = tok_prefix(&s, &toks);
    let r = run(&s, &toks, &PolicySpec::TurnSummary { n: 2, m: 1 }, None);
    let fired: Vec<usize> = (0..r.requests.len())
        .filter(|&q| r.requests[q].pre_request_compacted)
        .collect();
    // 3 = n + m turns before request 3; then every n turns: request 5
    assert_eq!(fired, vec![3, 5]);
    assert_eq!(r.calls.len(), 2);
    // the first summary: turns 0 and 1 (requests 0, 1 and their results); turn 2 stays raw,
    // the task before request 0 is never summarized
    let (c1, c2) = (&r.compactions[0], &r.compactions[1]);
    assert_eq!(c1.summarized_events, request_event(0)..request_event(2));
    assert_eq!(c1.seed, None);
    let at = &r.requests[3];
    assert_eq!(r.hidden(at), &[(1, 4)]);
    let (h, c) = (request_event(0) as usize, request_event(2) as usize);
    assert_eq!(
        at.prompt_tokens,
        at.baseline_prompt_tokens - (tp[c] - tp[h]) + c1.summary_tokens
    );
    // the second reads the first and the turns since; both stay in the prompt, one after
    // the other, so the cached prefix reaches past the first
    assert_eq!(c2.summarized_events, request_event(2)..request_event(4));
    assert_eq!(c2.seed, Some(1));
    assert!(c1.retained && c2.retained);
    let at = &r.requests[5];
    assert_eq!(r.carried(at), &[1, 2]);
    let c = request_event(4) as usize;
    assert_eq!(
        at.prompt_tokens,
        at.baseline_prompt_tokens - (tp[c] - tp[h]) + c1.summary_tokens + c2.summary_tokens
    );
    assert_eq!(at.shared_prefix_tokens, tp[h] + c1.summary_tokens);
    assert_eq!(r.totals.final_retained_summaries, vec![1, 2]);
}

#[test]
fn hybrid_masks_between_static_summaries() {
    let (s, toks) = session(6, &[]);
    let tp = tok_prefix(&s, &toks);
    let spec = PolicySpec::Hybrid {
        n: 2,
        m: 1,
        window: 1,
    };
    let r = run(&s, &toks, &spec, None);
    let fired: Vec<usize> = (0..r.requests.len())
        .filter(|&q| r.requests[q].pre_request_compacted)
        .collect();
    assert_eq!(fired, vec![3, 5]);
    let ph = mask::PLACEHOLDER_TOKENS;
    let masked = RESULT_TOKENS as u64 - ph;
    // before the first summary: masking alone, the last turn's result verbatim
    let q2 = &r.requests[2];
    assert_eq!(r.hidden(q2), &[(result(0), result(0))]);
    assert_eq!(q2.prompt_tokens, q2.baseline_prompt_tokens - masked);
    // at the firing: the summary stands for turns 0-1, whose masked results free no more
    let h = request_event(0) as usize;
    // request q's prompt: raw, less events h..cut, plus the summary, less `n` masked results
    let prompt_is = |q: usize, cut: u32, summary: u64, n: u64| {
        let req = &r.requests[q];
        let removed = tp[cut as usize] - tp[h];
        let want = req.baseline_prompt_tokens - removed + summary - n * masked;
        assert_eq!(req.prompt_tokens, want, "request {q}");
    };
    let s1 = r.compactions[0].summary_tokens;
    assert_eq!(r.hidden(&r.requests[3]), &[(1, 4)]);
    prompt_is(3, request_event(2), s1, 0);
    // the next request masks the kept turn's result, after the summary: the cached prefix
    // ends there
    let q4 = &r.requests[4];
    assert_eq!(r.hidden(q4), &[(1, 4), (result(2), result(2))]);
    prompt_is(4, request_event(2), s1, 1);
    let (e, c) = (result(2) as usize, request_event(2) as usize);
    assert_eq!(q4.shared_prefix_tokens, tp[e] - (tp[c] - tp[h]) + s1);
    // static checkpointing: the second summary replaces the first
    let s2 = r.compactions[1].summary_tokens;
    assert_eq!(r.compactions[1].seed, Some(1));
    assert!(!r.compactions[0].retained);
    assert_eq!(r.carried(&r.requests[5]), &[2]);
    prompt_is(5, request_event(4), s2, 0);
    assert_eq!(r.hidden(&r.requests[6]), &[(1, 8), (result(4), result(4))]);
    prompt_is(6, request_event(4), s2, 1);
}

#[test]
fn turn_summary_tries_again_after_a_summary_that_was_not_written() {
    let (s, toks) = session(6, &[]);
    let sizes = SessionSizes::new(&s, Some(&toks));
    let ctx = Ctx {
        sizes: &sizes,
        session: &s,
        window: None,
    };
    let none = Deterministic::new(Policy::None, Vec::new(), Vec::<String>::new());
    let r = replay_spec(&PolicySpec::TurnSummary { n: 2, m: 1 }, &ctx, &none);
    // the turns stay unsummarized, so every request from the firing point on calls again
    let at: Vec<u32> = r
        .calls
        .iter()
        .filter_map(|c| c.before_event_index)
        .collect();
    assert_eq!(at, (3..7).map(request_event).collect::<Vec<_>>());
    assert!(r.compactions.is_empty());
}
