//! The metric columns of metrics.md: name, type, unit and which aggregates over sessions are
//! meaningful. One list, used by the runs frame, the settings frame, `merge` and docs/columns.md.

use crate::cost::metrics::SessionMetrics;

/// How a column is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Non-negative count (UInt64).
    Count,
    /// Signed count (Int64).
    Signed,
    /// Float64.
    Float,
    /// Nullable Float64.
    OptFloat,
    /// Boolean.
    Bool,
    /// A `references_broken_basis` word (text); not aggregated, combined per setting instead.
    Basis,
    /// Nullable count (UInt64): a figure only some rows have (`stuck_event`).
    OptCount,
    /// Nullable text, not aggregated (`stuck_call`).
    OptText,
}

/// One aggregate over a setting's sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agg {
    Sum,
    Mean,
    P50,
    P95,
    Max,
}

impl Agg {
    pub fn suffix(self) -> &'static str {
        match self {
            Agg::Sum => "sum",
            Agg::Mean => "mean",
            Agg::P50 => "p50",
            Agg::P95 => "p95",
            Agg::Max => "max",
        }
    }
}

/// Totals: a sum over sessions means something (tokens, dollars, seconds).
pub const TOTAL: &[Agg] = &[Agg::Sum, Agg::Mean, Agg::P50, Agg::P95, Agg::Max];
/// Ratios and per-session percentiles: summing them would mean nothing.
pub const SHARE: &[Agg] = &[Agg::Mean, Agg::P50, Agg::P95, Agg::Max];
/// Not aggregated (text columns).
pub const NONE: &[Agg] = &[];

pub struct MetricDef {
    pub name: &'static str,
    pub kind: Kind,
    pub unit: &'static str,
    pub aggs: &'static [Agg],
    /// The value as a float for aggregation (`None` = absent, e.g. facts_dropped of a
    /// modelled summarizer).
    pub get: fn(&SessionMetrics) -> Option<f64>,
}

/// Calls `$m!(field, Kind, unit, aggs)` for every field of [`SessionMetrics`], in column order.
#[macro_export]
#[doc(hidden)]
macro_rules! for_each_metric {
    ($m:ident) => {
        $m!(model_requests, Count, "requests", TOTAL);
        $m!(summarizer_calls, Count, "calls", TOTAL);
        $m!(summaries_discarded, Count, "summaries", TOTAL);
        $m!(summarizer_input_tokens, Count, "tokens", TOTAL);
        $m!(summarizer_output_tokens, Count, "tokens", TOTAL);
        $m!(prompt_tokens, Count, "tokens", TOTAL);
        $m!(baseline_prompt_tokens, Count, "tokens", TOTAL);
        $m!(tokens_saved_gross, Signed, "tokens", TOTAL);
        $m!(tokens_saved_net, Signed, "tokens", TOTAL);
        $m!(cost_usd, Float, "USD", TOTAL);
        $m!(baseline_cost_usd, Float, "USD", TOTAL);
        $m!(cost_saved_usd, Float, "USD", TOTAL);
        $m!(cost_complete, Bool, "true/false", SHARE);
        $m!(end_of_run_latency_s, Float, "s", TOTAL);
        $m!(end_of_run_latency_p50_s, Float, "s", SHARE);
        $m!(end_of_run_latency_p95_s, Float, "s", SHARE);
        $m!(end_of_run_latency_max_s, Float, "s", SHARE);
        $m!(pre_request_latency_s, Float, "s", TOTAL);
        $m!(pre_request_latency_p50_s, Float, "s", SHARE);
        $m!(pre_request_latency_p95_s, Float, "s", SHARE);
        $m!(pre_request_latency_max_s, Float, "s", SHARE);
        $m!(prefill_time_saved_s, Float, "s", TOTAL);
        $m!(detail_lost, Float, "share 0..1", SHARE);
        $m!(critical_hidden, Count, "events", TOTAL);
        $m!(facts_dropped, OptFloat, "share 0..1", SHARE);
        $m!(seams, Count, "seams", TOTAL);
        $m!(summarizer_context_overflows, Count, "calls", TOTAL);
        $m!(summarizer_cost_usd, Float, "USD", TOTAL);
        $m!(cache_read_tokens, Count, "tokens", TOTAL);
        $m!(baseline_cache_read_tokens, Count, "tokens", TOTAL);
        $m!(requests_over_tier, Count, "requests", TOTAL);
        $m!(baseline_requests_over_tier, Count, "requests", TOTAL);
        $m!(attachment_prompt_tokens, Count, "tokens", TOTAL);
        $m!(attachment_share, Float, "share 0..1", SHARE);
        $m!(references, Count, "references", TOTAL);
        $m!(references_at_risk, Count, "references", TOTAL);
        $m!(references_broken, Float, "references", TOTAL);
        $m!(references_broken_share, Float, "share 0..1", SHARE);
        $m!(
            references_broken_basis,
            Basis,
            "measured/estimated/none",
            NONE
        );
        $m!(references_broken_low, Count, "references", TOTAL);
        $m!(references_broken_high, Count, "references", TOTAL);
        $m!(invocations_failed, Count, "invocations", TOTAL);
        // ADK's pitfalls (docs/pitfalls.md): combined per setting as counts of sessions
        // (`SettingFacts`), not aggregated.
        $m!(thrash, Count, "compactions", NONE);
        $m!(stuck_event, OptCount, "event index", NONE);
        $m!(stuck_call, OptText, "tool name", NONE);
        $m!(stuck_history_tokens, OptCount, "tokens", NONE);
        $m!(prompt_overhead, OptFloat, "tokens", NONE);
        $m!(
            prompt_scale,
            OptFloat,
            "provider tokens per counted token",
            NONE
        );
        $m!(prompt_fit_error_p50, OptFloat, "%", NONE);
    };
}

