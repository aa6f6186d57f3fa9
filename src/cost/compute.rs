//! Every column of metrics.md for one session under one setting, from an engine [`Replay`].
//!
//! Conventions (README "Cost, pricing and latency"):
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

use super::caching::{price_requests, price_single, total_usd, CacheMode, Charge, PricedRequest};
use super::client::{summary_discarded, ClientMode};
use super::facts::{tally, FactTally};
use super::latency::{percentile, LatencyParams, LatencyTable};
use super::metrics::SessionMetrics;
use super::pricing::{ModelPrice, PriceTable, PricingError, ProviderCache};
use super::summarizers::{Billed, Harness, SummarizerSpec};
use crate::engine::{CallResult, Phase, Replay, Summarizer, SummarizerCall, Summary};
use crate::tokens::sizes::SessionSizes;
use crate::transcript::Session;
use std::collections::{BTreeMap, BTreeSet};

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
        let found = name.and_then(|n| self.prices.lookup(n).ok());
        let price = found.map(|(_, p)| p).filter(|p| p.is_priced());
        Resolved {
            price,
            rules: found.map_or_else(ProviderCache::fallback, |(_, p)| self.prices.cache_rules(p)),
            latency: self.latency.for_model(name.unwrap_or("default")),
        }
    }

    /// Context window of a model, if known.
    pub fn context_window(&self, name: Option<&str>) -> Option<u64> {
        name.and_then(|n| self.prices.lookup(n).ok())
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
}

/// What the summarizer harness recorded during the replay.
#[derive(Debug, Clone, Default)]
pub struct ReplayLog {
    /// Summary texts written, by call number (terse / command / echo).
    pub texts: BTreeMap<u32, String>,
    /// Summaries produced but discarded by the `streams` race, by call number.
    pub discarded: BTreeMap<u32, Summary>,
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
    let mut discard = BTreeSet::new();
    loop {
        let harness = Harness::new(inner, discard.clone());
        let replay = run(&harness);
        let loser = match setting.client {
            ClientMode::Waits => None,
            ClientMode::Streams => replay.calls.iter().find(|c| {
                c.phase == Phase::PostInvocation
                    && c.result == CallResult::Summary
                    && !discard.contains(&c.call)
                    && lost_race(&replay, c, model, setting)
            }),
        };
        match loser {
            Some(c) => {
                discard.insert(c.call);
            }
            None => {
                return (
                    replay,
                    ReplayLog {
                        texts: harness.texts(),
                        discarded: harness.discarded(),
                    },
                )
            }
        }
    }
}

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

/// Per-call summarizer numbers after the client race: (input, output) tokens actually spent.
fn call_tokens(c: &SummarizerCall, log: &ReplayLog) -> (u64, u64) {
    match log.discarded.get(&c.call) {
        Some(s) => (s.input_tokens.max(c.input_tokens), s.tokens),
        None => (c.input_tokens, c.output_tokens),
    }
}

fn stats(values: &[f64]) -> (f64, f64, f64, f64) {
    let sum: f64 = values.iter().sum();
    let max = values.iter().copied().fold(0.0, f64::max);
    (sum, percentile(values, 50.0), percentile(values, 95.0), max)
}

