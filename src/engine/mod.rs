//! The replay engine: google-adk 2.13.0 events compaction, request by request
//! (shared/spec/adk-compaction.md). Pure: no I/O, no printing, no clock.
//!
//! The session is replayed the way the oracle (and a Runner) drives ADK: events are appended
//! one by one; before each model request the pre-request token check runs (token pair only);
//! after each invocation block the post-invocation compaction runs (token path first, then the
//! sliding window). Everything works on [`SessionSizes`]; no text is read.
//!
//! Sessions with ADK 2.13 isolation scopes or rewinds (`State::special`) take an exact but
//! slower path: each agent sees only its scope's events and compactions (`State::view`), and
//! `_apply_rewinds` removes the annulled spans, summaries written inside them included.

pub mod contents;
pub mod guards;
pub mod pitfalls;
pub mod post_invocation;
pub mod pre_request;
pub mod summarizer;
pub mod types;

pub use summarizer::{Outcome, Seed, SummarizeRequest, Summarizer, Summary};
pub use types::*;

use crate::tokens::sizes::{prefetch, SessionSizes};
use contents::{Comp, Measure, Scratch};
use guards::GuardScratch;

/// ADK's summarizer template: fixed chars around `{conversation_history}` (657).
pub const TEMPLATE_FIXED_CHARS: u64 = crate::tokens::adk::SUMMARIZER_TEMPLATE_FIXED_CHARS;

/// How recorded `prompt_token_count`s are replayed (shared/oracle/README.md `--usage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UsageMode {
    /// `max(0, recorded - removed)`: removed = `floor((raw chars - compacted chars) / 4)`, or
    /// with a real tokenizer the history tokens compaction removed.
    #[default]
    Adjust,
    /// Replay the recorded counts unchanged.
    Recorded,
    /// Drop all usage: ADK falls back to its chars/4 estimate.
    Strip,
}

impl UsageMode {
    pub fn parse(s: &str) -> Option<UsageMode> {
        match s {
            "adjust" => Some(UsageMode::Adjust),
            "recorded" => Some(UsageMode::Recorded),
            "strip" => Some(UsageMode::Strip),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            UsageMode::Adjust => "adjust",
            UsageMode::Recorded => "recorded",
            UsageMode::Strip => "strip",
        }
    }
}

/// The engine's view of a setting: ADK's four fields plus replay options.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Config {
    /// `(token_threshold, event_retention_size)`.
    pub token: Option<(u64, u64)>,
    /// `(compaction_interval, overlap_size)`.
    pub sliding: Option<(u64, u64)>,
    pub usage: UsageMode,
    /// Run the pre-request check (ADK always does; the oracle's `--no-pre-request` turns it off).
    pub pre_request: bool,
}

impl Config {
    /// From a validated manifest setting.
    pub fn from_setting(c: &crate::settings::Compaction, usage: UsageMode) -> Config {
        Config {
            token: c.after_tokens.zip(c.keep_recent_events),
            sliding: c.after_invocations.zip(c.overlap),
            usage,
            pre_request: true,
        }
    }
}

/// The replayed `prompt_token_count`s of the appended events that have one, by ascending
/// event index: most events have none, and a dense list cost a long replay a clear and a
/// write of every event's slot, each far from the rest of its work.
#[derive(Debug, Default)]
pub(crate) struct ReplayedCounts(Vec<(u32, u64)>);

impl ReplayedCounts {
    /// Event `k`'s count (events are set in order, each once).
    pub fn set(&mut self, k: usize, count: Option<u64>) {
        debug_assert!(self.0.last().is_none_or(|&(i, _)| (i as usize) < k));
        if let Some(v) = count {
            self.0.push((k as u32, v));
        }
    }

    /// `(event, count)` of the events in `stop..n` that have one, newest first.
    pub fn newest(&self, stop: usize, n: usize) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.0
            .iter()
            .rev()
            .map(|&(i, v)| (i as usize, v))
            .skip_while(move |&(i, _)| i >= n)
            .take_while(move |&(i, _)| i >= stop)
    }
}

/// What a request's hidden runs were walked for: scratch generation, compactions, and the
/// baseline row's bitset and start.
pub(crate) type HiddenKey = (u32, usize, u32, u32);

