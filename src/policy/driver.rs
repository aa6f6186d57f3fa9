//! The one walk every policy shares: the session's model requests in order, the policy's
//! decision before each, and the request rows, summarizer calls and compactions the cost
//! layer reads. O(requests + events) plus the summarizer's own work: cleared tool results
//! are one growing list that every request addresses by a prefix range, and a summary's
//! hidden intervals are stored once and shared by the requests that carry it.

use super::{At, Clearable, CompactionPolicy, Ctx, Decision};
use crate::engine::summarizer::{Seed, Summary, SummaryText};
use crate::engine::{
    CallResult, Compaction, Invocation, InvocationRuns, Outcome, Phase, Replay, Request,
    SummarizeRequest, Summarizer, SummarizerCall, Trigger, TEMPLATE_FIXED_CHARS,
};
use crate::tokens::sizes::{BaselineCache, SessionSizes, PART_RESPONSE};

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
fn history_chars(base: &BaselineCache, a: u32, c: u32, seed_chars: Option<u64>) -> u64 {
    let (a, c) = (a as usize, c as usize);
    let mut blocks = base.summ_blocks_prefix[c] - base.summ_blocks_prefix[a];
    let mut chars = base.summ_chars_prefix[c] - base.summ_chars_prefix[a];
    if let Some(sc) = seed_chars.filter(|&x| x > 0) {
        blocks += 1;
        chars += 7 + sc;
    }
    chars + blocks.saturating_sub(1)
}

/// The walk's state between requests: what the policy has done so far, and the rows built.
struct Walk<'a> {
    s: &'a SessionSizes,
    base: &'a BaselineCache,
    /// A copy: the policy is borrowed mutably for its decisions.
    clearable: Clearable,
    /// `mp[e]`: messages among events `0..e` ([`Ctx::is_message`]).
    mp: Vec<u64>,
    out: Replay,
    /// Cleared-list entries pushed to `out.hidden`.
    cand_at: usize,
    /// Results cleared in the previous request.
    m_prev: usize,
    /// Candidates before the current request's event.
    before_k: usize,
    /// Raw events `head..cut` are summarized (minus `kept`) while `cur` is carried.
    head: u32,
    cut: u32,
    kept: Vec<(u32, u64)>,
    kept_tok: u64,
    cur: Option<Current>,
    /// Summaries: each new one joins those carried ([`CompactionPolicy::summaries_accumulate`]).
    accumulate: bool,
    /// Tokens of the summaries carried before `cur` (accumulating policies only).
    earlier_tokens: u64,
    /// Where the carried summary's hidden runs start in `out.hidden` (a policy that also
    /// clears appends the results it clears after the summary's span behind them).
    sum_hid: u32,
    hid: std::ops::Range<u32>,
    car: std::ops::Range<u32>,
    prev_hist: u64,
}

/// `of` less what was removed plus what was added, never below 0.
fn net(removed: i64, added: u64, of: u64) -> u64 {
    (of as i64 - removed + added as i64).max(0) as u64
}

impl<'a> Walk<'a> {
    fn new(ctx: &Ctx<'a>, base: &'a BaselineCache, clearable: Clearable, accumulate: bool) -> Self {
        let s = ctx.sizes;
        let mut mp = Vec::with_capacity(s.n + 1);
        mp.push(0u64);
        for e in 0..s.n {
            mp.push(mp[e] + u64::from(ctx.is_message(e)));
        }
        let mut out = Replay::default();
        // One row per model request, one hidden run per clearable result: reserved, so a long
        // session's rows are not copied as they grow (that copy was most of the replay's
        // growth per event from 2,500 to 20,000 events).
        out.requests.reserve_exact(base.request_event.len());
        out.hidden.reserve(clearable.events.len());
        Walk {
            s,
            base,
            clearable,
            mp,
            out,
            cand_at: 0,
            m_prev: 0,
            before_k: 0,
            head: 0,
            cut: 0,
            kept: Vec::new(),
            kept_tok: 0,
            cur: None,
            accumulate,
            earlier_tokens: 0,
            sum_hid: 0,
            hid: 0..0,
            car: 0..0,
            prev_hist: 0,
        }
    }

