//! Every column of metrics.md for one session under one setting, from an engine [`Replay`].
//!
//! Conventions (docs/pricing.md):
//! - An agent request's output tokens are the recorded `output_tokens`, else the model
//!   event's own size in the run tokenizer; they are the same with and without compaction.
//! - The non-history part of a prompt (`prompt_tokens - history_tokens`: system
//!   instruction, tools, and with recorded sizes whatever else the provider counted) is a
//!   stable cached prefix; the history part shares `shared_prefix_tokens` with the previous
//!   request (the engine computes where a compaction breaks it). The baseline's history only
//!   grows, so its shared prefix is the whole previous prompt.
//! - Summarizer calls are priced at the summarizer model's rates with nothing cached (ADK's
//!   summarizer prompt is new text each time), the size tier decided per call. `terse` and
//!   `command` cost nothing and take no time; the oracle's deterministic summaries stand in
//!   for the agent model's.
//! - Percentiles interpolate linearly between closest ranks.

use super::caching::{price_single, CacheMode, ChargeTotals, PricedRequest, Pricer};
use super::client::{summary_discarded, ClientMode};
use super::latency::{LatencyParams, LatencyTable};
use super::metrics::SessionMetrics;
use super::pricing::{ModelPrice, PriceTable, PricingError, ProviderCache};
use crate::detail::facts::{tally, tally_found, tally_held, FactTally};
use crate::detail::references::{self as refs, Basis, Retention, SessionReferences};
use crate::detail::text_facts::Searched;
use crate::engine::summarizer::SummaryText;
use crate::engine::summarizer::{filler_text, Policy};
use crate::engine::{CallResult, Phase, Replay, Summarizer, SummarizerCall, Summary};
use crate::stats::percentile_of;
use crate::summarize::live::CallMeasure;
use crate::summarize::{Billed, CallTexts, Harness, SummarizerSpec};
use crate::tokens::sizes::SessionSizes;
use crate::transcript::Session;
use std::collections::{BTreeMap, BTreeSet};

/// The agent model `recorded` stands for when a transcript names none (ADK exports often
/// omit `model_version`): ADK's usual default, so such sessions still get prices.
/// docs/sweeps.md "Axes" says so.
pub const FALLBACK_AGENT_MODEL: &str = "gemini-2.5-flash";

/// Prices, latency parameters and the caching switch of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct CostModel {
    pub prices: PriceTable,
    pub latency: LatencyTable,
    pub cache: CacheMode,
}

impl Default for CostModel {
    fn default() -> Self {
        CostModel {
            prices: PriceTable::builtin(),
            latency: LatencyTable::builtin(),
            cache: CacheMode::On,
        }
    }
}

/// A `--pricing` or `--latency` file that does not apply (one line naming the file).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CostFileError {
    #[error(transparent)]
    Pricing(#[from] PricingError),
    #[error(transparent)]
    Latency(#[from] super::latency::LatencyFileError),
}

/// A resolved model: its table name and price entry, or `None` when unknown/unpriced.
#[derive(Debug, Clone)]
struct Resolved<'a> {
    price: Option<&'a ModelPrice>,
    rules: ProviderCache,
    latency: LatencyParams,
}

impl CostModel {
    /// Check a model name the user typed (`--model`, `model:NAME`): an unknown name is an
    /// error listing near names. Returns the table's name.
    pub fn check_model(&self, name: &str) -> Result<String, PricingError> {
        self.prices.lookup(name).map(|(k, _)| k.to_string())
    }

    fn resolve(&self, name: Option<&str>) -> Resolved<'_> {
        let found = name.and_then(|n| self.prices.find(n));
        let price = found.map(|(_, p)| p).filter(|p| p.is_priced());
        Resolved {
            price,
            rules: found.map_or_else(ProviderCache::fallback, |(_, p)| self.prices.cache_rules(p)),
            latency: self.latency.for_model(name.unwrap_or("default")),
        }
    }

    /// Prices and latency with the user's files applied (`(file name, text)` each), as
    /// `--pricing` / `--latency` do; errors are one line naming the file.
    pub fn from_texts(
        pricing: Option<(&str, &str)>,
        latency: Option<(&str, &str)>,
        cache: CacheMode,
    ) -> Result<CostModel, CostFileError> {
        let mut m = CostModel {
            cache,
            ..CostModel::default()
        };
        if let Some((file, text)) = pricing {
            m.prices.apply_file(file, text)?;
        }
        if let Some((file, text)) = latency {
            m.latency.apply_file(file, text)?;
        }
        Ok(m)
    }

    /// True when the table has the model (by name, alias or dated snapshot).
    pub fn knows_model(&self, name: &str) -> bool {
        self.prices.find(name).is_some()
    }

    /// The price entry of a model, when the table has one with rates.
    pub fn price(&self, name: &str) -> Option<&ModelPrice> {
        self.prices
            .find(name)
            .map(|(_, p)| p)
            .filter(|p| p.is_priced())
    }

    /// Context window of a model, if known.
    pub fn context_window(&self, name: Option<&str>) -> Option<u64> {
        name.and_then(|n| self.prices.find(n))
            .and_then(|(_, p)| p.context_window)
    }

    /// Seconds one summarizer call takes under `spec` (0 for the free summarizers).
    pub fn summarizer_seconds(
        &self,
        spec: &SummarizerSpec,
        agent_model: Option<&str>,
        input: u64,
        output: u64,
    ) -> f64 {
        match spec.billed_model(agent_model) {
            Billed::Free => 0.0,
            Billed::Model(m) => self
                .latency
                .for_model(m.unwrap_or("default"))
                .seconds(input, output),
        }
    }
}

/// The setting-level choices compute_metrics needs besides the replay.
#[derive(Debug, Clone, Copy)]
pub struct MetricsSetting<'a> {
    /// The agent's model (`--model`, else the session's recorded model).
    pub agent_model: Option<&'a str>,
    pub summarizer: &'a SummarizerSpec,
    pub client: ClientMode,
    /// Tokens of each event's attachments ([`attachment_tokens`]); empty when none.
    pub attachment_tokens: &'a [u64],
    /// Each event's facts when found beforehand ([`crate::detail::facts::event_facts`]); `None`:
    /// found here, per summary.
    pub event_facts: Option<&'a crate::detail::facts::EventFacts>,
    /// The session's references when found beforehand ([`SessionReferences::new`]); `None`:
    /// found here.
    pub references: Option<&'a SessionReferences>,
    /// The `artifacts` alternative (docs/alternatives.md): each attachment is priced in the
    /// first request that carries its message only, as if a tool had loaded it once.
    pub attachments_once: bool,
    /// The summarizer family a modelled summary is estimated with
    /// (`PolicySpec::summary_family`: a claude-code or openhands policy's
    /// summaries rest on that family's recorded ones); `None`: the pooled fit.
    pub summary_family: Option<&'a str>,
}

/// Per request, under the `artifacts` alternative: the attachment tokens it no longer sends
/// (every attachment visible verbatim in it, except in the first request that carries it),
/// and, where an attachment sent by the previous request is gone, the longest prefix it can
/// still share with that request (the prompt up to the first such attachment's event).
fn attachments_sent_once(
    replay: &Replay,
    sizes: &SessionSizes,
    attachment_tokens: &[u64],
) -> Vec<(u64, Option<u64>)> {
    let files: Vec<u32> = attachment_tokens
        .iter()
        .enumerate()
        .filter(|(_, &t)| t > 0)
        .map(|(e, _)| e as u32)
        .collect();
    let mut first: Vec<Option<usize>> = vec![None; files.len()];
    let mut out = Vec::with_capacity(replay.requests.len());
    let mut prev_sent: Vec<bool> = vec![false; files.len()];
    for (j, r) in replay.requests.iter().enumerate() {
        let hidden = replay.hidden(r);
        let visible = |e: u32| e < r.event_index && !hidden.iter().any(|&(a, b)| a <= e && e <= b);
        let mut drop = 0u64;
        let mut broken_at: Option<u32> = None;
        for (k, &e) in files.iter().enumerate() {
            let sent = visible(e) && first[k].is_none_or(|f| f == j);
            if visible(e) {
                first[k].get_or_insert(j);
                if !sent {
                    drop += attachment_tokens[e as usize];
                }
            }
            if prev_sent[k] && !sent {
                broken_at = Some(broken_at.map_or(e, |b: u32| b.min(e)));
            }
            prev_sent[k] = sent;
        }
        let cap = broken_at.map(|e| {
            let before: u64 = (0..e)
                .filter(|&i| visible(i))
                .map(|i| sizes.tokens.get(i as usize).copied().unwrap_or(0) as u64)
                .sum();
            r.prompt_tokens.saturating_sub(r.history_tokens) + r.summary_tokens + before
        });
        out.push((drop, cap));
    }
    out
}

/// Per event, the tokens of its attached files (the guide: a file a user message names
/// rides on every request while that message is visible verbatim).
pub fn attachment_tokens(session: &Session, tok: crate::tokens::Tokenizer) -> Vec<u64> {
    session
        .events
        .iter()
        .map(|e| {
            let parts: Vec<crate::transcript::Part> = e
                .parts
                .iter()
                .filter(|p| matches!(p, crate::transcript::Part::Attachment { .. }))
                .cloned()
                .collect();
            if parts.is_empty() {
                0
            } else {
                crate::tokens::count::count_parts(tok, &parts) as u64
            }
        })
        .collect()
}