/// Replay-local state: the session as ADK holds it after `n` raw events.
pub(crate) struct State<'a> {
    pub s: &'a SessionSizes,
    pub cfg: Config,
    pub summ: &'a dyn Summarizer,
    pub n: usize,
    pub comps: Vec<Comp>,
    pub cov: Vec<(f64, f64)>,
    /// Replayed `prompt_token_count`s of the appended events.
    pub replayed: ReplayedCounts,
    pub sc: Scratch,
    pub gs: GuardScratch,
    pub out: Replay,
    pub window: Vec<u32>,
    /// The token path's last `(end of the latest summary, first event after it)`: timestamps
    /// are sorted and events only appended, so it holds until a new summary (a binary search
    /// per request over a long session's timestamps was most of a sliding replay's token
    /// checks).
    pub suffix_at: Option<(f64, usize)>,
    /// The token trigger's self-contained-prefix scan, resumed while its window grows.
    pub scan: guards::PrefixScan,
    /// Setting-independent uncompacted measures (computed once per session).
    pub base: &'a crate::tokens::sizes::BaselineCache,
    /// Model requests seen so far (row into `base.request`).
    pub req_row: usize,
    /// Key of the request `last_measure` describes: (viewer, branch, n, compactions). When
    /// compactions > 0 it is also the build `sc` holds.
    pub last_key: Option<(u32, Option<u32>, usize, usize)>,
    pub last_measure: Measure,
    /// Sessions with isolation scopes or rewinds take the exact, slower path below.
    pub special: bool,
    /// Isolation scope of each compaction (ADK stamps the token path's scope on it).
    pub comp_scope: Vec<u32>,
    /// Rewound spans at `n` (ADK `_apply_rewinds`), updated when a rewind event is appended.
    pub spans: Vec<(u32, u32)>,
    pub spans_version: u32,
    /// The compactions as one scope sees them after rewinds (`retained` and coverage
    /// recomputed among those), keyed by (scope, compactions, spans version).
    vkey: Option<(u32, usize, u32)>,
    pub vcomps: Vec<Comp>,
    pub vcov: Vec<(f64, f64)>,
    /// Per invocation id (interned in first-appearance order) among raw events `0..n`: the
    /// latest timestamp, and the first and last event index (kept as events are appended).
    pub inv_latest: Vec<f64>,
    pub inv_first: Vec<u32>,
    pub inv_last: Vec<u32>,
    /// The sliding window's "new" invocations: those whose latest timestamp is after
    /// `new_basis` (the end it last compared with), ascending, kept as events are appended
    /// so the check after each invocation does not walk every invocation again.
    pub new_invs: Vec<u32>,
    pub in_new: Vec<bool>,
    pub new_basis: f64,
    /// The retained ordinals as closed runs, recomputed when a compaction is appended (each
    /// invocation's row takes a copy: O(runs), not O(summaries)).
    pub retained_runs: Vec<(u32, u32)>,
    /// Where `retained_runs` was last stored in `out.retained` (cleared when it changes).
    pub retained_at: Option<std::ops::Range<u32>>,
    /// The retained summaries in request order with running sums (ordinary sessions).
    pub ridx: contents::RetainedIndex,
    /// Where the last request's carried ordinals went in `out.carried`, and the build they
    /// were read from (scratch generation, compactions): an extended build carries the same.
    pub carried_at: Option<(u32, u32, u32, usize)>,
    /// The last carried list was the summary index's first `.1` entries and nothing else,
    /// read at index epoch `.0`.
    pub carried_lead: Option<(u32, usize)>,
    /// Summaries the last append subsumed (reused buffer).
    dropped: Vec<u32>,
    /// The carried ordinals of the current request (reused buffer).
    pub carried_buf: Vec<u32>,
    /// The last request's hidden runs in `out.hidden` (start, end), their tokens, the key
    /// they were walked for (scratch generation, compactions, baseline row's bitset and
    /// start) and the raw events then.
    pub hidden_at: Option<(u32, u32, u64, HiddenKey, usize)>,
    /// The coverage `hidden_at` was walked with, and whether that request carried no
    /// compacted event.
    pub hidden_cov: Vec<(f64, f64)>,
    pub hidden_none_present: bool,
}

impl<'a> State<'a> {
    /// Fetch what the replay reads at event `k` and at its model request.
    #[inline(always)]
    fn prefetch(&self, k: usize) {
        let s = self.s;
        // one call per array (their element types differ)
        macro_rules! at_k {
            ($($v:expr),* $(,)?) => { $( prefetch($v, k); )* };
        }
        at_k!(
            &s.model_request,
            &s.recorded_prompt,
            &s.rewind_to,
            &s.inv_id,
            &s.timestamp,
            &s.author,
            &s.branch,
            &s.scope,
            &s.parts_at,
            &s.tokens,
            &s.has_calls,
            &s.has_resps,
            &s.transcription,
            &self.sc.seen,
        );
        s.long_running.prefetch(k);
        s.requested.prefetch(k);
        if let Some(&(a, _)) = s.parts_at.get(k.saturating_sub(AHEAD / 2)) {
            prefetch(&s.parts, a as usize);
        }
        let row = self.req_row + AHEAD / 2;
        prefetch(&self.base.request, row);
        prefetch(&self.base.seen_rows, row);
    }

