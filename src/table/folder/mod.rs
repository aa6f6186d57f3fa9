//! The run folder as the charts and the report read it: its setting rows (`settings.json`),
//! the per-session rows they keep (`runs.parquet`, else `runs.csv`), `run.json` and
//! `timelines.json`, and the questions both ask of them (baseline, frontier, anchor).
//!
//! Why a model of its own: `chart` and `report` must work from the data files alone (the
//! `report` command re-renders without replaying), and must not know the engine. The reader
//! is lenient about columns it does not use, strict (one-line error naming file, line and
//! column) about the ones it does.

mod digest;
mod read;

pub use digest::{STUCK_LISTED, WORST_SESSIONS};
pub use read::{
    parse_csv, parse_recorded, parse_runs, parse_settings, parse_timelines, CsvError,
    MAX_TABLE_NUMBER,
};

use crate::table::format::{fmt_pct_to, MAX_PCT_DECIMALS};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// An error reading a run folder, naming the file and where in it.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {what}")]
    Bad { path: PathBuf, what: String },
}

fn bad(path: &Path, what: impl Into<String>) -> DataError {
    DataError::Bad {
        path: path.to_path_buf(),
        what: what.into(),
    }
}

/// One row of `settings.json`: a setting and its aggregates over sessions.
#[derive(Debug, Clone, Default)]
pub struct SettingRow {
    pub setting_id: String,
    /// `tokens`, `invocations`, `both`, or `none` (the baseline).
    pub trigger_kind: String,
    pub after_tokens: Option<u64>,
    pub keep_recent_events: Option<u64>,
    pub after_invocations: Option<u64>,
    pub overlap: Option<u64>,
    pub summarizer: String,
    pub agent_model: String,
    pub client: String,
    pub tokenizer: String,
    /// Paste-ready `Compaction(...)` text.
    pub label: String,
    pub pareto: bool,
    pub rank: Option<u64>,
    pub recommended: bool,
    /// Every numeric column (`cost_usd_sum`, `detail_lost_mean`, ...).
    pub numbers: BTreeMap<String, f64>,
    /// `references_broken_basis`: `measured`, `estimated`, `none`; empty for runs made
    /// before the column.
    pub references_basis: String,
    /// The guide's alternative this row replays (`max_llm_calls=25`); empty for compaction
    /// settings and the baseline.
    pub alternative: String,
    /// Another framework's policy (`policy` family, e.g. `codex`) and its numbers; empty
    /// for ADK settings (docs/policies.md).
    pub policy: String,
    pub policy_setting: String,
}

impl SettingRow {
    pub fn is_baseline(&self) -> bool {
        self.trigger_kind == "none"
    }

    /// One of the guide's alternatives (docs/alternatives.md), alone or with compaction.
    pub fn is_alternative(&self) -> bool {
        !self.alternative.is_empty()
    }

    /// The recorded sessions with no compaction: what every "saved" is measured against (an
    /// alternative with no compaction is not it).
    pub fn is_plain_baseline(&self) -> bool {
        self.is_baseline() && !self.is_alternative()
    }

    /// Another framework's policy, modelled (not an ADK setting).
    pub fn is_policy(&self) -> bool {
        !self.policy.is_empty()
    }

    /// The `as recorded` row: each session under its own framework's setting, the status quo
    /// beside no compaction (a policy row, never recommended).
    pub fn is_as_recorded(&self) -> bool {
        self.policy == crate::settings::AS_RECORDED
    }

    /// A compacting setting whose trigger no session reached (zero summarizer calls): it
    /// behaves exactly as no compaction, so the frontier and labels leave it out (it would
    /// only repeat the baseline's row).
    pub fn never_compacts(&self) -> bool {
        !self.is_baseline() && !self.is_policy() && self.summarizer_calls() == Some(0.0)
    }

    /// The first of `names` present, so the charts survive a missing aggregate.
    pub fn num(&self, names: &[&str]) -> Option<f64> {
        names.iter().find_map(|n| self.numbers.get(*n).copied())
    }

    /// Total agent + summarizer cost over the run's sessions, USD.
    pub fn cost_usd(&self) -> Option<f64> {
        self.num(&["cost_usd_sum", "cost_usd_mean"])
    }

    /// Net dollars saved against the baseline over the run's sessions, USD.
    pub fn cost_saved_usd(&self) -> Option<f64> {
        self.num(&["cost_saved_usd_sum", "cost_saved_usd_mean"])
    }

    /// Mean share (0..1) of history read only through a summary.
    pub fn detail_lost(&self) -> Option<f64> {
        self.num(&["detail_lost_mean", "detail_lost_p50", "detail_lost_max"])
    }

