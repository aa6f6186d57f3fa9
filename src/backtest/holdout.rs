//! Out of sample, always (issue 43 item 6): every figure fitted on recorded data, refitted per
//! session without that session (leave one session out), its held-out outcomes beside the
//! in-sample ones. `backtest --holdout` prints them; `backtest --json` carries them in `fits`
//! and per framework in `in_sample` / `held_out` ([`Figures`]).
//!
//! # Adding a fitted figure
//!
//! A figure fitted on recorded data is one [`Fitted`] impl, built from the sessions and the
//! backtest's rows and pushed in [`fitted_figures`]:
//!
//! - [`Fitted::describe`]: its name, framework, unit, the shipped value when it is a constant,
//!   and which [`Outcome`] its held-out outcomes feed in the framework's [`Figures`]
//!   (`TokensBeforeAbsPct` for Claude Code's final-output estimate, `AutoMatched` for a
//!   figure that moves which request a compaction is predicted at, ...);
//! - [`Fitted::sessions`]: how many sessions it observes (its own indexing, `0..n`);
//! - [`Fitted::fit`]: the figure (one or more numbers) fitted on the sessions `train` keeps,
//!   to be used on session `for_session` (a per-model figure fits on that session's model
//!   only); `None` when those sessions give no fit; empty when the session needs none (it is
//!   scored as it is, on both sides, and adds no value);
//! - [`Fitted::outcomes`]: session `i`'s outcomes with the figure at `fit`, each tagged with a
//!   group (`""` for none; SWE-agent's are `0.x` / `1.x`).
//!
//! [`cross_validate`] then gives in sample (`fit(i, all)`) and held out (`fit(i, all but i)`)
//! side by side; nothing else changes. The unit left out is always a whole session (its
//! compactions together), so two compactions of one session never fit each other.
//!
//! # Figures fitted today
//!
//! - `claude-code re-attached file cap` (`policy::claude_code::REATTACH_TOKENS_PER_FILE`,
//!   2,000): refitted as the cap that brings the matched compactions' predicted / recorded
//!   tokens after nearest 1 (median |ratio − 1|), over [`CAP_GRID`];
//! - `claude-code output chars per token` (`policy::claude_code_size::OUTPUT_CHARS_PER_TOKEN`,
//!   2.85): Σ characters / Σ output tokens over the responses whose recorded output is final;
//!   its outcomes are each response's |estimate − recorded| / recorded (the size Claude Code
//!   checks adds the estimate where the transcript keeps only the start count);
//! - `swe-agent provider scale` (per model): recorded `tokens_sent` / replayed prompt tokens,
//!   median over the runs of the same model (never the run it is applied to, held out); a 1.x
//!   run counted as litellm counts it (`backtest::litellm`) needs none and fits none;
//! - `<framework> per-session provider fit` (`tokens::fit`): in sample by construction, it is
//!   fitted on the recorded prompt sizes of the very session it sizes (that is a measurement
//!   of the session, not a prediction); its held-out counterpart is the fit pooled over the
//!   other sessions of the same framework and model, scored on this session's recorded sizes.
//!
//! A room after `policy` and `tokens`, as the rest of `backtest`.

mod figures;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Backtest;
use crate::tokens::sizes::SessionSizes;
use crate::transcript::Session;
pub use figures::{fitted_figures, CAP_GRID};

/// Which of a framework's [`Figures`] a fitted figure's outcomes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// 1 per automatic compaction matched within one request, 0 per one missed (summed).
    AutoMatched,
    /// |predicted − recorded| / recorded tokens before a matched compaction, % (median).
    TokensBeforeAbsPct,
    /// Predicted / recorded tokens after a matched compaction (median).
    TokensAfterRatio,
    /// A session's median |fitted − recorded| / recorded prompt size, % (median).
    PromptAbsErrorPct,
    /// A SWE-agent run's replayed prompt tokens / recorded `tokens_sent` (median).
    TokensSentRatio,
    /// A response's |estimated − recorded| / recorded output tokens, % (median): Claude
    /// Code's final output where the transcript keeps only the start count.
    OutputAbsErrorPct,
}

