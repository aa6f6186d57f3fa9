//! ADK 2.13's guards on a range before it is summarized (adk-compaction.md §5, §7): the safe
//! retention split, the self-contained-prefix trim with its dead-call second pass, and the
//! worth-compacting gate.

use super::contents::{covered, next_gen, Comp, RetainedIndex};
use super::types::InvocationRuns;
use crate::search::partition_point_from_end;
use crate::tokens::sizes::{SessionSizes, PART_CALL};

/// Reusable id sets for the guards.
#[derive(Debug, Default)]
pub struct GuardScratch {
    gen: u32,
    open: Vec<u32>,
    open_count: usize,
    mark: Vec<u32>,
    mark2: Vec<u32>,
    dead: Vec<u32>,
}

impl GuardScratch {
    fn bump(&mut self, n_ids: usize) -> u32 {
        if self.open.len() < n_ids {
            self.open.resize(n_ids, 0);
            self.mark.resize(n_ids, 0);
            self.mark2.resize(n_ids, 0);
            self.dead.resize(n_ids, 0);
        }
        self.open_count = 0;
        next_gen(
            &mut self.gen,
            &mut [
                &mut self.open,
                &mut self.mark,
                &mut self.mark2,
                &mut self.dead,
            ],
        )
    }
}

/// Earliest and latest timestamp of events `evs` (the range an empty summary of them
/// would cover, as the worth-compacting gate measures it).
pub fn time_span(s: &SessionSizes, evs: &[u32]) -> (f64, f64) {
    // Callers pass events in ascending order: with sorted timestamps, the first and last.
    debug_assert!(evs.windows(2).all(|w| w[0] < w[1]), "ascending events");
    if let (true, Some(&a), Some(&b)) = (s.ts_sorted, evs.first(), evs.last()) {
        return (s.timestamp[a as usize], s.timestamp[b as usize]);
    }
    evs.iter()
        .map(|&e| s.timestamp[e as usize])
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), t| {
            (lo.min(t), hi.max(t))
        })
}

/// `_safe_token_compaction_split_index` over candidate raw events `cands` (indices), keeping
/// `r` events: the largest split `<= len - r` whose retained tail has no response without its
/// call.
pub fn safe_split(s: &SessionSizes, cands: &[u32], r: usize, gs: &mut GuardScratch) -> usize {
    let initial = cands.len() as i64 - r as i64;
    if initial <= 0 {
        return 0;
    }
    let g = gs.bump(s.n_ids as usize);
    // unmatched set: mark == g means present
    let mut count = 0usize;
    for i in (0..cands.len()).rev() {
        let e = cands[i] as usize;
        for id in s.resp_ids(e) {
            if gs.mark[id as usize] != g {
                gs.mark[id as usize] = g;
                count += 1;
            }
        }
        for id in s.call_ids(e) {
            if gs.mark[id as usize] == g {
                gs.mark[id as usize] = g.wrapping_sub(1);
                count -= 1;
            }
        }
        if count == 0 && (i as i64) <= initial {
            return i;
        }
    }
    0
}

/// One pass of `_longest_self_contained_prefix`: the longest prefix of `win` ending where no
/// call / confirmation / auth id is open (ids marked dead are ignored).
fn prefix_pass(
    s: &SessionSizes,
    win: &[u32],
    gs: &mut GuardScratch,
    use_dead: bool,
    dead_gen: u32,
) -> usize {
    let g = gs.bump(s.n_ids as usize);
    let mut open = 0usize;
    let mut safe = 0usize;
    for (k, &e) in win.iter().enumerate() {
        let e = e as usize;
        for id in s.resp_ids(e) {
            if gs.open[id as usize] == g {
                gs.open[id as usize] = 0;
                open -= 1;
            }
        }
        let is_dead = |id: u32, gs: &GuardScratch| use_dead && gs.dead[id as usize] == dead_gen;
        for id in s.call_ids(e).chain(s.requested[e].iter().copied()) {
            if is_dead(id, gs) {
                continue;
            }
            if gs.open[id as usize] != g {
                gs.open[id as usize] = g;
                open += 1;
            }
        }
        if open == 0 {
            safe = k + 1;
        }
    }
    safe
}