    /// Mean share (0..1) of the references the agent used later that no text it could
    /// still read held (metrics.md "References"); `None` for runs made before the column.
    pub fn broken_references(&self) -> Option<f64> {
        self.num(&["references_broken_share_mean"])
    }

    /// Broken references pooled over sessions (all broken / all references, 0..1) with
    /// the low and high bounds pooled the same way: the summarizer comparison draws these,
    /// since the bounds are stored as counts. `None` for runs made before the columns or
    /// with no references at all.
    pub fn broken_references_pooled(&self) -> Option<(f64, f64, f64)> {
        let refs = self.num(&["references_sum"])?;
        if refs <= 0.0 {
            return None;
        }
        let broken = self.num(&["references_broken_sum"])?;
        let low = self.num(&["references_broken_low_sum"]).unwrap_or(broken);
        let high = self.num(&["references_broken_high_sum"]).unwrap_or(broken);
        Some((broken / refs, low / refs, high / refs))
    }

    pub fn summarizer_calls(&self) -> Option<f64> {
        self.num(&["summarizer_calls_sum", "summarizer_calls_mean"])
    }

    /// The end-of-run wait the latency budget limits, seconds: p95 over sessions of each
    /// session's longest single summarizer wait at the end of a run.
    pub fn end_of_run_latency_p95(&self) -> Option<f64> {
        self.num(&[
            "end_of_run_latency_max_s_p95",
            "end_of_run_latency_p95_s_p95",
            "end_of_run_latency_max_s_max",
            "end_of_run_latency_s_p95",
        ])
    }

    /// Same for waits before a model request (size trigger, pre-request).
    pub fn pre_request_latency_p95(&self) -> Option<f64> {
        self.num(&[
            "pre_request_latency_max_s_p95",
            "pre_request_latency_p95_s_p95",
            "pre_request_latency_s_p95",
        ])
    }

    pub fn facts_dropped(&self) -> Option<f64> {
        self.num(&["facts_dropped_mean", "facts_dropped_p50"])
    }

    pub fn critical_hidden(&self) -> Option<f64> {
        self.num(&["critical_hidden_sum", "critical_hidden_mean"])
    }

    /// Short human name for legends: the trigger fields only.
    pub fn short(&self) -> String {
        let mut parts = Vec::new();
        if let (Some(t), Some(k)) = (self.after_tokens, self.keep_recent_events) {
            parts.push(format!("{}k tok, keep {}", t / 1000, k));
        }
        if let (Some(i), Some(o)) = (self.after_invocations, self.overlap) {
            parts.push(format!("every {i} inv, overlap {o}"));
        }
        if parts.is_empty() {
            "no compaction".to_string()
        } else {
            parts.join(" + ")
        }
    }
}

/// One row of `runs.parquet` (or `runs.csv`): one session under one setting, with the
/// figures the charts and the report read of it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionRow {
    pub session_id: String,
    pub source: String,
    pub setting_id: String,
    pub figures: SessionFigures,
    /// `stuck_call`: the unanswered call's tool name when compaction stuck (the one text
    /// column the report reads).
    pub stuck_call: Option<String>,
}

/// A session where compaction stopped behind a call never answered (docs/pitfalls.md §2),
/// as its first stuck row in file order states it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StuckSession {
    pub session_id: String,
    pub source: String,
    /// The first setting (in file order) under which it stuck.
    pub setting_id: String,
    pub call: String,
    pub event: u64,
    /// `stuck_history_tokens` under that setting.
    pub tokens: f64,
    /// Settings under which it stuck.
    pub settings: u64,
}

/// Lists the figures a [`SessionRow`] keeps once: the struct, its column names and the
/// column-name lookup the readers fill it by.
macro_rules! session_figures {
    ($($field:ident),* $(,)?) => {
        /// A session's figures under one setting, as its `runs` row states them (`None`
        /// where the row has no value): the metric columns (docs/columns.md) the report and
        /// the charts read, and no others, so the rows kept stay small.
        #[derive(Debug, Clone, Copy, Default, PartialEq)]
        pub struct SessionFigures {
            $(pub $field: Option<f64>,)*
        }

        /// The metric columns of a run row the report reads.
        pub const RUN_COLUMNS: &[&str] = &[$(stringify!($field)),*];

        impl SessionFigures {
            /// The figure of column `name`, if it is one of [`RUN_COLUMNS`].
            pub fn slot(&mut self, name: &str) -> Option<&mut Option<f64>> {
                match name {
                    $(stringify!($field) => Some(&mut self.$field),)*
                    _ => None,
                }
            }

            /// Every figure the row has, passed through `f`.
            pub fn map(self, f: impl Fn(f64) -> f64) -> SessionFigures {
                SessionFigures {
                    $($field: self.$field.map(&f),)*
                }
            }
        }
    };
}

