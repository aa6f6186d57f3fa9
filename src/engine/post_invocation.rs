//! After each invocation (adk-compaction.md §3, §4, §6): `Runner._run_post_invocation_compaction`
//! — the token path first (any author's count, no branch), then the sliding window.

use super::contents::{self, Scratch};
use super::guards;
use super::pre_request::token_path;
use super::types::{Invocation, Phase};
use super::{Firing, State};

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
    // state keeps each one's latest timestamp and first / last event as events arrive, and
    // the new ones among them
    let new = st.new_invocations(last_end);
    if (new.len() as u64) < interval {
        return false;
    }
    let (Some(&first_new), Some(&end_inv)) = (new.first(), new.last()) else {
        return false;
    };
    let (first_new, end_inv) = (first_new as usize, end_inv as usize);
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
    let (lo, hi) = guards::time_span(s, &win);
    if !guards::worth_compacting(
        s,
        n,
        &st.comps,
        &st.cov,
        lo,
        hi,
        Some((&st.ridx, &st.base.json_prefix)),
    ) {
        return false;
    }
    st.summarize(&Firing::sliding_window(inv, &win))
}

/// [`sliding_window`] for sessions with isolation scopes or rewinds: ADK works on
/// `_apply_rewinds(session.events)` minus scoped events, so invocations, windows and the last
/// compaction are taken among the live unscoped events only.
fn sliding_window_view(st: &mut State<'_>, inv: u32) -> bool {
    let Some((interval, overlap)) = st.cfg.sliding else {
        return false;
    };
    let s = st.s;
    let n = st.n;
    let last_end = (0..st.comps.len())
        .rev()
        .find(|&k| {
            st.comp_scope[k] == 0 && st.comp_live(st.comps[k].after_raw) && st.comps[k].end != 0.0
        })
        .map_or(0.0, |k| st.comps[k].end);
    let evs: Vec<u32> = (0..n as u32)
        .filter(|&i| st.in_view(i as usize, 0))
        .collect();
    // distinct invocation ids in first-appearance order among those events
    let n_inv = s.inv_id.iter().max().map_or(0, |&m| m as usize + 1);
    let mut pos = vec![u32::MAX; n_inv];
    let mut latest = vec![0.0f64; n_inv];
    let mut order: Vec<u32> = Vec::new();
    for &i in &evs {
        let k = s.inv_id[i as usize] as usize;
        if pos[k] == u32::MAX {
            pos[k] = order.len() as u32;
            order.push(k as u32);
        }
        latest[k] = latest[k].max(s.timestamp[i as usize]);
    }
    let new: Vec<u32> = order
        .iter()
        .copied()
        .filter(|&k| latest[k as usize] > last_end)
        .collect();
    if (new.len() as u64) < interval {
        return false;
    }
    let (Some(&first_new), Some(&end_inv)) = (new.first(), new.last()) else {
        return false;
    };
    let first_pos = pos[first_new as usize] as usize;
    let start_inv = order[first_pos.saturating_sub(overlap.min(usize::MAX as u64) as usize)];
    let Some(last_j) = evs.iter().rposition(|&i| s.inv_id[i as usize] == end_inv) else {
        return false;
    };
    let Some(first_j) = evs.iter().position(|&i| s.inv_id[i as usize] == start_inv) else {
        return false;
    };
    if first_j > last_j {
        return false;
    }
    let mut win: Vec<u32> = evs[first_j..=last_j].to_vec();
    let keep = {
        let spans = &st.spans;
        guards::self_contained_prefix_in(s, &win, n, &mut st.gs, |i| {
            s.scope[i] == 0 && !crate::tokens::sizes::in_spans(spans, i)
        })
    };
    win.truncate(keep);
    if win.is_empty() {
        return false;
    }
    let (lo, hi) = guards::time_span(s, &win);
    st.view(0);
    let (comps, cov) = st.vc();
    if !guards::worth_compacting_in(s, n, comps, cov, lo, hi, |i| st.in_view(i, 0)) {
        return false;
    }
    st.summarize(&Firing::sliding_window(inv, &win))
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
    let before = st.out.compactions.len();
    // One reading: what the check compares with the threshold is what is reported (the oracle
    // reports it even when the entry returns before the token path).
    let measured = if st.cfg.token.is_some() {
        st.measured(u32::MAX, None, 0)
    } else {
        None
    };
    // `_run_compaction_for_sliding_window` (the post-invocation entry, token path included)
    // returns at once when no live unscoped event remains.
    let any = !st.special
        || (0..st.n).any(|i| st.in_view(i, 0))
        || (0..st.comps.len())
            .any(|k| st.comp_scope[k] == 0 && st.comp_live(st.comps[k].after_raw));
    let mut done = !any;
    if any && st.cfg.token.is_some() {
        done = token_path(st, measured, Phase::PostInvocation, inv, None, 0);
    }
    if !done {
        if st.special {
            sliding_window_view(st, inv);
        } else {
            sliding_window(st, inv);
        }
    }
    let post = (st.out.compactions.len() > before).then(|| before as u32 + 1);
    let trigger = post.and_then(|o| st.out.compaction(o)).map(|c| c.trigger);
    let cached = (st.base.main_agent == s.main_agent)
        .then(|| st.base.block_end.get(b))
        .flatten();
    let raw = match cached {
        Some(r) => contents::Measure::from_row(*r),
        None => {
            base.scope = 0;
            let ask = contents::Ask {
                s,
                n: st.n,
                cov: &[],
                viewer: main,
                branch: None,
            };
            contents::build(&ask, &[], base)
        }
    };
    let sim = if st.comps.is_empty() {
        raw
    } else {
        st.measure(main, None, 0)
    };
    #[cfg(debug_assertions)]
    {
        let mut runs = Vec::new();
        contents::retained_runs(&st.comps, &mut runs);
        assert_eq!(runs, st.retained_runs, "kept retained runs vs the flags");
    }
    // stored once per change: no summary appended since the last invocation, same range
    let retained = match &st.retained_at {
        Some(r) => r.clone(),
        None => {
            let a = st.out.retained.len() as u32;
            st.out.retained.extend_from_slice(&st.retained_runs);
            let r = a..st.out.retained.len() as u32;
            st.retained_at = Some(r.clone());
            r
        }
    };
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