/// [`prefix_pass`] (without dead ids) over a window that only grows at its end: the window
/// of a token trigger that starts at the same event request after request (its summaries
/// keep failing, or it is not yet worth compacting) is scanned once, not once per request.
/// It records every prefix length at which no id is open, so a window cut shorter than what
/// was scanned is answered too.
#[derive(Debug, Default)]
pub struct PrefixScan {
    /// First event of the scanned window.
    start: Option<u32>,
    scanned: usize,
    gen: u32,
    open: Vec<u32>,
    open_count: usize,
    /// Prefix lengths (ascending) after which no id is open.
    safe: Vec<u32>,
}

impl PrefixScan {
    /// The first pass of [`self_contained_prefix`] over `win` (contiguous events from its
    /// first): the longest prefix ending with no id open.
    pub fn first_pass(&mut self, s: &SessionSizes, win: &[u32]) -> usize {
        let Some(&first) = win.first() else {
            return 0;
        };
        if Some(first) != self.start {
            self.start = Some(first);
            self.scanned = 0;
            self.open_count = 0;
            self.safe.clear();
            if self.open.len() < s.n_ids as usize {
                self.open.resize(s.n_ids as usize, 0);
            }
            next_gen(&mut self.gen, &mut [&mut self.open]);
        }
        let g = self.gen;
        while self.scanned < win.len() {
            let e = win[self.scanned] as usize;
            debug_assert_eq!(e, first as usize + self.scanned, "a contiguous window");
            for id in s.resp_ids(e) {
                if self.open[id as usize] == g {
                    self.open[id as usize] = 0;
                    self.open_count -= 1;
                }
            }
            for id in s.call_ids(e).chain(s.requested[e].iter().copied()) {
                if self.open[id as usize] != g {
                    self.open[id as usize] = g;
                    self.open_count += 1;
                }
            }
            self.scanned += 1;
            if self.open_count == 0 {
                self.safe.push(self.scanned as u32);
            }
        }
        let at = self.safe.partition_point(|&k| k as usize <= win.len());
        at.checked_sub(1).map_or(0, |i| self.safe[i] as usize)
    }
}

/// `_longest_self_contained_prefix(window, all_events)` (2.12+): returns the kept length.
/// `n` raw events exist; `newest_inv` is the `inv_id` of the newest raw event.
pub fn self_contained_prefix(
    s: &SessionSizes,
    win: &[u32],
    n: usize,
    gs: &mut GuardScratch,
) -> usize {
    self_contained_prefix_in(s, win, n, gs, |_| true)
}

/// [`self_contained_prefix`] where `all_events` is the raw events `i < n` with `keep(i)` (ADK
/// passes the live events of one isolation scope).
pub fn self_contained_prefix_in(
    s: &SessionSizes,
    win: &[u32],
    n: usize,
    gs: &mut GuardScratch,
    keep: impl Fn(usize) -> bool,
) -> usize {
    let safe = prefix_pass(s, win, gs, false, 0);
    dead_pass(s, win, n, gs, keep, safe)
}

/// [`self_contained_prefix`] over a contiguous window that grows at its end, its first pass
/// resumed by `scan`.
pub fn self_contained_prefix_scanned(
    s: &SessionSizes,
    win: &[u32],
    n: usize,
    gs: &mut GuardScratch,
    scan: &mut PrefixScan,
) -> usize {
    let safe = scan.first_pass(s, win);
    debug_assert_eq!(
        safe,
        prefix_pass(s, win, gs, false, 0),
        "resumed prefix scan vs a fresh one"
    );
    dead_pass(s, win, n, gs, |_| true, safe)
}