/// Every metrics.md column for one replay. `baseline` is the same session replayed with no
/// compaction; without it the replay's own `baseline_*` columns are used (identical by
/// construction).
pub fn compute_metrics(
    session: &Session,
    sizes: &SessionSizes,
    replay: &Replay,
    baseline: Option<&Replay>,
    model: &CostModel,
    setting: &MetricsSetting<'_>,
    log: &ReplayLog,
) -> SessionMetrics {
    let mut m = SessionMetrics {
        model_requests: replay.requests.len() as u64,
        ..Default::default()
    };
    let agent = model.resolve(setting.agent_model);
    let time = |event: u32| sizes.timestamp.get(event as usize).copied().unwrap_or(0.0);

    // Tokens.
    m.prompt_tokens = replay.requests.iter().map(|r| r.prompt_tokens).sum();
    let baseline_rows: Vec<(u32, u64)> = match baseline {
        Some(b) => b
            .requests
            .iter()
            .map(|r| (r.event_index, r.prompt_tokens))
            .collect(),
        None => replay
            .requests
            .iter()
            .map(|r| (r.event_index, r.baseline_prompt_tokens))
            .collect(),
    };
    m.baseline_prompt_tokens = baseline_rows.iter().map(|(_, p)| p).sum();
    m.summarizer_calls = replay.calls.len() as u64;
    m.summaries_discarded = log.discarded.len() as u64;
    for c in &replay.calls {
        let (i, o) = call_tokens(c, log);
        m.summarizer_input_tokens += i;
        m.summarizer_output_tokens += o;
    }
    m.tokens_saved_gross = m.baseline_prompt_tokens as i64 - m.prompt_tokens as i64;
    m.tokens_saved_net =
        m.tokens_saved_gross - m.summarizer_input_tokens as i64 - m.summarizer_output_tokens as i64;

    // Agent requests, with caching and tiers.
    let rows: Vec<PricedRequest> = replay
        .requests
        .iter()
        .map(|r| {
            let stable = r.prompt_tokens.saturating_sub(r.history_tokens);
            PricedRequest {
                time_s: time(r.event_index),
                prompt_tokens: r.prompt_tokens,
                shared_prefix_tokens: (stable + r.shared_prefix_tokens).min(r.prompt_tokens),
                output_tokens: output_tokens(sizes, r.event_index as usize),
            }
        })
        .collect();
    let mut prev_prompt = 0;
    let base_rows: Vec<PricedRequest> = baseline_rows
        .iter()
        .map(|&(e, p)| {
            let shared = prev_prompt.min(p);
            prev_prompt = p;
            PricedRequest {
                time_s: time(e),
                prompt_tokens: p,
                shared_prefix_tokens: shared,
                output_tokens: output_tokens(sizes, e as usize),
            }
        })
        .collect();
    let (agent_usd, charges) = match agent.price {
        Some(p) => {
            let c = price_requests(&rows, p, &agent.rules, model.cache);
            (total_usd(&c), c)
        }
        None => (None, Vec::new()),
    };
    let (base_usd, base_charges) = match agent.price {
        Some(p) => {
            let c = price_requests(&base_rows, p, &agent.rules, model.cache);
            (total_usd(&c), c)
        }
        None => (None, Vec::new()),
    };
    m.cache_read_tokens = charges.iter().map(|c: &Charge| c.cached_read_tokens).sum();
    m.baseline_cache_read_tokens = base_charges.iter().map(|c| c.cached_read_tokens).sum();
    m.requests_over_tier = charges.iter().filter(|c| c.tier_above.is_some()).count() as u64;
    m.baseline_requests_over_tier = base_charges
        .iter()
        .filter(|c| c.tier_above.is_some())
        .count() as u64;

    // Summarizer calls: cost, latency, context overflows.
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
        if let Billed::Model(_) = billed {
            summ_usd = match (summ_usd, summ_price) {
                (Some(acc), Some(p)) => price_single(i, o, p).map(|u| acc + u),
                _ => None,
            };
            if summ_window.is_some_and(|w| i > w) {
                m.summarizer_context_overflows += 1;
            }
        }
        let secs = summ_latency.map_or(0.0, |l| l.seconds(i, o));
        match c.phase {
            Phase::PostInvocation => *post.entry(c.invocation_index).or_default() += secs,
            Phase::PreRequest => {
                *pre.entry((c.invocation_index, c.before_event_index.unwrap_or(u32::MAX)))
                    .or_default() += secs
            }
        }
    }
    m.summarizer_cost_usd = summ_usd.unwrap_or(0.0);
    m.cost_complete = agent_usd.is_some() && base_usd.is_some() && summ_usd.is_some();
    m.cost_usd = agent_usd.unwrap_or(0.0) + m.summarizer_cost_usd;
    m.baseline_cost_usd = base_usd.unwrap_or(0.0);
    m.cost_saved_usd = m.baseline_cost_usd - m.cost_usd;
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
    m.prefill_time_saved_s = agent.latency.prefill_seconds(m.tokens_saved_gross as f64);

    // Detail.
    let hidden: u64 = replay.requests.iter().map(|r| r.hidden_tokens).sum();
    let history: u64 = replay
        .requests
        .iter()
        .map(|r| r.baseline_history_tokens)
        .sum();
    m.detail_lost = if history == 0 {
        0.0
    } else {
        hidden as f64 / history as f64
    };
    let mut critical = BTreeSet::new();
    for r in &replay.requests {
        for &(a, b) in replay.hidden(r) {
            for e in a..=b {
                if sizes
                    .critical
                    .get(e as usize)
                    .is_some_and(|&bits| bits != 0)
                {
                    critical.insert(e);
                }
            }
        }
    }
    m.critical_hidden = critical.len() as u64;
    if setting.summarizer.writes_real_text() {
        let mut t = FactTally::default();
        for c in replay
            .calls
            .iter()
            .filter(|c| c.result == CallResult::Summary)
        {
            let text = log.texts.get(&c.call).map_or("", String::as_str);
            let span = session
                .events
                .get(c.raw_events.start as usize..c.raw_events.end as usize)
                .unwrap_or(&[]);
            t.add(tally(span, text));
        }
        m.facts_dropped = Some(t.share());
    }
    let mut seams = 0;
    for w in replay.compactions.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        let overlap = b.start_timestamp <= a.end_timestamp && a.start_timestamp <= b.end_timestamp;
        if !overlap {
            seams += 1;
        }
    }
    m.seams = seams;
    m
}

