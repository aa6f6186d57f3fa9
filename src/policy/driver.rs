//! The one walk every policy shares: the session's model requests in order, the policy's
//! decision before each, and the request rows, summarizer calls and compactions the cost
//! layer reads. O(requests + events) plus the summarizer's own work: cleared tool results
//! are one growing list that every request addresses by a prefix range, and a summary's
//! hidden intervals are stored once and shared by the requests that carry it.

use super::{At, CompactionPolicy, Ctx, Decision};
use crate::engine::summarizer::{Seed, SummaryText};
use crate::engine::{
    CallResult, Compaction, Invocation, InvocationRuns, Outcome, Phase, Replay, Request,
    SummarizeRequest, Summarizer, SummarizerCall, Trigger, TEMPLATE_FIXED_CHARS,
};
use crate::tokens::sizes::{SessionSizes, PART_RESPONSE};

/// Tokens of event `e`'s tool-response parts: the event's tokens in proportion to the parts'
/// ADK chars (a transcript event is usually one response, then it is the whole event).
pub fn response_tokens(s: &SessionSizes, e: usize) -> u64 {
    let tok = s.tokens[e] as u64;
    let (a, b) = s.parts_at[e];
    let parts = &s.parts[a as usize..b as usize];
    let resp: u64 = parts
        .iter()
        .filter(|p| p.kind == PART_RESPONSE)
        .map(|p| p.adk_chars)
        .sum();
    let all: u64 = parts.iter().map(|p| p.adk_chars).sum();
    if all == 0 || resp >= all {
        tok
    } else {
        (tok as u128 * resp as u128 / all as u128) as u64
    }
}

/// The summary the requests carry now.
#[derive(Clone)]
struct Current {
    ordinal: u32,
    tokens: u64,
    chars: u64,
    start_timestamp: f64,
    text: Option<SummaryText>,
}

/// ADK's formatted-history size of raw events `a..c` (the summarizer prompt stand-in), with
/// the seed's line first: `"model: " + text` when there is one.
fn history_chars(
    base: &crate::tokens::sizes::BaselineCache,
    a: u32,
    c: u32,
    seed_chars: Option<u64>,
) -> u64 {
    let (a, c) = (a as usize, c as usize);
    let mut blocks = base.summ_blocks_prefix[c] - base.summ_blocks_prefix[a];
    let mut chars = base.summ_chars_prefix[c] - base.summ_chars_prefix[a];
    if let Some(sc) = seed_chars.filter(|&x| x > 0) {
        blocks += 1;
        chars += 7 + sc;
    }
    chars + blocks.saturating_sub(1)
}