    /// Raw event `k` was appended.
    fn appended(&mut self, k: usize) {
        let inv = self.s.inv_id[k] as usize;
        if inv >= self.inv_latest.len() {
            self.inv_latest.resize(inv + 1, 0.0);
            self.inv_first.resize(inv + 1, u32::MAX);
            self.inv_last.resize(inv + 1, 0);
        }
        self.inv_latest[inv] = self.inv_latest[inv].max(self.s.timestamp[k]);
        self.inv_first[inv] = self.inv_first[inv].min(k as u32);
        self.inv_last[inv] = k as u32;
        if self.in_new.len() <= inv {
            self.in_new.resize(inv + 1, false);
        }
        if !self.in_new[inv] && self.inv_latest[inv] > self.new_basis {
            self.in_new[inv] = true;
            // usually the newest invocation: a push
            let at = self.new_invs.partition_point(|&x| (x as usize) < inv);
            self.new_invs.insert(at, inv as u32);
        }
    }

    /// The invocations whose latest timestamp is after `last_end`, ascending (ADK's
    /// `new_invocation_ids`): the kept set, narrowed when the end moved forward, rebuilt when
    /// it moved back (or is NaN).
    pub fn new_invocations(&mut self, last_end: f64) -> &[u32] {
        if last_end != self.new_basis {
            if last_end > self.new_basis {
                let (latest, in_new) = (&self.inv_latest, &mut self.in_new);
                self.new_invs.retain(|&k| {
                    let keep = latest[k as usize] > last_end;
                    in_new[k as usize] = keep;
                    keep
                });
            } else {
                self.new_invs.clear();
                for (k, &t) in self.inv_latest.iter().enumerate() {
                    let keep = t > last_end;
                    self.in_new[k] = keep;
                    if keep {
                        self.new_invs.push(k as u32);
                    }
                }
            }
            self.new_basis = last_end;
        }
        #[cfg(debug_assertions)]
        {
            let all: Vec<u32> = (0..self.inv_latest.len() as u32)
                .filter(|&k| self.inv_latest[k as usize] > last_end)
                .collect();
            assert_eq!(
                all, self.new_invs,
                "kept new invocations vs all invocations"
            );
        }
        &self.new_invs
    }

    /// ADK `_latest_prompt_token_count(_apply_rewinds(events), ...)`, the prompt size ADK's
    /// token check reads (pre-request and post-invocation alike): the newest replayed count (of
    /// `agent`, or of anyone when `agent` is `u32::MAX`) among the live events of isolation
    /// scope `scope`, stopping at the latest live compaction of that scope; else the chars/4
    /// estimate of the request `agent` would assemble from the live events. The one source of
    /// both the token decision and the reported `measured_prompt_tokens`: callers read it once
    /// and hand the same value to `pre_request::token_path` and to the report.
    pub fn measured(&mut self, agent: u32, branch: Option<u32>, scope: u32) -> Option<u64> {
        if !self.special {
            let stop = self.comps.last().map_or(0, |c| c.after_raw as usize);
            for (i, v) in self.replayed.newest(stop, self.n) {
                if agent == u32::MAX || self.s.author[i] == agent {
                    return Some(v);
                }
            }
            let m = self.measure(agent, branch, scope);
            return (m.adk_chars > 0).then_some(m.adk_chars / 4);
        }
        // `_apply_rewinds` first: a rewound compaction no longer stops the scan, a rewound
        // count is no longer read.
        let stop = (0..self.comps.len())
            .rev()
            .find(|&k| self.comp_scope[k] == scope && self.comp_live(self.comps[k].after_raw))
            .map_or(0, |k| self.comps[k].after_raw as usize);
        for (i, v) in self.replayed.newest(stop, self.n) {
            if self.s.scope[i] != scope || crate::tokens::sizes::in_spans(&self.spans, i) {
                continue;
            }
            if agent == u32::MAX || self.s.author[i] == agent {
                return Some(v);
            }
        }
        self.sc.lead_after_rewinds = true;
        let m = self.measure(agent, branch, scope);
        self.sc.lead_after_rewinds = false;
        (m.adk_chars > 0).then_some(m.adk_chars / 4)
    }

    /// Whether a compaction appended after `after_raw` raw events survives the rewinds.
    pub fn comp_live(&self, after_raw: u32) -> bool {
        !self
            .spans
            .iter()
            .any(|&(t, r)| t < after_raw && after_raw <= r)
    }