    /// Tokens the carried summary stands for: `head..cut` less the events re-attached.
    fn sum_removed(&self) -> u64 {
        let tp = &self.base.tok_prefix;
        if self.cur.is_some() {
            (tp[self.cut as usize] - tp[self.head as usize]).saturating_sub(self.kept_tok)
        } else {
            0
        }
    }

    /// Results the carried summary stands for (those before its cut): clearing them frees
    /// nothing more.
    fn clear_from(&self, m: usize) -> usize {
        if self.cur.is_none() {
            return 0;
        }
        let cut = self.cut;
        self.clearable.events.partition_point(|&e| e < cut).min(m)
    }

    /// Tokens freed by clearing the first `m` results (their tokens less the placeholders),
    /// less those the carried summary already stands for.
    fn clear_removed(&self, m: usize) -> i64 {
        let j = self.clear_from(m);
        (self.clearable.prefix[m] - self.clearable.prefix[j]) as i64
            - ((m - j) as u64 * self.clearable.placeholder) as i64
    }

    fn summary_tokens(&self) -> u64 {
        self.cur.as_ref().map_or(0, |c| c.tokens) + self.earlier_tokens
    }

    /// What the policy is told before request `q` at event `k`.
    fn at(&self, q: usize, k: u32, p_base: u64) -> At {
        let ku = k as usize;
        let removed_now =
            self.sum_removed() as i64 + self.clear_removed(self.m_prev.min(self.before_k));
        let messages = if self.cur.is_some() {
            let mp = &self.mp;
            mp[self.head as usize] + 1 + self.kept.len() as u64 + (mp[ku] - mp[self.cut as usize])
        } else {
            self.mp[ku]
        };
        At {
            q,
            event: k,
            baseline_prompt: p_base,
            prompt: net(removed_now, self.summary_tokens(), p_base),
            messages,
            head: self.head,
            cut: self.cut,
            summary_chars: self.cur.as_ref().map_or(0, |c| c.chars),
            summary_tokens: self.summary_tokens(),
        }
    }

    /// One request: the policy's decision, then its row.
    fn request(
        &mut self,
        ctx: &Ctx<'_>,
        policy: &mut dyn CompactionPolicy,
        summarizer: &dyn Summarizer,
        q: usize,
        (k, meas): (u32, &[u64; 4]),
    ) {
        let cands = &self.clearable.events;
        while cands.get(self.before_k).is_some_and(|&e| e < k) {
            self.before_k += 1;
        }
        let recorded = self.s.recorded_prompt[k as usize];
        let p_base = recorded.unwrap_or(meas[3]);
        let at = self.at(q, k, p_base);
        let pre_start = self.out.pre_request.len() as u32;
        let mut m = self.m_prev.min(self.before_k);
        let mut compacted_now = false;
        match policy.decide(ctx, &at) {
            Decision::Keep => {}
            Decision::Clear(n) => m = n.min(self.before_k),
            Decision::Summarize {
                head,
                cut,
                keep,
                passes,
            } => {
                let reads = policy.summarizer_reads();
                compacted_now =
                    self.summarize(summarizer, k, head..cut.min(k), keep, (passes, reads))
            }
        }
        let sent = Sent {
            q,
            k,
            meas,
            at_prompt: at.prompt,
            recorded,
            p_base,
            m,
            compacted_now,
            pre_start,
        };
        self.push_request(sent);
    }

