//! After each invocation (adk-compaction.md §3, §4, §6): `Runner._run_post_invocation_compaction`
//! — the token path first (any author's count, no branch), then the sliding window.

use super::contents::{self, Scratch};
use super::guards;
use super::pre_request::token_path;
use super::types::{Invocation, Phase, Trigger};
use super::State;

/// ADK `_run_compaction_for_sliding_window` after the token path did not compact.
fn sliding_window(st: &mut State<'_>, inv: u32) -> bool {
    let Some((interval, overlap)) = st.cfg.sliding else {
        return false;
    };
    let s = st.s;
    let n = st.n;
    if n == 0 {
        return false;
    }
    // stream-last compaction with a truthy end (any kind, subsumed or not)
    let last_end = st
        .comps
        .iter()
        .rev()
        .find(|c| c.end != 0.0)
        .map_or(0.0, |c| c.end);
    // distinct invocation ids are interned in first-appearance order: 0..=max, and the
    // state keeps each one's latest timestamp and first / last event as events arrive
    let latest = &st.inv_latest;
    let new: Vec<usize> = (0..latest.len())
        .filter(|&k| latest[k] > last_end)
        .collect();
    if (new.len() as u64) < interval {
        return false;
    }
    let (Some(&first_new), Some(&end_inv)) = (new.first(), new.last()) else {
        return false;
    };
    let start_inv = first_new.saturating_sub(overlap.min(usize::MAX as u64) as usize);
    let last_idx = st.inv_last[end_inv] as usize;
    let first_idx = st.inv_first[start_inv] as usize;
    if first_idx > last_idx {
        return false;
    }
    let mut win: Vec<u32> = (first_idx as u32..=last_idx as u32).collect();
    let keep = guards::self_contained_prefix(s, &win, n, &mut st.gs);
    win.truncate(keep);
    if win.is_empty() {
        return false;
    }
    let lo = win
        .iter()
        .map(|&e| s.timestamp[e as usize])
        .fold(f64::INFINITY, f64::min);
    let hi = win
        .iter()
        .map(|&e| s.timestamp[e as usize])
        .fold(f64::NEG_INFINITY, f64::max);
    if !guards::worth_compacting(s, n, &st.comps, &st.cov, lo, hi) {
        return false;
    }
    st.summarize(
        Phase::PostInvocation,
        Trigger::SlidingWindow,
        inv,
        None,
        win,
        None,
    )
}

/// Post-invocation compaction for invocation block `inv` (events `lo..hi`), then the
/// invocation's row.
pub(crate) fn run(
    st: &mut State<'_>,
    base: &mut Scratch,
    b: usize,
    lo: usize,
    hi: usize,
    calls_before: usize,
    main: u32,
) {
    let s = st.s;
    let inv = b as u32;
    let mut measured = None;
    let before = st.out.compactions.len();
    if st.cfg.token.is_some() {
        measured = st.measured(u32::MAX, None);
    }
    let mut done = false;
    if st.cfg.token.is_some() {
        done = token_path(st, measured, Phase::PostInvocation, inv, None);
    }
    if !done {
        sliding_window(st, inv);
    }
    let post = (st.out.compactions.len() > before).then(|| before as u32 + 1);
    let trigger = post.and_then(|o| st.out.compaction(o)).map(|c| c.trigger);
    let cached = (st.base.main_agent == s.main_agent)
        .then(|| st.base.block_end.get(b))
        .flatten();
    let raw = match cached {
        Some(r) => contents::Measure::from_row(*r),
        None => contents::build(s, st.n, &[], &[], main, None, base),
    };
    let sim = if st.comps.is_empty() {
        raw
    } else {
        st.measure(main, None)
    };
    let retained = st
        .comps
        .iter()
        .enumerate()
        .filter(|(_, c)| c.retained)
        .map(|(k, _)| k as u32 + 1)
        .collect();
    st.out.invocations.push(Invocation {
        index: inv,
        first_event_index: lo as u32,
        events: (hi - lo) as u32,
        first_timestamp: s.timestamp[lo],
        last_timestamp: s.timestamp[hi - 1],
        post_measured_prompt_tokens: measured,
        post_compaction: post,
        post_trigger: trigger,
        summarizer_calls: (st.out.calls.len() - calls_before) as u32,
        next_request_adk_chars: sim.adk_chars,
        next_request_adk_chars_uncompacted: raw.adk_chars,
        next_request_contents: sim.contents,
        next_request_history_tokens: sim.history_tokens,
        next_request_baseline_history_tokens: raw.history_tokens,
        retained_summaries: retained,
    });
}