    /// Raw event `i` is live after the rewinds and of isolation scope `scope`.
    #[inline]
    pub fn in_view(&self, i: usize, scope: u32) -> bool {
        !self.special
            || (self.s.scope[i] == scope && !crate::tokens::sizes::in_spans(&self.spans, i))
    }

    /// Recompute the spans after a rewind event was appended (`n` is already past it).
    pub fn rewound(&mut self) {
        self.s.rewound_spans(self.n, &mut self.spans);
        self.spans_version += 1;
    }

    /// Prepare `vcomps` / `vcov` for `scope` (no-op for ordinary sessions, where the global
    /// `comps` / `cov` are the view).
    #[inline]
    pub fn view(&mut self, scope: u32) {
        if !self.special {
            return;
        }
        let key = (scope, self.comps.len(), self.spans_version);
        if self.vkey == Some(key) {
            return;
        }
        self.vkey = Some(key);
        self.vcomps.clear();
        let mut included = Vec::new();
        for (k, c) in self.comps.iter().enumerate() {
            let inc = self.comp_scope[k] == scope && self.comp_live(c.after_raw);
            if inc {
                included.push(k);
            }
            self.vcomps.push(Comp {
                start: c.start,
                end: c.end,
                after_raw: c.after_raw,
                chars: c.chars,
                json_chars: c.json_chars,
                tokens: c.tokens,
                text: None,
                retained: false,
            });
        }
        // `_get_compaction_ranges` among the compactions this view holds.
        for &i in &included {
            let (s0, e0) = (self.vcomps[i].start, self.vcomps[i].end);
            let kept = s0.is_nan()
                || e0.is_nan()
                || !included.iter().any(|&j| {
                    let q = &self.vcomps[j];
                    j != i
                        && !q.start.is_nan()
                        && !q.end.is_nan()
                        && q.start <= s0
                        && q.end >= e0
                        && (q.start < s0 || q.end > e0 || j > i)
                });
            self.vcomps[i].retained = kept;
        }
        contents::coverage(&self.vcomps, &mut self.vcov);
    }

    /// The compactions and coverage of the current view (call `view` first).
    pub fn vc(&self) -> (&[Comp], &[(f64, f64)]) {
        if self.special {
            (&self.vcomps, &self.vcov)
        } else {
            (&self.comps, &self.cov)
        }
    }

    /// The request `viewer` (of isolation scope `scope`) would assemble now. A request is a
    /// function of (viewer, branch, raw events, summaries), so asking twice without an append
    /// in between (the pre-request estimate, then the request itself) reuses the first build.
    /// Sessions with scopes or rewinds always build (the key would need the scope, the spans
    /// and the task-input rule too).
    pub fn measure(&mut self, viewer: u32, branch: Option<u32>, scope: u32) -> Measure {
        let key = (viewer, branch, self.n, self.comps.len());
        if !self.special && self.last_key == Some(key) {
            return self.last_measure;
        }
        // Same asker and summaries as the last build, a few events later (typically the
        // user's next message): extend that build when nothing in between can move it.
        // (Ordinary sessions only: one view, one scope.)
        if let Some((v, b, n0, c)) = self.last_key.filter(|_| !self.special) {
            if (v, b, c) == (viewer, branch, self.comps.len()) && c > 0 {
                let ask = self.ask(viewer, branch, &self.cov);
                if let Some(m) =
                    contents::extend(&ask, self.base, n0, &mut self.sc, self.last_measure)
                {
                    #[cfg(debug_assertions)]
                    contents::assert_same_as_fresh(
                        &ask,
                        &self.comps,
                        &self.sc,
                        m,
                        Some(&self.ridx),
                    );
                    self.last_key = Some(key);
                    self.last_measure = m;
                    return m;
                }
            }
        }
        self.view(scope);
        self.sc.scope = scope;
        let m = if self.special {
            let ask = self.ask(viewer, branch, &self.vcov);
            contents::build(&ask, &self.vcomps, &mut self.sc)
        } else {
            let ask = self.ask(viewer, branch, &self.cov);
            contents::build_indexed(&ask, &self.comps, &mut self.sc, &self.ridx)
        };
        self.last_key = Some(key);
        self.last_measure = m;
        m
    }