/// The metrics block `replay` prints under its timeline. Numbers carry units; the
/// assumptions (price date, caching, client mode) are in the header.
pub fn render_metrics(
    m: &SessionMetrics,
    model: &CostModel,
    setting: &MetricsSetting<'_>,
) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let agent = setting.agent_model.unwrap_or("unknown");
    let _ = writeln!(
        s,
        "metrics (agent model {agent}; summarizer {}; client {}; prices of {}, USD, prompt caching {})",
        setting.summarizer.name(),
        setting.client,
        if model.prices.pricing_date.is_empty() { "unknown date" } else { &model.prices.pricing_date },
        if model.cache == CacheMode::On { "on" } else { "off" },
    );
    let row = |s: &mut String, k: &str, v: String| {
        let _ = writeln!(s, "  {k:<24} {v}");
    };
    row(&mut s, "model requests", m.model_requests.to_string());
    row(
        &mut s,
        "summarizer calls",
        format!(
            "{} ({} discarded, {} over the summarizer's context window)",
            m.summarizer_calls, m.summaries_discarded, m.summarizer_context_overflows
        ),
    );
    row(
        &mut s,
        "summarizer tokens",
        format!(
            "{} in, {} out",
            m.summarizer_input_tokens, m.summarizer_output_tokens
        ),
    );
    row(
        &mut s,
        "prompt tokens",
        format!(
            "{} (baseline {})",
            m.prompt_tokens, m.baseline_prompt_tokens
        ),
    );
    row(
        &mut s,
        "tokens saved",
        format!(
            "{} gross, {} net of summarizer tokens",
            m.tokens_saved_gross, m.tokens_saved_net
        ),
    );
    row(
        &mut s,
        "cached prompt tokens",
        format!(
            "{} (baseline {}); requests over a price tier: {} (baseline {})",
            m.cache_read_tokens,
            m.baseline_cache_read_tokens,
            m.requests_over_tier,
            m.baseline_requests_over_tier
        ),
    );
    let incomplete = if m.cost_complete {
        ""
    } else {
        "  [INCOMPLETE: a model has no price; lower bound]"
    };
    row(
        &mut s,
        "cost",
        format!(
            "${:.4} (summarizer ${:.4}); baseline ${:.4}; saved ${:.4}{incomplete}",
            m.cost_usd, m.summarizer_cost_usd, m.baseline_cost_usd, m.cost_saved_usd
        ),
    );
    row(
        &mut s,
        "end-of-run latency",
        format!(
            "{:.2} s total; p50 {:.2} s, p95 {:.2} s, max {:.2} s",
            m.end_of_run_latency_s,
            m.end_of_run_latency_p50_s,
            m.end_of_run_latency_p95_s,
            m.end_of_run_latency_max_s
        ),
    );
    row(
        &mut s,
        "pre-request latency",
        format!(
            "{:.2} s total; p50 {:.2} s, p95 {:.2} s, max {:.2} s",
            m.pre_request_latency_s,
            m.pre_request_latency_p50_s,
            m.pre_request_latency_p95_s,
            m.pre_request_latency_max_s
        ),
    );
    row(
        &mut s,
        "prefill time saved",
        format!("{:.2} s", m.prefill_time_saved_s),
    );
    row(
        &mut s,
        "detail lost",
        format!(
            "{:.3} (share of history tokens read only through a summary)",
            m.detail_lost
        ),
    );
    row(
        &mut s,
        "critical hidden",
        format!("{} events", m.critical_hidden),
    );
    row(
        &mut s,
        "facts dropped",
        match m.facts_dropped {
            Some(f) => format!("{:.1}% of facts in compacted spans", f * 100.0),
            None => "n/a (modelled summarizer writes no text)".to_string(),
        },
    );
    row(&mut s, "seams", m.seams.to_string());
    s
}