/// The rest of [`self_contained_prefix_in`] after its first pass found `safe`: when the cut
/// falls inside an invocation, ids no event will ever answer are ignored and the window
/// scanned again.
fn dead_pass(
    s: &SessionSizes,
    win: &[u32],
    n: usize,
    gs: &mut GuardScratch,
    keep: impl Fn(usize) -> bool,
    safe: usize,
) -> usize {
    if safe == win.len() {
        return safe;
    }
    if safe > 0 && s.inv_id[win[safe - 1] as usize] != s.inv_id[win[safe] as usize] {
        return safe;
    }
    let Some(newest) = (0..n).rev().find(|&i| keep(i)).map(|i| s.inv_id[i]) else {
        return safe;
    };
    // protected and answered ids over all events
    let g = gs.bump(s.n_ids as usize);
    let (protected, answered) = (g, g);
    for i in 0..n {
        if !keep(i) {
            continue;
        }
        let is_newest = s.inv_id[i] == newest;
        if !s.long_running[i].is_empty() {
            for &lr in &s.long_running[i] {
                let synthetic = !is_newest
                    && s.part_range(i).any(|p| {
                        let pi = s.parts[p as usize];
                        pi.kind == PART_CALL
                            && pi.id == lr
                            && s.client_call_names.contains(&pi.name)
                    });
                if !synthetic {
                    gs.mark[lr as usize] = protected;
                }
            }
        }
        if is_newest {
            for &id in &s.requested[i] {
                gs.mark[id as usize] = protected;
            }
        }
        for id in s.resp_ids(i) {
            if !s.requested[i].contains(&id) {
                gs.mark2[id as usize] = answered;
            }
        }
    }
    let mut any_dead = false;
    for &e in win {
        let e = e as usize;
        if s.inv_id[e] == newest {
            continue;
        }
        for id in s.call_ids(e) {
            if gs.mark[id as usize] != protected && gs.mark2[id as usize] != answered {
                gs.dead[id as usize] = g;
                any_dead = true;
            }
        }
    }
    if !any_dead {
        return safe;
    }
    let dead_gen = g;
    // prefix_pass bumps gen; dead marks keep `dead_gen`, which no later bump reuses here.
    safe.max(prefix_pass(s, win, gs, true, dead_gen))
}

/// `_is_range_worth_compacting` (2.12+): the chars an empty summary over
/// `[min ts, max ts]` would remove from the request (`_process_compaction_events` JSON sizes
/// before vs after) must exceed the latest non-subsumed summary's JSON size. `fast`: the
/// retained-summary index and the running JSON sizes of the events with content, for an
/// ordinary session (sorted timestamps, every event kept): searches and sums instead of
/// walks over every summary and every event in the range (a token trigger's range starts at
/// the first summary's start, so the walk grew with the session).
pub fn worth_compacting(
    s: &SessionSizes,
    n: usize,
    comps: &[Comp],
    cov: &[(f64, f64)],
    lo: f64,
    hi: f64,
    fast: Option<(&RetainedIndex, &[u64])>,
) -> bool {
    let Some((ridx, json_prefix)) = fast.filter(|(r, _)| r.usable() && s.ts_sorted) else {
        return worth_compacting_in(s, n, comps, cov, lo, hi, |_| true);
    };
    let contained = ridx.contains(lo, hi);
    let mut removable: i64 = 0;
    if !contained {
        removable -= 27; // {"parts":[],"role":"model"}
        removable += ridx.json_inside(lo, hi) as i64;
        if lo <= hi {
            let span = |a: f64, b: f64| {
                let (x, y) = in_time_range(s, n, a, b);
                (json_prefix[y] - json_prefix[x]) as i64
            };
            removable += span(lo, hi);
            // minus the covered events: the coverage ranges meeting [lo, hi]
            let first = cov.partition_point(|&(_, e)| e < lo);
            for &(a, b) in cov[first..].iter().take_while(|&&(a, _)| a <= hi) {
                removable -= span(a.max(lo), b.min(hi));
            }
        }
    }
    let prev = comps
        .iter()
        .rev()
        .find(|c| c.retained)
        .map_or(0, |c| c.json_chars as i64);
    let worth = removable > prev;
    debug_assert_eq!(
        worth,
        worth_compacting_in(s, n, comps, cov, lo, hi, |_| true),
        "worth compacting by index vs by walk"
    );
    worth
}