/// Replay the session under `policy`, calling `summarizer` where the policy summarizes.
pub fn replay(
    ctx: &Ctx<'_>,
    policy: &mut dyn CompactionPolicy,
    summarizer: &dyn Summarizer,
) -> Replay {
    let s = ctx.sizes;
    let base = s
        .baseline
        .get_or_init(|| crate::engine::contents::baseline(s));
    let tp = &base.tok_prefix;
    // a copy: the policy is borrowed mutably for its decisions
    let clearable = policy.clearable().cloned().unwrap_or_default();
    let (cands, cp, ph) = (&clearable.events, &clearable.prefix, clearable.placeholder);
    let mut mp = Vec::with_capacity(s.n + 1);
    mp.push(0u64);
    for e in 0..s.n {
        mp.push(mp[e] + u64::from(ctx.is_message(e)));
    }

    let mut out = Replay::default();
    // One row per model request, one hidden run per clearable result: reserved, so a long
    // session's rows are not copied as they grow (that copy was most of the replay's growth
    // per event from 2,500 to 20,000 events).
    out.requests.reserve_exact(base.request_event.len());
    out.hidden.reserve(cands.len());
    let mut cand_at = 0usize; // cleared-list entries pushed to `out.hidden`
    let mut m_prev = 0usize;
    let mut before_k = 0usize; // candidates before the current request's event
    let (mut head, mut cut) = (0u32, 0u32);
    let mut kept: Vec<(u32, u64)> = Vec::new();
    let mut kept_tok = 0u64;
    let mut cur: Option<Current> = None;
    let (mut hid, mut car) = (0u32..0u32, 0u32..0u32);
    let mut prev_hist = 0u64;

    for (q, (&k, meas)) in base.request_event.iter().zip(&base.request).enumerate() {
        let ku = k as usize;
        let h_base = meas[3];
        let recorded = s.recorded_prompt[ku];
        let p_base = recorded.unwrap_or(h_base);
        while cands.get(before_k).is_some_and(|&e| e < k) {
            before_k += 1;
        }
        let sum_removed = |head: u32, cut: u32, kept_tok: u64, on: bool| {
            if on {
                (tp[cut as usize] - tp[head as usize]).saturating_sub(kept_tok)
            } else {
                0
            }
        };
        let clear_removed = |m: usize| cp[m] as i64 - (m as u64 * ph) as i64;
        let net =
            |removed: i64, added: u64, of: u64| (of as i64 - removed + added as i64).max(0) as u64;
        let on = cur.is_some();
        let removed_now =
            sum_removed(head, cut, kept_tok, on) as i64 + clear_removed(m_prev.min(before_k));
        let added_now = cur.as_ref().map_or(0, |c| c.tokens);
        let messages = if on {
            mp[head as usize] + 1 + kept.len() as u64 + (mp[ku] - mp[cut as usize])
        } else {
            mp[ku]
        };
        let at = At {
            q,
            event: k,
            baseline_prompt: p_base,
            prompt: net(removed_now, added_now, p_base),
            messages,
            head,
            cut,
            summary_chars: cur.as_ref().map_or(0, |c| c.chars),
        };
        let pre_start = out.pre_request.len() as u32;
        let mut m = m_prev.min(before_k);
        let mut compacted_now = false;
        match policy.decide(ctx, &at) {
            Decision::Keep => {}
            Decision::Clear(n) => m = n.min(before_k),
            Decision::Summarize {
                head: h,
                cut: c,
                keep,
                passes,
            } => {
                let c = c.min(k);
                let a = if on { cut.max(h) } else { h };
                if c > a {
                    let mut seed = cur.clone();
                    let mut made = None;
                    for _ in 0..passes.max(1) {
                        let seed_chars = seed.as_ref().map(|x| x.chars);
                        let hc = history_chars(base, a, c, seed_chars);
                        let call_no = out.calls.len() as u32 + 1;
                        let req = SummarizeRequest {
                            call: call_no,
                            phase: Phase::PreRequest,
                            trigger: Trigger::TokenThreshold,
                            events: a..c,
                            skip: &[],
                            seed: seed.as_ref().map(|x| Seed {
                                ordinal: x.ordinal,
                                chars: x.chars,
                                start_timestamp: x.start_timestamp,
                                text: x.text.as_ref(),
                            }),
                            prompt_chars: TEMPLATE_FIXED_CHARS + hc,
                            history_chars: hc,
                            fired_at_s: s.timestamp[ku],
                            next_turn_at_s: None,
                        };
                        let outcome = summarizer.summarize(&req);
                        let inv = s.inv_block[ku];
                        let mut call = SummarizerCall {
                            call: call_no,
                            phase: Phase::PreRequest,
                            trigger: Trigger::TokenThreshold,
                            invocation_index: inv,
                            before_event_index: Some(k),
                            result: CallResult::Failed,
                            summarizer_prompt_chars: TEMPLATE_FIXED_CHARS + hc,
                            summarizer_history_chars: hc,
                            input_tokens: 0,
                            output_tokens: 0,
                            summary_chars: 0,
                            raw_events: a..c,
                            compaction: None,
                        };
                        match outcome {
                            Outcome::Summary(sm) => {
                                let ordinal = out.compactions.len() as u32 + 1;
                                let start = if seed.is_some() { h } else { a };
                                let start_ts = seed
                                    .as_ref()
                                    .map_or(s.timestamp[a as usize], |x| x.start_timestamp);
                                call.result = CallResult::Summary;
                                call.input_tokens = sm.input_tokens;
                                call.output_tokens = sm.tokens;
                                call.summary_chars = sm.chars;
                                call.compaction = Some(ordinal - 1);
                                if let Some(prev) = seed.as_ref() {
                                    if let Some(pc) =
                                        out.compactions.get_mut(prev.ordinal as usize - 1)
                                    {
                                        pc.retained = false;
                                        pc.subsumed_by = Some(ordinal);
                                    }
                                }
                                out.compactions.push(Compaction {
                                    ordinal,
                                    phase: Phase::PreRequest,
                                    trigger: Trigger::TokenThreshold,
                                    invocation_index: inv,
                                    before_event_index: Some(k),
                                    start_timestamp: start_ts,
                                    end_timestamp: s.timestamp[c as usize - 1],
                                    summarizer_input_events: (c - a) + u32::from(seed.is_some()),
                                    seeded_with_previous_summary: seed.is_some(),
                                    seed: seed.as_ref().map(|x| x.ordinal),
                                    raw_events_in_range: c - start,
                                    first_raw_event_index: Some(start),
                                    last_raw_event_index: Some(c - 1),
                                    summarized_events: a..c,
                                    invocations_in_range: InvocationRuns::range(
                                        s.inv_block[start as usize]
                                            ..s.inv_block[c as usize - 1] + 1,
                                    ),
                                    summarizer_call: call_no,
                                    summarizer_prompt_chars: TEMPLATE_FIXED_CHARS + hc,
                                    summarizer_history_chars: hc,
                                    summary_chars: sm.chars,
                                    summary_json_chars: sm.json_chars,
                                    summary_tokens: sm.tokens,
                                    summarizer_input_tokens: sm.input_tokens,
                                    retained: true,
                                    subsumed_by: None,
                                });
                                out.pre_request.push(ordinal);
                                let next = Current {
                                    ordinal,
                                    tokens: sm.tokens,
                                    chars: sm.chars,
                                    start_timestamp: start_ts,
                                    text: sm.text,
                                };
                                seed = Some(next.clone());
                                made = Some(next);
                                out.calls.push(call);
                            }
                            Outcome::Empty { input_tokens } | Outcome::Failed { input_tokens } => {
                                if matches!(outcome, Outcome::Empty { .. }) {
                                    call.result = CallResult::Empty;
                                }
                                call.input_tokens = input_tokens;
                                out.calls.push(call);
                                break;
                            }
                        }
                    }
                    if let Some(summary) = made {
                        compacted_now = true;
                        head = h;
                        cut = c;
                        kept = keep.into_iter().filter(|&(e, _)| e >= h && e < c).collect();
                        kept_tok = kept.iter().map(|&(_, t)| t).sum();
                        // hidden: head..cut minus the re-attached events, stored once
                        let hs = out.hidden.len() as u32;
                        let mut from = h;
                        for &(e, _) in &kept {
                            if e > from {
                                out.hidden.push((from, e - 1));
                            }
                            from = e + 1;
                        }
                        if c > from {
                            out.hidden.push((from, c - 1));
                        }
                        hid = hs..out.hidden.len() as u32;
                        let cs = out.carried.len() as u32;
                        out.carried.push(summary.ordinal);
                        car = cs..cs + 1;
                        cur = Some(summary);
                    }
                }
            }
        }

        // the request as sent
        let on = cur.is_some();
        let removed_sum = sum_removed(head, cut, kept_tok, on);
        let removed = removed_sum as i64 + clear_removed(m);
        let added = cur.as_ref().map_or(0, |c| c.tokens);
        let hist = net(removed, added, h_base);
        let prompt = net(removed, added, p_base);
        let hidden_tokens = removed_sum + cp[m];
        while cand_at < m {
            out.hidden.push((cands[cand_at], cands[cand_at]));
            cand_at += 1;
        }
        if !cands.is_empty() {
            hid = 0..m as u32;
        }
        // caching: the history shared with the previous request, up to the first item that
        // changed (a new summary after the kept head; the first newly cleared or restored
        // tool result)
        let shared = if q == 0 {
            0
        } else if compacted_now {
            tp[head as usize]
        } else if m != m_prev {
            let j = m.min(m_prev);
            let e = cands.get(j).copied().unwrap_or(k) as usize;
            (tp[e] as i64 - clear_removed(j)).max(0) as u64
        } else {
            prev_hist
        }
        .min(hist)
        .min(prev_hist);
        prev_hist = hist;
        m_prev = m;
        let scale = |x: u64| {
            if h_base == 0 {
                x
            } else {
                (x as u128 * hist as u128 / h_base as u128) as u64
            }
        };
        let pre_end = out.pre_request.len() as u32;
        out.requests.push(Request {
            event_index: k,
            invocation_index: s.inv_block[ku],
            author: s.author[ku],
            measured_prompt_tokens: Some(at.prompt),
            adk_chars: scale(meas[1]),
            adk_chars_uncompacted: meas[1],
            contents: scale(meas[0]) as u32,
            contents_uncompacted: meas[0] as u32,
            json_chars: scale(meas[2]),
            json_chars_uncompacted: meas[2],
            history_tokens: hist,
            baseline_history_tokens: h_base,
            summary_tokens: added,
            hidden_tokens,
            shared_prefix_tokens: shared,
            pre_request_compacted: compacted_now,
            pre_request_compactions: pre_start..pre_end,
            recorded_prompt_tokens: recorded,
            replayed_prompt_tokens: recorded.map(|_| prompt),
            baseline_prompt_tokens: p_base,
            prompt_tokens: prompt,
            carried: if on { car.clone() } else { 0..0 },
            hidden: hid.clone(),
        });
    }

    // invocation rows: the blocks, with their calls
    let blocks = s.block_start.len().saturating_sub(1);
    out.invocations.reserve_exact(blocks);
    let mut calls_per = vec![0u32; blocks];
    for c in &out.calls {
        if let Some(x) = calls_per.get_mut(c.invocation_index as usize) {
            *x += 1;
        }
    }
    for (b, &calls) in calls_per.iter().enumerate() {
        let (lo, hi) = (s.block_start[b] as usize, s.block_start[b + 1] as usize);
        out.invocations.push(Invocation {
            index: b as u32,
            first_event_index: lo as u32,
            events: (hi - lo) as u32,
            first_timestamp: s.timestamp[lo],
            last_timestamp: s.timestamp[hi - 1],
            post_measured_prompt_tokens: None,
            post_compaction: None,
            post_trigger: None,
            summarizer_calls: calls,
            next_request_adk_chars: 0,
            next_request_adk_chars_uncompacted: 0,
            next_request_contents: 0,
            next_request_history_tokens: 0,
            next_request_baseline_history_tokens: 0,
            retained_summaries: 0..0,
        });
    }
    let t = &mut out.totals;
    t.summarizer_calls = out.calls.len() as u32;
    t.compactions = out.compactions.len() as u32;
    t.pre_request_token_threshold = out.compactions.len() as u32;
    t.failed_or_empty_summaries = out
        .calls
        .iter()
        .filter(|c| c.result != CallResult::Summary)
        .count() as u32;
    t.summarizer_prompt_chars = out.calls.iter().map(|c| c.summarizer_prompt_chars).sum();
    t.summary_chars = out.compactions.iter().map(|c| c.summary_chars).sum();
    t.summarizer_input_tokens = out.calls.iter().map(|c| c.input_tokens).sum();
    t.summarizer_output_tokens = out.calls.iter().map(|c| c.output_tokens).sum();
    t.final_retained_summaries = cur.map(|c| vec![c.ordinal]).unwrap_or_default();
    out
}