/// What the summarizer harness recorded during the replay.
#[derive(Debug, Clone, Default)]
pub struct ReplayLog {
    /// Summary texts written, by call number (terse / command / echo).
    pub texts: CallTexts,
    /// Summaries produced but discarded by the `streams` race, by call number.
    pub discarded: BTreeMap<u32, Summary>,
    /// For a measured (`live:`) summarizer, what each call really used (a call missing here
    /// used nothing); `None`: calls are modelled from token counts.
    pub measured: Option<BTreeMap<u32, CallMeasure>>,
}

/// Replay under a client mode. `waits`: one replay. `streams`: replay, find the first
/// post-invocation summary still being written when the next turn starts (recorded times +
/// latency model), mark that call discarded and replay again, until no call loses the race.
/// The calls before the first discarded one are identical between passes (replays are
/// deterministic), so this costs one replay per discarded summary plus one, and keeps the
/// engine free of clocks.
pub fn replay_with_client(
    inner: &dyn Summarizer,
    model: &CostModel,
    setting: &MetricsSetting<'_>,
    run: &dyn Fn(&dyn Summarizer) -> Replay,
) -> (Replay, ReplayLog) {
    replay_measured(inner, &|| None, &|_| None, model, setting, run)
}

/// [`replay_with_client`] for a summarizer whose calls are measured: `measured` gives what
/// each call of the pass just run used (`live:`: the `streams` race then uses the measured
/// latency, and the log carries the measures); `measured_seconds` the latency of one call
/// just made.
///
/// In `streams` a post-invocation summary that the next turn overtakes is discarded as its
/// call returns: everything before it is as it was, so one replay decides every race in
/// order. (It replayed once per discarded summary before, which grew with the session.)
/// Debug builds compare with that replay-per-discard fixpoint.
pub fn replay_measured(
    inner: &dyn Summarizer,
    measured: &dyn Fn() -> Option<BTreeMap<u32, CallMeasure>>,
    measured_seconds: &(dyn Fn(u32) -> Option<f64> + Sync),
    model: &CostModel,
    setting: &MetricsSetting<'_>,
    run: &dyn Fn(&dyn Summarizer) -> Replay,
) -> (Replay, ReplayLog) {
    // the summarizer model's latency, looked up once (`summarizer_seconds` per call), and
    // only when a race can be lost
    let streams = setting.client == ClientMode::Streams;
    let latency = match setting.summarizer.billed_model(setting.agent_model) {
        Billed::Model(m) if streams => Some(model.latency.for_model(m.unwrap_or("default"))),
        _ => None,
    };
    let lost = |req: &crate::engine::SummarizeRequest<'_>, s: &Summary| {
        streams && req.phase == Phase::PostInvocation && {
            let secs = measured_seconds(req.call)
                .unwrap_or_else(|| latency.map_or(0.0, |l| l.seconds(s.input_tokens, s.tokens)));
            summary_discarded(setting.client, req.fired_at_s, secs, req.next_turn_at_s)
        }
    };
    let harness = Harness::racing(inner, &lost);
    let replay = run(&harness);
    let measures = measured();
    let log = ReplayLog {
        texts: harness.texts(),
        discarded: harness.discarded(),
        measured: measures,
    };
    #[cfg(debug_assertions)]
    if setting.client == ClientMode::Streams && log.measured.is_none() {
        let (fix, fix_log) = replay_per_discard(inner, model, setting, run);
        assert_eq!(
            format!("{:?}{:?}", fix.calls, fix.compactions),
            format!("{:?}{:?}", replay.calls, replay.compactions),
            "one-pass race vs replay per discard"
        );
        assert_eq!(
            fix_log.discarded.keys().collect::<Vec<_>>(),
            log.discarded.keys().collect::<Vec<_>>()
        );
    }
    (replay, log)
}

/// The `streams` race as a fixpoint: replay, discard the first summary the next turn
/// overtook, replay again, until none is (debug builds check [`replay_measured`] with it).
#[cfg(debug_assertions)]
fn replay_per_discard(
    inner: &dyn Summarizer,
    model: &CostModel,
    setting: &MetricsSetting<'_>,
    run: &dyn Fn(&dyn Summarizer) -> Replay,
) -> (Replay, ReplayLog) {
    let mut discard = BTreeSet::new();
    let mut passes = 0usize;
    loop {
        passes += 1;
        let harness = Harness::new(inner, discard.clone());
        let replay = run(&harness);
        let loser = replay.calls.iter().find(|c| {
            c.phase == Phase::PostInvocation
                && c.result == CallResult::Summary
                && !discard.contains(&c.call)
                && lost_race(&replay, c, model, setting)
        });
        let limit = replay.requests.len() + replay.invocations.len() + 2;
        match loser.filter(|_| passes < limit) {
            Some(c) => {
                discard.insert(c.call);
            }
            None => {
                let log = ReplayLog {
                    texts: harness.texts(),
                    discarded: harness.discarded(),
                    measured: None,
                };
                return (replay, log);
            }
        }
    }
}

#[cfg(debug_assertions)]
fn lost_race(
    replay: &Replay,
    c: &SummarizerCall,
    model: &CostModel,
    setting: &MetricsSetting<'_>,
) -> bool {
    let Some(inv) = replay.invocations.get(c.invocation_index as usize) else {
        return false;
    };
    let next = replay
        .invocations
        .get(c.invocation_index as usize + 1)
        .map(|n| n.first_timestamp);
    let secs = model.summarizer_seconds(
        setting.summarizer,
        setting.agent_model,
        c.input_tokens,
        c.output_tokens,
    );
    summary_discarded(setting.client, inv.last_timestamp, secs, next)
}

/// Output tokens of the model request at `event`: recorded, else the event's own size.
fn output_tokens(sizes: &SessionSizes, event: usize) -> u64 {
    match sizes.usage.get(event).copied().flatten() {
        Some(u) if u.output_tokens > 0 => u.output_tokens,
        _ => sizes.tokens.get(event).copied().unwrap_or(0) as u64,
    }
}

/// Per-call summarizer numbers after the client race: (input, output) tokens actually spent
/// (measured ones for a `live:` summarizer).
fn call_tokens(c: &SummarizerCall, log: &ReplayLog) -> (u64, u64) {
    if let Some(m) = &log.measured {
        return m
            .get(&c.call)
            .map_or((0, 0), |m| (m.input_tokens, m.output_tokens));
    }
    match log.discarded.get(&c.call) {
        Some(s) => (s.input_tokens.max(c.input_tokens), s.tokens),
        None => (c.input_tokens, c.output_tokens),
    }
}

fn stats(values: &[f64]) -> (f64, f64, f64, f64) {
    // fold from +0.0: `Sum` for f64 starts at -0.0, which would print as "-0.00 s".
    let sum = values.iter().fold(0.0, |a, b| a + b);
    let max = values.iter().copied().fold(0.0, f64::max);
    (
        sum,
        percentile_of(values, 0.5),
        percentile_of(values, 0.95),
        max,
    )
}

/// A sequence of requests' charges, added up as they are priced (unpriced without a price).
struct Priced<'a> {
    pricer: Option<Pricer<'a>>,
    totals: ChargeTotals,
}