    /// The request `viewer` on `branch` asks for over the raw events so far, with coverage
    /// `cov` (the view's, for sessions with scopes or rewinds).
    fn ask<'c>(&self, viewer: u32, branch: Option<u32>, cov: &'c [(f64, f64)]) -> contents::Ask<'c>
    where
        'a: 'c,
    {
        contents::Ask {
            s: self.s,
            n: self.n,
            cov,
            viewer,
            branch,
        }
    }

    /// Summarizer prompt chars for raw events `evs` after an optional seed of `seed_chars`.
    pub fn history_chars(&self, evs: &[u32], seed_chars: Option<u64>) -> u64 {
        let mut blocks = 0u64;
        let mut chars = 0u64;
        if let Some(c) = seed_chars {
            if c > 0 {
                blocks += 1;
                chars += 7 + c; // "model: " + text
            }
        }
        match (evs.first(), evs.last()) {
            // a contiguous span (the usual case): from the running sums
            (Some(&a), Some(&b)) if b >= a && (b - a + 1) as usize == evs.len() => {
                let (a, b) = (a as usize, b as usize + 1);
                blocks += self.base.summ_blocks_prefix[b] - self.base.summ_blocks_prefix[a];
                chars += self.base.summ_chars_prefix[b] - self.base.summ_chars_prefix[a];
            }
            _ => {
                for &e in evs {
                    if self.s.summ_lines[e as usize] > 0 {
                        blocks += 1;
                        chars += self.s.summ_chars[e as usize];
                    }
                }
            }
        }
        chars + blocks.saturating_sub(1)
    }

    /// Call the summarizer for `f` and, on a summary, append the compaction (the last steps
    /// of adk-compaction.md §4 and §5: "summary := summarizer(...)", "if summary: append it").
    /// Returns whether a compaction was appended.
    pub fn summarize(&mut self, f: &Firing<'_>) -> bool {
        let skip = skipped(f.evs);
        let req = self.summarize_request(f, &skip);
        let outcome = self.summ.summarize(&req);
        let (call, prompt, history) = (req.call, req.prompt_chars, req.history_chars);
        let first = f.evs.first().copied().unwrap_or(0);
        let last = f.evs.last().copied().unwrap_or(0);
        let mut row = SummarizerCall {
            call,
            phase: f.phase,
            trigger: f.trigger,
            invocation_index: f.inv,
            before_event_index: f.before,
            result: CallResult::Summary,
            summarizer_prompt_chars: prompt,
            summarizer_history_chars: history,
            input_tokens: 0,
            output_tokens: 0,
            summary_chars: 0,
            raw_events: first..last + 1,
            compaction: None,
        };
        let summary = match outcome {
            Outcome::Summary(sm) => sm,
            Outcome::Empty { input_tokens } => {
                row.result = CallResult::Empty;
                row.input_tokens = input_tokens;
                self.out.calls.push(row);
                return false;
            }
            Outcome::Failed { input_tokens } => {
                row.result = CallResult::Failed;
                row.input_tokens = input_tokens;
                self.out.calls.push(row);
                return false;
            }
        };
        let start = match f.seed {
            Some(k) => self.comps[k].start,
            None => self.s.timestamp[first as usize],
        };
        let end = self.s.timestamp[last as usize];
        row.input_tokens = summary.input_tokens;
        row.output_tokens = summary.tokens;
        row.summary_chars = summary.chars;
        row.compaction = Some(self.comps.len() as u32);
        self.record_compaction(f, &row, &summary, (start, end));
        self.out.calls.push(row);
        self.append_summary(
            Comp {
                start,
                end,
                after_raw: self.n as u32,
                chars: summary.chars,
                json_chars: summary.json_chars,
                tokens: self.s.in_prompt(summary.tokens),
                text: summary.text,
                retained: true,
            },
            f.scope,
        );
        true
    }

    /// The request ADK's summarizer gets for `f` (adk-compaction.md §9): the template's fixed
    /// chars around the formatted history, the seed's text first.
    fn summarize_request<'r>(&'r self, f: &Firing<'_>, skip: &'r [u32]) -> SummarizeRequest<'r> {
        let s = self.s;
        let evs = f.evs;
        let seed_chars = f.seed.map(|k| self.comps[k].chars);
        let history = self.history_chars(evs, seed_chars);
        let next = f.inv as usize + 1;
        SummarizeRequest {
            call: self.out.calls.len() as u32 + 1,
            phase: f.phase,
            trigger: f.trigger,
            events: evs.first().copied().unwrap_or(0)..evs.last().map_or(0, |l| l + 1),
            skip,
            seed: f.seed.map(|k| Seed {
                ordinal: k as u32 + 1,
                chars: self.comps[k].chars,
                start_timestamp: self.comps[k].start,
                text: self.comps[k].text.as_ref(),
            }),
            prompt_chars: TEMPLATE_FIXED_CHARS + history,
            history_chars: history,
            fired_at_s: s
                .block_start
                .get(next)
                .and_then(|&e| (e as usize).checked_sub(1))
                .map_or(0.0, |e| s.timestamp[e]),
            next_turn_at_s: (next < s.blocks()).then(|| s.timestamp[s.block_start[next] as usize]),
        }
    }

    /// Appends summary `c` (of isolation scope `scope`) and keeps what follows from the
    /// retained set current (adk-compaction.md §8, `_process_compaction_events`: the ranges
    /// it subsumes, the union coverage, the retained runs of the invocation rows).
    fn append_summary(&mut self, c: Comp, scope: u32) {
        let ordinal = self.comps.len() as u32 + 1;
        self.comps.push(c);
        self.comp_scope.push(scope);
        let mut dropped = std::mem::take(&mut self.dropped);
        if !self.ridx.append(&mut self.comps, &mut dropped) {
            contents::update_retained_after_append(&mut self.comps, &mut dropped);
        }
        #[cfg(debug_assertions)]
        {
            let mut full = self.comps.clone();
            contents::update_retained(&mut full);
            let flags = |c: &[Comp]| c.iter().map(|c| c.retained).collect::<Vec<_>>();
            assert_eq!(
                flags(&full),
                flags(&self.comps),
                "retained after append vs recomputed"
            );
        }
        for &k in &dropped {
            // A dropped summary's text can never seed again (containment never ends; with
            // scopes or rewinds a view can still retain it): free it, so rolling text
            // summaries hold O(one summary), not O(all of them).
            if !self.special {
                self.comps[k as usize].text = None;
            }
            if let Some(c) = self.out.compactions.get_mut(k as usize) {
                c.subsumed_by.get_or_insert(ordinal);
            }
        }
        self.dropped = dropped;
        contents::coverage_after_append(&self.comps, &mut self.cov);
        #[cfg(debug_assertions)]
        {
            let mut full = Vec::new();
            contents::coverage(&self.comps, &mut full);
            assert_eq!(full, self.cov, "coverage after append vs recomputed");
        }
        self.retained_at = None;
        contents::retained_runs_after_append(
            &mut self.retained_runs,
            &self.dropped,
            ordinal,
            self.comps[ordinal as usize - 1].retained,
        );
    }

    /// The compaction event's row for the summary `call` wrote over `(start, end)` (the
    /// oracle's fields, adk-compaction.md §12).
    fn record_compaction(
        &mut self,
        f: &Firing<'_>,
        call: &SummarizerCall,
        summary: &Summary,
        (start, end): (f64, f64),
    ) {
        let s = self.s;
        // The oracle counts the raw events of the compaction's scope, rewound ones included.
        let (count, first, last) = guards::raw_in_range(s, self.n, start, end, f.scope);
        let invs = guards::invocations_in_range(s, self.n, start, end, f.scope);
        self.out.compactions.push(types::Compaction {
            ordinal: self.comps.len() as u32 + 1,
            phase: f.phase,
            trigger: f.trigger,
            invocation_index: f.inv,
            before_event_index: f.before,
            start_timestamp: start,
            end_timestamp: end,
            summarizer_input_events: f.evs.len() as u32 + f.seed.is_some() as u32,
            seeded_with_previous_summary: f.seed.is_some(),
            seed: f.seed.map(|k| k as u32 + 1),
            raw_events_in_range: count,
            first_raw_event_index: first,
            last_raw_event_index: last,
            summarized_events: call.raw_events.clone(),
            invocations_in_range: invs,
            summarizer_call: call.call,
            summarizer_prompt_chars: call.summarizer_prompt_chars,
            summarizer_history_chars: call.summarizer_history_chars,
            summary_chars: summary.chars,
            summary_json_chars: summary.json_chars,
            summary_tokens: self.s.in_prompt(summary.tokens),
            summarizer_input_tokens: summary.input_tokens,
            retained: true,
            subsumed_by: None,
        });
    }
}

