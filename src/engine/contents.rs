//! What a request carries (adk-compaction.md §8): ADK 2.13's `_get_contents` replayed on the
//! per-event arrays. Steps, in ADK's order: visibility filter; `_process_compaction_events`
//! (subsumption, union coverage, each summary at its range's end timestamp);
//! `_recover_compacted_function_calls`; other-agent "For context:" presentation;
//! `drop_orphaned_function_responses`; `rearrange_events_for_latest_function_response`;
//! `rearrange_events_for_async_function_responses_in_history`; `drop_orphaned_function_calls`.
//! Only sizes are computed; items refer to parts by index.
//!
//! ADK runs all of it before every model call; [`build`] does too, and [`extend`] grows the
//! last request instead when the events appended since cannot make any step move anything
//! (debug builds compare the two).

use crate::search::partition_point_from_end;
use crate::tokens::sizes::{SessionSizes, NO_ID, PART_CALL, PART_RESPONSE};

/// A summary in the session (a compaction event), as the contents logic needs it.
#[derive(Debug, Clone)]
pub struct Comp {
    pub start: f64,
    pub end: f64,
    /// Raw events that existed when it was appended (its stream position).
    pub after_raw: u32,
    pub chars: u64,
    pub json_chars: u64,
    pub tokens: u64,
    pub text: Option<super::summarizer::SummaryText>,
    /// Not contained in another summary's range.
    pub retained: bool,
}

pub const K_RAW: u8 = 0;
pub const K_SUM: u8 = 1;
pub const K_OTHER: u8 = 2;

/// One event of the list ADK assembles. Raw items carry their parts in the arena
/// (`p0..p1`, global part indices; merged responses can hold parts of several events).
#[derive(Debug, Clone, Copy)]
struct Item {
    kind: u8,
    /// Holds a function response / a function call part (the passes ask this constantly).
    resp: bool,
    call: bool,
    src: u32,
    p0: u32,
    p1: u32,
}

impl Item {
    /// A summary or another agent's event: no parts of its own.
    fn bare(kind: u8, src: u32) -> Item {
        Item {
            kind,
            resp: false,
            call: false,
            src,
            p0: 0,
            p1: 0,
        }
    }

    /// Raw event `src` with all of its parts at arena `p0..p1`.
    fn event(s: &SessionSizes, src: u32, p0: u32, p1: u32) -> Item {
        Item {
            kind: K_RAW,
            resp: s.has_resps[src as usize],
            call: s.has_calls[src as usize],
            src,
            p0,
            p1,
        }
    }

    /// Raw item over arena parts `p0..p1` (a filtered or merged part list).
    fn parts(s: &SessionSizes, arena: &[u32], src: u32, p0: u32, p1: u32) -> Item {
        let mut it = Item {
            kind: K_RAW,
            resp: false,
            call: false,
            src,
            p0,
            p1,
        };
        for &gp in &arena[p0 as usize..p1 as usize] {
            match s.parts[gp as usize].kind {
                PART_RESPONSE => it.resp = true,
                PART_CALL => it.call = true,
                _ => {}
            }
        }
        it
    }
}

/// Sort key of an item (timestamp, stream position, summary ordinal) and the item.
type Keyed = (f64, u32, u32, Item);

/// Sizes of one assembled request.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Measure {
    pub contents: u32,
    pub adk_chars: u64,
    pub json_chars: u64,
    /// Run-tokenizer tokens of the raw events present + summary tokens.
    pub history_tokens: u64,
    pub summary_tokens: u64,
}

/// Reusable buffers (no allocation per request once warm).
#[derive(Debug, Default)]
pub struct Scratch {
    items: Vec<Item>,
    arena: Vec<u32>,
    keyed: Vec<Keyed>,
    sums: Vec<Keyed>,
    gen: u32,
    set_gen: u32,
    id_a: Vec<u32>,
    id_b: Vec<u32>,
    id_c: Vec<u32>,
    name_a: Vec<u32>,
    ev_b: Vec<u32>,
    ev_c: Vec<u32>,
    fc_author: Vec<u32>,
    fc_author_stamp: Vec<u32>,
    /// Final item sequence of the last build: (kind, src), after its `prefix` leading
    /// summaries (a build with a [`RetainedIndex`] leaves those out: they are the index's
    /// first `prefix` entries).
    pub seq: Vec<(u8, u32)>,
    pub prefix: u32,
    /// `rearrange_events_for_latest_function_response` moved items in the last build.
    latest_rearranged: bool,
    /// Raw events present in the last build (stamp == `gen`), and the same as a list.
    pub(crate) seen: Vec<u32>,
    /// ADK 2.13 isolation scope of the requesting agent (0 = unscoped), set by the caller
    /// before `build`: only events of that scope are visible, and a scoped agent gets its
    /// task input prepended.
    pub scope: u32,
    /// Look the task input up among live (not rewound) events only, as ADK's token estimate
    /// does (it builds from `_apply_rewinds(events)`); requests search all events.
    pub lead_after_rewinds: bool,
    /// Rewound spans at the last build's `n`.
    spans: Vec<(u32, u32)>,
    pub seen_list: Vec<u32>,
    // rearrange_async's buffers, kept between builds (id-slot and arena-indexed, stamped)
    ra_gen: u32,
    ra_first: Vec<u32>,
    ra_first_stamp: Vec<u32>,
    ra_latest: Vec<u32>,
    ra_latest_stamp: Vec<u32>,
    ra_run_owner: Vec<u32>,
    ra_run_last: Vec<u32>,
    ra_run_stamp: Vec<u32>,
    ra_ans: Vec<u32>,
    ra_ans_stamp: Vec<u32>,
    ra_runs: Vec<(u32, u32, u32)>,
    ra_stale: Vec<bool>,
    ra_out: Vec<Item>,
    ra_idxs: Vec<usize>,
    /// Events [`extend`] adds (kept between calls).
    extended: Vec<u32>,
}

impl Scratch {
    fn prepare(&mut self, s: &SessionSizes) {
        let ids = s.n_ids as usize;
        if self.id_a.len() < ids {
            self.id_a.resize(ids, 0);
            self.id_b.resize(ids, 0);
            self.id_c.resize(ids, 0);
            self.fc_author.resize(ids, 0);
            self.fc_author_stamp.resize(ids, 0);
        }
        if self.name_a.len() < s.n_names as usize {
            self.name_a.resize(s.n_names as usize, 0);
        }
        if self.ev_b.len() < s.n {
            self.ev_b.resize(s.n, 0);
            self.ev_c.resize(s.n, 0);
            self.seen.resize(s.n, 0);
        }
        next_gen(
            &mut self.gen,
            &mut [
                &mut self.fc_author_stamp,
                &mut self.ev_b,
                &mut self.ev_c,
                &mut self.seen,
            ],
        );
        self.items.clear();
        self.arena.clear();
        self.seen_list.clear();
        self.latest_rearranged = false;
        self.prefix = 0;
    }

    /// Bumped by every build from scratch (not by [`extend`]): two requests read with the
    /// same generation hold the same summaries in the same places.
    pub fn generation(&self) -> u32 {
        self.gen
    }

    /// The last build's items, its leading summaries (`prefix`, from `ridx`) included.
    pub fn full_seq(&self, ridx: &RetainedIndex) -> Vec<(u8, u32)> {
        let lead = (0..self.prefix as usize).map(|i| (K_SUM, ridx.comp_at(i)));
        lead.chain(self.seq.iter().copied()).collect()
    }

    /// Whether raw event `i` was present (verbatim) in the last build.
    pub fn was_seen(&self, i: usize) -> bool {
        self.seen.get(i).is_some_and(|&g| g == self.gen)
    }
}

/// The next value of a generation counter whose value marks entries of `stamps` as set
/// (clearing the arrays costs nothing per build). On wrap-around the arrays are zeroed, so a
/// stale stamp never equals a new generation.
pub(crate) fn next_gen(gen: &mut u32, stamps: &mut [&mut Vec<u32>]) -> u32 {
    *gen = gen.wrapping_add(1);
    if *gen == 0 {
        for v in stamps.iter_mut() {
            v.iter_mut().for_each(|x| *x = 0);
        }
        *gen = 1;
    }
    *gen
}

/// Union of the retained ranges with `start <= end`, sorted (ADK's `coverage`).
pub fn coverage(comps: &[Comp], out: &mut Vec<(f64, f64)>) {
    out.clear();
    let mut r: Vec<(f64, f64)> = comps
        .iter()
        .filter(|c| c.retained && c.start <= c.end)
        .map(|c| (c.start, c.end))
        .collect();
    r.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    for (s, e) in r {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
}

/// ADK 2.13 isolation scopes and rewinds: an event of another scope than the requesting
/// agent's, or annulled by a rewind, is not in context (`on` only for sessions having either).
#[derive(Clone, Copy)]
struct View<'a> {
    on: bool,
    scope: u32,
    spans: &'a [(u32, u32)],
}

/// The view of a session without scopes or rewinds: everything.
const ORDINARY: View<'static> = View {
    on: false,
    scope: 0,
    spans: &[],
};

impl View<'_> {
    /// ADK's `_is_tool_sub_branch_event`, with the call ids taken from the events the
    /// rewinds leave.
    #[inline(always)]
    fn tool_sub_branch(
        &self,
        s: &SessionSizes,
        branch: Option<u32>,
        viewer: u32,
        n: usize,
        i: usize,
    ) -> bool {
        if self.on && !self.spans.is_empty() {
            s.tool_sub_branch_after_rewinds(branch, viewer, n, i, self.spans)
        } else {
            s.tool_sub_branch(branch, viewer, n, i)
        }
    }

    #[inline(always)]
    fn keeps(&self, s: &SessionSizes, i: usize) -> bool {
        !self.on || (s.scope[i] == self.scope && !crate::tokens::sizes::in_spans(self.spans, i))
    }
}

