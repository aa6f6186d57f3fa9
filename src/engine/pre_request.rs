//! Before every model request (adk-compaction.md §3, §5): the pre-request token check
//! (`CompactionRequestProcessor`), the token path shared with post-invocation, and the
//! request's measures.

use super::contents::{self, K_SUM};
use super::guards;
use super::types::{Phase, Request, Trigger};
use super::{Firing, State, UsageMode};

/// ADK `_run_compaction_for_token_threshold_config` once the measured count is known
/// (adk-compaction.md §5): returns whether a compaction was appended.
pub(crate) fn token_path(
    st: &mut State<'_>,
    measured: Option<u64>,
    phase: Phase,
    inv: u32,
    before: Option<u32>,
    scope: u32,
) -> bool {
    let Some((threshold, retention)) = st.cfg.token else {
        return false;
    };
    match measured {
        Some(m) if m >= threshold => {}
        _ => return false,
    }
    // ADK works on `_apply_rewinds(events)` of the caller's isolation scope.
    st.view(scope);
    // latest non-subsumed compaction by stream order, and its end
    let latest = st.vc().0.iter().rposition(|c| c.retained);
    let last_end = latest.map_or(0.0, |k| st.comps[k].end);
    let r = retention as usize;
    let mut cands = std::mem::take(&mut st.window);
    let done = list_candidates(st, &mut cands, last_end, r, scope) && {
        let keep = to_compact(st, &cands, r, scope);
        let f = Firing {
            phase,
            trigger: Trigger::TokenThreshold,
            inv,
            before,
            evs: &cands[..keep],
            seed: latest,
            scope,
        };
        keep > 0 && worth_compacting(st, &f) && st.summarize(&f)
    };
    st.window = cands;
    done
}

/// adk-compaction.md §5 "cands": the events after the latest summary's end, into `cands`
/// (the last attempt's list, extended when it starts at the same event). Returns whether
/// there are more than `r` of them (else nothing is compacted).
fn list_candidates(
    st: &mut State<'_>,
    cands: &mut Vec<u32>,
    last_end: f64,
    r: usize,
    scope: u32,
) -> bool {
    let s = st.s;
    if st.special {
        cands.clear();
        cands.extend(
            (0..st.n as u32)
                .filter(|&i| s.timestamp[i as usize] > last_end && st.in_view(i as usize, scope)),
        );
    } else if s.ts_sorted {
        // a suffix: count it before listing it (usually too few to compact)
        let lo = match st.suffix_at {
            Some((end, lo)) if end.to_bits() == last_end.to_bits() && lo <= st.n => lo,
            _ => {
                let lo = crate::search::partition_point_from_end(&s.timestamp[..st.n], |&t| {
                    t <= last_end
                });
                // cached only once an event after the end exists: later events come after it
                if lo < st.n {
                    st.suffix_at = Some((last_end, lo));
                }
                lo
            }
        };
        debug_assert_eq!(
            lo,
            s.timestamp[..st.n].partition_point(|&t| t <= last_end),
            "cached suffix start vs search"
        );
        if st.n - lo <= r {
            return false;
        }
        // The last attempt's list when it started at the same event (no summary since, or
        // its summary failed): only the events appended since are added.
        if cands.first() != Some(&(lo as u32)) {
            cands.clear();
        }
        let have = (lo + cands.len()) as u32;
        cands.extend(have..st.n as u32);
        debug_assert_eq!(cands.len(), st.n - lo, "the candidates are the suffix");
    } else {
        cands.clear();
        cands.extend((0..st.n as u32).filter(|&i| s.timestamp[i as usize] > last_end));
    }
    cands.len() > r
}

/// adk-compaction.md §5 "to_compact" and §7: how many leading candidates are compacted, the
/// split that keeps `r` events (and every retained response's call) pushed back to the
/// longest self-contained prefix.
fn to_compact(st: &mut State<'_>, cands: &[u32], r: usize, scope: u32) -> usize {
    let s = st.s;
    let split = if r == 0 {
        cands.len()
    } else {
        guards::safe_split(s, cands, r, &mut st.gs)
    };
    let win = &cands[..split];
    if st.special {
        let (spans, n) = (&st.spans, st.n);
        guards::self_contained_prefix_in(s, win, n, &mut st.gs, |i| {
            s.scope[i] == scope && !crate::tokens::sizes::in_spans(spans, i)
        })
    } else if s.ts_sorted {
        guards::self_contained_prefix_scanned(s, win, st.n, &mut st.gs, &mut st.scan)
    } else {
        guards::self_contained_prefix(s, win, st.n, &mut st.gs)
    }
}