impl<'a> Priced<'a> {
    fn new(pricer: Option<Pricer<'a>>) -> Priced<'a> {
        let totals = match pricer {
            Some(_) => ChargeTotals::empty(),
            None => ChargeTotals::unpriced(),
        };
        Priced { pricer, totals }
    }

    fn add(&mut self, r: PricedRequest) {
        if let Some(p) = &mut self.pricer {
            self.totals.add(&p.charge(r));
        }
    }
}

/// Every metrics.md column for one replay. The baseline (the same session with no
/// compaction) is read from the replay's own `baseline_*` columns.
pub fn compute_metrics(
    session: &Session,
    sizes: &SessionSizes,
    replay: &Replay,
    model: &CostModel,
    setting: &MetricsSetting<'_>,
    log: &ReplayLog,
) -> SessionMetrics {
    let mut m = SessionMetrics {
        model_requests: replay.requests.len() as u64,
        ..Default::default()
    };
    let agent = model.resolve(setting.agent_model);
    let requests = price_requests(replay, sizes, model, &agent, setting, &mut m);

    // Tokens.
    m.summarizer_calls = replay.calls.len() as u64;
    m.summaries_discarded = log.discarded.len() as u64;
    m.tokens_saved_gross = m.baseline_prompt_tokens as i64 - m.prompt_tokens as i64;

    let (own, base) = (&requests.own, &requests.base);
    let (agent_usd, base_usd) = (own.usd, base.usd);
    m.cache_read_tokens = own.cached_read_tokens;
    m.baseline_cache_read_tokens = base.cached_read_tokens;
    m.requests_over_tier = own.over_tier;
    m.baseline_requests_over_tier = base.over_tier;

    let summ_usd = summarizer_calls(replay, model, setting, log, &mut m);
    m.tokens_saved_net =
        m.tokens_saved_gross - m.summarizer_input_tokens as i64 - m.summarizer_output_tokens as i64;
    m.summarizer_cost_usd = summ_usd.unwrap_or(0.0);
    m.cost_complete = agent_usd.is_some() && base_usd.is_some() && summ_usd.is_some();
    m.cost_usd = agent_usd.unwrap_or(0.0) + m.summarizer_cost_usd;
    m.baseline_cost_usd = base_usd.unwrap_or(0.0);
    m.cost_saved_usd = m.baseline_cost_usd - m.cost_usd;
    m.prefill_time_saved_s = agent.latency.prefill_seconds(m.tokens_saved_gross as f64);

    detail_hidden(replay, sizes, setting, &requests, &mut m);
    detail_in_texts(session, replay, model, setting, log, &mut m);
    m.seams = seams(replay);
    m
}

/// What one pass over the agent requests adds up besides the prompt columns it fills.
struct RequestSums {
    /// The requests' charges as replayed, and the baseline's.
    own: ChargeTotals,
    base: ChargeTotals,
    /// History tokens hidden from the requests, and the baseline's history they read.
    hidden: u64,
    history: u64,
    /// Attachment tokens the `artifacts` alternative no longer sends.
    unsent: u64,
}

/// Price the agent requests, with caching and tiers, and the baseline's. Until the first
/// compaction the prompts are the baseline's, so they share the baseline's rule (the whole
/// previous prompt is a prefix): a setting that never fires then costs exactly the baseline.
/// From the first summary on, the engine says how much of the history survived as a prefix.
/// One pass over the requests prices them and the baseline's and gathers every sum, with no
/// list of rows or charges in between: a request is three cache lines, and a long session's
/// requests do not stay in cache from one pass to the next.
fn price_requests(
    replay: &Replay,
    sizes: &SessionSizes,
    model: &CostModel,
    agent: &Resolved<'_>,
    setting: &MetricsSetting<'_>,
    m: &mut SessionMetrics,
) -> RequestSums {
    let time = |event: u32| sizes.timestamp.get(event as usize).copied().unwrap_or(0.0);
    let share_1h = |event: u32| sizes.write_1h_share(event);
    let pricer = || {
        agent
            .price
            .map(|p| Pricer::new(p, &agent.rules, model.cache))
    };
    let mut own = Priced::new(pricer());
    let mut base = Priced::new(pricer());
    let (mut prev_prompt, mut prev_base) = (0, 0);
    let mut compacted = false;
    let (mut hidden, mut history) = (0u64, 0u64);
    let once = setting
        .attachments_once
        .then(|| attachments_sent_once(replay, sizes, setting.attachment_tokens));
    let mut unsent = 0u64;
    for (j, r) in replay.requests.iter().enumerate() {
        compacted |= r.summary_tokens > 0 || r.hidden_tokens > 0 || !r.carried.is_empty();
        let (drop, cap) = once
            .as_ref()
            .and_then(|o| o.get(j).copied())
            .unwrap_or((0, None));
        unsent += drop;
        let prompt = r.prompt_tokens.saturating_sub(drop);
        let shared = if compacted {
            let stable = r.prompt_tokens.saturating_sub(r.history_tokens);
            (stable + r.shared_prefix_tokens).min(prompt)
        } else {
            prev_prompt.min(prompt)
        };
        let shared = cap.map_or(shared, |c| shared.min(c));
        prev_prompt = prompt;
        m.prompt_tokens += prompt;
        hidden += r.hidden_tokens;
        history += r.baseline_history_tokens;
        let row = PricedRequest {
            time_s: time(r.event_index),
            prompt_tokens: prompt,
            shared_prefix_tokens: shared,
            output_tokens: output_tokens(sizes, r.event_index as usize),
            write_1h_share: share_1h(r.event_index),
        };
        own.add(row);
        // the baseline's prompt is a prefix of its next one
        let p = r.baseline_prompt_tokens;
        m.baseline_prompt_tokens += p;
        base.add(PricedRequest {
            prompt_tokens: p,
            shared_prefix_tokens: prev_base.min(p),
            ..row
        });
        prev_base = p;
    }
    RequestSums {
        own: own.totals,
        base: base.totals,
        hidden,
        history,
        unsent,
    }
}

/// The summarizer calls' tokens, context overflows and latency columns, in one pass over
/// them; returns their cost (`None` when the billed model has no price).
fn summarizer_calls(
    replay: &Replay,
    model: &CostModel,
    setting: &MetricsSetting<'_>,
    log: &ReplayLog,
    m: &mut SessionMetrics,
) -> Option<f64> {
    let billed = setting.summarizer.billed_model(setting.agent_model);
    let (summ_price, summ_window, summ_latency) = match billed {
        Billed::Free => (None, None, None),
        Billed::Model(name) => {
            let r = model.resolve(name);
            (r.price, model.context_window(name), Some(r.latency))
        }
    };
    let mut summ_usd = Some(0.0);
    let mut post: BTreeMap<u32, f64> = BTreeMap::new();
    let mut pre: BTreeMap<(u32, u32), f64> = BTreeMap::new();
    for c in &replay.calls {
        let (i, o) = call_tokens(c, log);
        m.summarizer_input_tokens += i;
        m.summarizer_output_tokens += o;
        // A prompt over the window is rejected by the provider: no charge, no time modelled.
        // A measured call was accepted (or failed, and used nothing).
        let overflow = log.measured.is_none()
            && matches!(billed, Billed::Model(_))
            && summ_window.is_some_and(|w| i > w);
        if overflow {
            m.summarizer_context_overflows += 1;
        } else if let Billed::Model(_) = billed {
            summ_usd = match (summ_usd, summ_price) {
                (Some(acc), Some(p)) => price_single(i, o, p).map(|u| acc + u),
                _ => None,
            };
        }
        let secs = match &log.measured {
            Some(m) => m.get(&c.call).map_or(0.0, |m| m.seconds),
            None if overflow => 0.0,
            None => summ_latency.map_or(0.0, |l| l.seconds(i, o)),
        };
        match c.phase {
            Phase::PostInvocation => *post.entry(c.invocation_index).or_default() += secs,
            Phase::PreRequest => {
                *pre.entry((c.invocation_index, c.before_event_index.unwrap_or(u32::MAX)))
                    .or_default() += secs
            }
        }
    }
    let post: Vec<f64> = post.into_values().collect();
    let pre: Vec<f64> = pre.into_values().collect();
    (
        m.end_of_run_latency_s,
        m.end_of_run_latency_p50_s,
        m.end_of_run_latency_p95_s,
        m.end_of_run_latency_max_s,
    ) = stats(&post);
    (
        m.pre_request_latency_s,
        m.pre_request_latency_p50_s,
        m.pre_request_latency_p95_s,
        m.pre_request_latency_max_s,
    ) = stats(&pre);
    summ_usd
}

/// The detail columns read from what the requests hid: `detail_lost`, the attachments
/// still sent, `critical_hidden`.
fn detail_hidden(
    replay: &Replay,
    sizes: &SessionSizes,
    setting: &MetricsSetting<'_>,
    requests: &RequestSums,
    m: &mut SessionMetrics,
) {
    m.detail_lost = if requests.history == 0 {
        0.0
    } else {
        requests.hidden as f64 / requests.history as f64
    };
    if setting.attachment_tokens.iter().any(|&t| t > 0) {
        let with = attachment_tokens_sent(replay, setting.attachment_tokens);
        debug_assert_eq!(
            with,
            attachment_tokens_sent_naive(replay, setting.attachment_tokens)
        );
        let with = with.saturating_sub(requests.unsent);
        m.attachment_prompt_tokens = with;
        m.attachment_share = if m.prompt_tokens == 0 {
            0.0
        } else {
            with as f64 / m.prompt_tokens as f64
        };
    }
    m.critical_hidden = critical_hidden(replay, &sizes.critical);
    debug_assert_eq!(
        m.critical_hidden,
        critical_hidden_naive(replay, &sizes.critical)
    );
}

/// The detail columns read from the summary texts: `facts_dropped` and the references.
/// The texts by ordinal are searched once for every fact of both tallies (texts written
/// around their seeds, `terse` under a token trigger, add up to the square of the history:
/// those where they differ from their seeds).
fn detail_in_texts(
    session: &Session,
    replay: &Replay,
    model: &CostModel,
    setting: &MetricsSetting<'_>,
    log: &ReplayLog,
    m: &mut SessionMetrics,
) {
    let texts: Vec<Option<&SummaryText>> = replay
        .compactions
        .iter()
        .map(|c| log.texts.get(&c.summarizer_call))
        .collect();
    let searched = match (setting.event_facts, setting.references) {
        (Some(f), Some(r)) => r
            .text_automaton(f)
            .map(|ac| (Searched::new(&texts, ac), f.facts().len() as u32)),
        _ => None,
    };
    if setting.summarizer.writes_real_text() {
        let searched = searched.as_ref().map(|(h, _)| h);
        m.facts_dropped = Some(facts_dropped(session, replay, setting, log, searched).share());
    }
    references(
        session,
        replay,
        setting,
        &texts,
        searched.as_ref().map(|(h, offset)| (h, *offset)),
        model
            .latency
            .retention_for(setting.summary_family)
            .as_deref(),
        m,
    );
}

/// Consecutive compactions whose spans do not overlap in time.
fn seams(replay: &Replay) -> u64 {
    let mut seams = 0;
    for w in replay.compactions.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        let overlap = b.start_timestamp <= a.end_timestamp && a.start_timestamp <= b.end_timestamp;
        if !overlap {
            seams += 1;
        }
    }
    seams
}