session_figures!(
    model_requests,
    baseline_prompt_tokens,
    summarizer_calls,
    detail_lost,
    critical_hidden,
    end_of_run_latency_max_s,
    end_of_run_latency_p95_s,
    references_broken_share,
    cost_usd,
    invocations_failed,
    stuck_event,
    stuck_history_tokens,
    prompt_scale,
    prompt_fit_error_p50,
);

/// One long session's prompt sizes, baseline against the recommended setting.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    pub session_id: String,
    pub setting_id: String,
    /// Per model request: prompt tokens without compaction.
    pub baseline: Vec<f64>,
    /// Per model request: prompt tokens with the setting.
    pub compacted: Vec<f64>,
    /// Model-request indexes (0-based) before which a compaction took effect.
    pub compactions: Vec<usize>,
}

/// Everything the charts and report read. The per-(session, setting) rows are digested as
/// they are read, so a run of millions of rows is read in bounded memory: the rows the
/// report lists per session (the recommended and baseline settings'), the distinct sessions,
/// and each setting's latencies for the distribution chart.
#[derive(Debug, Clone)]
pub struct RunData {
    pub dir: PathBuf,
    pub run: Value,
    /// The compaction settings and the baselines (what the charts, the frontier and the
    /// explorer weigh).
    pub settings: Vec<SettingRow>,
    /// The rows of the guide's alternatives (settings.json rows with an `alternative`),
    /// weighed in the report's Alternatives table.
    pub alternatives: Vec<SettingRow>,
    /// The rows of the recommended setting and of the no-compaction baselines, and those of
    /// the tightest `max_llm_calls` cap where a run failed, in file order, with the
    /// [`RUN_COLUMNS`] only.
    pub runs: Vec<SessionRow>,
    /// Distinct `session_id`s over all rows.
    pub sessions: usize,
    /// Per setting (parallel to `settings`): `end_of_run_latency_max_s` (else `_p95_s`) of
    /// each row of a compacting setting that made at least one summarizer call, in file order.
    pub latency: Vec<Vec<f64>>,
    pub timelines: Vec<Timeline>,
    /// Per setting (parallel to `settings`): at most [`WORST_SESSIONS`] of its session rows,
    /// those that lose most first (broken references, then history read only through
    /// summaries).
    pub worst: Vec<Vec<SessionRow>>,
    /// The first [`STUCK_LISTED`] sessions where compaction stuck, in file order.
    pub stuck: Vec<StuckSession>,
    /// Sessions where compaction stuck under some setting (counted over consecutive rows:
    /// the run files are session-major).
    pub stuck_sessions: usize,
    /// `recorded_compactions.json`: the compactions the run's transcripts record beside the
    /// `as recorded` replay's (`None` when no session records one).
    pub recorded: Option<crate::backtest::Backtest>,
}

/// The tightest `max_llm_calls` cap among `settings` (the lowest N), if any.
pub fn tightest_cap<'a>(
    settings: impl IntoIterator<Item = &'a SettingRow>,
) -> Option<&'a SettingRow> {
    settings
        .into_iter()
        .filter_map(|s| {
            Some((
                crate::sweep::grid::parse_cap_alternative(&s.alternative)?,
                s,
            ))
        })
        .min_by_key(|(n, _)| *n)
        .map(|(_, s)| s)
}

impl RunData {
    /// The `as recorded` row beside [`RunData::baseline`] (same agent model and tokenizer);
    /// `None` for runs made before the row.
    pub fn as_recorded(&self) -> Option<&SettingRow> {
        let base = self.baseline();
        let rows = || self.settings.iter().filter(|s| s.is_as_recorded());
        rows()
            .find(|s| {
                base.is_some_and(|b| s.agent_model == b.agent_model && s.tokenizer == b.tokenizer)
            })
            .or_else(|| rows().next())
    }

    /// The no-compaction row the recommendation is compared with: same agent model, client
    /// and tokenizer as the recommended setting when the grid has several baselines.
    pub fn baseline(&self) -> Option<&SettingRow> {
        let base = |s: &&SettingRow| s.is_baseline();
        match self.recommended() {
            Some(r) => self
                .settings
                .iter()
                .filter(base)
                .find(|s| {
                    s.agent_model == r.agent_model
                        && s.client == r.client
                        && s.tokenizer == r.tokenizer
                })
                .or_else(|| self.settings.iter().find(base)),
            None => self.settings.iter().find(base),
        }
    }