/// The raw events `0..n` inside the coverage `cov`, as index ranges `lo..hi` in order; only
/// for sessions whose timestamps are sorted (`ts_sorted`).
pub fn covered_spans<'a>(
    s: &'a SessionSizes,
    n: usize,
    cov: &'a [(f64, f64)],
) -> impl Iterator<Item = (usize, usize)> + 'a {
    debug_assert!(s.ts_sorted);
    let ts = &s.timestamp[..n];
    cov.iter().filter_map(move |&(a, b)| {
        let lo = ts.partition_point(|&t| t < a);
        // a range's end is mostly among the newest events
        let hi = partition_point_from_end(ts, |&t| t <= b);
        (lo < hi).then_some((lo, hi))
    })
}

/// ADK's `_is_timestamp_compacted`. The newest events, asked about at every request, lie
/// at or after the last range's start: settled by it without a search.
pub fn covered(cov: &[(f64, f64)], ts: f64) -> bool {
    if let Some(&(s, e)) = cov.last() {
        if s <= ts {
            return ts <= e;
        }
    }
    let idx = cov.partition_point(|&(s, _)| s <= ts);
    idx > 0 && ts <= cov[idx - 1].1
}

/// Recompute `retained` (ADK `_get_compaction_ranges`): a range is dropped when another range
/// contains it; identical ranges keep the later one; NaN bounds are always kept.
pub fn update_retained(comps: &mut [Comp]) {
    let n = comps.len();
    for i in 0..n {
        let (s, e) = (comps[i].start, comps[i].end);
        if s.is_nan() || e.is_nan() {
            comps[i].retained = true;
            continue;
        }
        let mut kept = true;
        for (j, q) in comps.iter().enumerate() {
            if j == i || q.start.is_nan() || q.end.is_nan() {
                continue;
            }
            if q.start <= s && q.end >= e && (q.start < s || q.end > e || j > i) {
                kept = false;
                break;
            }
        }
        comps[i].retained = kept;
    }
}

/// [`update_retained`] after one compaction was appended to `comps` whose `retained` flags
/// were up to date: containment never ends (compactions are only appended), so only the new
/// range can be contained, by an earlier range strictly containing it, or contain earlier ones
/// (identical ones included: the later is kept). O(compactions) instead of O(compactions²).
///
/// `dropped` receives the earlier summaries that were retained and no longer are.
pub fn update_retained_after_append(comps: &mut [Comp], dropped: &mut Vec<u32>) {
    dropped.clear();
    let Some((new, earlier)) = comps.split_last_mut() else {
        return;
    };
    let (s, e) = (new.start, new.end);
    if s.is_nan() || e.is_nan() {
        new.retained = true;
        return;
    }
    let mut kept = true;
    for (k, q) in earlier.iter_mut().enumerate() {
        if q.start.is_nan() || q.end.is_nan() {
            continue;
        }
        if q.start <= s && q.end >= e && (q.start < s || q.end > e) {
            kept = false;
        }
        if s <= q.start && e >= q.end {
            if q.retained {
                dropped.push(k as u32);
            }
            q.retained = false;
        }
    }
    new.retained = kept;
}

/// The retained summaries of an ordinary session (sorted timestamps; no isolation scopes,
/// rewinds, NaN or reversed bounds) in the order a request sorts them, with running size
/// sums, kept as compactions are appended. Retained ranges never contain one another, so in
/// this order starts and ends both ascend: "is this range inside a retained one", "which
/// retained ones lie inside it" and their sizes are binary searches and differences of sums,
/// and the summaries leading a request (before its first raw event) are a prefix measured in
/// O(1). Without it each compaction walked every summary, and a sliding window's thousands
/// of retained summaries made a replay compactions × summaries.
#[derive(Debug, Clone)]
pub struct RetainedIndex {
    /// Usable: every summary so far had finite bounds, `start <= end` (else callers walk).
    valid: bool,
    /// (end, after_raw, index into comps) ascending: a summary's sort key in a request.
    keys: Vec<(f64, u32, u32)>,
    starts: Vec<f64>,
    /// Sums over `keys[..i]`: chars, json_chars, tokens (one more entry than `keys`).
    sums: Vec<[u64; 3]>,
    /// Bumped when an entry is removed or inserted before the end: a list of summaries read
    /// before is then no longer a prefix of the current one.
    epoch: u32,
}

impl RetainedIndex {
    /// An index for a replay of `s` (usable only for ordinary sessions).
    pub fn new(s: &SessionSizes) -> RetainedIndex {
        RetainedIndex {
            valid: s.ts_sorted && !s.has_scopes_or_rewinds(),
            keys: Vec::new(),
            starts: Vec::new(),
            sums: vec![[0; 3]],
            epoch: 0,
        }
    }

    /// The index answers for this replay (else walk the summaries).
    pub fn usable(&self) -> bool {
        self.valid
    }

    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Index into comps of the `i`-th retained summary in request order.
    pub fn comp_at(&self, i: usize) -> u32 {
        self.keys[i].2
    }

    /// Sizes (chars, json_chars, tokens) of the first `i` summaries in request order.
    pub fn sums_to(&self, i: usize) -> [u64; 3] {
        self.sums[i]
    }

    /// Position of the summary `ci` (retained, indexed) in request order.
    pub fn position(&self, comps: &[Comp], ci: usize) -> Option<usize> {
        let c = &comps[ci];
        let key = (c.end, c.after_raw, ci as u32);
        // asked about summaries written since the last request: the newest
        let at = partition_point_from_end(&self.keys, |k| key_lt(k, &key));
        (self.keys.get(at) == Some(&key)).then_some(at)
    }

    /// Whether a retained range strictly contains `[lo, hi]` (ADK drops such a new range):
    /// the first retained range ending at or after `hi` has the smallest start of those.
    pub fn contains(&self, lo: f64, hi: f64) -> bool {
        let at = partition_point_from_end(&self.keys, |k| k.0 < hi);
        at < self.keys.len() && {
            let (s, e) = (self.starts[at], self.keys[at].0);
            s <= lo && (s < lo || e > hi)
        }
    }

    /// The positions of the retained ranges inside `[lo, hi]` (`lo <= start`, `end <= hi`).
    pub fn inside(&self, lo: f64, hi: f64) -> std::ops::Range<usize> {
        // `lo` is mostly a recent start (a new summary's, a token window's)
        let a = partition_point_from_end(&self.starts, |&s| s < lo);
        let b = partition_point_from_end(&self.keys, |k| k.0 <= hi);
        a..b.max(a)
    }

    /// JSON chars of the retained summaries inside `[lo, hi]`.
    pub fn json_inside(&self, lo: f64, hi: f64) -> u64 {
        let r = self.inside(lo, hi);
        self.sums[r.end][1] - self.sums[r.start][1]
    }

    /// The number of leading summaries in request order whose key is before `key`.
    pub(crate) fn before(&self, key: &(f64, u32, u32)) -> usize {
        partition_point_from_end(&self.keys, |k| key_lt(k, key))
    }

    /// [`update_retained_after_append`] through the index: `comps` just gained its last
    /// summary. Returns `false` (and stops being usable) when the new summary's bounds are
    /// not finite and ordered; the caller then walks.
    pub fn append(&mut self, comps: &mut [Comp], dropped: &mut Vec<u32>) -> bool {
        dropped.clear();
        if !self.valid {
            return false;
        }
        let ci = comps.len() - 1;
        let (s, e) = (comps[ci].start, comps[ci].end);
        if !(s.is_finite() && e.is_finite() && s <= e) {
            self.valid = false;
            return false;
        }
        let kept = !self.contains(s, e);
        let gone = self.inside(s, e);
        for i in gone.clone() {
            let k = self.keys[i].2;
            comps[k as usize].retained = false;
            dropped.push(k);
        }
        dropped.sort_unstable();
        // the first position whose running sum changes
        let mut from = self.keys.len();
        if !gone.is_empty() {
            from = gone.start;
            self.keys.drain(gone.clone());
            self.starts.drain(gone);
        }
        comps[ci].retained = kept;
        if kept {
            let key = (e, comps[ci].after_raw, ci as u32);
            let at = self.before(&key);
            self.keys.insert(at, key);
            self.starts.insert(at, s);
            from = from.min(at);
        }
        // anything but one summary pushed at the end: lists read before are not prefixes
        if !dropped.is_empty() || (kept && from + 1 != self.keys.len()) {
            self.epoch += 1;
        }
        self.sums.truncate(from + 1);
        for i in from..self.keys.len() {
            let c = &comps[self.keys[i].2 as usize];
            let p = self.sums[i];
            self.sums
                .push([p[0] + c.chars, p[1] + c.json_chars, p[2] + c.tokens]);
        }
        true
    }
}

/// Request order of two summary keys (end timestamp, stream position, ordinal).
#[inline]
fn key_lt(a: &(f64, u32, u32), b: &(f64, u32, u32)) -> bool {
    (a.0, a.1, a.2) < (b.0, b.1, b.2)
}

/// [`coverage`] after one compaction was appended to `comps` and `cov` was the coverage
/// before: a summary the new one subsumes lies inside it, so the union only gains the new
/// range (when it is a range: `start <= end`). O(ranges merged) instead of a sort of all.
pub fn coverage_after_append(comps: &[Comp], cov: &mut Vec<(f64, f64)>) {
    let Some(c) = comps.last() else {
        return;
    };
    let (s, e) = (c.start, c.end);
    // a range only when `start <= end` (NaN bounds are none)
    if s.partial_cmp(&e).is_none_or(|o| o.is_gt()) {
        return;
    }
    // ranges ending before `s` stay; those from `at` on that start by `e` merge with it
    let at = cov.partition_point(|&(_, b)| b < s);
    let mut to = at;
    let (mut lo, mut hi) = (s, e);
    while to < cov.len() && cov[to].0 <= hi {
        lo = lo.min(cov[to].0);
        hi = hi.max(cov[to].1);
        to += 1;
    }
    cov.splice(at..to, [(lo, hi)]);
}