/// [`worth_compacting`] over the raw events `i < n` with `keep(i)` (ADK passes the live
/// events of one isolation scope) and the compactions of that view, walking them.
pub fn worth_compacting_in(
    s: &SessionSizes,
    n: usize,
    comps: &[Comp],
    cov: &[(f64, f64)],
    lo: f64,
    hi: f64,
    keep: impl Fn(usize) -> bool,
) -> bool {
    // Is the new range contained in an existing retained range (then it is dropped)?
    let contained = comps
        .iter()
        .any(|c| c.retained && c.start <= lo && c.end >= hi && (c.start < lo || c.end > hi));
    let mut removable: i64 = 0;
    if !contained {
        removable -= 27; // {"parts":[],"role":"model"}
        for c in comps.iter().filter(|c| c.retained) {
            if lo <= c.start && hi >= c.end {
                removable += c.json_chars as i64;
            }
        }
        if lo <= hi {
            // sorted timestamps: the events in [lo, hi] are an index range
            let (a, b) = in_time_range(s, n, lo, hi);
            for i in a..b {
                let ts = s.timestamp[i];
                if lo <= ts && ts <= hi && s.has_content[i] && !covered(cov, ts) && keep(i) {
                    removable += s.json_chars[i] as i64;
                }
            }
        }
    }
    let prev = comps
        .iter()
        .rev()
        .find(|c| c.retained)
        .map_or(0, |c| c.json_chars as i64);
    removable > prev
}

/// The raw events among `0..n` that can have a timestamp in `[lo, hi]`, as an index range:
/// with sorted timestamps exactly those (two binary searches), else all of them (callers
/// still test each timestamp).
pub fn in_time_range(s: &SessionSizes, n: usize, lo: f64, hi: f64) -> (usize, usize) {
    if !s.ts_sorted {
        return (0, n);
    }
    let ts = &s.timestamp[..n];
    // `hi` is mostly among the newest events, `lo` the session's start (a rolling summary)
    // or among the newest too (a sliding window): neither needs a search through the middle
    let a = match ts.first() {
        Some(&t0) if t0 < lo => partition_point_from_end(ts, |&t| t < lo),
        _ => 0,
    };
    let b = partition_point_from_end(ts, |&t| t <= hi);
    (a, b.max(a))
}

/// The invocations of the raw events of scope `scope` with timestamp in `[lo, hi]` among
/// `0..n` (the oracle's `invocations_in_range`). An invocation id recurring later maps to
/// its first block (the oracle's `_inv_index`). With sorted timestamps, no scopes or rewinds
/// and one block per invocation id, they are the blocks of the index range: one run, found
/// in O(log n) (a rolling summary's range grows with the session). Debug builds compare with
/// the walk.
pub fn invocations_in_range(
    s: &SessionSizes,
    n: usize,
    lo: f64,
    hi: f64,
    scope: u32,
) -> InvocationRuns {
    let (a, b) = in_time_range(s, n, lo, hi);
    let walk = || {
        let mut invs: Vec<u32> = (a..b)
            .filter(|&i| lo <= s.timestamp[i] && s.timestamp[i] <= hi)
            .filter(|&i| s.scope.get(i).map_or(0, |&x| x) == scope)
            .map(|i| s.inv_first_block[s.inv_id[i] as usize])
            .collect();
        invs.sort_unstable();
        invs.dedup();
        InvocationRuns::from_sorted(invs)
    };
    if !(s.ts_sorted
        && scope == 0
        && !s.has_scopes_or_rewinds()
        && s.inv_first_block.len() == s.blocks())
    {
        return walk();
    }
    let runs = if a < b {
        InvocationRuns::range(s.inv_block[a]..s.inv_block[b - 1] + 1)
    } else {
        InvocationRuns::default()
    };
    debug_assert_eq!(runs, walk(), "invocations in range: one run vs the walk");
    runs
}