/// adk-compaction.md §7 `worth_compacting` for the token path: the range runs from the seed
/// (the previous summary, placed at its start) to the last event compacted.
fn worth_compacting(st: &State<'_>, f: &Firing<'_>) -> bool {
    let s = st.s;
    let (mut lo, mut hi) = guards::time_span(s, f.evs);
    if let Some(k) = f.seed {
        lo = lo.min(st.comps[k].start);
        hi = hi.max(st.comps[k].start);
    }
    let (comps, cov) = st.vc();
    if st.special {
        guards::worth_compacting_in(s, st.n, comps, cov, lo, hi, |i| st.in_view(i, f.scope))
    } else {
        let fast = Some((&st.ridx, &st.base.json_prefix[..]));
        guards::worth_compacting(s, st.n, comps, cov, lo, hi, fast)
    }
}

/// What the previous model request looked like (for the shared-prefix column).
#[derive(Debug, Default)]
pub(crate) struct Prev {
    /// (viewer, raw events, compactions, history tokens) of the previous request.
    pub last: Option<(u32, usize, usize, u64)>,
    /// Isolation scope of the previous request (an agent in another scope sees other events).
    pub last_scope: u32,
    /// Rewound-spans version at the previous request.
    pub last_spans: u32,
}

/// Tokens of the history prefix this request shares with the previous one: everything, when
/// the same agent asks again and no summary was written in between; else the leading items
/// that were there before and are not inside a summary written since.
fn shared_prefix(st: &State<'_>, prev: &Prev, viewer: u32, scope: u32, generic: bool) -> u64 {
    let Some((pv, pn, pc, ptok)) = prev.last else {
        return 0;
    };
    if pv != viewer || prev.last_scope != scope {
        return 0;
    }
    if prev.last_spans != st.spans_version {
        // A rewind removed events since: counted as no shared prefix (conservative).
        return 0;
    }
    if pc == st.comps.len() {
        return ptok;
    }
    if !generic {
        return 0;
    }
    // The leading summaries the build took from the index: shared up to the first one
    // written since (found by its key, not by walking them).
    let lead = st.sc.prefix as usize;
    let mut shared = 0u64;
    if lead > 0 {
        let stop = (pc..st.comps.len())
            .filter_map(|ci| st.ridx.position(&st.comps, ci))
            .fold(lead, usize::min);
        shared = st.ridx.sums_to(stop)[2];
        if stop < lead {
            #[cfg(debug_assertions)]
            assert_eq!(
                shared,
                shared_items(st, &st.sc.full_seq(&st.ridx), pn, pc),
                "shared prefix by the index vs by the items"
            );
            return shared;
        }
    }
    shared += shared_items(st, &st.sc.seq, pn, pc);
    #[cfg(debug_assertions)]
    if lead > 0 {
        assert_eq!(
            shared,
            shared_items(st, &st.sc.full_seq(&st.ridx), pn, pc),
            "shared prefix by the index vs by the items"
        );
    }
    shared
}

/// Tokens of the leading `items` that the previous request (over `pn` raw events and `pc`
/// summaries) held too, and that no summary written since covers.
fn shared_items(st: &State<'_>, items: &[(u8, u32)], pn: usize, pc: usize) -> u64 {
    let s = st.s;
    let new = &st.comps[pc..];
    let mut shared = 0u64;
    for &(kind, src) in items {
        let ok = match kind {
            K_SUM => (src as usize) < pc,
            _ => {
                let ts = s.timestamp[src as usize];
                (src as usize) < pn && !new.iter().any(|c| c.start <= ts && ts <= c.end)
            }
        };
        if !ok {
            break;
        }
        shared += match kind {
            K_SUM => st.comps[src as usize].tokens,
            _ => s.tokens[src as usize] as u64,
        };
    }
    shared
}

/// The low `b` bits of a word.
fn low(b: usize) -> u64 {
    if b >= 64 {
        u64::MAX
    } else {
        (1u64 << b) - 1
    }
}