/// `facts_dropped` over the summaries written; `searched`: the facts each compaction's text
/// holds (event fact f is pattern f), each text searched once; else each text is searched
/// whole, once per fact of its span. Debug builds compare the two.
fn facts_dropped(
    session: &Session,
    replay: &Replay,
    setting: &MetricsSetting<'_>,
    log: &ReplayLog,
    searched: Option<&Searched>,
) -> FactTally {
    let calls: Vec<_> = replay
        .calls
        .iter()
        .filter(|c| c.result == CallResult::Summary)
        .collect();
    let range = |c: &SummarizerCall| c.raw_events.start as usize..c.raw_events.end as usize;
    let whole = || {
        let mut t = FactTally::default();
        for c in &calls {
            let text = log.texts.get(&c.call).map(SummaryText::whole);
            let text = text.as_deref().unwrap_or("");
            t.add(match setting.event_facts {
                Some(f) => tally_found(f, range(c), text),
                None => tally(session.events.get(range(c)).unwrap_or(&[]), text),
            });
        }
        t
    };
    let (Some(facts), Some(searched)) = (setting.event_facts, searched) else {
        return whole();
    };
    let mut t = FactTally::default();
    for c in &calls {
        // a summary is a compaction, and its text the compaction's (else it is searched here)
        let at = c.compaction.map(|k| k as usize).filter(|&k| {
            replay
                .compactions
                .get(k)
                .is_some_and(|x| x.summarizer_call == c.call)
        });
        t.add(match at {
            Some(k) => tally_held(facts, range(c), |f| searched.holds(k, f)),
            None => {
                let text = log.texts.get(&c.call).map(SummaryText::whole);
                tally_found(facts, range(c), text.as_deref().unwrap_or(""))
            }
        });
    }
    debug_assert_eq!(
        t,
        whole(),
        "facts_dropped from the texts searched once vs each text per fact"
    );
    t
}

/// The `references*` columns (metrics.md "References").
fn references(
    session: &Session,
    replay: &Replay,
    setting: &MetricsSetting<'_>,
    written: &[Option<&SummaryText>],
    searched: Option<(&Searched, u32)>,
    retention: Option<&Retention>,
    m: &mut SessionMetrics,
) {
    let owned;
    let found = match setting.references {
        Some(r) => r,
        None => {
            let facts = crate::detail::facts::event_facts(session);
            owned = SessionReferences::new(session, &facts, &[]);
            &owned
        }
    };
    // The summary texts, by compaction ordinal, when the summarizer writes text: terse,
    // command and echo texts as written (`written`); fixed and ratio write the oracle's
    // filler.
    let fillers: Vec<SummaryText>;
    let filler_texts: Vec<Option<&SummaryText>>;
    let no_summary = replay.compactions.is_empty() && !replay.hidden.is_empty();
    let (texts, searched) = match setting.summarizer {
        // Detail hidden with no summary written (a policy that clears tool results,
        // docs/policies.md): every reference at risk is broken, measured.
        _ if no_summary => (Some(&[][..]), None),
        SummarizerSpec::Agent | SummarizerSpec::Model(_) => (None, None),
        SummarizerSpec::Deterministic(Policy::Fixed(_) | Policy::Ratio(_)) => {
            fillers = replay
                .compactions
                .iter()
                .map(|c| SummaryText::flat(filler_text(c.summary_chars, c.summarizer_call)))
                .collect();
            filler_texts = fillers.iter().map(Some).collect();
            (Some(&filler_texts[..]), None)
        }
        // `searched` was found in these texts
        _ => (Some(written), searched),
    };
    let t = refs::tally(found, replay, texts, searched);
    m.references = t.references;
    m.references_at_risk = t.at_risk_total();
    if m.references_at_risk == 0 {
        m.references_broken_basis = Basis::None;
    } else if texts.is_some() {
        let b = t.broken_total();
        m.references_broken = b as f64;
        m.references_broken_low = b;
        m.references_broken_high = b;
        m.references_broken_basis = Basis::Measured;
    } else {
        m.references_broken = refs::estimate(&t, retention);
        m.references_broken_low = t.unseen_total();
        m.references_broken_high = m.references_at_risk;
        m.references_broken_basis = Basis::Estimated;
    }
    m.references_broken_share = if m.references == 0 {
        0.0
    } else {
        m.references_broken / m.references as f64
    };
}

/// The metrics block `replay` prints under its timeline. Numbers carry units; the
/// assumptions (price date, caching, client mode) are in the header.
pub fn render_metrics(
    m: &SessionMetrics,
    model: &CostModel,
    setting: &MetricsSetting<'_>,
) -> String {
    use crate::transcript::util::escape_control as term;
    use std::fmt::Write;
    let mut s = String::new();
    // Model names come from transcripts: escaped, so none can forge a line of the block.
    let agent = term(setting.agent_model.unwrap_or("unknown"));
    let _ = writeln!(
        s,
        "metrics (agent model {agent}; summarizer {}; client {}; prices of {}, USD, prompt caching {})",
        term(&setting.summarizer.name()),
        setting.client,
        term(if model.prices.pricing_date.is_empty() { "unknown date" } else { &model.prices.pricing_date }),
        if model.cache == CacheMode::On { "on" } else { "off" },
    );
    let rows = [
        token_rows(m),
        cost_and_latency_rows(m),
        detail_rows(m, model, setting.summary_family),
        assumption_rows(model, setting),
    ];
    for (k, v) in rows.iter().flatten() {
        let _ = writeln!(s, "  {k:<24} {}", term(v));
    }
    s
}