    /// Replace raw events `span` by a summary (`passes` calls, each seeded with the one
    /// before; the first reads at most `reads` tokens, see [`Walk::read_span`]); true when
    /// one was made.
    fn summarize(
        &mut self,
        summarizer: &dyn Summarizer,
        k: u32,
        span: std::ops::Range<u32>,
        keep: Vec<(u32, u64)>,
        (passes, reads): (u32, Option<u64>),
    ) -> bool {
        let (h, c) = (span.start, span.end);
        let a = if self.cur.is_some() {
            self.cut.max(h)
        } else {
            h
        };
        if c <= a {
            return false;
        }
        let (a, mut seed) = self.read_span(a, c, reads);
        let dropped = if seed.is_none() {
            self.cur.clone()
        } else {
            None
        };
        let mut made = None;
        for _ in 0..passes.max(1) {
            match self.summary_call(summarizer, k, a..c, h, seed.as_ref()) {
                Some(next) => {
                    seed = Some(next.clone());
                    made = Some(next);
                }
                None => break,
            }
        }
        let Some(summary) = made else { return false };
        // a summary the summarizer did not read is replaced all the same
        if let Some(prev) = dropped {
            if let Some(pc) = self.out.compactions.get_mut(prev.ordinal as usize - 1) {
                pc.retained = false;
                pc.subsumed_by = Some(summary.ordinal);
            }
        }
        self.carry(summary, h, c, keep);
        true
    }

    /// What the summarizer reads of the replaced events `a..c` and the summary before them
    /// (the oldest of what it replaces): all of it, or under a token budget (LangChain's
    /// `trim_tokens_to_summarize`, strategy "last") the newest events that fit, the newest
    /// one at least, and the summary only when everything fits. What it does not read is
    /// hidden all the same: its references break.
    fn read_span(&self, a: u32, c: u32, reads: Option<u64>) -> (u32, Option<Current>) {
        let Some(budget) = reads else {
            return (a, self.cur.clone());
        };
        let tp = &self.base.tok_prefix;
        let (au, cu) = (a as usize, c as usize);
        if tp[cu] - tp[au] + self.summary_tokens() <= budget {
            return (a, self.cur.clone());
        }
        let floor = tp[cu].saturating_sub(budget);
        let from = au + tp[au..cu].partition_point(|&x| x < floor);
        (from.min(cu - 1) as u32, None)
    }