/// Each run of set bits of `m`, the word of events `at..at + 64`, as a closed event range
/// `(first, last)`, in order.
fn bit_runs(mut m: u64, at: usize, mut f: impl FnMut(u32, u32)) {
    while m != 0 {
        let tz = m.trailing_zeros() as usize;
        let ones = (m >> tz).trailing_ones() as usize;
        m &= !(low(ones) << tz);
        f((at + tz) as u32, (at + tz + ones - 1) as u32);
    }
}

/// Raw events the uncompacted request `row` carried and the compacted one (the build in
/// `st.sc`) leaves inside a summary: their runs go to `st.out.hidden`; returns their tokens.
/// With sorted timestamps the compacted spans are index ranges, walked 64 events at a time
/// over the baseline's bitset, and a run's tokens come from prefix sums.
fn hidden(st: &mut State<'_>, row: usize) -> u64 {
    let s = st.s;
    if !s.ts_sorted {
        return hidden_by_event(st, row);
    }
    #[cfg(debug_assertions)]
    let check_from = st.out.hidden.len();
    let prefix = &st.base.tok_prefix;
    let mut seen = st.base.seen_words(row);
    // the requesting agent's view of the summaries (isolation scopes, rewinds)
    let cov: &[(f64, f64)] = if st.special { &st.vcov } else { &st.cov };
    // Compacted events the request still carries (recovered calls) are not hidden.
    let mut present: Vec<u32> = st
        .sc
        .seen_list
        .iter()
        .copied()
        .filter(|&i| contents::covered(cov, s.timestamp[i as usize]))
        .collect();
    present.sort_unstable();
    let mut tokens = 0u64;
    let mut run: Option<(u32, u32)> = None;
    for (lo, hi) in contents::covered_spans(s, st.n, cov) {
        let mut w = lo / 64;
        while w * 64 < hi {
            let at = w * 64;
            let (a, b) = (lo.max(at) - at, hi.min(at + 64) - at);
            let mut m = seen.word(w) & low(b) & !low(a);
            let p0 = present.partition_point(|&p| (p as usize) < at);
            for &p in present[p0..]
                .iter()
                .take_while(|&&p| (p as usize) < at + 64)
            {
                m &= !(1u64 << (p as usize - at));
            }
            bit_runs(m, at, |x, y| {
                tokens += prefix[y as usize + 1] - prefix[x as usize];
                run = Some(match run {
                    Some((r0, r1)) if r1 + 1 == x => (r0, y),
                    Some(r) => {
                        st.out.hidden.push(r);
                        (x, y)
                    }
                    None => (x, y),
                });
            });
            w += 1;
        }
    }
    if let Some(r) = run {
        st.out.hidden.push(r);
    }
    #[cfg(debug_assertions)]
    {
        let fast: Vec<(u32, u32)> = st.out.hidden[check_from..].to_vec();
        st.out.hidden.truncate(check_from);
        let slow_tokens = hidden_by_event(st, row);
        assert_eq!(
            (tokens, &fast[..]),
            (slow_tokens, &st.out.hidden[check_from..]),
            "hidden runs: word walk vs event walk"
        );
    }
    tokens
}

/// [`hidden`] one event at a time (unsorted timestamps; the debug cross-check).
fn hidden_by_event(st: &mut State<'_>, row: usize) -> u64 {
    let s = st.s;
    let mut tokens = 0u64;
    let mut run: Option<(u32, u32)> = None;
    let cov: &[(f64, f64)] = if st.special { &st.vcov } else { &st.cov };
    let mut word = 0u64;
    for i in 0..st.n {
        if i % 64 == 0 {
            word = st.base.seen_word(row, i / 64);
        }
        let in_base = word >> (i % 64) & 1 == 1;
        if in_base && !st.sc.was_seen(i) && contents::covered(cov, s.timestamp[i]) {
            tokens += s.tokens[i] as u64;
            run = Some(match run {
                Some((a, b)) if b + 1 == i as u32 => (a, i as u32),
                Some(r) => {
                    st.out.hidden.push(r);
                    (i as u32, i as u32)
                }
                None => (i as u32, i as u32),
            });
        }
    }
    if let Some(r) = run {
        st.out.hidden.push(r);
    }
    tokens
}