/// Raw events of isolation scope `scope` with timestamp in `[lo, hi]` among `0..n` (count,
/// first, last): the oracle's `raw_events_in_range`.
pub fn raw_in_range(
    s: &SessionSizes,
    n: usize,
    lo: f64,
    hi: f64,
    scope: u32,
) -> (u32, Option<u32>, Option<u32>) {
    let (a, b) = in_time_range(s, n, lo, hi);
    if s.ts_sorted && scope == 0 && !s.has_scopes_or_rewinds() {
        // every event is of scope 0 and the range is exactly `a..b`
        let some = (a < b).then_some(());
        return (
            (b - a) as u32,
            some.map(|_| a as u32),
            some.map(|_| b as u32 - 1),
        );
    }
    let mut count = 0;
    let mut first = None;
    let mut last = None;
    for i in a..b {
        let ts = s.timestamp[i];
        if lo <= ts && ts <= hi && s.scope.get(i).map_or(0, |&x| x) == scope {
            count += 1;
            first.get_or_insert(i as u32);
            last = Some(i as u32);
        }
    }
    (count, first, last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::{Event, Part, Role, Session};
    use serde_json::json;

    fn ev(author: &str, inv: &str, ts: f64, parts: Vec<Part>) -> Event {
        let role =
            if author == "user" || parts.iter().any(|p| matches!(p, Part::ToolResponse { .. })) {
                Role::User
            } else {
                Role::Model
            };
        let mut e = Event::new(author, role, inv, ts);
        e.parts = parts;
        e
    }
    fn call(id: &str) -> Part {
        Part::ToolCall {
            id: Some(id.into()),
            name: "f".into(),
            args: json!({"a": 1}),
        }
    }
    fn resp(id: &str) -> Part {
        Part::ToolResponse {
            id: Some(id.into()),
            name: "f".into(),
            response: json!({"r": 2}),
        }
    }
    fn text(t: &str) -> Part {
        Part::Text { text: t.into() }
    }
    fn sizes(events: Vec<Event>) -> SessionSizes {
        let s = Session::new("s", "t", crate::transcript::Format::Adk, events);
        SessionSizes::new(&s, None)
    }

    /// 0 user, 1 call c1, 2 resp c1, 3 text, 4 user, 5 call c2, 6 resp c2, 7 text
    fn session() -> SessionSizes {
        sizes(vec![
            ev("user", "i1", 1.0, vec![text("hi")]),
            ev("a", "i1", 2.0, vec![call("c1")]),
            ev("a", "i1", 3.0, vec![resp("c1")]),
            ev("a", "i1", 4.0, vec![text("done")]),
            ev("user", "i2", 5.0, vec![text("again")]),
            ev("a", "i2", 6.0, vec![call("c2")]),
            ev("a", "i2", 7.0, vec![resp("c2")]),
            ev("a", "i2", 8.0, vec![text("ok")]),
        ])
    }

    #[test]
    fn safe_split_keeps_a_retained_response_with_its_call() {
        let s = session();
        let mut gs = GuardScratch::default();
        let cands: Vec<u32> = (0..8).collect();
        // keep 2: the tail [6, 7] holds c2's response, so the split moves back to 5
        assert_eq!(safe_split(&s, &cands, 2, &mut gs), 5);
        // keep 1: the tail [7] is self-contained
        assert_eq!(safe_split(&s, &cands, 1, &mut gs), 7);
        // keep 3: [5, 6, 7] already holds the call
        assert_eq!(safe_split(&s, &cands, 3, &mut gs), 5);
    }

    #[test]
    fn prefix_stops_before_an_open_call() {
        let s = session();
        let mut gs = GuardScratch::default();
        // window ending between c2's call and response: cut after event 4 (an invocation
        // boundary, so no second pass)
        assert_eq!(
            self_contained_prefix(&s, &[0, 1, 2, 3, 4, 5], 8, &mut gs),
            5
        );
        assert_eq!(self_contained_prefix(&s, &[0, 1, 2, 3], 8, &mut gs), 4);
    }

    #[test]
    fn dead_calls_do_not_block_forever() {
        // c9 is never answered and not in the newest invocation: provably dead.
        let s = sizes(vec![
            ev("user", "i1", 1.0, vec![text("hi")]),
            ev("a", "i1", 2.0, vec![call("c9")]),
            ev("a", "i1", 3.0, vec![text("lost")]),
            ev("user", "i2", 4.0, vec![text("next")]),
        ]);
        let mut gs = GuardScratch::default();
        assert_eq!(self_contained_prefix(&s, &[0, 1, 2], 4, &mut gs), 3);
        // a long-running call is protected: the strict cut stands
        let mut e = ev("a", "i1", 2.0, vec![call("c9")]);
        e.long_running_tool_ids = vec!["c9".into()];
        let s = sizes(vec![
            ev("user", "i1", 1.0, vec![text("hi")]),
            e,
            ev("a", "i1", 3.0, vec![text("lost")]),
            ev("user", "i2", 4.0, vec![text("next")]),
        ]);
        assert_eq!(self_contained_prefix(&s, &[0, 1, 2], 4, &mut gs), 1);
    }

    /// The gate by walking and by the index (appending `comps` one by one): both agree.
    fn worth(s: &SessionSizes, comps: &[Comp], cov: &[(f64, f64)], lo: f64, hi: f64) -> bool {
        let walked = worth_compacting(s, 8, comps, cov, lo, hi, None);
        let mut ridx = RetainedIndex::new(s);
        let (mut built, mut dropped) = (Vec::new(), Vec::new());
        for c in comps {
            built.push(c.clone());
            assert!(ridx.append(&mut built, &mut dropped));
        }
        let base = super::super::contents::baseline(s);
        let indexed = worth_compacting(s, 8, &built, cov, lo, hi, Some((&ridx, &base.json_prefix)));
        assert_eq!(
            walked, indexed,
            "gate by walk vs by index over [{lo}, {hi}]"
        );
        walked
    }

    /// The index range of a time span, found from the ends, is the one two binary searches
    /// find: bounds before, at, between, after the events, repeated timestamps, NaN.
    #[test]
    fn in_time_range_agrees_with_binary_searches() {
        let times = [1.0, 2.0, 2.0, 3.0, 5.0, 5.0, 5.0, 8.0, 13.0, 21.0];
        let evs = times
            .iter()
            .enumerate()
            .map(|(i, &t)| ev("user", &format!("i{i}"), t, vec![text("hi")]))
            .collect();
        let s = sizes(evs);
        assert!(s.ts_sorted);
        let bounds = [
            f64::NAN,
            0.0,
            1.0,
            1.5,
            2.0,
            4.0,
            5.0,
            8.0,
            20.0,
            21.0,
            30.0,
        ];
        for n in 0..=times.len() {
            for &lo in &bounds {
                for &hi in &bounds {
                    let ts = &times[..n];
                    let a = ts.partition_point(|&t| t < lo);
                    let b = ts.partition_point(|&t| t <= hi).max(a);
                    assert_eq!(in_time_range(&s, n, lo, hi), (a, b), "n {n} [{lo}, {hi}]");
                }
            }
        }
    }

    #[test]
    fn gate_needs_more_than_the_last_summary() {
        let s = session();
        let cov = vec![];
        // no summary yet: any range bigger than an empty summary (27 chars) is worth it
        assert!(worth(&s, &[], &cov, 1.0, 4.0));
        let big = Comp {
            start: 1.0,
            end: 2.0,
            after_raw: 8,
            chars: 10_000,
            json_chars: 10_038,
            tokens: 2500,
            text: None,
            retained: true,
        };
        let mut cov = Vec::new();
        super::super::contents::coverage(std::slice::from_ref(&big), &mut cov);
        assert!(!worth(&s, std::slice::from_ref(&big), &cov, 3.0, 4.0));
        // a range containing the big summary removes it, so it is worth compacting
        assert!(worth(&s, std::slice::from_ref(&big), &cov, 1.0, 8.0));
    }
}