/// A labelled line of the metrics block.
type MetricRow = (&'static str, String);

/// Requests, summarizer calls and the tokens they spend and save.
fn token_rows(m: &SessionMetrics) -> Vec<MetricRow> {
    vec![
        ("model requests", m.model_requests.to_string()),
        (
            "summarizer calls",
            format!(
                "{} ({} discarded, {} over the summarizer's context window)",
                m.summarizer_calls, m.summaries_discarded, m.summarizer_context_overflows
            ),
        ),
        (
            "summarizer tokens",
            format!(
                "{} in, {} out",
                m.summarizer_input_tokens, m.summarizer_output_tokens
            ),
        ),
        (
            "prompt tokens",
            format!(
                "{} (baseline {})",
                m.prompt_tokens, m.baseline_prompt_tokens
            ),
        ),
        (
            "tokens saved",
            format!(
                "{} gross, {} net of summarizer tokens",
                m.tokens_saved_gross, m.tokens_saved_net
            ),
        ),
        (
            "cached prompt tokens",
            format!(
                "{} (baseline {}); requests over a price tier: {} (baseline {})",
                m.cache_read_tokens,
                m.baseline_cache_read_tokens,
                m.requests_over_tier,
                m.baseline_requests_over_tier
            ),
        ),
    ]
}

/// What the setting costs and the time it adds or saves.
fn cost_and_latency_rows(m: &SessionMetrics) -> Vec<MetricRow> {
    let usd = |x: f64| {
        if x < 0.0 {
            format!("-${:.4}", -x)
        } else {
            format!("${x:.4}")
        }
    };
    let incomplete = if m.cost_complete {
        ""
    } else {
        "  [INCOMPLETE: a model has no price; lower bound]"
    };
    let latency = |total: f64, p50: f64, p95: f64, max: f64| {
        format!("{total:.2} s total; p50 {p50:.2} s, p95 {p95:.2} s, max {max:.2} s")
    };
    vec![
        (
            "cost",
            format!(
                "{} (summarizer {}); baseline {}; saved {}{incomplete}",
                usd(m.cost_usd),
                usd(m.summarizer_cost_usd),
                usd(m.baseline_cost_usd),
                usd(m.cost_saved_usd)
            ),
        ),
        (
            "end-of-run latency",
            latency(
                m.end_of_run_latency_s,
                m.end_of_run_latency_p50_s,
                m.end_of_run_latency_p95_s,
                m.end_of_run_latency_max_s,
            ),
        ),
        (
            "pre-request latency",
            latency(
                m.pre_request_latency_s,
                m.pre_request_latency_p50_s,
                m.pre_request_latency_p95_s,
                m.pre_request_latency_max_s,
            ),
        ),
        (
            "prefill time saved",
            format!("{:.2} s", m.prefill_time_saved_s),
        ),
    ]
}

/// What the requests no longer read verbatim, and what the summaries lost of it.
fn detail_rows(m: &SessionMetrics, model: &CostModel, family: Option<&str>) -> Vec<MetricRow> {
    vec![
        (
            "detail lost",
            format!(
                "{:.3} (share of history tokens read only through a summary)",
                m.detail_lost
            ),
        ),
        ("critical hidden", format!("{} events", m.critical_hidden)),
        (
            "facts dropped",
            match m.facts_dropped {
                Some(f) => format!("{:.1}% of facts in compacted spans", f * 100.0),
                None => "n/a (modelled summarizer writes no text)".to_string(),
            },
        ),
        (
            "references broken",
            references_broken(m, model.latency.retention_for(family).as_deref()),
        ),
        ("seams", m.seams.to_string()),
    ]
}

/// The `references broken` figure with its basis: measured, estimated (with its bounds and
/// the retention it was estimated from) or nothing at risk.
fn references_broken(m: &SessionMetrics, retention: Option<&Retention>) -> String {
    match m.references_broken_basis {
        Basis::None => format!(
            "0 of {} ({} at risk; nothing a summary had to keep)",
            m.references, m.references_at_risk
        ),
        Basis::Measured => format!(
            "{} of {} ({:.1}%; {} at risk; measured on the summary texts)",
            m.references_broken,
            m.references,
            m.references_broken_share * 100.0,
            m.references_at_risk
        ),
        Basis::Estimated => format!(
            "{:.1} of {} ({:.1}%; {} at risk; estimated, bounds {} to {}; {})",
            m.references_broken,
            m.references,
            m.references_broken_share * 100.0,
            m.references_at_risk,
            m.references_broken_low,
            m.references_broken_high,
            match retention {
                Some(r) => format!(
                    "retention of the references at risk at {} by {}{}",
                    r.rests_on(),
                    r.models.join(", "),
                    match r.missing_kinds() {
                        k if k.is_empty() => String::new(),
                        k => format!(", upper bound for {}", k.join(", ")),
                    }
                ),
                None => "no retention known: upper bound".to_string(),
            }
        ),
    }
}

/// The assumptions behind the figures that are not in the header: a measured summarizer's
/// basis, the price source, the models timed with the `default` latency figures.
fn assumption_rows(model: &CostModel, setting: &MetricsSetting<'_>) -> Vec<MetricRow> {
    let mut rows = Vec::new();
    if setting.summarizer.is_measured() {
        rows.push((
            "summarizer basis",
            "measured: tokens as the API reported them, priced at the table's rates; waits as timed; references and facts on the texts".to_string(),
        ));
    }
    if !model.prices.source.is_empty() {
        rows.push(("price source", model.prices.source.clone()));
    }
    let defaulted = latency_defaulted(model, setting);
    if !defaulted.is_empty() {
        rows.push((
            "latency assumption",
            format!(
                "{} has no latency family: timed with the `default` planning figures",
                defaulted.join(", ")
            ),
        ));
    }
    rows
}

/// The models of the setting timed with the `default` latency figures (a stated assumption,
/// not silent); a measured summarizer is not timed from the table.
fn latency_defaulted<'a>(model: &CostModel, setting: &MetricsSetting<'a>) -> Vec<&'a str> {
    let mut defaulted: Vec<&str> = Vec::new();
    let summarizer = match setting.summarizer.billed_model(setting.agent_model) {
        Billed::Model(m) if !setting.summarizer.is_measured() => m,
        _ => None,
    };
    for m in [setting.agent_model, summarizer].into_iter().flatten() {
        if model.latency.family_of(m).is_none() && !defaulted.contains(&m) {
            defaulted.push(m);
        }
    }
    defaulted
}