/// The ordinals (1-based) of the retained summaries as closed runs, ascending.
pub fn retained_runs(comps: &[Comp], out: &mut Vec<(u32, u32)>) {
    out.clear();
    for (k, c) in comps.iter().enumerate() {
        if !c.retained {
            continue;
        }
        let o = k as u32 + 1;
        match out.last_mut() {
            Some(r) if r.1 + 1 == o => r.1 = o,
            _ => out.push((o, o)),
        }
    }
}

/// [`retained_runs`] after summary `ordinal` (the newest) was appended, `kept` or not, and
/// the summaries `dropped` (ascending ordinals - 1) lost their place: O(dropped + runs moved)
/// instead of a walk over every summary.
pub fn retained_runs_after_append(
    runs: &mut Vec<(u32, u32)>,
    dropped: &[u32],
    ordinal: u32,
    kept: bool,
) {
    for &k in dropped {
        let o = k + 1;
        let at = runs.partition_point(|r| r.1 < o);
        let Some(&(a, b)) = runs.get(at).filter(|r| r.0 <= o) else {
            continue;
        };
        match (a == o, b == o) {
            (true, true) => {
                runs.remove(at);
            }
            (true, false) => runs[at].0 = o + 1,
            (false, true) => runs[at].1 = o - 1,
            (false, false) => {
                runs[at].1 = o - 1;
                runs.insert(at + 1, (o + 1, b));
            }
        }
    }
    if kept {
        match runs.last_mut() {
            Some(r) if r.1 + 1 == ordinal => r.1 = ordinal,
            _ => runs.push((ordinal, ordinal)),
        }
    }
}

/// Who asks for a request and over what: `viewer` (author index, or `u32::MAX` for ADK's
/// `agent_name=''`) on branch `branch`, over raw events `0..n` of `s`, `cov` being the
/// coverage of the retained summaries. One value, read by every step of the build.
#[derive(Clone, Copy)]
pub struct Ask<'a> {
    pub s: &'a SessionSizes,
    pub n: usize,
    pub cov: &'a [(f64, f64)],
    pub viewer: u32,
    pub branch: Option<u32>,
}

impl Ask<'_> {
    fn author_of(&self, it: &Item) -> u32 {
        match it.kind {
            K_SUM => self.viewer, // author = agent_name or 'model'
            K_OTHER => self.s.user_author,
            _ => self.s.author[it.src as usize],
        }
    }

    /// Whether raw event `i` passes `_get_contents`' filter for `viewer` on `branch`
    /// (visible, on the branch, not another tool's sub-branch, in the view), before
    /// compaction processing.
    #[inline(always)]
    fn in_context(&self, i: usize, vf: View<'_>) -> bool {
        let s = self.s;
        s.visible[i]
            && s.belongs_to_branch(self.branch, i)
            && !vf.tool_sub_branch(s, self.branch, self.viewer, self.n, i)
            && vf.keeps(s, i)
    }
}

/// Build the request `ask` describes, with the summaries in `comps` (those with
/// `after_raw <= n`).
pub fn build(ask: &Ask<'_>, comps: &[Comp], sc: &mut Scratch) -> Measure {
    // Compiled twice, so sessions without scopes or rewinds pay nothing for them.
    if ask.s.has_scopes_or_rewinds() {
        build_in::<true>(ask, comps, sc, None)
    } else {
        build_in::<false>(ask, comps, sc, None)
    }
}

/// [`build`] for an ordinary session whose every summary in `comps` exists at `n`, with
/// their [`RetainedIndex`]: the summaries before the first raw event are not listed or
/// passed over (no step of `_get_contents` moves a summary or anything before it); they
/// are measured from the index's sums and recorded as `sc.prefix`. A sliding window's
/// request, rebuilt after every compaction with every retained summary, then costs what
/// its raw events and later summaries cost.
pub fn build_indexed(
    ask: &Ask<'_>,
    comps: &[Comp],
    sc: &mut Scratch,
    ridx: &RetainedIndex,
) -> Measure {
    let fits = ridx.usable()
        && !ask.s.has_scopes_or_rewinds()
        && comps.last().is_some_and(|c| c.after_raw as usize <= ask.n);
    let m = build_in::<false>(ask, comps, sc, fits.then_some(ridx));
    #[cfg(debug_assertions)]
    {
        let mut fresh = Scratch {
            scope: sc.scope,
            ..Scratch::default()
        };
        let f = build(ask, comps, &mut fresh);
        assert_eq!(f, m, "build with the summary index vs without");
        assert_eq!(
            fresh.seq,
            sc.full_seq(ridx),
            "items with the summary index vs without"
        );
    }
    m
}

/// [`build`]; `VIEW`: the session has isolation scopes or rewinds. The steps of
/// `_get_contents` in ADK's order (adk-compaction.md §8), then the request's measures.
fn build_in<const VIEW: bool>(
    ask: &Ask<'_>,
    comps: &[Comp],
    sc: &mut Scratch,
    ridx: Option<&RetainedIndex>,
) -> Measure {
    let Ask { s, n, viewer, .. } = *ask;
    sc.prepare(s);
    let comps_live = if ridx.is_some() {
        comps.len()
    } else {
        comps
            .iter()
            .take_while(|c| c.after_raw as usize <= n)
            .count()
    };
    let comps = &comps[..comps_live];
    // ADK 2.13 isolation scopes and rewinds (callers pass the summaries that remain for this
    // view).
    let mut spans = std::mem::take(&mut sc.spans);
    if VIEW {
        s.rewound_spans(n, &mut spans);
    }
    let scope = sc.scope;
    let vf = View {
        on: VIEW,
        scope,
        spans: &spans,
    };

    // 1-2. visibility filter, then compaction processing; leading summaries measured from
    // the index, not listed.
    let lead = if comps.is_empty() {
        list_visible(ask, vf, sc);
        [0u64; 3]
    } else {
        let lead = process_compaction_events(ask, comps, vf, sc, ridx);
        recover_calls(ask, vf, sc);
        lead
    };

    // 3. fc_author_by_id, then other-agent presentation: nothing to present when every
    // author is the viewer or the user.
    let lone = viewer != u32::MAX
        && (0..s.authors.len() as u32).all(|a| a == viewer || a == s.user_author);
    if !lone {
        present_other_agents(s, viewer, sc);
    }

    // 4. drop_orphaned_function_responses
    drop_orphan_responses(ask, sc);
    // 5. rearrange_events_for_latest_function_response
    rearrange_latest(ask, sc);
    // 6. rearrange_events_for_async_function_responses_in_history
    rearrange_async(ask, sc);
    // 7. drop_orphaned_function_calls
    drop_orphan_calls(ask, sc);

    let mut m = measure_items(s, comps, sc, lead);
    if VIEW && scope != 0 {
        // `_build_task_input_user_content`: a scoped agent's first turn is the delegating
        // call's args (history tokens: ADK's chars/4, no event owns this content).
        let rewound = |e: usize| sc.lead_after_rewinds && crate::tokens::sizes::in_spans(&spans, e);
        if let Some((a, j)) = s.scope_lead(scope, n, rewound) {
            m.contents += 1;
            m.adk_chars += a;
            m.json_chars += j;
            m.history_tokens += a / 4;
        }
    }
    sc.spans = spans;
    m
}

/// Steps 1-2 without summaries (adk-compaction.md §8, first line): the events visible to
/// the asker, in stream order.
#[inline(always)]
fn list_visible(ask: &Ask<'_>, vf: View<'_>, sc: &mut Scratch) {
    let s = ask.s;
    for i in 0..ask.n {
        if ask.in_context(i, vf) {
            let r = s.part_range(i);
            let p0 = sc.arena.len() as u32;
            sc.arena.extend(r);
            let p1 = sc.arena.len() as u32;
            sc.items.push(Item::event(s, i as u32, p0, p1));
        }
    }
}

/// Step 2, `_process_compaction_events` (adk-compaction.md §8): the visible raw events
/// outside the coverage and each retained summary at its range's end, sorted by (timestamp,
/// stream position). Returns the sizes of the leading summaries `ridx` measures instead of
/// listing (zero without it).
#[inline(always)]
fn process_compaction_events(
    ask: &Ask<'_>,
    comps: &[Comp],
    vf: View<'_>,
    sc: &mut Scratch,
    ridx: Option<&RetainedIndex>,
) -> [u64; 3] {
    sc.keyed.clear();
    sc.sums.clear();
    if ridx.is_none() {
        for (ci, c) in comps.iter().enumerate() {
            if c.retained {
                sc.sums
                    .push((c.end, c.after_raw, ci as u32, Item::bare(K_SUM, ci as u32)));
            }
        }
    }
    // Raw events arrive in stream order; when their timestamps never decrease (the usual
    // case) only the few summaries need sorting, then one merge.
    let in_order = sc.sums.iter().all(|k| !k.0.is_nan()) & list_uncovered(ask, vf, sc);
    let mut lead = [0u64; 3];
    if let Some(ix) = ridx {
        // The index lists the retained summaries in request order (no NaN ends); with the
        // raw events in order too, those before the first raw event lead the request.
        let first = sc.keyed.first().map(|k| (k.0, k.1, k.2));
        let p = match first {
            Some(k) if in_order => ix.before(&k),
            Some(_) => 0,
            None => ix.len(),
        };
        sc.prefix = p as u32;
        lead = ix.sums_to(p);
        sc.sums.extend((p..ix.len()).map(|i| {
            let ci = ix.comp_at(i);
            let c = &comps[ci as usize];
            (c.end, c.after_raw, ci, Item::bare(K_SUM, ci))
        }));
    }
    let by_key = |a: &Keyed, b: &Keyed| {
        a.0.partial_cmp(&b.0)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.1.cmp(&b.1))
            .then(a.2.cmp(&b.2))
    };
    if in_order {
        sc.sums.sort_by(by_key);
        let mut j = 0;
        for k in &sc.keyed {
            while j < sc.sums.len() && by_key(&sc.sums[j], k).is_lt() {
                sc.items.push(sc.sums[j].3);
                j += 1;
            }
            sc.items.push(k.3);
        }
        sc.items.extend(sc.sums[j..].iter().map(|k| k.3));
    } else {
        sc.keyed.extend_from_slice(&sc.sums);
        sc.keyed.sort_by(by_key);
        sc.items.extend(sc.keyed.iter().map(|k| k.3));
    }
    lead
}