    pub fn recommended(&self) -> Option<&SettingRow> {
        self.settings.iter().find(|s| s.recommended)
    }

    pub fn setting(&self, id: &str) -> Option<&SettingRow> {
        self.settings.iter().find(|s| s.setting_id == id)
    }

    /// Distinct values of a string field, in first-seen order.
    pub fn distinct(&self, f: impl Fn(&SettingRow) -> &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in &self.settings {
            if !s.is_baseline() && !out.iter().any(|o| o == f(s)) {
                out.push(f(s).to_string());
            }
        }
        out
    }

    /// The setting the grids are sliced at: the recommended one, else the first compacting one.
    pub fn anchor(&self) -> Option<&SettingRow> {
        self.recommended()
            .filter(|s| !s.is_baseline())
            .or_else(|| self.settings.iter().find(|s| !s.is_baseline()))
    }

    /// Settings sharing the anchor's summarizer, agent model, client and tokenizer, so a
    /// chart over trigger fields compares like with like.
    pub fn same_context(&self) -> Vec<&SettingRow> {
        match self.anchor() {
            None => Vec::new(),
            Some(a) => self
                .settings
                .iter()
                .filter(|s| {
                    !s.is_baseline()
                        && s.summarizer == a.summarizer
                        && s.agent_model == a.agent_model
                        && s.client == a.client
                        && s.tokenizer == a.tokenizer
                })
                .collect(),
        }
    }
}

/// Frontier settings, cheapest first (the report numbers them F1, F2, ...), the guide's
/// alternatives among them where they win. Settings that never compacted are left out: they
/// tie with the baseline (or an alternative with its alternative alone) on both axes and
/// would only repeat its row (see [`idle_frontier`]).
pub fn frontier(d: &RunData) -> Vec<&SettingRow> {
    let mut f: Vec<&SettingRow> = d
        .settings
        .iter()
        .chain(&d.alternatives)
        .filter(|s| s.pareto && !s.never_compacts())
        .collect();
    f.sort_by(|a, b| {
        a.cost_usd()
            .unwrap_or(f64::MAX)
            .total_cmp(&b.cost_usd().unwrap_or(f64::MAX))
            .then(a.setting_id.cmp(&b.setting_id))
    });
    f
}

/// The frontier as the report numbers it (F1 = the first group): neighbours that lose the
/// same detail at the tables' full precision ([`MAX_PCT_DECIMALS`]: a share's stored
/// decimals) are one row of the table ("A or B") and one label of the chart, never two steps
/// of a trade that buys nothing. On a frontier of stored figures such neighbours also cost
/// the same; only hand-edited figures finer than the stored precision differ in cost.
pub fn frontier_groups(d: &RunData) -> Vec<Vec<&SettingRow>> {
    let key = |s: &SettingRow| {
        s.broken_references()
            .or_else(|| s.detail_lost())
            .map(|x| fmt_pct_to(x, MAX_PCT_DECIMALS))
    };
    let mut groups: Vec<Vec<&SettingRow>> = Vec::new();
    for s in frontier(d) {
        match groups.last_mut() {
            Some(g) if key(g[0]) == key(s) => g.push(s),
            _ => groups.push(vec![s]),
        }
    }
    groups
}

/// Frontier settings whose trigger no session reached: the same as no compaction.
pub fn idle_frontier(d: &RunData) -> Vec<&SettingRow> {
    d.settings
        .iter()
        .filter(|s| s.pareto && s.never_compacts())
        .collect()
}

// ---------------------------------------------------------------------------------------

/// Per summarizer, the setting compared: same trigger fields, client and model as the
/// anchor when the grid has it, else that summarizer's best-ranked setting.
pub fn summarizer_rows(d: &RunData) -> Vec<&SettingRow> {
    let Some(a) = d.anchor() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for name in d.distinct(|s| &s.summarizer) {
        let same = d.settings.iter().find(|s| {
            s.summarizer == name
                && s.trigger_kind == a.trigger_kind
                && s.after_tokens == a.after_tokens
                && s.keep_recent_events == a.keep_recent_events
                && s.after_invocations == a.after_invocations
                && s.overlap == a.overlap
                && s.client == a.client
                && s.agent_model == a.agent_model
        });
        let best = || {
            d.settings
                .iter()
                .filter(|s| s.summarizer == name && !s.is_baseline())
                .min_by(|x, y| {
                    x.rank
                        .unwrap_or(u64::MAX)
                        .cmp(&y.rank.unwrap_or(u64::MAX))
                        .then(x.setting_id.cmp(&y.setting_id))
                })
        };
        if let Some(s) = same.or_else(best) {
            out.push(s);
        }
    }
    out
}