    /// One summarizer call over raw events `span` (seeded with `seed`), recorded as a call and,
    /// when it writes a summary, as a compaction; the summary, or `None` when it failed.
    fn summary_call(
        &mut self,
        summarizer: &dyn Summarizer,
        k: u32,
        span: std::ops::Range<u32>,
        h: u32,
        seed: Option<&Current>,
    ) -> Option<Current> {
        let (s, ku) = (self.s, k as usize);
        let hc = history_chars(self.base, span.start, span.end, seed.map(|x| x.chars));
        let call_no = self.out.calls.len() as u32 + 1;
        let req = SummarizeRequest {
            call: call_no,
            phase: Phase::PreRequest,
            trigger: Trigger::TokenThreshold,
            events: span.clone(),
            skip: &[],
            seed: seed.map(|x| Seed {
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
        let mut call = SummarizerCall {
            call: call_no,
            phase: Phase::PreRequest,
            trigger: Trigger::TokenThreshold,
            invocation_index: s.inv_block[ku],
            before_event_index: Some(k),
            result: CallResult::Failed,
            summarizer_prompt_chars: TEMPLATE_FIXED_CHARS + hc,
            summarizer_history_chars: hc,
            input_tokens: 0,
            output_tokens: 0,
            summary_chars: 0,
            raw_events: span.clone(),
            compaction: None,
        };
        match outcome {
            Outcome::Summary(sm) => {
                let next = self.record_compaction(&mut call, sm, span, h, seed, hc);
                self.out.calls.push(call);
                Some(next)
            }
            Outcome::Empty { input_tokens } | Outcome::Failed { input_tokens } => {
                if matches!(outcome, Outcome::Empty { .. }) {
                    call.result = CallResult::Empty;
                }
                call.input_tokens = input_tokens;
                self.out.calls.push(call);
                None
            }
        }
    }

    /// A written summary: the call's result, the compaction row (the seed's marked subsumed).
    fn record_compaction(
        &mut self,
        call: &mut SummarizerCall,
        sm: Summary,
        span: std::ops::Range<u32>,
        h: u32,
        seed: Option<&Current>,
        hc: u64,
    ) -> Current {
        let s = self.s;
        let (a, c) = (span.start, span.end);
        let ordinal = self.out.compactions.len() as u32 + 1;
        let start = if seed.is_some() { h } else { a };
        let start_ts = seed.map_or(s.timestamp[a as usize], |x| x.start_timestamp);
        call.result = CallResult::Summary;
        call.input_tokens = sm.input_tokens;
        call.output_tokens = sm.tokens;
        call.summary_chars = sm.chars;
        call.compaction = Some(ordinal - 1);
        if let Some(prev) = seed.filter(|_| !self.accumulate) {
            if let Some(pc) = self.out.compactions.get_mut(prev.ordinal as usize - 1) {
                pc.retained = false;
                pc.subsumed_by = Some(ordinal);
            }
        }
        self.out.compactions.push(Compaction {
            ordinal,
            phase: Phase::PreRequest,
            trigger: Trigger::TokenThreshold,
            invocation_index: call.invocation_index,
            before_event_index: call.before_event_index,
            start_timestamp: start_ts,
            end_timestamp: s.timestamp[c as usize - 1],
            summarizer_input_events: (c - a) + u32::from(seed.is_some()),
            seeded_with_previous_summary: seed.is_some(),
            seed: seed.map(|x| x.ordinal),
            raw_events_in_range: c - start,
            first_raw_event_index: Some(start),
            last_raw_event_index: Some(c - 1),
            summarized_events: a..c,
            invocations_in_range: InvocationRuns::range(
                s.inv_block[start as usize]..s.inv_block[c as usize - 1] + 1,
            ),
            summarizer_call: call.call,
            summarizer_prompt_chars: TEMPLATE_FIXED_CHARS + hc,
            summarizer_history_chars: hc,
            summary_chars: sm.chars,
            summary_json_chars: sm.json_chars,
            summary_tokens: s.in_prompt(sm.tokens),
            summarizer_input_tokens: sm.input_tokens,
            retained: true,
            subsumed_by: None,
        });
        self.out.pre_request.push(ordinal);
        Current {
            ordinal,
            tokens: s.in_prompt(sm.tokens),
            chars: sm.chars,
            start_timestamp: start_ts,
            text: sm.text,
        }
    }

    /// The requests from now on carry `summary` for raw events `h..c` less `keep`; its hidden
    /// intervals are stored once.
    fn carry(&mut self, summary: Current, h: u32, c: u32, keep: Vec<(u32, u64)>) {
        self.head = h;
        self.cut = c;
        self.kept = keep.into_iter().filter(|&(e, _)| e >= h && e < c).collect();
        self.kept_tok = self.kept.iter().map(|&(_, t)| t).sum();
        let hs = self.out.hidden.len() as u32;
        let mut from = h;
        for &(e, _) in &self.kept {
            if e > from {
                self.out.hidden.push((from, e - 1));
            }
            from = e + 1;
        }
        if c > from {
            self.out.hidden.push((from, c - 1));
        }
        self.hid = hs..self.out.hidden.len() as u32;
        self.sum_hid = hs;
        let cs = self.out.carried.len() as u32;
        self.out.carried.push(summary.ordinal);
        match self.cur.take().filter(|_| self.accumulate) {
            Some(prev) => {
                self.earlier_tokens += prev.tokens;
                self.car = self.car.start..cs + 1;
            }
            None => self.car = cs..cs + 1,
        }
        self.cur = Some(summary);
    }

    /// The history the request shares with the one before, up to the first item that changed
    /// (a new summary after the kept head; the first newly cleared or restored tool result).
    fn shared_prefix(&self, q: usize, k: u32, m: usize, compacted_now: bool, hist: u64) -> u64 {
        let tp = &self.base.tok_prefix;
        if q == 0 {
            0
        } else if compacted_now {
            // the summaries carried before stay where they were
            tp[self.head as usize] + self.earlier_tokens
        } else if m != self.m_prev && self.clear_from(m.max(self.m_prev)) < m.max(self.m_prev) {
            // the first result cleared or restored that the summary does not stand for
            let j = m.min(self.m_prev).max(self.clear_from(m.max(self.m_prev)));
            let e = self.clearable.events.get(j).copied().unwrap_or(k) as usize;
            let before = tp[e] as i64 - self.sum_removed() as i64 + self.summary_tokens() as i64;
            (before - self.clear_removed(j)).max(0) as u64
        } else {
            self.prev_hist
        }
        .min(hist)
        .min(self.prev_hist)
    }

    /// The request as sent, after the decision.
    fn push_request(&mut self, r: Sent<'_>) {
        let s = self.s;
        let (ku, meas, m) = (r.k as usize, r.meas, r.m);
        let h_base = meas[3];
        let on = self.cur.is_some();
        let removed_sum = self.sum_removed();
        let removed = removed_sum as i64 + self.clear_removed(m);
        let added = self.summary_tokens();
        let hist = net(removed, added, h_base);
        let prompt = net(removed, added, r.p_base);
        // The token prefix counts every event, also those this request's history never
        // held (another agent's, invisible ones); a request hides at most what it held, so
        // `detail_lost` stays a share.
        let j = self.clear_from(m);
        let cleared = self.clearable.prefix[m] - self.clearable.prefix[j];
        let hidden_tokens = (removed_sum + cleared).min(h_base);
        while self.cand_at < m {
            let e = self.clearable.events[self.cand_at];
            // a result inside the summary's span is hidden by its runs already
            if self.cand_at >= j {
                self.out.hidden.push((e, e));
            }
            self.cand_at += 1;
        }
        if !self.clearable.events.is_empty() {
            self.hid = if on {
                self.sum_hid..self.out.hidden.len() as u32
            } else {
                0..m as u32
            };
        }
        let shared = self.shared_prefix(r.q, r.k, m, r.compacted_now, hist);
        self.prev_hist = hist;
        self.m_prev = m;
        let scale = |x: u64| {
            if h_base == 0 {
                x
            } else {
                (x as u128 * hist as u128 / h_base as u128) as u64
            }
        };
        let pre_end = self.out.pre_request.len() as u32;
        self.out.requests.push(Request {
            event_index: r.k,
            invocation_index: s.inv_block[ku],
            author: s.author[ku],
            measured_prompt_tokens: Some(r.at_prompt),
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
            pre_request_compacted: r.compacted_now,
            pre_request_compactions: r.pre_start..pre_end,
            recorded_prompt_tokens: r.recorded,
            replayed_prompt_tokens: r.recorded.map(|_| prompt),
            baseline_prompt_tokens: r.p_base,
            prompt_tokens: prompt,
            carried: if on { self.car.clone() } else { 0..0 },
            hidden: self.hid.clone(),
        });
    }
}

/// One request after the policy's decision: what its row is built from.
struct Sent<'m> {
    q: usize,
    k: u32,
    meas: &'m [u64; 4],
    /// The prompt the policy was told (before its decision).
    at_prompt: u64,
    recorded: Option<u64>,
    p_base: u64,
    /// Results cleared in this request.
    m: usize,
    compacted_now: bool,
    pre_start: u32,
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
    let clearable = policy.clearable().cloned().unwrap_or_default();
    let mut walk = Walk::new(ctx, base, clearable, policy.summaries_accumulate());
    for (q, (&k, meas)) in base.request_event.iter().zip(&base.request).enumerate() {
        walk.request(ctx, policy, summarizer, q, (k, meas));
    }
    let (mut out, cur, accumulate) = (walk.out, walk.cur, walk.accumulate);
    invocation_rows(s, &mut out);
    totals(&mut out, cur.map(|c| c.ordinal));
    if accumulate {
        // every summary stays in the prompt to the end
        out.totals.final_retained_summaries = out.carried.clone();
    }
    out
}

/// The invocation rows: the blocks, with their summarizer calls.
fn invocation_rows(s: &SessionSizes, out: &mut Replay) {
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
}

/// The replay's totals; `last`: the summary carried at the end.
fn totals(out: &mut Replay, last: Option<u32>) {
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
    t.final_retained_summaries = last.map(|c| vec![c]).unwrap_or_default();
}
