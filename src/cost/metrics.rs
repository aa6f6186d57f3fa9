//! The per (session, setting) numbers of shared/spec/metrics.md. Field names are the column
//! names of `runs.csv` / `runs.parquet`; keep them and metrics.md in step.

use crate::detail::references::Basis;
use serde::{Deserialize, Serialize};

/// Every column of metrics.md for one session replayed under one setting.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SessionMetrics {
    /// Model requests in the session (rows of the timeline).
    pub model_requests: u64,
    /// Summarizer firings, failed and discarded ones included.
    pub summarizer_calls: u64,
    /// Summaries that lost the race with the next turn (client `streams` only).
    pub summaries_discarded: u64,
    /// Tokens the summarizer calls read (ADK's prompt: 657 fixed chars + formatted lines).
    pub summarizer_input_tokens: u64,
    /// Tokens the summarizer calls wrote.
    pub summarizer_output_tokens: u64,
    /// Sum over model requests of the prompt with this setting.
    pub prompt_tokens: u64,
    /// Sum over model requests of the prompt with no compaction.
    pub baseline_prompt_tokens: u64,
    /// `baseline_prompt_tokens - prompt_tokens`.
    pub tokens_saved_gross: i64,
    /// `tokens_saved_gross - summarizer_input_tokens - summarizer_output_tokens`.
    pub tokens_saved_net: i64,
    /// Agent requests + summarizer calls, in USD, with cache and tier effects.
    pub cost_usd: f64,
    pub baseline_cost_usd: f64,
    /// `baseline_cost_usd - cost_usd`.
    pub cost_saved_usd: f64,
    /// False when some model had no price: the cost columns are then a lower bound.
    pub cost_complete: bool,
    /// Summarizer time of post-invocation firings, seconds (sum, then p50/p95/max over the
    /// invocations that fired).
    pub end_of_run_latency_s: f64,
    pub end_of_run_latency_p50_s: f64,
    pub end_of_run_latency_p95_s: f64,
    pub end_of_run_latency_max_s: f64,
    /// Summarizer time of pre-request firings, seconds (the answer waits for it).
    pub pre_request_latency_s: f64,
    pub pre_request_latency_p50_s: f64,
    pub pre_request_latency_p95_s: f64,
    pub pre_request_latency_max_s: f64,
    /// Agent-model prefill time no longer spent on the tokens saved, seconds.
    pub prefill_time_saved_s: f64,
    /// 0..1: Σ hidden_tokens(r) / Σ baseline history tokens(r).
    pub detail_lost: f64,
    /// Critical events (approval, refusal, confirmation, tool error, interruption) some later
    /// request saw only through a summary.
    pub critical_hidden: u64,
    /// Share of facts in compacted spans missing from the summary text; `None` for modelled
    /// summarizers (they write no text).
    pub facts_dropped: Option<f64>,
    /// Consecutive summaries whose ranges do not overlap.
    pub seams: u64,
    /// Summarizer calls whose prompt would not fit the summarizer model's context window.
    pub summarizer_context_overflows: u64,
    /// Part of `cost_usd` spent on summarizer calls, USD.
    #[serde(default)]
    pub summarizer_cost_usd: f64,
    /// Agent prompt tokens billed at the cached-input rate (with / without compaction).
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub baseline_cache_read_tokens: u64,
    /// Agent requests whose prompt crossed a price tier (e.g. > 200k), with / without compaction.
    #[serde(default)]
    pub requests_over_tier: u64,
    #[serde(default)]
    pub baseline_requests_over_tier: u64,
    /// Attachment tokens summed over requests (a file rides while the message naming it is
    /// visible verbatim), and their share of `prompt_tokens` (0..1).
    #[serde(default)]
    pub attachment_prompt_tokens: u64,
    #[serde(default)]
    pub attachment_share: f64,
    /// Distinct (request, fact) pairs where the model event answering the request uses a
    /// fact its uncompacted history holds (metrics.md "References").
    #[serde(default)]
    pub references: u64,
    /// Of those, the ones whose every holding event the request sees only through a summary.
    #[serde(default)]
    pub references_at_risk: u64,
    /// Of those, the ones no carried summary text holds: counted when the texts are known,
    /// estimated (a fraction) for modelled summarizers.
    #[serde(default)]
    pub references_broken: f64,
    /// `references_broken / references`, 0 when there are none: the headline detail measure.
    #[serde(default)]
    pub references_broken_share: f64,
    #[serde(default)]
    pub references_broken_basis: Basis,
    /// Bounds of `references_broken`: low = at-risk references only held beyond the
    /// summarizer's 2,000-char tool payload cut, high = every at-risk reference; both equal
    /// `references_broken` when measured.
    #[serde(default)]
    pub references_broken_low: u64,
    #[serde(default)]
    pub references_broken_high: u64,
    /// Invocations that would have failed: under the capped-runs alternative, those whose
    /// model calls exceeded `max_llm_calls` (ADK raises `LlmCallsLimitExceededError`); 0 for
    /// every other setting.
    #[serde(default)]
    pub invocations_failed: u64,
    /// Token-threshold compactions that fired only because the newest summary alone already
    /// reached `after_tokens` (docs/pitfalls.md §1, `engine::pitfalls::thrash`); 0 for
    /// settings without the token trigger and for other frameworks' policies.
    #[serde(default)]
    pub thrash: u64,
    /// The event holding a call never answered, after which nothing could be compacted
    /// (docs/pitfalls.md §2, `engine::pitfalls::stuck`); `None` when compaction never stuck.
    #[serde(default)]
    pub stuck_event: Option<u64>,
    /// That call's tool name.
    #[serde(default)]
    pub stuck_call: Option<String>,
    /// Raw history tokens the requests after the call's invocation carried: what the stuck
    /// history cost (an upper bound on what compaction would have saved).
    #[serde(default)]
    pub stuck_history_tokens: Option<u64>,
    /// The session's provider-scale fit `recorded ≈ overhead + scale × counted` (tokens::fit,
    /// issue 37 item 1): tokens the provider counts beyond the counted history, provider tokens
    /// per counted token, and the median |error| % of the fit; `None` when the session records
    /// too few prompt sizes (its sizes are the run tokenizer's counts). The same on every
    /// setting's row of a session.
    #[serde(default)]
    pub prompt_overhead: Option<f64>,
    #[serde(default)]
    pub prompt_scale: Option<f64>,
    #[serde(default)]
    pub prompt_fit_error_p50: Option<f64>,
}