/// The visible raw events outside the coverage (`_is_timestamp_compacted`), keyed into
/// `sc.keyed` in stream order (adk-compaction.md §8: "emit it unless start <= timestamp <=
/// end for some coverage interval"). Returns whether their timestamps never decrease.
#[inline(always)]
fn list_uncovered(ask: &Ask<'_>, vf: View<'_>, sc: &mut Scratch) -> bool {
    let (s, n) = (ask.s, ask.n);
    let mut in_order = true;
    let mut prev_ts = f64::NEG_INFINITY;
    let mut push_raw = |sc: &mut Scratch, i: usize| {
        if !ask.in_context(i, vf) {
            return;
        }
        let ts = s.timestamp[i];
        in_order &= ts >= prev_ts;
        prev_ts = ts;
        let r = s.part_range(i);
        let p0 = sc.arena.len() as u32;
        sc.arena.extend(r);
        let p1 = sc.arena.len() as u32;
        sc.keyed
            .push((ts, i as u32, u32::MAX, Item::event(s, i as u32, p0, p1)));
    };
    if s.ts_sorted {
        // Compacted spans are index ranges: skip them without looking.
        let mut next = 0;
        for (lo, hi) in covered_spans(s, n, ask.cov) {
            for i in next..lo {
                push_raw(sc, i);
            }
            next = next.max(hi);
        }
        for i in next..n {
            push_raw(sc, i);
        }
    } else {
        for i in 0..n {
            if !covered(ask.cov, s.timestamp[i]) {
                push_raw(sc, i);
            }
        }
    }
    in_order
}

/// The request's measures (ADK's sizes of the contents it sends): each item's chars and
/// JSON, the run-tokenizer tokens of the raw events present (each once) and of the
/// summaries, after the `lead` summaries measured from the index. Records the items and
/// the raw events present.
#[inline(always)]
fn measure_items(s: &SessionSizes, comps: &[Comp], sc: &mut Scratch, lead: [u64; 3]) -> Measure {
    let g = sc.gen;
    let mut m = Measure {
        contents: sc.prefix,
        adk_chars: lead[0],
        json_chars: lead[1],
        history_tokens: lead[2],
        summary_tokens: lead[2],
    };
    sc.seq.clear();
    // The transcription kind of the previous item (0: not a transcription).
    let mut prev_tr = 0u8;
    for it in &sc.items {
        let tr = if it.kind == K_SUM {
            0
        } else {
            s.transcription[it.src as usize]
        };
        // `_get_contents` sends a run of input (or output) transcriptions as one content
        // holding their concatenated text: the run's later members add only their text.
        if tr != 0 && tr == prev_tr {
            let src = it.src as usize;
            let text = s.parts[s.part_range(src).start as usize];
            // (Inside another agent's "For context:" content too: the preamble, `[author]
            // said:` and the quote markers come once per run.)
            m.adk_chars += text.adk_chars;
            m.json_chars += text.json_chars.saturating_sub(11);
            if sc.seen[src] != g {
                m.history_tokens += s.tokens[src] as u64;
                sc.seen_list.push(src as u32);
            }
            sc.seen[src] = g;
            sc.seq.push((it.kind, it.src));
            continue;
        }
        prev_tr = tr;
        match it.kind {
            K_SUM => {
                let c = &comps[it.src as usize];
                m.adk_chars += c.chars;
                m.json_chars += c.json_chars;
                m.history_tokens += c.tokens;
                m.summary_tokens += c.tokens;
            }
            K_OTHER => {
                let (a, j) = s.other[it.src as usize].unwrap_or((0, 0));
                m.adk_chars += a;
                m.json_chars += j;
                if sc.seen[it.src as usize] != g {
                    m.history_tokens += s.tokens[it.src as usize] as u64;
                    sc.seen_list.push(it.src);
                }
                sc.seen[it.src as usize] = g;
            }
            _ => {
                let mut parts_json = 0u64;
                for k in it.p0..it.p1 {
                    let gp = sc.arena[k as usize] as usize;
                    let p = s.parts[gp];
                    m.adk_chars += p.adk_chars;
                    parts_json += p.json_chars - p.id_strip_json;
                    let owner = if s.part_range(it.src as usize).contains(&(gp as u32)) {
                        it.src as usize
                    } else {
                        part_event(s, gp)
                    };
                    if sc.seen[owner] != g {
                        sc.seen[owner] = g;
                        sc.seen_list.push(owner as u32);
                        m.history_tokens += s.tokens[owner] as u64;
                    }
                }
                let np = (it.p1 - it.p0) as u64;
                m.json_chars += content_json(parts_json, np, s.role_model[it.src as usize]);
            }
        }
        m.contents += 1;
        sc.seq.push((it.kind, it.src));
    }
    m
}

/// The request of the last build (`prev`, over raw events `0..n0`) after raw events
/// `n0..ask.n` were appended, when that is only its list plus those events: the summaries are the
/// same (the caller checks) and timestamps are sorted; every new event is outside the request
/// (and calls nothing), or plain (no call, response, long-running mark or transcription; said
/// by the viewer or the user, or measured for anyone), or a tool round trip: an event of the
/// viewer's calling ids never called before, then at once the viewer's event answering each
/// of them, and nothing else. Then no step of `_get_contents` moves, merges or drops anything
/// because of them, provided the last build's latest-response rearrangement moved nothing.
/// `None`: build from scratch.
pub fn extend(
    ask: &Ask<'_>,
    base: &crate::tokens::sizes::BaselineCache,
    n0: usize,
    sc: &mut Scratch,
    prev: Measure,
) -> Option<Measure> {
    let Ask { s, n, viewer, .. } = *ask;
    if !s.ts_sorted || sc.latest_rearranged || n0 > n {
        return None;
    }
    let simple = |i: usize| {
        s.long_running[i].is_empty()
            && s.transcription[i] == 0
            && (viewer == u32::MAX || s.author[i] == viewer || s.author[i] == s.user_author)
    };
    let own = |i: usize| viewer != u32::MAX && s.author[i] == viewer && simple(i);
    let mut add = std::mem::take(&mut sc.extended);
    add.clear();
    if !extendable(ask, base, n0, simple, own, &mut add) {
        sc.extended = add;
        return None;
    }
    let g = sc.gen;
    let mut m = prev;
    for &i in &add {
        let i = i as usize;
        let mut parts_json = 0u64;
        for gp in s.part_range(i) {
            let p = s.parts[gp as usize];
            m.adk_chars += p.adk_chars;
            parts_json += p.json_chars - p.id_strip_json;
        }
        m.json_chars += content_json(parts_json, s.part_range(i).len() as u64, s.role_model[i]);
        m.history_tokens += s.tokens[i] as u64;
        m.contents += 1;
        sc.seen[i] = g;
        sc.seen_list.push(i as u32);
        sc.seq.push((K_RAW, i as u32));
    }
    sc.extended = add;
    Some(m)
}

/// The events of `n0..ask.n` [`extend`] adds (into `add`), or `false` when one of them rules
/// the extension out.
fn extendable(
    ask: &Ask<'_>,
    base: &crate::tokens::sizes::BaselineCache,
    n0: usize,
    simple: impl Fn(usize) -> bool,
    own: impl Fn(usize) -> bool,
    add: &mut Vec<u32>,
) -> bool {
    let s = ask.s;
    // the round trip's call event, waiting for its answer
    let mut open: Option<usize> = None;
    for i in n0..ask.n {
        let in_req = ask.in_context(i, ORDINARY) && !covered(ask.cov, s.timestamp[i]);
        if !in_req {
            // a call, even outside the request, can make earlier events a tool's sub-branch
            if s.has_calls[i] {
                return false;
            }
            continue;
        }
        if let Some(c) = open.take() {
            // the answer: only responses, each to one of c's ids, every id once
            if s.has_calls[i] || !s.has_resps[i] || !own(i) || !s.requested[i].is_empty() {
                return false;
            }
            let mut answered = 0usize;
            for p in s.part_range(i) {
                let pi = s.parts[p as usize];
                if pi.kind != PART_RESPONSE {
                    continue;
                }
                if pi.id == NO_ID || s.resp_owner[p as usize] != c as u32 {
                    return false;
                }
                answered += 1;
            }
            if answered != s.call_ids(c).count() || repeats_an_id(s, i, PART_RESPONSE) {
                return false;
            }
        } else if s.has_calls[i] {
            // a fresh call event of the viewer's: every id called here first, and once
            if s.has_resps[i] || !own(i) || repeats_an_id(s, i, PART_CALL) {
                return false;
            }
            let fresh = s.part_range(i).all(|p| {
                let pi = s.parts[p as usize];
                pi.kind != PART_CALL
                    || (pi.id != NO_ID && base.call_first.get(pi.id as usize) == Some(&(i as u32)))
            });
            if !fresh {
                return false;
            }
            open = Some(i);
        } else if s.has_resps[i] || !simple(i) {
            return false;
        }
        add.push(i as u32);
    }
    open.is_none()
}

/// Whether two parts of kind `kind` of event `i` share an id (events hold a few parts).
fn repeats_an_id(s: &SessionSizes, i: usize, kind: u8) -> bool {
    let r = s.part_range(i);
    r.clone().any(|p| {
        let a = s.parts[p as usize];
        a.kind == kind
            && (r.start..p).any(|q| {
                let b = s.parts[q as usize];
                b.kind == kind && b.id == a.id
            })
    })
}