/// What a fitted figure is.
#[derive(Debug, Clone, PartialEq)]
pub struct Describe {
    pub figure: String,
    pub framework: String,
    /// The unit of the figure's (first) number.
    pub unit: String,
    pub outcome: Outcome,
    /// The constant in use, when the figure ships as one.
    pub shipped: Option<f64>,
    /// How it is fitted and what its outcomes are, in words.
    pub basis: String,
}

/// A figure fitted on recorded data, refittable without any one session (module doc).
pub trait Fitted {
    fn describe(&self) -> Describe;
    /// Sessions observed (the figure's own indexing).
    fn sessions(&self) -> usize;
    /// The figure fitted on the sessions `train` keeps, for use on session `for_session`.
    fn fit(&self, for_session: usize, train: &dyn Fn(usize) -> bool) -> Option<Vec<f64>>;
    /// Session `session`'s outcomes with the figure at `fit`: (group, value).
    fn outcomes(&self, session: usize, fit: &[f64]) -> Vec<(String, f64)>;
}

/// One side (in sample or held out) of a fitted figure's report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FitSide {
    /// Smallest and largest value fitted (first number; one per session evaluated).
    pub value_min: Option<f64>,
    pub value_max: Option<f64>,
    /// Sessions with a fit and at least one outcome.
    pub sessions: usize,
    /// Sessions with outcomes but no fit (no other session to fit on, held out).
    pub sessions_without_fit: usize,
    pub outcomes: usize,
    /// Median outcome per group (`all`: every outcome).
    pub median: BTreeMap<String, f64>,
    /// Sum of the outcomes per group (what [`Outcome::AutoMatched`] counts).
    pub sum: BTreeMap<String, f64>,
}

/// A fitted figure in sample and held out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitReport {
    pub figure: String,
    pub framework: String,
    pub unit: String,
    pub outcome: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shipped: Option<f64>,
    pub basis: String,
    pub in_sample: FitSide,
    pub held_out: FitSide,
}

/// A framework's backtest figures with every fitted figure they rest on refitted on all
/// sessions given (`in_sample`) or without the session each is scored on (`held_out`).
/// A figure no fit feeds is the backtest's own (the same on both sides).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    pub auto_matched: u64,
    pub median_abs_delta_tokens_before_pct: Option<f64>,
    pub tokens_after_ratio: Option<f64>,
    /// Median over sessions of the provider fit's median |error| on recorded prompt sizes, %.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_fit_error_p50_pct: Option<f64>,
    /// Claude Code: median |error| of the final-output estimate over responses whose recorded
    /// output is final, %.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_estimate_error_p50_pct: Option<f64>,
    /// SWE-agent: replayed prompt tokens (plus requeries, fitted provider scale) / recorded
    /// `tokens_sent`, median over runs, and per version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_sent_ratio: Option<f64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tokens_sent_ratio_by_version: BTreeMap<String, f64>,
    /// SWE-agent: the backtest's own `tokens_sent_ratio` (as recorded replayed / recorded,
    /// no requeries, no scale: nothing fitted), median over runs per version; the same on
    /// both sides.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tokens_sent_ratio_unfitted_by_version: BTreeMap<String, f64>,
    /// The fitted figures these rest on (`fits[].figure`).
    pub fitted: Vec<String>,
}

use super::compare::median3 as median;
use crate::stats::round3;

/// One side: every session's fit (`held`: without it) and its outcomes.
fn side(f: &dyn Fitted, held: bool) -> FitSide {
    let mut out = FitSide::default();
    let mut groups: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut values: Vec<f64> = Vec::new();
    for i in 0..f.sessions() {
        let fit = if held {
            f.fit(i, &|j| j != i)
        } else {
            f.fit(i, &|_| true)
        };
        let Some(fit) = fit else {
            // does the session have anything to score? (with any fit: the in-sample one)
            if f.fit(i, &|_| true)
                .is_some_and(|v| !f.outcomes(i, &v).is_empty())
            {
                out.sessions_without_fit += 1;
            }
            continue;
        };
        let outs = f.outcomes(i, &fit);
        if outs.is_empty() {
            continue;
        }
        out.sessions += 1;
        values.extend(fit.first().copied());
        for (g, x) in outs {
            out.outcomes += 1;
            if !g.is_empty() {
                groups.entry(g).or_default().push(x);
            }
            groups.entry("all".to_string()).or_default().push(x);
        }
    }
    out.value_min = values.iter().copied().reduce(f64::min).map(round3);
    out.value_max = values.iter().copied().reduce(f64::max).map(round3);
    for (g, mut v) in groups {
        out.sum.insert(g.clone(), round3(v.iter().sum()));
        if let Some(m) = median(&mut v) {
            out.median.insert(g, m);
        }
    }
    out
}