/// [`hidden`] of request `row`, as a range of `st.out.hidden` and its tokens. A request
/// whose build extended the last one's (same scratch generation, same summaries), whose
/// baseline row extends the last one's, and whose new events are all outside the summaries
/// hides exactly what the last one hid: it shares that range instead of walking every
/// compacted event again (which made a long session's replay O(requests × events)).
fn hidden_shared(st: &mut State<'_>, row: usize) -> (u32, u32, u64) {
    let (bits, start, _) = st.base.seen_rows[row];
    let key = (st.sc.generation(), st.comps.len(), bits, start);
    if let Some((a, b, tokens, k, n0)) = st.hidden_at {
        let cov: &[(f64, f64)] = if st.special { &st.vcov } else { &st.cov };
        let s = st.s;
        if k == key && n0 <= st.n && (n0..st.n).all(|i| !contents::covered(cov, s.timestamp[i])) {
            #[cfg(debug_assertions)]
            {
                let at = st.out.hidden.len();
                let fresh = hidden(st, row);
                assert_eq!(
                    (fresh, &st.out.hidden[at..]),
                    (tokens, &st.out.hidden[a as usize..b as usize]),
                    "hidden runs shared with the last request vs walked"
                );
                st.out.hidden.truncate(at);
            }
            st.hidden_at = Some((a, b, tokens, k, st.n));
            return (a, b, tokens);
        }
    }
    let cov: &[(f64, f64)] = if st.special { &st.vcov } else { &st.cov };
    let s = st.s;
    // Compacted events this request still carries (recovered calls) are not hidden; with
    // none, what is hidden is monotone and can grow from the last request's.
    let none_present = st
        .sc
        .seen_list
        .iter()
        .all(|&i| !contents::covered(cov, s.timestamp[i as usize]));
    if let Some(r) = hidden_grown(st, row, key, none_present) {
        st.hidden_at = Some((r.0, r.1, r.2, key, st.n));
        st.hidden_cov.clone_from(&st.cov);
        st.hidden_none_present = none_present;
        return r;
    }
    let a = st.out.hidden.len() as u32;
    let tokens = hidden(st, row);
    let b = st.out.hidden.len() as u32;
    st.hidden_at = Some((a, b, tokens, key, st.n));
    st.hidden_cov.clone_from(&st.cov);
    st.hidden_none_present = none_present;
    (a, b, tokens)
}

/// [`hidden`] after summaries were appended since the last request (a sliding window's
/// next summary): when neither request carries a compacted event, both baseline rows are
/// one extended row and the summaries were only appended (coverage only grows), the hidden
/// events are the last request's plus those of the newly covered spans (and of the events
/// appended since). Only those spans are walked, so each event is walked about once per
/// replay instead of once per summary.
fn hidden_grown(
    st: &mut State<'_>,
    row: usize,
    key: super::HiddenKey,
    none_present: bool,
) -> Option<(u32, u32, u64)> {
    let s = st.s;
    let (a0, b0, tok0, k0, n0) = st.hidden_at?;
    if st.special
        || !s.ts_sorted
        || !none_present
        || !st.hidden_none_present
        || (k0.2, k0.3) != (key.2, key.3)
        || k0.1 > key.1
        || n0 > st.n
    {
        return None;
    }
    // index spans covered now, minus those covered among the last request's events
    let old: Vec<(usize, usize)> = contents::covered_spans(s, n0, &st.hidden_cov).collect();
    let mut fresh: Vec<(usize, usize)> = Vec::new();
    let mut j = 0;
    for (lo, hi) in contents::covered_spans(s, st.n, &st.cov) {
        let mut at = lo;
        while at < hi {
            while j < old.len() && old[j].1 <= at {
                j += 1;
            }
            match old.get(j) {
                Some(&(ol, oh)) if ol <= at => at = oh.min(hi).max(at),
                Some(&(ol, _)) if ol < hi => {
                    fresh.push((at, ol));
                    at = ol;
                }
                _ => {
                    fresh.push((at, hi));
                    at = hi;
                }
            }
        }
    }
    let prefix = &st.base.tok_prefix;
    let mut tokens = tok0;
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for (lo, hi) in fresh {
        let mut w = lo / 64;
        while w * 64 < hi {
            let at = w * 64;
            let (a, b) = (lo.max(at) - at, hi.min(at + 64) - at);
            let m = st.base.seen_word(row, w) & low(b) & !low(a);
            bit_runs(m, at, |x, y| {
                tokens += prefix[y as usize + 1] - prefix[x as usize];
                match runs.last_mut() {
                    Some(r) if r.1 + 1 == x => r.1 = y,
                    _ => runs.push((x, y)),
                }
            });
            w += 1;
        }
    }
    // merge with the last request's runs (disjoint from these), coalescing neighbours
    let start = st.out.hidden.len();
    let (mut i, mut k) = (a0 as usize, 0);
    while i < b0 as usize || k < runs.len() {
        let r = if k >= runs.len() || (i < b0 as usize && st.out.hidden[i].0 < runs[k].0) {
            i += 1;
            st.out.hidden[i - 1]
        } else {
            k += 1;
            runs[k - 1]
        };
        let grown = st.out.hidden.len() > start;
        match st.out.hidden.last_mut() {
            Some(last) if grown && last.1 + 1 == r.0 => last.1 = r.1,
            _ => st.out.hidden.push(r),
        }
    }
    let end = st.out.hidden.len();
    #[cfg(debug_assertions)]
    {
        let grown = st.out.hidden[start..end].to_vec();
        let walked = hidden(st, row);
        assert_eq!(
            (tokens, &grown[..]),
            (walked, &st.out.hidden[end..]),
            "hidden runs grown from the last request's vs walked"
        );
        st.out.hidden.truncate(end);
    }
    Some((start as u32, end as u32, tokens))
}