/// `len(content.model_dump_json())` of a raw event's content from its parts' JSON: the
/// `{"parts":[…],"role":"…"}` frame around `np` parts whose JSON adds up to `parts_json`.
fn content_json(parts_json: u64, np: u64, role_model: bool) -> u64 {
    let role = if role_model { 5 } else { 4 };
    10 + parts_json + np.saturating_sub(1) + 2 + 8 + role + 2
}

/// Step 3: `fc_author_by_id`, then another agent's events (and responses to its calls) as
/// "For context:" user content; events with nothing to present are dropped.
fn present_other_agents(s: &SessionSizes, viewer: u32, sc: &mut Scratch) {
    let g = sc.gen;
    for it in &sc.items {
        if it.kind != K_RAW || !it.call {
            continue;
        }
        for k in it.p0..it.p1 {
            let p = s.parts[sc.arena[k as usize] as usize];
            if p.kind == PART_CALL && p.id != NO_ID {
                sc.fc_author[p.id as usize] = s.author[it.src as usize];
                sc.fc_author_stamp[p.id as usize] = g;
            }
        }
    }
    let mut w = 0;
    for r in 0..sc.items.len() {
        let mut it = sc.items[r];
        if it.kind == K_RAW {
            let a = s.author[it.src as usize];
            let mut other = viewer != u32::MAX && a != viewer && a != s.user_author;
            if !other && it.resp {
                for k in it.p0..it.p1 {
                    let p = s.parts[sc.arena[k as usize] as usize];
                    if p.kind == PART_RESPONSE
                        && p.id != NO_ID
                        && sc.fc_author_stamp[p.id as usize] == g
                    {
                        let ca = sc.fc_author[p.id as usize];
                        if ca != viewer && ca != s.user_author {
                            other = true;
                            break;
                        }
                    }
                }
            }
            if other {
                if s.other[it.src as usize].is_none() {
                    continue;
                }
                it = Item::bare(K_OTHER, it.src);
            }
        }
        sc.items[w] = it;
        w += 1;
    }
    sc.items.truncate(w);
}

/// Event owning global part `gp` (binary search over `parts_at`).
fn part_event(s: &SessionSizes, gp: usize) -> usize {
    let gp = gp as u32;
    s.parts_at
        .partition_point(|&(a, _)| a <= gp)
        .saturating_sub(1)
}

fn item_parts<'a>(sc: &'a Scratch, it: &Item) -> &'a [u32] {
    &sc.arena[it.p0 as usize..it.p1 as usize]
}

/// The events `_recover_compacted_function_calls` recovers from (ADK's
/// `raw_filtered_events`) and how a response finds its call among them.
#[derive(Clone, Copy)]
struct Recovery<'a> {
    ask: &'a Ask<'a>,
    vf: View<'a>,
}

impl Recovery<'_> {
    /// In raw_filtered_events (the recovery source), asked only of the few events recovery
    /// looks at.
    #[inline]
    fn filtered(&self, i: usize) -> bool {
        self.ask.in_context(i, self.vf)
    }

    /// The call event of response part `p`, if any. ADK resolves a response's call among the
    /// filtered events: the latest one before it calling its id. `resp_owner` is that among
    /// all visible events; when it is outside this request's view (another scope, rewound,
    /// another branch), look further back (ids can be reused).
    #[inline]
    fn owner(&self, p: u32) -> u32 {
        let s = self.ask.s;
        let o = s.resp_owner[p as usize];
        if o == NO_ID || (o as usize) >= self.ask.n || self.filtered(o as usize) {
            return o;
        }
        let id = s.parts[p as usize].id;
        (0..o as usize)
            .rev()
            .find(|&j| s.has_calls[j] && self.filtered(j) && s.call_ids(j).any(|c| c == id))
            .map_or(NO_ID, |j| j as u32)
    }

    /// The owner of response part `p` when it is a filtered event `0..n`.
    #[inline]
    fn filtered_owner(&self, p: u32) -> Option<u32> {
        let c = self.owner(p);
        (c != NO_ID && (c as usize) < self.ask.n && self.filtered(c as usize)).then_some(c)
    }
}

/// ADK `_recover_compacted_function_calls` (adk-compaction.md §8): re-insert a compacted
/// call event (and its compacted sibling responses) right before a surviving response.
fn recover_calls(ask: &Ask<'_>, vf: View<'_>, sc: &mut Scratch) {
    let s = ask.s;
    let g = sc.gen;
    let rec = Recovery { ask, vf };
    // present raw events
    let mut any_resp = false;
    for it in &sc.items {
        if it.kind == K_RAW {
            sc.ev_b[it.src as usize] = g;
            any_resp |= s.has_resps[it.src as usize];
        }
    }
    if !any_resp || !anything_to_recover(&rec, sc) {
        return;
    }
    let items = std::mem::take(&mut sc.items);
    let mut out = Vec::with_capacity(items.len() + 4);
    // ev_c: reinjected call events; id_c-like marker for reinjected responses uses ev_c too
    // (a response event is never a call event of the same recovery in practice).
    for it in items {
        if it.kind == K_RAW && s.has_resps[it.src as usize] {
            for p in s.part_range(it.src as usize) {
                let pi = s.parts[p as usize];
                if pi.kind != PART_RESPONSE || pi.id == NO_ID {
                    continue;
                }
                let Some(c) = rec.filtered_owner(p) else {
                    continue;
                };
                if sc.ev_b[c as usize] == g || sc.ev_c[c as usize] == g {
                    continue;
                }
                recover_call(&rec, sc, &mut out, c);
            }
        }
        out.push(it);
    }
    sc.items = out;
}

/// Whether a present response's call event is filtered in but not present (`ev_b` marks
/// the present raw events).
fn anything_to_recover(rec: &Recovery<'_>, sc: &Scratch) -> bool {
    let s = rec.ask.s;
    let g = sc.gen;
    sc.items.iter().any(|it| {
        it.kind == K_RAW
            && s.has_resps[it.src as usize]
            && s.part_range(it.src as usize).any(|p| {
                s.parts[p as usize].kind == PART_RESPONSE
                    && rec
                        .filtered_owner(p)
                        .is_some_and(|o| sc.ev_b[o as usize] != g)
            })
    })
}

/// Re-inserts compacted call event `c` into `out`, then, for each of its calls whose
/// responses were all compacted away, the latest of them (ADK's sibling responses).
fn recover_call(rec: &Recovery<'_>, sc: &mut Scratch, out: &mut Vec<Item>, c: u32) {
    let (s, n) = (rec.ask.s, rec.ask.n);
    let g = sc.gen;
    let r = s.part_range(c as usize);
    let p0 = sc.arena.len() as u32;
    sc.arena.extend(r.clone());
    out.push(Item::event(s, c, p0, sc.arena.len() as u32));
    sc.ev_c[c as usize] = g;
    // sibling responses compacted away
    for cp in r {
        let cpi = s.parts[cp as usize];
        if cpi.kind != PART_CALL || cpi.id == NO_ID {
            continue;
        }
        let mut surviving = false;
        let mut latest: Option<usize> = None;
        for j in (c as usize)..n {
            if !s.has_resps[j] || !rec.filtered(j) {
                continue;
            }
            for rp in s.part_range(j) {
                let rpi = s.parts[rp as usize];
                if rpi.kind == PART_RESPONSE && rpi.id == cpi.id && rec.owner(rp) == c {
                    if sc.ev_b[j] == g {
                        surviving = true;
                    }
                    if latest.is_none_or(|l| s.timestamp[j] >= s.timestamp[l]) {
                        latest = Some(j);
                    }
                }
            }
        }
        if surviving {
            continue;
        }
        if let Some(j) = latest {
            if sc.ev_c[j] != g {
                let r = s.part_range(j);
                let p0 = sc.arena.len() as u32;
                sc.arena.extend(r);
                out.push(Item::event(s, j as u32, p0, sc.arena.len() as u32));
                sc.ev_c[j] = g;
            }
        }
    }
}

/// Step 4, `drop_orphaned_function_responses` (adk-compaction.md §8): a response whose call
/// no earlier item holds goes (by id, or by tool name for id-less calls).
fn drop_orphan_responses(ctx: &Ask<'_>, sc: &mut Scratch) {
    let s = ctx.s;
    sc.gen_bump_sets();
    let g = sc.gen2();
    let mut w = 0;
    for r in 0..sc.items.len() {
        let mut it = sc.items[r];
        if it.kind == K_RAW {
            let has_resp = it.resp;
            let matched = |sc: &Scratch, p: crate::tokens::sizes::PartInfo| {
                if p.id != NO_ID {
                    sc.id_a[p.id as usize] == g
                } else {
                    p.name != u32::MAX && sc.name_a[p.name as usize] == g
                }
            };
            let all_matched = !has_resp
                || item_parts(sc, &it).iter().all(|&gp| {
                    let p = s.parts[gp as usize];
                    p.kind != PART_RESPONSE || matched(sc, p)
                });
            if !all_matched {
                let kept = without_orphans(s, sc, it, |sc, p| {
                    p.kind == PART_RESPONSE && !matched(sc, p)
                });
                match kept {
                    Some(k) => it = k,
                    None => continue,
                }
            }
            for k in if it.call { it.p0..it.p1 } else { 0..0 } {
                let p = s.parts[sc.arena[k as usize] as usize];
                if p.kind == PART_CALL {
                    if p.id != NO_ID {
                        sc.id_a[p.id as usize] = g;
                    } else if p.name != u32::MAX {
                        sc.name_a[p.name as usize] = g;
                    }
                }
            }
        }
        sc.items[w] = it;
        w += 1;
    }
    sc.items.truncate(w);
}