/// Events between the first and the last of `evs` (ascending) that ADK did not hand over.
fn skipped(evs: &[u32]) -> Vec<u32> {
    match (evs.first(), evs.last()) {
        (Some(&a), Some(&b)) if b >= a && (b - a + 1) as usize != evs.len() => {
            (a..=b).filter(|i| evs.binary_search(i).is_err()).collect()
        }
        _ => Vec::new(),
    }
}

/// What fires a summarizer call and over which events (adk-compaction.md §4, §5).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Firing<'e> {
    pub phase: Phase,
    pub trigger: Trigger,
    /// The invocation block it runs in.
    pub inv: u32,
    /// The model request it runs before (pre-request only).
    pub before: Option<u32>,
    /// The raw events handed over, ascending.
    pub evs: &'e [u32],
    /// The previous summary seeding it (token path), by index into the compactions.
    pub seed: Option<usize>,
    /// The isolation scope it runs in (0: unscoped).
    pub scope: u32,
}

impl<'e> Firing<'e> {
    /// The sliding window's call after invocation `inv` over `evs` (adk-compaction.md §4:
    /// unscoped, never seeded).
    pub fn sliding_window(inv: u32, evs: &'e [u32]) -> Firing<'e> {
        Firing {
            phase: Phase::PostInvocation,
            trigger: Trigger::SlidingWindow,
            inv,
            before: None,
            evs,
            seed: None,
            scope: 0,
        }
    }
}

/// How many events ahead the replay prefetches its per-event arrays.
const AHEAD: usize = 8;

/// From how many possible summarizer calls (model requests + invocations) a replay reserves
/// its per-call rows up front: rows of a thousand calls fit in the core's cache, where
/// growing them by doubling costs little.
const RESERVE_FROM: usize = 1024;

/// Replay one session under one setting: events appended one by one, the pre-request check
/// before each model request, post-invocation compaction after each invocation
/// (adk-compaction.md §3).
pub fn replay(s: &SessionSizes, cfg: &Config, summ: &dyn Summarizer) -> Replay {
    let mut st = State::new(s, cfg, summ);
    let mut base = Scratch::default();
    let mut prev = pre_request::Prev::default();
    let main = s.main_agent.unwrap_or(u32::MAX);
    for b in 0..s.blocks() {
        let (lo, hi) = (s.block_start[b] as usize, s.block_start[b + 1] as usize);
        let calls_before = st.out.calls.len();
        prefetch(&st.base.block_end, b + 2);
        for k in lo..hi {
            st.prefetch(k + AHEAD);
            if s.model_request[k] {
                pre_request::model_request(&mut st, &mut prev, b as u32, k);
            } else {
                if cfg.usage != UsageMode::Strip {
                    st.replayed.set(k, s.recorded_prompt[k]);
                }
            }
            st.n = k + 1;
            if s.rewind_to.get(k).is_some_and(|&t| t != u32::MAX) {
                st.rewound();
            }
            st.appended(k);
        }
        post_invocation::run(&mut st, &mut base, b, lo, hi, calls_before, main);
    }
    totals(&mut st.out, &st.comps);
    st.out
}

impl<'a> State<'a> {
    /// A replay of `s` before its first event, its rows reserved.
    fn new(s: &'a SessionSizes, cfg: &Config, summ: &'a dyn Summarizer) -> State<'a> {
        let base = s.baseline.get_or_init(|| contents::baseline(s));
        // at most one summarizer call before each model request and one after each invocation:
        // reserved for a long session, so a replay that compacts at every request does not copy
        // its rows again at every doubling, from memory (untouched capacity is not resident); a
        // short one allocates only if it compacts (most do not: a sweep of short sessions paid
        // four allocations per replay for nothing)
        let most_calls = base.request.len() + s.blocks();
        let most_calls = if most_calls >= RESERVE_FROM {
            most_calls
        } else {
            0
        };
        State {
            s,
            base,
            req_row: 0,
            last_key: None,
            last_measure: Measure::default(),
            cfg: *cfg,
            summ,
            n: 0,
            comps: Vec::with_capacity(most_calls),
            cov: Vec::new(),
            replayed: ReplayedCounts::default(),
            sc: Scratch::default(),
            gs: GuardScratch::default(),
            // one row per model request and per invocation: reserved, so long sessions do not
            // copy their rows again at every doubling
            out: Replay {
                requests: Vec::with_capacity(base.request.len()),
                invocations: Vec::with_capacity(s.blocks()),
                compactions: Vec::with_capacity(most_calls),
                calls: Vec::with_capacity(most_calls),
                ..Replay::default()
            },
            window: Vec::new(),
            suffix_at: None,
            scan: guards::PrefixScan::default(),
            special: s.has_scopes_or_rewinds(),
            comp_scope: Vec::with_capacity(most_calls),
            spans: Vec::new(),
            spans_version: 0,
            vkey: None,
            vcomps: Vec::new(),
            vcov: Vec::new(),
            inv_latest: Vec::new(),
            inv_first: Vec::new(),
            inv_last: Vec::new(),
            new_invs: Vec::new(),
            in_new: Vec::new(),
            new_basis: 0.0,
            retained_runs: Vec::new(),
            retained_at: None,
            ridx: contents::RetainedIndex::new(s),
            carried_at: None,
            carried_lead: None,
            dropped: Vec::new(),
            carried_buf: Vec::new(),
            hidden_at: None,
            hidden_cov: Vec::new(),
            hidden_none_present: false,
        }
    }
}