pub fn metric_defs() -> Vec<MetricDef> {
    let mut v = Vec::new();
    macro_rules! getter {
        ($f:ident, OptFloat) => {
            |m: &SessionMetrics| m.$f
        };
        ($f:ident, Bool) => {
            |m: &SessionMetrics| Some(if m.$f { 1.0 } else { 0.0 })
        };
        ($f:ident, Basis) => {
            |_: &SessionMetrics| None
        };
        ($f:ident, OptCount) => {
            |m: &SessionMetrics| m.$f.map(|v| v as f64)
        };
        ($f:ident, OptText) => {
            |_: &SessionMetrics| None
        };
        ($f:ident, $k:ident) => {
            |m: &SessionMetrics| Some(m.$f as f64)
        };
    }
    macro_rules! def {
        ($f:ident, $k:ident, $u:expr, $a:ident) => {
            v.push(MetricDef {
                name: stringify!($f),
                kind: Kind::$k,
                unit: $u,
                aggs: $a,
                get: getter!($f, $k),
            });
        };
    }
    for_each_metric!(def);
    v
}

/// A metric's value by column name (see [`MetricDef::get`]).
pub fn metric_value(m: &SessionMetrics, name: &str) -> Option<f64> {
    metric_defs()
        .iter()
        .find(|d| d.name == name)
        .and_then(|d| (d.get)(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_session_metrics_field_is_listed() {
        // serde names the struct's fields; the list must cover each exactly once, in order.
        let v = serde_json::to_value(SessionMetrics::default()).unwrap();
        let fields: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        let names: Vec<String> = metric_defs().iter().map(|d| d.name.to_string()).collect();
        assert_eq!(fields, names);
    }

    #[test]
    fn values_come_from_the_named_field() {
        let m = SessionMetrics {
            seams: 7,
            detail_lost: 0.25,
            tokens_saved_net: -3,
            ..Default::default()
        };
        assert_eq!(metric_value(&m, "seams"), Some(7.0));
        assert_eq!(metric_value(&m, "detail_lost"), Some(0.25));
        assert_eq!(metric_value(&m, "tokens_saved_net"), Some(-3.0));
        assert_eq!(metric_value(&m, "facts_dropped"), None);
    }
}