impl Scratch {
    /// A fresh generation for the id/name sets (the per-build `gen` keeps event stamps).
    fn gen_bump_sets(&mut self) {
        next_gen(
            &mut self.set_gen,
            &mut [
                &mut self.id_a,
                &mut self.id_b,
                &mut self.id_c,
                &mut self.name_a,
            ],
        );
    }

    fn gen2(&self) -> u32 {
        self.set_gen
    }
}

/// ADK `_find_owning_call_event_index` over `items[..end]`.
fn find_owner(ctx: &Ask<'_>, sc: &Scratch, end: usize, resp: u32) -> Option<usize> {
    let s = ctx.s;
    let rp = s.parts[resp as usize];
    for idx in (0..end).rev() {
        let it = &sc.items[idx];
        if it.kind != K_RAW {
            continue;
        }
        for &gp in item_parts(sc, it) {
            let c = s.parts[gp as usize];
            if c.kind != PART_CALL {
                continue;
            }
            if (rp.id != NO_ID && c.id == rp.id)
                || (rp.id == NO_ID && c.id == NO_ID && rp.name != u32::MAX && c.name == rp.name)
            {
                return Some(idx);
            }
        }
    }
    None
}

fn has_kind(ctx: &Ask<'_>, sc: &Scratch, it: &Item, kind: u8) -> bool {
    it.kind == K_RAW
        && match kind {
            PART_RESPONSE => it.resp,
            PART_CALL => it.call,
            _ => item_parts(sc, it)
                .iter()
                .any(|&p| ctx.s.parts[p as usize].kind == kind),
        }
}

/// `merge_function_response_events` over items given as part lists: the first item's parts,
/// later responses replacing same-id responses, everything else appended.
fn merge_parts(ctx: &Ask<'_>, sc: &mut Scratch, lists: &[(u32, u32)]) -> (u32, u32) {
    let s = ctx.s;
    let mut merged: Vec<u32> = Vec::new();
    for (li, &(a, b)) in lists.iter().enumerate() {
        for k in a..b {
            let gp = sc.arena[k as usize];
            let p = s.parts[gp as usize];
            if li > 0 && p.kind == PART_RESPONSE {
                // ADK keys on the id (None included).
                if let Some(pos) = merged.iter().rposition(|&m| {
                    s.parts[m as usize].kind == PART_RESPONSE && s.parts[m as usize].id == p.id
                }) {
                    merged[pos] = gp;
                    continue;
                }
            }
            merged.push(gp);
        }
    }
    let p0 = sc.arena.len() as u32;
    sc.arena.extend(merged);
    (p0, sc.arena.len() as u32)
}

/// ADK `rearrange_events_for_latest_function_response` (step 5 of `_get_contents`,
/// adk-compaction.md §8): when the last item answers calls made earlier than the item before
/// it, the responses to those calls are merged into one item right after the latest of them,
/// and everything after it goes.
fn rearrange_latest(ctx: &Ask<'_>, sc: &mut Scratch) {
    let s = ctx.s;
    let len = sc.items.len();
    if len < 2 {
        return;
    }
    let trailing = sc.items[len - 1];
    if !has_kind(ctx, sc, &trailing, PART_RESPONSE) {
        return;
    }
    let Some((by_call, latest)) = trailing_by_call(ctx, sc, trailing) else {
        return;
    };
    sc.latest_rearranged = true;
    let in_calls = |c: Option<usize>| c.is_some_and(|c| by_call.iter().any(|(x, _)| *x == c));
    let mut out: Vec<Item> = Vec::with_capacity(latest + 2);
    for idx in 0..=latest {
        let mut it = sc.items[idx];
        if has_kind(ctx, sc, &it, PART_RESPONSE) {
            let mut kept: Vec<u32> = Vec::new();
            for k in it.p0..it.p1 {
                let gp = sc.arena[k as usize];
                if s.parts[gp as usize].kind != PART_RESPONSE
                    || !in_calls(find_owner(ctx, sc, idx, gp))
                {
                    kept.push(gp);
                }
            }
            if !kept
                .iter()
                .any(|&p| s.parts[p as usize].kind != crate::tokens::sizes::PART_OTHER)
            {
                continue;
            }
            let p0 = sc.arena.len() as u32;
            sc.arena.extend(kept);
            it = Item::parts(s, &sc.arena, it.src, p0, sc.arena.len() as u32);
        }
        out.push(it);
        if let Some((_, split)) = by_call.iter().find(|(c, _)| *c == idx) {
            out.push(responses_to(ctx, sc, idx, split));
        }
    }
    sc.items = out;
}

/// The trailing item's parts by the item calling them (`parts_by_call_idx`, ordered by
/// first appearance; the other parts go with the latest call), and that latest call's
/// position. `None` when nothing moves: no response has a call, or the one call is the item
/// just before.
/// Parts grouped by the item that calls them: `(calling item, its parts)`.
type PartsByCall = Vec<(usize, Vec<u32>)>;

fn trailing_by_call(ctx: &Ask<'_>, sc: &Scratch, trailing: Item) -> Option<(PartsByCall, usize)> {
    let s = ctx.s;
    let len = sc.items.len();
    let mut by_call: PartsByCall = Vec::new();
    let mut non_fr: Vec<u32> = Vec::new();
    for k in trailing.p0..trailing.p1 {
        let gp = sc.arena[k as usize];
        if s.parts[gp as usize].kind == PART_RESPONSE {
            if let Some(ci) = find_owner(ctx, sc, len - 1, gp) {
                match by_call.iter_mut().find(|(c, _)| *c == ci) {
                    Some((_, v)) => v.push(gp),
                    None => by_call.push((ci, vec![gp])),
                }
            }
        } else {
            non_fr.push(gp);
        }
    }
    if by_call.is_empty() {
        return None;
    }
    let latest = by_call.iter().map(|(c, _)| *c).max().unwrap_or(0);
    if let Some((_, v)) = by_call.iter_mut().find(|(c, _)| *c == latest) {
        v.extend(non_fr);
    }
    if latest == len - 2 && by_call.len() == 1 {
        return None;
    }
    Some((by_call, latest))
}

/// The one item answering call item `idx`: the responses to it in the items between it and
/// the trailing one, then `split` (the trailing item's parts for it), merged.
fn responses_to(ctx: &Ask<'_>, sc: &mut Scratch, idx: usize, split: &[u32]) -> Item {
    let s = ctx.s;
    let len = sc.items.len();
    let mut lists: Vec<(u32, u32)> = Vec::new();
    let mut first_src = sc.items[len - 1].src;
    for ev_idx in idx + 1..len - 1 {
        let ev = sc.items[ev_idx];
        if !has_kind(ctx, sc, &ev, PART_RESPONSE) {
            continue;
        }
        let is_call_event = has_kind(ctx, sc, &ev, PART_CALL);
        let mut matched: Vec<u32> = Vec::new();
        for k in ev.p0..ev.p1 {
            let gp = sc.arena[k as usize];
            let ok = if s.parts[gp as usize].kind == PART_RESPONSE {
                find_owner(ctx, sc, ev_idx, gp) == Some(idx)
            } else {
                !is_call_event
            };
            if ok {
                matched.push(gp);
            }
        }
        if matched
            .iter()
            .any(|&p| s.parts[p as usize].kind == PART_RESPONSE)
        {
            if lists.is_empty() {
                first_src = ev.src;
            }
            let p0 = sc.arena.len() as u32;
            sc.arena.extend(matched);
            lists.push((p0, sc.arena.len() as u32));
        }
    }
    let p0 = sc.arena.len() as u32;
    sc.arena.extend_from_slice(split);
    lists.push((p0, sc.arena.len() as u32));
    let (a, b) = if lists.len() > 1 {
        merge_parts(ctx, sc, &lists)
    } else {
        lists[0]
    };
    Item::parts(s, &sc.arena, first_src, a, b)
}

/// Whether item `it` is a model text reply of invocation `inv` that a later update of the
/// same call makes stale (step 6).
fn is_stale_text_reply(ctx: &Ask<'_>, sc: &Scratch, it: &Item, inv: u32) -> bool {
    let s = ctx.s;
    if it.kind == K_SUM {
        return false; // a compaction event is never stale
    }
    let src = it.src as usize;
    if s.inv_id[src] != inv || ctx.author_of(it) == s.user_author {
        return false;
    }
    if it.kind == K_OTHER {
        return false; // role 'user'
    }
    if !s.role_model[src] || has_kind(ctx, sc, it, PART_CALL) {
        return false;
    }
    item_parts(sc, it).iter().any(|&p| {
        let pi = s.parts[p as usize];
        pi.kind == crate::tokens::sizes::PART_OTHER && pi.adk_chars > 0
    })
}

/// ADK `rearrange_events_for_async_function_responses_in_history` (step 6 of
/// `_get_contents`, adk-compaction.md §8): each call item is followed by the latest response
/// to each of its calls (merged when several items hold them); response items stay only
/// there, and model text replies made stale by a later update of the same call go.
fn rearrange_async(ctx: &Ask<'_>, sc: &mut Scratch) {
    if !sc.items.iter().any(|it| it.kind == K_RAW && it.resp) {
        return;
    }
    // ADK's `call_event_indices_by_id` (call parts of events without responses; id-less calls
    // share the key None, slot `n_ids` here) and, per response, its owning call item: the
    // latest such call before it, else the first one. For one id the owner never moves back,
    // so the responses of one (id, owner) key arrive as one run: consecutive updates of a
    // call are found, and each key's last response recorded, in one forward pass.
    let n_ids = ctx.s.n_ids as usize;
    sc.ra_prepare(n_ids + 1, sc.arena.len());
    first_calls(ctx, sc);
    let mut stale = std::mem::take(&mut sc.ra_stale);
    stale.clear();
    stale.resize(sc.items.len(), false);
    // (id slot, owner, last response item) of each finished run
    let mut done = std::mem::take(&mut sc.ra_runs);
    done.clear();
    response_runs(ctx, sc, &mut stale, &mut done);
    let g = sc.ra_gen;
    // each key's last response, on the owner's call parts with that id
    for &(k, owner, last) in &done {
        let c = sc.items[owner as usize];
        for a in c.p0..c.p1 {
            let p = ctx.s.parts[sc.arena[a as usize] as usize];
            if p.kind == PART_CALL && id_slot(p.id, n_ids) == k as usize {
                sc.ra_ans_stamp[a as usize] = g;
                sc.ra_ans[a as usize] = last;
            }
        }
    }
    let mut out = std::mem::take(&mut sc.ra_out);
    out.clear();
    calls_with_answers(ctx, sc, &stale, &mut out);
    sc.ra_out = std::mem::replace(&mut sc.items, out);
    sc.ra_runs = done;
    sc.ra_stale = stale;
}