/// The replay's final flags and totals: which summaries stay retained, and what the calls
/// and compactions add up to.
fn totals(out: &mut Replay, comps: &[Comp]) {
    let mut retained = Vec::new();
    let t = &mut out.totals;
    t.summarizer_calls = out.calls.len() as u32;
    t.compactions = out.compactions.len() as u32;
    // one pass over the rows (a long replay's do not stay in cache from one pass to the next)
    for (c, comp) in out.compactions.iter_mut().zip(comps) {
        c.retained = comp.retained;
        if comp.retained {
            retained.push(c.ordinal);
        }
        match (c.phase, c.trigger) {
            (Phase::PreRequest, _) => t.pre_request_token_threshold += 1,
            (Phase::PostInvocation, Trigger::TokenThreshold) => {
                t.post_invocation_token_threshold += 1
            }
            (Phase::PostInvocation, Trigger::SlidingWindow) => {
                t.post_invocation_sliding_window += 1
            }
        }
    }
    for c in &out.calls {
        if c.result != CallResult::Summary {
            t.failed_or_empty_summaries += 1;
        }
        t.summarizer_prompt_chars += c.summarizer_prompt_chars;
        t.summary_chars += c.summary_chars;
        t.summarizer_input_tokens += c.input_tokens;
        t.summarizer_output_tokens += c.output_tokens;
    }
    t.final_retained_summaries = retained;
}