/// `f` in sample and held out.
pub fn cross_validate(f: &dyn Fitted) -> FitReport {
    let d = f.describe();
    FitReport {
        figure: d.figure,
        framework: d.framework,
        unit: d.unit,
        outcome: d.outcome,
        shipped: d.shipped,
        basis: d.basis,
        in_sample: side(f, false),
        held_out: side(f, true),
    }
}

/// A framework's [`Figures`] on one side, from its backtest figures and the reports of the
/// fits that feed them.
fn figures(stats: &super::FrameworkStats, reports: &[&FitReport], held: bool) -> Figures {
    let mut out = Figures {
        auto_matched: stats.auto_matched,
        median_abs_delta_tokens_before_pct: stats.median_abs_delta_tokens_before_pct,
        tokens_after_ratio: stats.tokens_after_ratio,
        ..Figures::default()
    };
    for r in reports {
        let s = if held { &r.held_out } else { &r.in_sample };
        let all = s.median.get("all").copied();
        match r.outcome {
            Outcome::AutoMatched => {
                out.auto_matched = s.sum.get("all").map_or(0, |&x| x.round() as u64);
            }
            Outcome::TokensBeforeAbsPct => out.median_abs_delta_tokens_before_pct = all,
            Outcome::TokensAfterRatio => out.tokens_after_ratio = all,
            Outcome::PromptAbsErrorPct => out.prompt_fit_error_p50_pct = all,
            Outcome::OutputAbsErrorPct => out.output_estimate_error_p50_pct = all,
            Outcome::TokensSentRatio => {
                out.tokens_sent_ratio = all;
                out.tokens_sent_ratio_by_version = s
                    .median
                    .iter()
                    .filter(|(g, _)| g.as_str() != "all")
                    .map(|(g, &m)| (g.clone(), m))
                    .collect();
            }
        }
        out.fitted.push(r.figure.clone());
    }
    out
}

/// Cross-validate every fitted figure of `b` (made from `sessions` and their run-tokenizer
/// `sizes`, in the same order) and write the reports into `b.fits` and each framework's
/// `in_sample` / `held_out`.
pub fn add_holdout(b: &mut Backtest, sessions: &[Session], sizes: &[SessionSizes]) {
    let reports: Vec<FitReport> = fitted_figures(b, sessions, sizes)
        .iter()
        .map(|f| cross_validate(f.as_ref()))
        .collect();
    let unfitted = unfitted_tokens_sent(b, sessions);
    for (name, stats) in b.frameworks.iter_mut() {
        let mine: Vec<&FitReport> = reports.iter().filter(|r| &r.framework == name).collect();
        for held in [false, true] {
            let mut f = figures(stats, &mine, held);
            if name == "swe-agent" {
                f.tokens_sent_ratio_unfitted_by_version = unfitted.clone();
            }
            if held {
                stats.held_out = Some(f);
            } else {
                stats.in_sample = Some(f);
            }
        }
    }
    b.fits = reports;
}

/// The SWE-agent session rows' `tokens_sent_ratio`, median per version
/// ([`figures::swe_version`]).
fn unfitted_tokens_sent(b: &Backtest, sessions: &[Session]) -> BTreeMap<String, f64> {
    let version: std::collections::HashMap<(&str, &str), &'static str> = sessions
        .iter()
        .map(|s| ((s.source.as_str(), s.id.as_str()), figures::swe_version(s)))
        .collect();
    let mut groups: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in &b.sessions {
        let (Some(ratio), Some(v)) = (
            r.tokens_sent_ratio,
            version.get(&(r.source.as_str(), r.session_id.as_str())),
        ) else {
            continue;
        };
        groups.entry(v.to_string()).or_default().push(ratio);
    }
    groups
        .into_iter()
        .filter_map(|(g, mut v)| median(&mut v).map(|m| (g, m)))
        .collect()
}

#[cfg(test)]
mod tests;