/// [`rearrange_async`]'s key of a call id: the id, or `n_ids` for id-less calls (ADK's
/// key `None`).
#[inline]
fn id_slot(id: u32, n_ids: usize) -> usize {
    if id == NO_ID {
        n_ids
    } else {
        id as usize
    }
}

/// The first call item of each id (`ra_first`), among the items calling without responding.
fn first_calls(ctx: &Ask<'_>, sc: &mut Scratch) {
    let s = ctx.s;
    let (g, n_ids) = (sc.ra_gen, s.n_ids as usize);
    for i in 0..sc.items.len() {
        let it = sc.items[i];
        if it.kind != K_RAW || it.resp || !it.call {
            continue;
        }
        for a in it.p0..it.p1 {
            let p = s.parts[sc.arena[a as usize] as usize];
            if p.kind == PART_CALL {
                let k = id_slot(p.id, n_ids);
                if sc.ra_first_stamp[k] != g {
                    sc.ra_first_stamp[k] = g;
                    sc.ra_first[k] = i as u32;
                }
            }
        }
    }
}

/// One forward pass over the items: each response's owning call item (the latest call of
/// its id before it, else the first), the runs of responses of one (id, owner) key into
/// `done`, and the stale replies between consecutive updates of one call into `stale`.
fn response_runs(
    ctx: &Ask<'_>,
    sc: &mut Scratch,
    stale: &mut [bool],
    done: &mut Vec<(u32, u32, u32)>,
) {
    let s = ctx.s;
    let (g, n_ids) = (sc.ra_gen, s.n_ids as usize);
    for i in 0..sc.items.len() {
        let it = sc.items[i];
        if it.kind != K_RAW {
            continue;
        }
        if !it.resp {
            if it.call {
                for k in it.p0..it.p1 {
                    let p = s.parts[sc.arena[k as usize] as usize];
                    if p.kind == PART_CALL {
                        let k = id_slot(p.id, n_ids);
                        sc.ra_latest_stamp[k] = g;
                        sc.ra_latest[k] = i as u32;
                    }
                }
            }
            continue;
        }
        for k in it.p0..it.p1 {
            let p = s.parts[sc.arena[k as usize] as usize];
            if p.kind != PART_RESPONSE {
                continue;
            }
            let k = id_slot(p.id, n_ids);
            if sc.ra_first_stamp[k] != g {
                continue; // no call with this id
            }
            let owner = if sc.ra_latest_stamp[k] == g {
                sc.ra_latest[k]
            } else {
                sc.ra_first[k]
            };
            if sc.ra_run_stamp[k] == g && sc.ra_run_owner[k] == owner {
                let cur = sc.ra_run_last[k] as usize;
                mark_stale(ctx, sc, stale, cur, i);
            } else if sc.ra_run_stamp[k] == g {
                done.push((k as u32, sc.ra_run_owner[k], sc.ra_run_last[k]));
            }
            sc.ra_run_stamp[k] = g;
            sc.ra_run_owner[k] = owner;
            sc.ra_run_last[k] = i as u32;
        }
    }
    for k in 0..=n_ids {
        if sc.ra_run_stamp[k] == g {
            done.push((k as u32, sc.ra_run_owner[k], sc.ra_run_last[k]));
        }
    }
}

/// The rearranged list into `out`: every item but the stale ones and the responses, each
/// call item followed by the last responses to its calls (`ra_ans`), merged when several.
fn calls_with_answers(ctx: &Ask<'_>, sc: &mut Scratch, stale: &[bool], out: &mut Vec<Item>) {
    let g = sc.ra_gen;
    let mut idxs = std::mem::take(&mut sc.ra_idxs);
    for (i, &is_stale) in stale.iter().enumerate() {
        if is_stale {
            continue;
        }
        let it = sc.items[i];
        if has_kind(ctx, sc, &it, PART_RESPONSE) {
            continue;
        }
        if has_kind(ctx, sc, &it, PART_CALL) {
            out.push(it);
            idxs.clear();
            for a in it.p0..it.p1 {
                if sc.ra_ans_stamp[a as usize] == g {
                    let last = sc.ra_ans[a as usize] as usize;
                    if !idxs.contains(&last) {
                        idxs.push(last);
                    }
                }
            }
            match idxs.len() {
                0 => {}
                1 => out.push(sc.items[idxs[0]]),
                _ => {
                    idxs.sort_unstable();
                    let lists: Vec<(u32, u32)> = idxs
                        .iter()
                        .map(|&k| (sc.items[k].p0, sc.items[k].p1))
                        .collect();
                    let src = sc.items[idxs[0]].src;
                    let (a, b) = merge_parts(ctx, sc, &lists);
                    out.push(Item::parts(ctx.s, &sc.arena, src, a, b));
                }
            }
            continue;
        }
        out.push(it);
    }
    sc.ra_idxs = idxs;
}

impl Scratch {
    /// A fresh stamp for `rearrange_async`'s arrays, sized for `slots` ids and `parts` arena
    /// entries.
    fn ra_prepare(&mut self, slots: usize, parts: usize) {
        for v in [
            &mut self.ra_first,
            &mut self.ra_first_stamp,
            &mut self.ra_latest,
            &mut self.ra_latest_stamp,
            &mut self.ra_run_owner,
            &mut self.ra_run_last,
            &mut self.ra_run_stamp,
        ] {
            if v.len() < slots {
                v.resize(slots, 0);
            }
        }
        for v in [&mut self.ra_ans, &mut self.ra_ans_stamp] {
            if v.len() < parts {
                v.resize(parts, 0);
            }
        }
        next_gen(
            &mut self.ra_gen,
            &mut [
                &mut self.ra_first_stamp,
                &mut self.ra_latest_stamp,
                &mut self.ra_run_stamp,
                &mut self.ra_ans_stamp,
            ],
        );
    }
}

/// Consecutive updates `cur` < `next` of one call: the model text replies between them are
/// stale when both updates come from one invocation and author, and the first asked nothing.
fn mark_stale(ctx: &Ask<'_>, sc: &Scratch, stale: &mut [bool], cur: usize, next: usize) {
    let s = ctx.s;
    let (a, b) = (sc.items[cur], sc.items[next]);
    if s.inv_id[a.src as usize] != s.inv_id[b.src as usize]
        || ctx.author_of(&a) != ctx.author_of(&b)
    {
        return;
    }
    if !s.requested[a.src as usize].is_empty() {
        return;
    }
    if next > cur + 1
        && (cur + 1..next)
            .all(|i| is_stale_text_reply(ctx, sc, &sc.items[i], s.inv_id[a.src as usize]))
    {
        for x in stale.iter_mut().take(next).skip(cur + 1) {
            *x = true;
        }
    }
}

/// Item `it` without its orphan parts (and the parts sharing a genai `Part` with one), as a
/// new part list in the arena; `None` when nothing is left (ADK drops the event).
fn without_orphans(
    s: &SessionSizes,
    sc: &mut Scratch,
    it: Item,
    orphan: impl Fn(&Scratch, crate::tokens::sizes::PartInfo) -> bool,
) -> Option<Item> {
    let p0 = sc.arena.len() as u32;
    for k in it.p0..it.p1 {
        let gp = sc.arena[k as usize];
        if drops_with_sibling(s, sc, it.p0, it.p1, k, |sc, k| {
            orphan(sc, s.parts[sc.arena[k as usize] as usize])
        }) {
            continue;
        }
        sc.arena.push(gp);
    }
    let p1 = sc.arena.len() as u32;
    (p1 > p0).then(|| Item::parts(s, &sc.arena, it.src, p0, p1))
}

/// Whether arena part `k` (of an item spanning `p0..p1`) goes when ADK drops orphan parts:
/// it is an orphan, or it shares one genai `Part` with an orphan (ADK filters whole parts).
fn drops_with_sibling(
    s: &SessionSizes,
    sc: &Scratch,
    p0: u32,
    p1: u32,
    k: u32,
    orphan: impl Fn(&Scratch, u32) -> bool,
) -> bool {
    let joined = |k: u32| s.parts[sc.arena[k as usize] as usize].joined;
    orphan(sc, k)
        || (k > p0 && joined(k) && orphan(sc, k - 1))
        || (k + 1 < p1 && joined(k + 1) && orphan(sc, k + 1))
}

/// Step 7, `drop_orphaned_function_calls` (adk-compaction.md §8): a call no item answers
/// goes, unless it is long-running.
fn drop_orphan_calls(ctx: &Ask<'_>, sc: &mut Scratch) {
    let s = ctx.s;
    sc.gen_bump_sets();
    let g = sc.gen2();
    for ii in 0..sc.items.len() {
        let it = sc.items[ii];
        if it.kind != K_RAW {
            continue;
        }
        for k in if it.resp { it.p0..it.p1 } else { 0..0 } {
            let p = s.parts[sc.arena[k as usize] as usize];
            if p.kind == PART_RESPONSE && p.id != NO_ID {
                sc.id_b[p.id as usize] = g;
            }
        }
        for &lr in &s.long_running[it.src as usize] {
            sc.id_c[lr as usize] = g;
        }
    }
    let mut w = 0;
    for r in 0..sc.items.len() {
        let mut it = sc.items[r];
        let orphan = |sc: &Scratch, p: crate::tokens::sizes::PartInfo| {
            p.kind == PART_CALL
                && p.id != NO_ID
                && sc.id_b[p.id as usize] != g
                && sc.id_c[p.id as usize] != g
        };
        if it.kind == K_RAW
            && it.call
            && item_parts(sc, &it)
                .iter()
                .any(|&gp| orphan(sc, s.parts[gp as usize]))
        {
            match without_orphans(s, sc, it, orphan) {
                Some(k) => it = k,
                None => continue,
            }
        }
        sc.items[w] = it;
        w += 1;
    }
    sc.items.truncate(w);
}