/// The ordinals of the summaries the request in `st.sc` carries (stream order), as a range
/// of `st.out.carried`. Requests share storage: an extended build (same scratch generation,
/// same summaries) carries what the last one did, and a list that is the last one plus new
/// ordinals (a sliding window's next summary) only appends them. So a session retaining
/// thousands of summaries stores each about once, not once per request.
fn carried(st: &mut State<'_>) -> (u32, u32) {
    let key = (st.sc.generation(), st.comps.len());
    if let Some((a, b, g, c)) = st.carried_at {
        if (g, c) == key {
            #[cfg(debug_assertions)]
            assert_eq!(
                carried_list(st),
                st.out.carried[a as usize..b as usize],
                "carried of an extended build"
            );
            return (a, b);
        }
    }
    let len = st.out.carried.len() as u32;
    let lead = st.sc.prefix as usize;
    let tail_sums = st.sc.seq.iter().any(|x| x.0 == K_SUM);
    // The last list was the index's first `p0` summaries and nothing else, and the index has
    // only grown at its end since: this list extends it (a sliding window's next request).
    let extends = match (st.carried_at, st.carried_lead) {
        (Some((_, b, _, _)), Some((epoch, p0))) => {
            b == len && epoch == st.ridx.epoch() && p0 <= lead && lead > 0
        }
        _ => false,
    };
    let (a, b) = if extends {
        let (a, _, _, _) = st.carried_at.unwrap_or_default();
        let p0 = st.carried_lead.map_or(0, |l| l.1);
        let ridx = &st.ridx;
        st.out
            .carried
            .extend((p0..lead).map(|i| ridx.comp_at(i) + 1));
        let tail = st.sc.seq.iter().filter(|x| x.0 == K_SUM).map(|x| x.1 + 1);
        st.out.carried.extend(tail);
        #[cfg(debug_assertions)]
        assert_eq!(
            carried_list(st),
            st.out.carried[a as usize..],
            "carried extended from the index"
        );
        (a, st.out.carried.len() as u32)
    } else {
        let list = carried_list(st);
        match st.carried_at {
            // the last list, at the end of the storage, is a prefix of this one
            Some((a, b, _, _))
                if b == len
                    && (b - a) as usize <= list.len()
                    && st.out.carried[a as usize..b as usize] == list[..(b - a) as usize] =>
            {
                let old = (b - a) as usize;
                st.out.carried.extend_from_slice(&list[old..]);
                st.carried_buf = list;
                (a, st.out.carried.len() as u32)
            }
            _ => {
                st.out.carried.extend_from_slice(&list);
                st.carried_buf = list;
                (len, st.out.carried.len() as u32)
            }
        }
    };
    st.carried_at = Some((a, b, key.0, key.1));
    st.carried_lead = (st.ridx.usable() && !tail_sums).then(|| (st.ridx.epoch(), lead));
    (a, b)
}