#[cfg(test)]
mod tests {
    use super::summarizer::{Deterministic, Policy};
    use super::*;

    fn long_session(invocations: usize, tool_rounds: bool) -> SessionSizes {
        let shape = crate::synth::LongShape {
            invocations,
            tool_rounds,
        };
        let mut text = Vec::new();
        crate::synth::write_long_session(5, shape, &mut text).expect("in memory");
        let text = String::from_utf8(text).expect("utf-8");
        let sessions = crate::transcript::adk::read("long.json", &text).expect("reads");
        SessionSizes::new(&sessions[0], None)
    }

    /// The sparse replayed counts read as the dense per-event list did: the newest count in
    /// `stop..n`, skipping events without one and events not yet appended.
    #[test]
    fn replayed_counts_read_like_one_slot_per_event() {
        let dense: Vec<Option<u64>> = vec![None, Some(7), None, None, Some(0), Some(9), None];
        let mut sparse = ReplayedCounts::default();
        for (k, &v) in dense.iter().enumerate() {
            sparse.set(k, v);
        }
        for n in 0..=dense.len() {
            for stop in 0..=n {
                let want: Vec<(usize, u64)> = (stop..n)
                    .rev()
                    .filter_map(|i| dense[i].map(|v| (i, v)))
                    .collect();
                let got: Vec<(usize, u64)> = sparse.newest(stop, n).collect();
                assert_eq!(got, want, "stop {stop}, n {n}");
            }
        }
    }

    /// Issue 13: every request of a long sliding session carries every summary so far, and
    /// each invocation's row listed them all: O(requests × summaries) numbers. Requests now
    /// share one prefix-extended list and rows keep runs, while every request and row still
    /// lists exactly the retained ordinals (debug builds also check the coverage, the
    /// retained flags, the new invocations and the hidden runs against full recomputations).
    #[test]
    fn a_long_sliding_replay_stores_each_carried_summary_once() {
        for tool_rounds in [false, true] {
            let s = long_session(300, tool_rounds);
            let cfg = Config {
                sliding: Some((5, 1)),
                pre_request: true,
                ..Config::default()
            };
            let summ = Deterministic::new(Policy::Fixed(400), vec![], vec![]);
            let r = replay(&s, &cfg, &summ);
            let c = r.compactions.len();
            assert_eq!(c, 60, "one summary per 5 invocations");
            assert!(
                r.compactions.iter().all(|x| x.retained),
                "overlapping, none contained"
            );
            let listed: usize = r.requests.iter().map(|q| r.carried(q).len()).sum();
            assert!(listed > 10 * c, "requests carry many summaries ({listed})");
            assert!(
                r.carried.len() <= c,
                "{} carried numbers stored for {c} summaries",
                r.carried.len()
            );
            for (q, i) in r.requests.iter().zip(0..) {
                // made after an earlier invocation (post-invocation summaries)
                let made = r
                    .compactions
                    .iter()
                    .filter(|x| x.invocation_index < q.invocation_index)
                    .count() as u32;
                let want: Vec<u32> = (1..=made).collect();
                assert_eq!(r.carried(q), &want[..], "request {i}");
            }
            // stored once per summary, not once per invocation
            assert!(
                r.retained.len() <= c,
                "{} retained runs stored for {c} summaries",
                r.retained.len()
            );
            for inv in &r.invocations {
                assert!(r.retained_runs(inv).len() <= 1, "one run");
                let n = r
                    .compactions
                    .iter()
                    .filter(|x| x.invocation_index <= inv.index)
                    .count() as u32;
                assert_eq!(r.retained_ordinals(inv), (1..=n).collect::<Vec<_>>());
            }
        }
    }
}