/// The uncompacted measures of every model request and every invocation end (for the main
/// agent): setting-independent, so computed once per session and shared by all replays.
/// Each request is the last one of the same asker extended by the events since, when
/// [`extend`] allows it (ordinary sessions), so a long plain session costs O(events) rather
/// than O(requests × events); debug builds check every extension against a fresh build.
pub fn baseline(s: &SessionSizes) -> crate::tokens::sizes::BaselineCache {
    let words = s.n.div_ceil(64);
    let mut out = crate::tokens::sizes::BaselineCache {
        words,
        main_agent: s.main_agent,
        ..Default::default()
    };
    out.call_first = vec![u32::MAX; s.n_ids as usize];
    for i in (0..s.n).rev() {
        if s.visible[i] {
            for id in s.call_ids(i) {
                out.call_first[id as usize] = i as u32;
            }
        }
    }
    out.tok_prefix.reserve(s.n + 1);
    out.tok_prefix.push(0);
    out.json_prefix.reserve(s.n + 1);
    out.summ_chars_prefix.reserve(s.n + 1);
    out.summ_blocks_prefix.reserve(s.n + 1);
    let (mut json, mut chars, mut blocks) = (0u64, 0u64, 0u64);
    out.json_prefix.push(0);
    out.summ_chars_prefix.push(0);
    out.summ_blocks_prefix.push(0);
    for i in 0..s.n {
        let t = out.tok_prefix[i] + s.tokens[i] as u64;
        out.tok_prefix.push(t);
        if s.has_content[i] {
            json += s.json_chars[i];
        }
        if s.summ_lines[i] > 0 {
            blocks += 1;
            chars += s.summ_chars[i];
        }
        out.json_prefix.push(json);
        out.summ_chars_prefix.push(chars);
        out.summ_blocks_prefix.push(blocks);
    }
    // Requests and invocation ends are two chains of builds, each extended from its own last.
    let mut req = Chain::default();
    let mut end = Chain::default();
    let main = s.main_agent.unwrap_or(u32::MAX);
    for b in 0..s.blocks() {
        let (lo, hi) = (s.block_start[b] as usize, s.block_start[b + 1] as usize);
        for k in lo..hi {
            if !s.model_request[k] {
                continue;
            }
            let (m, extended) = req.measure(s, &out, k, s.author[k], s.branch[k], s.scope[k]);
            out.request_event.push(k as u32);
            out.request.push([
                m.contents as u64,
                m.adk_chars,
                m.json_chars,
                m.history_tokens,
            ]);
            let at = out.seen_added.len() as u32;
            match out.seen_rows.last().copied() {
                // The previous request (this chain's last build) plus the events just added.
                Some((bits, start, end)) if extended && end == at => {
                    out.seen_added.extend_from_slice(&req.sc.extended);
                    out.seen_rows
                        .push((bits, start, out.seen_added.len() as u32));
                }
                _ => {
                    let bits = out.seen.len() / words.max(1);
                    out.seen.resize(out.seen.len() + words, 0);
                    let base = bits * words;
                    for &i in &req.sc.seen_list {
                        if (i as usize) < k {
                            out.seen[base + i as usize / 64] |= 1u64 << (i % 64);
                        }
                    }
                    out.seen_rows.push((bits as u32, at, at));
                }
            }
            #[cfg(debug_assertions)]
            for i in 0..s.n {
                let row = out.seen_rows.len() - 1;
                let bit = out.seen_word(row, i / 64) >> (i % 64) & 1 == 1;
                assert_eq!(bit, i < k && req.sc.was_seen(i), "baseline seen row {row}");
            }
        }
        let (m, _) = end.measure(s, &out, hi, main, None, 0);
        out.block_end.push([
            m.contents as u64,
            m.adk_chars,
            m.json_chars,
            m.history_tokens,
        ]);
    }
    out
}

/// One chain of uncompacted builds for [`baseline`]: the scratch of its last build and what
/// that build was (asker, branch, raw events, measure).
#[derive(Default)]
struct Chain {
    sc: Scratch,
    last: Option<(u32, Option<u32>, usize)>,
    m: Measure,
}

impl Chain {
    /// The uncompacted request `viewer` (of `scope`) assembles over raw events `0..n`, and
    /// whether it extended the chain's last build.
    fn measure(
        &mut self,
        s: &SessionSizes,
        base: &crate::tokens::sizes::BaselineCache,
        n: usize,
        viewer: u32,
        branch: Option<u32>,
        scope: u32,
    ) -> (Measure, bool) {
        let ask = Ask {
            s,
            n,
            cov: &[],
            viewer,
            branch,
        };
        if let Some((v, b, n0)) = self.last.filter(|_| !s.has_scopes_or_rewinds()) {
            if (v, b) == (viewer, branch) {
                if let Some(m) = extend(&ask, base, n0, &mut self.sc, self.m) {
                    #[cfg(debug_assertions)]
                    assert_same_as_fresh(&ask, &[], &self.sc, m, None);
                    self.last = Some((viewer, branch, n));
                    self.m = m;
                    return (m, true);
                }
            }
        }
        self.sc.scope = scope;
        let m = build(&ask, &[], &mut self.sc);
        self.last = Some((viewer, branch, n));
        self.m = m;
        (m, false)
    }
}

/// Debug builds: an extended request equals the request built from scratch, down to the
/// items present and their order.
#[cfg(debug_assertions)]
pub(crate) fn assert_same_as_fresh(
    ask: &Ask<'_>,
    comps: &[Comp],
    sc: &Scratch,
    m: Measure,
    ridx: Option<&RetainedIndex>,
) {
    let mut fresh = Scratch {
        scope: sc.scope,
        ..Scratch::default()
    };
    let f = build(ask, comps, &mut fresh);
    assert_eq!(f, m, "extended request differs from a fresh build");
    let seq = match ridx {
        Some(ix) => sc.full_seq(ix),
        None => sc.seq.clone(),
    };
    assert_eq!(fresh.seq, seq, "extended request lists other items");
    let mut a = fresh.seen_list.clone();
    let mut b = sc.seen_list.clone();
    a.sort_unstable();
    b.sort_unstable();
    assert_eq!(a, b, "extended request carries other raw events");
}

impl Measure {
    /// From a cached `[contents, adk_chars, json_chars, history_tokens]` row.
    pub fn from_row(r: [u64; 4]) -> Measure {
        Measure {
            contents: r[0] as u32,
            adk_chars: r[1],
            json_chars: r[2],
            history_tokens: r[3],
            summary_tokens: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `covered` settles the newest timestamps by the last range and searches for the
    /// others: either way it says whether some range holds the timestamp, at every range
    /// end, inside, between and outside the ranges.
    #[test]
    fn covered_agrees_with_any_range_holding_the_timestamp() {
        let layouts: [&[(f64, f64)]; 4] = [
            &[],
            &[(2.0, 4.0)],
            &[(1.0, 1.0), (3.0, 5.0), (7.0, 9.0)],
            &[(0.0, 2.0), (2.5, 3.0), (6.0, 6.0), (8.0, 10.0)],
        ];
        for cov in layouts {
            for k in 0..=24 {
                let ts = k as f64 / 2.0 - 1.0;
                let any = cov.iter().any(|&(s, e)| s <= ts && ts <= e);
                assert_eq!(covered(cov, ts), any, "{ts} in {cov:?}");
            }
        }
    }

    /// Issue 13: the baseline built every request from scratch and kept a bitset over all
    /// events per request (requests × events). On a plain session each request now extends
    /// the one before: one bitset in all, and every request still carries exactly the
    /// events before it (debug builds also check each extension against a fresh build).
    #[test]
    fn a_plain_session_baseline_extends_and_keeps_one_bitset() {
        let mut text = String::from(r#"{"compaction_sim":1,"session":{"id":"long"}}"#);
        text.push('\n');
        let turns = 300;
        for i in 0..turns {
            let t = 1_770_000_000 + 2 * i;
            text.push_str(&format!(
                "{{\"author\":\"user\",\"role\":\"user\",\"invocation_id\":\"i{i}\",\"timestamp\":{t},\"parts\":[{{\"type\":\"text\",\"text\":\"question {i}\"}}]}}\n\
                 {{\"author\":\"agent\",\"role\":\"model\",\"invocation_id\":\"i{i}\",\"timestamp\":{},\"parts\":[{{\"type\":\"text\",\"text\":\"answer {i}\"}}],\"model_request\":true}}\n",
                t + 1
            ));
        }
        let sessions = crate::transcript::canonical::read("long.jsonl", &text).unwrap();
        let s = SessionSizes::new(&sessions[0], None);
        let b = baseline(&s);
        assert_eq!(b.request.len(), turns as usize);
        assert_eq!(b.seen.len(), b.words, "one bitset, not one per request");
        for (row, &k) in b.request_event.iter().enumerate() {
            let k = k as usize;
            assert_eq!(
                b.request[row][0], k as u64,
                "request {row} carries events 0..{k}"
            );
            for i in 0..s.n {
                let bit = b.seen_word(row, i / 64) >> (i % 64) & 1 == 1;
                assert_eq!(bit, i < k, "request {row}, event {i}");
            }
        }
    }
}