/// The ordinals of the summaries the request in `st.sc` carries, in request order: the
/// index's leading ones, then those among its items (into the reused buffer).
fn carried_list(st: &mut State<'_>) -> Vec<u32> {
    let mut list = std::mem::take(&mut st.carried_buf);
    list.clear();
    let ridx = &st.ridx;
    list.extend((0..st.sc.prefix as usize).map(|i| ridx.comp_at(i) + 1));
    list.extend(st.sc.seq.iter().filter(|x| x.0 == K_SUM).map(|x| x.1 + 1));
    list
}

/// One recorded model request at event `k` (raw events `0..k` exist).
pub(crate) fn model_request(st: &mut State<'_>, prev: &mut Prev, inv: u32, k: usize) {
    let s = st.s;
    let author = s.author[k];
    let branch = s.branch[k];
    let scope = s.scope.get(k).copied().unwrap_or(0);
    let row = st.req_row;
    st.req_row += 1;
    let raw = contents::Measure::from_row(st.base.request[row]);
    if st.comps.is_empty() {
        // Before any compaction the request is the uncompacted one.
        st.last_key = Some((author, branch, st.n, 0));
        st.last_measure = raw;
    }
    let mut measured = None;
    let pre_start = st.out.pre_request.len() as u32;
    if st.cfg.token.is_some() && st.cfg.pre_request {
        // One reading: what the check compares with the threshold is what is reported.
        measured = st.measured(author, branch, scope);
        let before = st.out.compactions.len();
        token_path(st, measured, Phase::PreRequest, inv, Some(k as u32), scope);
        for c in before..st.out.compactions.len() {
            st.out.pre_request.push(c as u32 + 1);
        }
    }
    let pre_end = st.out.pre_request.len() as u32;
    let generic = !st.comps.is_empty();
    let sim = if generic {
        st.measure(author, branch, scope)
    } else {
        raw
    };

    // hidden raw events: in the uncompacted request, absent from the compacted one, covered
    let mut hid_start = st.out.hidden.len() as u32;
    let mut hidden_tokens = 0u64;
    let (mut car_start, mut car_end) = (st.out.carried.len() as u32, st.out.carried.len() as u32);
    let mut hid_end = hid_start;
    if generic {
        (hid_start, hid_end, hidden_tokens) = hidden_shared(st, row);
        (car_start, car_end) = carried(st);
    }
    let shared = shared_prefix(st, prev, author, scope, generic);
    prev.last = Some((author, st.n, st.comps.len(), sim.history_tokens));
    prev.last_scope = scope;
    prev.last_spans = st.spans_version;

    // replayed usage
    let recorded = s.recorded_prompt[k];
    let replayed = match (st.cfg.usage, recorded) {
        (UsageMode::Strip, _) => None,
        (UsageMode::Recorded, r) => r,
        (UsageMode::Adjust, Some(r)) => {
            let delta = if s.tokens_are_adk_chars {
                (raw.adk_chars as i64 - sim.adk_chars as i64).div_euclid(4)
            } else {
                raw.history_tokens as i64 - sim.history_tokens as i64
            };
            Some((r as i64 - delta).max(0) as u64)
        }
        (UsageMode::Adjust, None) => None,
    };
    st.replayed.set(k, replayed);
    let (baseline_prompt, prompt) = match recorded {
        Some(r) => {
            let removed = raw.history_tokens as i64 - sim.history_tokens as i64;
            (r, (r as i64 - removed).max(0) as u64)
        }
        None => (raw.history_tokens, sim.history_tokens),
    };
    st.out.requests.push(Request {
        event_index: k as u32,
        invocation_index: inv,
        author,
        measured_prompt_tokens: measured,
        adk_chars: sim.adk_chars,
        adk_chars_uncompacted: raw.adk_chars,
        contents: sim.contents,
        contents_uncompacted: raw.contents,
        json_chars: sim.json_chars,
        json_chars_uncompacted: raw.json_chars,
        history_tokens: sim.history_tokens,
        baseline_history_tokens: raw.history_tokens,
        summary_tokens: sim.summary_tokens,
        hidden_tokens,
        shared_prefix_tokens: shared,
        pre_request_compacted: pre_end > pre_start,
        pre_request_compactions: pre_start..pre_end,
        recorded_prompt_tokens: recorded,
        replayed_prompt_tokens: replayed,
        baseline_prompt_tokens: baseline_prompt,
        prompt_tokens: prompt,
        carried: car_start..car_end,
        hidden: hid_start..hid_end,
    });
}