/// Sorted, disjoint inclusive ranges covering `spans` (which may overlap or touch).
fn merged(mut spans: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    spans.sort_unstable();
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(spans.len());
    for (a, b) in spans {
        match out.last_mut() {
            Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// `prefix[i]` = sum of `values[..i]`: range sums in O(1).
fn prefix_sums(values: impl Iterator<Item = u64>) -> Vec<u64> {
    let mut p = vec![0u64];
    let mut acc = 0u64;
    for v in values {
        acc += v;
        p.push(acc);
    }
    p
}

/// Sum of `prefix`'s values over the inclusive event range `a..=b`, clipped to the array.
fn range_sum(prefix: &[u64], a: u32, b: u32) -> u64 {
    let n = prefix.len() - 1;
    let (a, b) = ((a as usize).min(n), (b as usize + 1).min(n));
    prefix[b].saturating_sub(prefix[a])
}

/// Critical events (approvals, refusals, ...) some request read only through a summary.
/// Linear in the requests and their hidden ranges, not in requests × hidden events: the
/// union of the hidden ranges is merged once and its critical events counted by prefix sums.
/// Requests that share their hidden list with the one before (the engine extends it in
/// place) are read once.
fn critical_hidden(replay: &Replay, critical: &[u8]) -> u64 {
    let mut spans = Vec::new();
    // The list read so far: a request whose list starts at the same place only adds what
    // lies past it (a policy's cleared tool results are one list every request reads a
    // prefix of: reading it whole for each request was quadratic).
    let mut read: Option<std::ops::Range<u32>> = None;
    for r in &replay.requests {
        match &mut read {
            Some(l) if l.start == r.hidden.start => {
                if r.hidden.end > l.end {
                    let new = replay.hidden.get(l.end as usize..r.hidden.end as usize);
                    spans.extend_from_slice(new.unwrap_or(&[]));
                    l.end = r.hidden.end;
                }
            }
            _ => {
                spans.extend_from_slice(replay.hidden(r));
                read = Some(r.hidden.clone());
            }
        }
    }
    let prefix = prefix_sums(critical.iter().map(|&bits| u64::from(bits != 0)));
    merged(spans)
        .into_iter()
        .map(|(a, b)| range_sum(&prefix, a, b))
        .sum()
}

/// The event-by-event count [`critical_hidden`] replaces; debug builds compare the two.
fn critical_hidden_naive(replay: &Replay, critical: &[u8]) -> u64 {
    let mut seen = BTreeSet::new();
    for r in &replay.requests {
        for &(a, b) in replay.hidden(r) {
            for e in a..=b {
                if critical.get(e as usize).is_some_and(|&bits| bits != 0) {
                    seen.insert(e);
                }
            }
        }
    }
    seen.len() as u64
}

/// Attachment tokens the requests still send verbatim: per request, the attachments of the
/// events before it minus those of its hidden ranges, by prefix sums (requests × hidden
/// ranges, not requests × events).
fn attachment_tokens_sent(replay: &Replay, attachment_tokens: &[u64]) -> u64 {
    let prefix = prefix_sums(attachment_tokens.iter().copied());
    let mut with = 0u64;
    // (list range, its hidden attachment tokens) of the previous request: a list that only
    // grew past it (a policy's cleared tool results) adds its new ranges only.
    let mut last: Option<(std::ops::Range<u32>, u64)> = None;
    for r in &replay.requests {
        let before = r.event_index;
        if before == 0 {
            continue;
        }
        let seen = range_sum(&prefix, 0, before - 1);
        if let Some((l, sum)) = &mut last {
            let grew = l.start == r.hidden.start && l.end <= r.hidden.end && l.end > l.start;
            let new = replay.hidden.get(l.end as usize..r.hidden.end as usize);
            let ordered = |v: &[(u32, u32)]| v.windows(2).all(|w| w[0].1 < w[1].0);
            // the old list's last range included: the new ones must lie past it
            let joined = replay
                .hidden
                .get((l.end as usize).saturating_sub(1)..r.hidden.end as usize);
            let fits = grew && joined.is_some_and(ordered);
            if let Some(new) = new.filter(|n| fits && n.iter().all(|&(_, b)| b < before)) {
                *sum += new
                    .iter()
                    .map(|&(a, b)| range_sum(&prefix, a, b))
                    .sum::<u64>();
                l.end = r.hidden.end;
                with += seen - *sum;
                continue;
            }
        }
        // The engine's hidden ranges are sorted and disjoint; merge only if not.
        let ranges = replay.hidden(r);
        let owned;
        let ranges = if ranges.windows(2).all(|w| w[0].1 < w[1].0) {
            ranges
        } else {
            owned = merged(ranges.to_vec());
            &owned
        };
        let hidden: u64 = ranges
            .iter()
            .filter(|&&(a, _)| a < before)
            .map(|&(a, b)| range_sum(&prefix, a, b.min(before - 1)))
            .sum();
        with += seen - hidden;
        let clipped = ranges.iter().all(|&(_, b)| b < before);
        last = clipped.then(|| (r.hidden.clone(), hidden));
    }
    with
}

/// The event-by-event sum [`attachment_tokens_sent`] replaces; debug builds compare the two.
fn attachment_tokens_sent_naive(replay: &Replay, attachment_tokens: &[u64]) -> u64 {
    let mut with = 0u64;
    for r in &replay.requests {
        let hidden = replay.hidden(r);
        for (e, &t) in attachment_tokens
            .iter()
            .enumerate()
            .take(r.event_index as usize)
        {
            let e = e as u32;
            if t > 0 && !hidden.iter().any(|&(a, b)| a <= e && e <= b) {
                with += t;
            }
        }
    }
    with
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::latency::LengthModel;
    use crate::engine::{Compaction, Invocation, Request, SummarizeRequest, Trigger};
    use crate::summarize::{EventLines, Modelled};
    use crate::transcript::{Critical, Event, Format, Part, Role, Usage};

    fn text_event(author: &str, inv: &str, t: f64, text: &str) -> Event {
        let mut e = Event::new(
            author,
            if author == "user" {
                Role::User
            } else {
                Role::Model
            },
            inv,
            t,
        );
        e.parts.push(Part::Text { text: text.into() });
        e
    }

    fn model_event(inv: &str, t: f64, prompt: u64, out: u64, text: &str) -> Event {
        let mut e = text_event("agent", inv, t, text);
        e.model_request = true;
        e.usage = Some(Usage {
            prompt_tokens: prompt,
            output_tokens: out,
            ..Default::default()
        });
        e
    }

    /// Three invocations; event 2 is a critical confirmation.
    fn session() -> Session {
        let mut yes = text_event("user", "i1", 60.0, "yes, refund 4521");
        yes.critical.push(Critical::Confirmation);
        Session {
            model: Some("claude-sonnet-4-5".into()),
            ..Session::new(
                "s",
                "mem",
                Format::Canonical,
                vec![
                    text_event("user", "i0", 0.0, "Refund order 4521 to bob@example.com"),
                    model_event("i0", 5.0, 3000, 100, "Shall I refund 4521?"),
                    yes,
                    model_event("i1", 65.0, 5000, 200, "Refunded."),
                    text_event("user", "i2", 120.0, "thanks"),
                    model_event("i2", 125.0, 2500, 50, "You're welcome."),
                ],
            )
        }
    }

    /// A request's token columns, as replayed and as the baseline's.
    struct Tokens {
        prompt: u64,
        base_prompt: u64,
        history: u64,
        base_history: u64,
        hidden: u64,
        shared: u64,
    }

    fn row(event: u32, inv: u32, t: Tokens) -> Request {
        let Tokens {
            prompt,
            base_prompt,
            history,
            base_history,
            hidden,
            shared,
        } = t;
        Request {
            event_index: event,
            invocation_index: inv,
            author: 0,
            measured_prompt_tokens: None,
            adk_chars: 0,
            adk_chars_uncompacted: 0,
            json_chars: 0,
            json_chars_uncompacted: 0,
            contents: 0,
            contents_uncompacted: 0,
            history_tokens: history,
            baseline_history_tokens: base_history,
            summary_tokens: 0,
            hidden_tokens: hidden,
            shared_prefix_tokens: shared,
            pre_request_compacted: false,
            pre_request_compactions: 0..0,
            recorded_prompt_tokens: Some(base_prompt),
            replayed_prompt_tokens: None,
            baseline_prompt_tokens: base_prompt,
            prompt_tokens: prompt,
            carried: 0..0,
            hidden: 0..0,
        }
    }

    fn invocation(index: u32, first: u32, first_ts: f64, last_ts: f64) -> Invocation {
        Invocation {
            index,
            first_event_index: first,
            events: 2,
            first_timestamp: first_ts,
            last_timestamp: last_ts,
            post_measured_prompt_tokens: None,
            post_compaction: None,
            post_trigger: None,
            summarizer_calls: 0,
            next_request_adk_chars: 0,
            next_request_adk_chars_uncompacted: 0,
            next_request_contents: 0,
            next_request_history_tokens: 0,
            next_request_baseline_history_tokens: 0,
            retained_summaries: 0..0,
        }
    }

    fn call(
        n: u32,
        inv: u32,
        result: CallResult,
        input: u64,
        output: u64,
        events: std::ops::Range<u32>,
    ) -> SummarizerCall {
        SummarizerCall {
            call: n,
            phase: Phase::PostInvocation,
            trigger: Trigger::SlidingWindow,
            invocation_index: inv,
            before_event_index: None,
            result,
            summarizer_prompt_chars: 0,
            summarizer_history_chars: 0,
            input_tokens: input,
            output_tokens: output,
            summary_chars: output * 4,
            raw_events: events,
            compaction: (result == CallResult::Summary).then_some(0),
        }
    }

    fn compaction(ordinal: u32, start: f64, end: f64) -> Compaction {
        Compaction {
            ordinal,
            phase: Phase::PostInvocation,
            trigger: Trigger::SlidingWindow,
            invocation_index: 1,
            before_event_index: None,
            start_timestamp: start,
            end_timestamp: end,
            summarizer_input_events: 4,
            seeded_with_previous_summary: false,
            seed: None,
            raw_events_in_range: 4,
            first_raw_event_index: Some(0),
            last_raw_event_index: Some(3),
            summarized_events: 0..4,
            invocations_in_range: crate::engine::InvocationRuns::from_sorted([0, 1]),
            summarizer_call: ordinal,
            summarizer_prompt_chars: 0,
            summarizer_history_chars: 0,
            summary_chars: 868,
            summary_json_chars: 905,
            summary_tokens: 217,
            summarizer_input_tokens: 2165,
            retained: true,
            subsumed_by: None,
        }
    }

    /// One post-invocation summary after invocation 1 over events 0..=3 (2,165 tokens in,
    /// 217 out); the last request carries it instead of 3,500 history tokens.
    fn replay(summary: bool) -> Replay {
        let mut r = Replay {
            requests: vec![
                row(
                    1,
                    0,
                    Tokens {
                        prompt: 3000,
                        base_prompt: 3000,
                        history: 1000,
                        base_history: 1000,
                        hidden: 0,
                        shared: 0,
                    },
                ),
                row(
                    3,
                    1,
                    Tokens {
                        prompt: 5000,
                        base_prompt: 5000,
                        history: 3000,
                        base_history: 3000,
                        hidden: 0,
                        shared: 1000,
                    },
                ),
                if summary {
                    row(
                        5,
                        2,
                        Tokens {
                            prompt: 2500,
                            base_prompt: 6000,
                            history: 500,
                            base_history: 4000,
                            hidden: 3500,
                            shared: 0,
                        },
                    )
                } else {
                    row(
                        5,
                        2,
                        Tokens {
                            prompt: 6000,
                            base_prompt: 6000,
                            history: 4000,
                            base_history: 4000,
                            hidden: 0,
                            shared: 3000,
                        },
                    )
                },
            ],
            invocations: vec![
                invocation(0, 0, 0.0, 5.0),
                invocation(1, 2, 60.0, 65.0),
                invocation(2, 4, 120.0, 125.0),
            ],
            compactions: if summary {
                vec![compaction(1, 0.0, 65.0)]
            } else {
                vec![]
            },
            calls: vec![if summary {
                call(1, 1, CallResult::Summary, 2165, 217, 0..4)
            } else {
                call(1, 1, CallResult::Failed, 2165, 0, 0..4)
            }],
            hidden: if summary { vec![(0, 3)] } else { vec![] },
            ..Default::default()
        };
        if summary {
            r.requests[2].hidden = 0..1;
        }
        r
    }

    fn sizes(s: &Session) -> SessionSizes {
        SessionSizes::new(s, Some(&[10, 20, 10, 20, 10, 20]))
    }

    fn setting<'a>(spec: &'a SummarizerSpec, model: Option<&'a str>) -> MetricsSetting<'a> {
        MetricsSetting {
            agent_model: model,
            summarizer: spec,
            client: ClientMode::Waits,
            attachment_tokens: &[],
            event_facts: None,
            references: None,
            attachments_once: false,
            summary_family: None,
        }
    }

    proptest::proptest! {
        /// Any recorded model name: the metrics block `replay` prints keeps its lines (none
        /// forged) and holds no control character but its line breaks.
        #[test]
        fn no_model_name_forges_a_line_of_the_metrics_block(
            s in crate::transcript::util::HOSTILE_TEXT
        ) {
            let (m, model) = (SessionMetrics::default(), CostModel::default());
            let spec = SummarizerSpec::Agent;
            // A name of a latency family (`O1`, `x/o3…`) drops the latency assumption's
            // line: compare with a plain name that has the same family or none.
            let plain_name = model.latency.family_of(&s).unwrap_or("x").to_string();
            let plain = render_metrics(&m, &model, &setting(&spec, Some(&plain_name)));
            let text = render_metrics(&m, &model, &setting(&spec, Some(&s)));
            proptest::prop_assert_eq!(text.lines().count(), plain.lines().count());
            proptest::prop_assert!(!text.chars().any(|c| c.is_control() && c != '\n'));
        }
    }

    #[test]
    fn every_column_on_a_hand_made_session() {
        let s = session();
        let spec = SummarizerSpec::Agent;
        let model = CostModel::default();
        let m = compute_metrics(
            &s,
            &sizes(&s),
            &replay(true),
            &model,
            &setting(&spec, Some("claude-sonnet-4-5")),
            &ReplayLog::default(),
        );
        assert_eq!(m.model_requests, 3);
        assert_eq!((m.summarizer_calls, m.summaries_discarded), (1, 0));
        assert_eq!(
            (m.summarizer_input_tokens, m.summarizer_output_tokens),
            (2165, 217)
        );
        // prompt 3,000 + 5,000 + 2,500; baseline 3,000 + 5,000 + 6,000.
        assert_eq!(
            (m.prompt_tokens, m.baseline_prompt_tokens),
            (10_500, 14_000)
        );
        // gross 3,500; net 3,500 - 2,165 - 217 = 1,118.
        assert_eq!((m.tokens_saved_gross, m.tokens_saved_net), (3_500, 1_118));
        // Sonnet 4.5: $3 in, $0.30 cached, $3.75 write, $15 out per 1M; Anthropic 300 s TTL.
        // Non-history part 2,000 tokens is a stable prefix. Requests 60 s apart.
        // r0: write 3,000 ($0.01125) + 100 out ($0.0015) = $0.01275
        // r1: read 3,000 ($0.0009) + write 2,000 ($0.0075) + 200 out ($0.003) = $0.0114
        // r2 (compacted): shared 2,000 (overhead only): read 2,000 ($0.0006) + write 500
        //     ($0.001875) + 50 out ($0.00075) = $0.003225
        // summarizer: 2,165 in ($0.006495) + 217 out ($0.003255) = $0.00975
        // cost = 0.01275 + 0.0114 + 0.003225 + 0.00975 = $0.037125
        // baseline r2: read 5,000 ($0.0015) + write 1,000 ($0.00375) + out $0.00075 = $0.006
        // baseline = 0.01275 + 0.0114 + 0.006 = $0.03015; saved = -$0.006975: the broken
        // cache prefix and the summarizer call cost more than the 3,500 tokens saved.
        assert!(m.cost_complete);
        assert!(
            (m.summarizer_cost_usd - 0.00975).abs() < 1e-12,
            "{}",
            m.summarizer_cost_usd
        );
        assert!((m.cost_usd - 0.037125).abs() < 1e-12, "{}", m.cost_usd);
        assert!(
            (m.baseline_cost_usd - 0.03015).abs() < 1e-12,
            "{}",
            m.baseline_cost_usd
        );
        assert!((m.cost_saved_usd + 0.006975).abs() < 1e-12);
        assert_eq!(
            (m.cache_read_tokens, m.baseline_cache_read_tokens),
            (5_000, 8_000)
        );
        // claude-sonnet-4 family: 1.5 s + 2,165/10,000 + 217/65 = 1.5 + 0.2165 + 3.338462
        let secs = 1.5 + 0.2165 + 217.0 / 65.0;
        for v in [
            m.end_of_run_latency_s,
            m.end_of_run_latency_p50_s,
            m.end_of_run_latency_p95_s,
            m.end_of_run_latency_max_s,
        ] {
            assert!((v - secs).abs() < 1e-9);
        }
        assert_eq!(m.pre_request_latency_s, 0.0);
        // 3,500 tokens / 10,000 tok/s.
        assert!((m.prefill_time_saved_s - 0.35).abs() < 1e-12);
        // hidden 3,500 / baseline history 1,000 + 3,000 + 4,000 = 0.4375.
        assert!((m.detail_lost - 0.4375).abs() < 1e-12);
        // event 2 (confirmation) lies in the hidden interval 0..=3.
        assert_eq!(m.critical_hidden, 1);
        assert_eq!(m.facts_dropped, None);
        assert_eq!(m.seams, 0);
        assert_eq!(m.summarizer_context_overflows, 0);
        let text = render_metrics(&m, &model, &setting(&spec, Some("claude-sonnet-4-5")));
        assert!(text.contains("$0.0371"), "{text}");
        assert!(!text.contains("INCOMPLETE"), "{text}");
    }

    #[test]
    fn attachments_ride_while_their_message_is_visible() {
        // 1,000-token file on event 0. r0 (event 1) and r1 (event 3) see event 0 verbatim;
        // r2 sees it only through the summary: 2,000 attachment tokens of 10,500 prompt
        // tokens = 0.190476...
        let s = session();
        let spec = SummarizerSpec::Agent;
        let att = [1000, 0, 0, 0, 0, 0];
        let st = MetricsSetting {
            attachment_tokens: &att,
            event_facts: None,
            ..setting(&spec, Some("claude-sonnet-4-5"))
        };
        let m = compute_metrics(
            &s,
            &sizes(&s),
            &replay(true),
            &CostModel::default(),
            &st,
            &ReplayLog::default(),
        );
        assert_eq!(m.attachment_prompt_tokens, 2000);
        assert!((m.attachment_share - 2000.0 / 10_500.0).abs() < 1e-12);
    }

    #[test]
    fn cost_model_from_texts() {
        let m = CostModel::from_texts(
            Some(("p.toml", "[models.\"my-llm\"]\ninput = 1.0\noutput = 2.0\n")),
            None,
            CacheMode::On,
        )
        .unwrap();
        assert!(m.knows_model("my-llm") && m.knows_model("gpt-5") && !m.knows_model("nope"));
        let e = CostModel::from_texts(None, Some(("l.toml", "nonsense = 1")), CacheMode::On)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("l.toml: "), "{e}");
    }

    #[test]
    fn no_cache_prices_at_input_rate() {
        // Compacted: 10,500 prompt * $3/M = $0.0315 + out 350 * $15/M = $0.00525 + summarizer
        // $0.00975 = $0.0465. Baseline: 14,000 * 3/M = $0.042 + $0.00525 = $0.04725.
        let s = session();
        let spec = SummarizerSpec::Agent;
        let model = CostModel {
            cache: CacheMode::Off,
            ..CostModel::default()
        };
        let m = compute_metrics(
            &s,
            &sizes(&s),
            &replay(true),
            &model,
            &setting(&spec, Some("claude-sonnet-4-5")),
            &ReplayLog::default(),
        );
        assert!((m.cost_usd - 0.0465).abs() < 1e-12, "{}", m.cost_usd);
        assert!((m.baseline_cost_usd - 0.04725).abs() < 1e-12);
        assert_eq!(m.cache_read_tokens, 0);
    }

    #[test]
    fn unpriced_agent_model_marks_cost_incomplete() {
        let s = session();
        let spec = SummarizerSpec::Agent;
        let model = CostModel::default();
        let m = compute_metrics(
            &s,
            &sizes(&s),
            &replay(true),
            &model,
            &setting(&spec, Some("llama-4-maverick")),
            &ReplayLog::default(),
        );
        assert!(!m.cost_complete);
        let text = render_metrics(&m, &model, &setting(&spec, Some("llama-4-maverick")));
        assert!(text.contains("INCOMPLETE"), "{text}");
        // It has no latency family either: the assumption is named.
        assert!(
            text.contains("llama-4-maverick has no latency family"),
            "{text}"
        );
    }

    #[test]
    fn terse_is_free_and_counts_dropped_facts() {
        // Facts of events 0..=3: "4521", "bob@example.com" (event 0), "4521" again (events 1,
        // 2): 2 distinct. The summary keeps "4521" only: 1 of 2 dropped = 0.5.
        let s = session();
        let spec = SummarizerSpec::Terse;
        let model = CostModel::default();
        let mut r = replay(true);
        r.calls[0].input_tokens = 0;
        let log = ReplayLog {
            texts: CallTexts::from([(1, SummaryText::flat("user: Refund order 4521".into()))]),
            discarded: BTreeMap::new(),
            measured: None,
        };
        let m = compute_metrics(
            &s,
            &sizes(&s),
            &r,
            &model,
            &setting(&spec, Some("claude-sonnet-4-5")),
            &log,
        );
        assert_eq!(m.facts_dropped, Some(0.5));
        assert_eq!(m.summarizer_cost_usd, 0.0);
        assert_eq!(m.end_of_run_latency_s, 0.0);
        assert!(m.cost_complete);
    }

    #[test]
    fn a_live_call_is_priced_from_its_usage_and_timed_as_measured() {
        // The engine's row says 2,165 in / 217 out (the summary's size in the run tokenizer);
        // the provider reported 3,000 in / 500 out (thinking included) and the call took
        // 4.25 s. Sonnet 4.5: 3,000 x $3/1M + 500 x $15/1M = $0.009 + $0.0075 = $0.0165.
        let s = session();
        let spec = SummarizerSpec::parse("live:anthropic/claude-sonnet-4-5").unwrap();
        let r = replay(true);
        let log = ReplayLog {
            texts: CallTexts::from([(1, SummaryText::flat("user: Refund order 4521".into()))]),
            discarded: BTreeMap::new(),
            measured: Some(BTreeMap::from([(
                1,
                CallMeasure {
                    input_tokens: 3_000,
                    output_tokens: 500,
                    seconds: 4.25,
                },
            )])),
        };
        let metrics = |log: &ReplayLog| {
            compute_metrics(
                &s,
                &sizes(&s),
                &r,
                &CostModel::default(),
                &setting(&spec, Some("claude-sonnet-4-5")),
                log,
            )
        };
        let m = metrics(&log);
        assert_eq!(
            (m.summarizer_input_tokens, m.summarizer_output_tokens),
            (3_000, 500)
        );
        assert!(
            (m.summarizer_cost_usd - 0.0165).abs() < 1e-12,
            "{}",
            m.summarizer_cost_usd
        );
        assert_eq!(m.end_of_run_latency_max_s, 4.25);
        assert_eq!(m.facts_dropped, Some(0.5));
        // A call with no measure (it failed) used nothing and took no modelled time.
        let mut failed = log.clone();
        failed.measured = Some(BTreeMap::new());
        let m = metrics(&failed);
        assert_eq!(
            (m.summarizer_cost_usd, m.end_of_run_latency_max_s),
            (0.0, 0.0)
        );
    }

    #[test]
    fn summarizer_prompt_over_the_context_window_is_flagged() {
        // gpt-4o accepts 128,000 tokens; a 130,000-token summarizer prompt does not fit.
        let s = session();
        let spec = SummarizerSpec::Model("gpt-4o".into());
        let mut r = replay(true);
        r.calls[0].input_tokens = 130_000;
        let m = compute_metrics(
            &s,
            &sizes(&s),
            &r,
            &CostModel::default(),
            &setting(&spec, Some("claude-sonnet-4-5")),
            &ReplayLog::default(),
        );
        assert_eq!(m.summarizer_context_overflows, 1);
        // The provider rejects it: no charge and no time.
        assert_eq!(m.summarizer_cost_usd, 0.0);
        assert_eq!(m.end_of_run_latency_s, 0.0);
        // Within the window, the same call on gpt-4o costs 100,000 * $2.50/M + 217 * $10/M
        // = 0.25 + 0.00217 = $0.25217.
        r.calls[0].input_tokens = 100_000;
        let m = compute_metrics(
            &s,
            &sizes(&s),
            &r,
            &CostModel::default(),
            &setting(&spec, Some("claude-sonnet-4-5")),
            &ReplayLog::default(),
        );
        assert_eq!(m.summarizer_context_overflows, 0);
        assert!(
            (m.summarizer_cost_usd - 0.25217).abs() < 1e-12,
            "{}",
            m.summarizer_cost_usd
        );
    }

    #[test]
    fn seams_count_non_overlapping_consecutive_summaries() {
        // [0, 65] then [60, 125] overlap; then [130, 140] does not: 1 seam.
        let s = session();
        let spec = SummarizerSpec::Agent;
        let mut r = replay(true);
        r.compactions = vec![
            compaction(1, 0.0, 65.0),
            compaction(2, 60.0, 125.0),
            compaction(3, 130.0, 140.0),
        ];
        let m = compute_metrics(
            &s,
            &sizes(&s),
            &r,
            &CostModel::default(),
            &setting(&spec, Some("claude-sonnet-4-5")),
            &ReplayLog::default(),
        );
        assert_eq!(m.seams, 1);
    }

    #[test]
    fn a_setting_over_the_200k_tier_costs_double_rates() {
        // Gemini 2.5 Pro, no cache, one request with 1,000 output tokens (recorded).
        // Kept under: 199,000 * $1.25/M + 1,000 * $10/M = 0.24875 + 0.01 = $0.25875.
        // Pushed over: 201,000 * $2.50/M + 1,000 * $15/M = 0.5025 + 0.015 = $0.5175.
        let mut s = session();
        s.events.truncate(2);
        if let Some(u) = s.events[1].usage.as_mut() {
            u.output_tokens = 1000;
        }
        let sz = SessionSizes::new(&s, Some(&[10, 20]));
        let spec = SummarizerSpec::Agent;
        let model = CostModel {
            cache: CacheMode::Off,
            ..CostModel::default()
        };
        let one = |prompt: u64| Replay {
            requests: vec![row(
                1,
                0,
                Tokens {
                    prompt,
                    base_prompt: 201_000,
                    history: 1000,
                    base_history: 1000,
                    hidden: 0,
                    shared: 0,
                },
            )],
            ..Default::default()
        };
        let under = compute_metrics(
            &s,
            &sz,
            &one(199_000),
            &model,
            &setting(&spec, Some("gemini-2.5-pro")),
            &ReplayLog::default(),
        );
        let over = compute_metrics(
            &s,
            &sz,
            &one(201_000),
            &model,
            &setting(&spec, Some("gemini-2.5-pro")),
            &ReplayLog::default(),
        );
        assert!(
            (under.cost_usd - 0.25875).abs() < 1e-12,
            "{}",
            under.cost_usd
        );
        assert!((over.cost_usd - 0.5175).abs() < 1e-12, "{}", over.cost_usd);
        assert_eq!((under.requests_over_tier, over.requests_over_tier), (0, 1));
        // 2,000 fewer tokens save $0.25875, half the request: the tier, not the tokens.
        assert!((under.cost_saved_usd - (0.5175 - 0.25875)).abs() < 1e-12);
        assert_eq!(over.baseline_requests_over_tier, 1);
    }

    /// A stand-in for the engine: one post-invocation call after invocation 1 (it ends at
    /// 65 s; the next turn starts at `next_turn_at_s`); the last request is compacted only if
    /// the call returned a summary.
    fn fake_engine_at(s: &dyn Summarizer, next_turn_at_s: f64) -> Replay {
        let req = SummarizeRequest {
            call: 1,
            phase: Phase::PostInvocation,
            trigger: Trigger::SlidingWindow,
            events: 0..4,
            skip: &[],
            seed: None,
            prompt_chars: 0,
            history_chars: 0,
            fired_at_s: 65.0,
            next_turn_at_s: Some(next_turn_at_s),
        };
        let mut r = match s.summarize(&req) {
            crate::engine::Outcome::Summary(_) => replay(true),
            _ => replay(false),
        };
        r.invocations[2].first_timestamp = next_turn_at_s;
        r
    }

    /// [`fake_engine_at`] with the recording's next turn (120 s).
    fn fake_engine(s: &dyn Summarizer) -> Replay {
        fake_engine_at(s, 120.0)
    }

    #[test]
    fn streams_discards_a_summary_the_next_turn_overtakes() {
        // Modelled summary: 165 + 4 * 500 = 2,165 tokens in, round(0.1 * 2,165) = 217 out,
        // 5.05 s on Sonnet 4.x. Invocation 1 ends at 65 s; the next turn comes at 120 s in the
        // recording, so the summary lands. Move the next turn to 68 s: 65 + 5.05 > 68, so in
        // `streams` it is discarded; `waits` keeps it.
        let s = session();
        let lines = EventLines::from_parts(vec![500; 6]);
        let count = |t: &str| t.len() as u64;
        let inner = Modelled {
            lines: &lines,
            length: LengthModel {
                ratio: 0.1,
                cap_tokens: 4000,
                min_tokens: 64,
            },
            count: &count,
        };
        let model = CostModel::default();
        let spec = SummarizerSpec::Agent;
        let streams = MetricsSetting {
            agent_model: Some("claude-sonnet-4-5"),
            summarizer: &spec,
            client: ClientMode::Streams,
            attachment_tokens: &[],
            event_facts: None,
            references: None,
            attachments_once: false,
            summary_family: None,
        };
        let (r, log) = replay_with_client(&inner, &model, &streams, &fake_engine);
        assert_eq!(r.calls[0].result, CallResult::Summary);
        assert!(log.discarded.is_empty());

        let late = |s: &dyn Summarizer| fake_engine_at(s, 68.0);
        let (r, log) = replay_with_client(&inner, &model, &streams, &late);
        assert_eq!(r.calls[0].result, CallResult::Failed);
        assert_eq!(log.discarded.keys().copied().collect::<Vec<_>>(), vec![1]);
        let m = compute_metrics(&s, &sizes(&s), &r, &model, &streams, &log);
        // Paid: 2,165 in + 217 out; nothing replaced: prompt = baseline.
        assert_eq!((m.summarizer_calls, m.summaries_discarded), (1, 1));
        assert_eq!(
            (m.summarizer_input_tokens, m.summarizer_output_tokens),
            (2165, 217)
        );
        assert_eq!(m.prompt_tokens, m.baseline_prompt_tokens);
        assert!((m.summarizer_cost_usd - 0.00975).abs() < 1e-12);
        assert_eq!(m.detail_lost, 0.0);

        let waits = MetricsSetting {
            client: ClientMode::Waits,
            ..streams
        };
        let (r, log) = replay_with_client(&inner, &model, &waits, &late);
        assert_eq!(r.calls[0].result, CallResult::Summary);
        assert!(log.discarded.is_empty());
    }

    #[test]
    fn one_hour_write_share_comes_from_recorded_writes_and_carries_over() {
        // Event 1 recorded 1,000 writes of which 250 with the 1-hour lifetime (share 0.25);
        // event 3 recorded no writes, so it keeps 0.25; event 5 recorded 400, all 1-hour.
        let mut s = session();
        s.events[1].usage = Some(Usage {
            prompt_tokens: 3000,
            cache_write_tokens: 1000,
            ..Default::default()
        });
        s.events[1].cache_write_1h_tokens = 250;
        s.events[5].usage = Some(Usage {
            prompt_tokens: 2500,
            cache_write_tokens: 400,
            ..Default::default()
        });
        s.events[5].cache_write_1h_tokens = 400;
        let shares = |s: &Session| {
            let sizes = SessionSizes::new(s, None);
            (0..s.events.len() as u32)
                .map(|i| sizes.write_1h_share(i))
                .collect::<Vec<f64>>()
        };
        assert_eq!(shares(&s), [0.0, 0.25, 0.25, 0.25, 0.25, 1.0]);
        // No recorded 1-hour writes: every share is 0 (the 5-minute cache).
        assert!(shares(&session()).iter().all(|&x| x == 0.0));
    }
}
