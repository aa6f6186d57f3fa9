//! Per-setting aggregates over sessions, the Pareto frontier (cost_usd against
//! references_broken_share, the detail measure that sees the summary), budgets, rank and the
//! recommendation.
//!
//! Computed in plain Rust over the rounded rows in session order, so the result is a function
//! of the rows alone: a merged run and an unsharded run agree to the byte.

use super::columns::{metric_defs, Agg, Kind, MetricDef};
use crate::detail::references::Basis;
use crate::stats::percentile;
use crate::sweep::grid::{Budgets, Setting};
use crate::sweep::run::{round_fixed, RunRow};
use serde::Serialize;

/// One aggregate value: integer aggregates of integer columns stay integers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(untagged)]
pub enum AggValue {
    Int(i64),
    Float(f64),
    Null,
}

impl AggValue {
    pub fn as_f64(self) -> Option<f64> {
        match self {
            AggValue::Int(i) => Some(i as f64),
            AggValue::Float(f) => Some(f),
            AggValue::Null => None,
        }
    }
}

/// One row of settings.csv / settings.parquet / settings.json.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingSummary {
    pub setting: Setting,
    pub label: String,
    pub sessions: u64,
    /// True when every session's cost had prices for every model.
    pub cost_complete: bool,
    /// How the sessions' `references_broken` were obtained (estimated if any session's was).
    pub references_broken_basis: Basis,
    /// ADK's pitfalls over the sessions (docs/pitfalls.md): see [`SettingFacts`].
    pub pitfalls: Pitfalls,
    /// `(column name, value)` in column order: `<metric>_<agg>`.
    pub aggs: Vec<(String, AggValue)>,
    pub pareto: bool,
    pub within_budget: bool,
    /// 1 = best: compaction settings within budget by cost, then detail lost; then those out
    /// of budget; baselines last.
    pub rank: u32,
    pub recommended: bool,
}

impl SettingSummary {
    pub fn get(&self, col: &str) -> Option<f64> {
        self.aggs
            .iter()
            .find(|(n, _)| n == col)
            .and_then(|(_, v)| v.as_f64())
    }
    pub fn cost(&self) -> f64 {
        self.get("cost_usd_sum").unwrap_or(0.0)
    }
    /// The detail axis of the trade-off: mean per session of `references_broken_share`.
    pub fn broken_references(&self) -> f64 {
        self.get("references_broken_share_mean").unwrap_or(0.0)
    }
    /// Mean share of history read only through summaries (how much is compacted).
    pub fn detail_lost(&self) -> f64 {
        self.get("detail_lost_mean").unwrap_or(0.0)
    }
    /// The latency the budget limits: p95 over sessions of the longest single wait.
    pub fn wait_p95(&self) -> f64 {
        let a = self.get("end_of_run_latency_max_s_p95").unwrap_or(0.0);
        let b = self.get("pre_request_latency_max_s_p95").unwrap_or(0.0);
        a.max(b)
    }
}

/// One aggregate of one setting's per-session values. `values` is sorted in place first and
/// every aggregate is taken over the sorted values: a sum then depends only on the values,
/// not on the session order, which follows source names (a database read, `URL#app/user/id`,
/// and a folder of its exports list the same sessions in different orders; summed in input
/// order, a mean could differ in its sixth decimal, issue #30).
fn aggregate(values: &mut [f64], integer: bool, agg: Agg) -> AggValue {
    if values.is_empty() {
        return AggValue::Null;
    }
    values.sort_by(f64::total_cmp);
    let values = &*values;
    let int_or_float = |x: f64| {
        if integer {
            AggValue::Int(x.round() as i64)
        } else {
            AggValue::Float(round_fixed(x))
        }
    };
    match agg {
        Agg::Sum => int_or_float(values.iter().sum()),
        Agg::Max => int_or_float(values.iter().cloned().fold(f64::NEG_INFINITY, f64::max)),
        Agg::Mean => AggValue::Float(round_fixed(
            values.iter().sum::<f64>() / values.len() as f64,
        )),
        Agg::P50 | Agg::P95 => AggValue::Float(round_fixed(percentile(
            values,
            if agg == Agg::P50 { 0.5 } else { 0.95 },
        ))),
    }
}

/// ADK's pitfalls over a setting's sessions (docs/pitfalls.md): the settings columns
/// `thrash`, `thrash_sessions` and `stuck_sessions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pitfalls {
    /// Sum of the runs' `thrash`: compactions a summary too large for its threshold made.
    pub thrash: u64,
    /// Sessions with `thrash > 0`: a setting with any is never recommended.
    pub thrash_sessions: u64,
    /// Sessions with `stuck_event` set: compaction stopped behind an unanswered call.
    pub stuck_sessions: u64,
}

/// What is combined per setting besides the metric aggregates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SettingFacts {
    pub sessions: u64,
    pub cost_complete: bool,
    pub references_broken_basis: Basis,
    pub pitfalls: Pitfalls,
}

impl Default for SettingFacts {
    fn default() -> Self {
        SettingFacts {
            sessions: 0,
            cost_complete: true,
            references_broken_basis: Basis::None,
            pitfalls: Pitfalls::default(),
        }
    }
}

impl SettingFacts {
    /// Count one more session's row: its `thrash` and whether it has a `stuck_event`.
    pub fn add(&mut self, cost_complete: bool, basis: Basis, thrash: u64, stuck: bool) {
        self.sessions += 1;
        self.cost_complete &= cost_complete;
        self.references_broken_basis = Basis::combine(self.references_broken_basis, basis);
        self.pitfalls.thrash += thrash;
        self.pitfalls.thrash_sessions += u64::from(thrash > 0);
        self.pitfalls.stuck_sessions += u64::from(stuck);
    }
}

/// Aggregate rows (session-major, as `stream_pairs` and `merge` produce them) per setting.
pub fn summarize(settings: &[Setting], rows: &[RunRow], budgets: &Budgets) -> Vec<SettingSummary> {
    let mut by_setting: Vec<Vec<&RunRow>> = vec![Vec::new(); settings.len()];
    for r in rows {
        if let Some(v) = by_setting.get_mut(r.setting as usize) {
            v.push(r);
        }
    }
    let facts: Vec<SettingFacts> = by_setting
        .iter()
        .map(|rs| {
            let mut f = SettingFacts::default();
            for r in rs {
                let m = &r.metrics;
                f.add(
                    m.cost_complete,
                    m.references_broken_basis,
                    m.thrash,
                    m.stuck_event.is_some(),
                );
            }
            f
        })
        .collect();
    let values = |d: &MetricDef| -> Result<Vec<Vec<f64>>, std::convert::Infallible> {
        Ok(by_setting
            .iter()
            .map(|rs| rs.iter().filter_map(|r| (d.get)(&r.metrics)).collect())
            .collect())
    };
    match summarize_by(settings, &facts, budgets, values) {
        Ok(s) => s,
        Err(never) => match never {},
    }
}

/// Aggregate per setting from `facts` and, per metric, `values(def)`: each setting's values
/// of that metric in session order (absent values left out). The one implementation of the
/// aggregates, ranks and recommendation, whether the rows are in memory or in Parquet.
pub fn summarize_by<E>(
    settings: &[Setting],
    facts: &[SettingFacts],
    budgets: &Budgets,
    mut values: impl FnMut(&MetricDef) -> Result<Vec<Vec<f64>>, E>,
) -> Result<Vec<SettingSummary>, E> {
    let defs = metric_defs();
    let mut aggs: Vec<Vec<(String, AggValue)>> = vec![Vec::new(); settings.len()];
    for d in &defs {
        if d.kind == Kind::Bool || d.aggs.is_empty() {
            continue;
        }
        let mut per = values(d)?;
        let integer = matches!(d.kind, Kind::Count | Kind::Signed);
        for (i, out) in aggs.iter_mut().enumerate() {
            let mut empty = Vec::new();
            let vals = per.get_mut(i).unwrap_or(&mut empty);
            for &a in d.aggs {
                out.push((
                    format!("{}_{}", d.name, a.suffix()),
                    aggregate(vals, integer, a),
                ));
            }
        }
    }
    let mut out: Vec<SettingSummary> = settings
        .iter()
        .zip(aggs)
        .enumerate()
        .map(|(i, (set, aggs))| {
            let f = facts.get(i).copied().unwrap_or_default();
            SettingSummary {
                setting: set.clone(),
                label: set.label(),
                sessions: f.sessions,
                cost_complete: f.cost_complete,
                references_broken_basis: f.references_broken_basis,
                pitfalls: f.pitfalls,
                aggs,
                pareto: false,
                within_budget: false,
                rank: 0,
                recommended: false,
            }
        })
        .collect();

    // Pareto: no other setting is at most as costly and at most as lossy, and better in one.
    // The guide's alternatives take part where they win (issue 27), except a cap that stopped
    // runs: a failed run is a loss the detail axis does not show, so it is weighed in the
    // Alternatives table only.
    let points: Vec<Option<(f64, f64)>> = out
        .iter()
        .map(|s| {
            let failed = s.get("invocations_failed_sum").unwrap_or(0.0) > 0.0;
            (s.setting.alternative.is_none() || !failed).then(|| (s.cost(), s.broken_references()))
        })
        .collect();
    for (i, s) in out.iter_mut().enumerate() {
        let Some((c, d)) = points[i] else {
            s.within_budget = false;
            continue;
        };
        s.pareto = !points.iter().enumerate().any(|(j, p)| {
            p.is_some_and(|(c2, d2)| j != i && c2 <= c && d2 <= d && (c2 < c || d2 < d))
        });
        s.within_budget =
            s.setting.alternative.is_none() && within_budgets(&s.rule_figures(), budgets);
    }

    let figures: Vec<RuleFigures> = out.iter().map(SettingSummary::rule_figures).collect();
    let order = rank_order(&figures, budgets);
    for (r, &i) in order.iter().enumerate() {
        out[i].rank = r as u32 + 1;
    }
    if let Some(best) = pick(&figures, budgets) {
        out[best].recommended = true;
    }
    Ok(out)
}

/// [`summarize`] over the rows of a `runs.parquet` (in session order, as a sweep or merge
/// writes it), read a row group and one metric column at a time: memory holds one column's
/// values (8 bytes a row) for the exact percentiles, never the rows.
pub fn summarize_parquet(
    settings: &[Setting],
    runs: &std::path::Path,
    budgets: &Budgets,
) -> super::Result<Vec<SettingSummary>> {
    use super::frames::{for_each_row_group, metric_column, setting_ids};
    use super::TableError;
    let file = runs.display().to_string();
    let n = settings.len();
    let mut facts = vec![SettingFacts::default(); n];
    for_each_row_group(
        runs,
        &[
            "setting_id",
            "cost_complete",
            "references_broken_basis",
            "thrash",
            "stuck_event",
        ],
        &mut |df| {
            let ids = setting_ids(df, &file)?;
            let complete = df
                .column("cost_complete")
                .ok()
                .and_then(|c| c.bool().ok().cloned())
                .ok_or_else(|| super::bad(&file, "column `cost_complete` is not Boolean"))?;
            let basis = df
                .column("references_broken_basis")
                .ok()
                .and_then(|c| c.str().ok().cloned())
                .ok_or_else(|| super::bad(&file, "column `references_broken_basis` is not text"))?;
            let counts = |name: &str| {
                df.column(name)
                    .ok()
                    .and_then(|c| c.u64().ok().cloned())
                    .ok_or_else(|| super::bad(&file, format!("column `{name}` is not UInt64")))
            };
            let (thrash, stuck) = (counts("thrash")?, counts("stuck_event")?);
            for (i, id) in ids.iter().enumerate() {
                let Some(f) = id.and_then(|id| facts.get_mut(id as usize)) else {
                    continue;
                };
                let word = basis.get(i).unwrap_or("");
                let b = Basis::parse(word).ok_or_else(|| {
                    super::bad(
                        &file,
                        format!("row {i}: `references_broken_basis` is `{word}`, expected measured, estimated or none"),
                    )
                })?;
                f.add(
                    complete.get(i).unwrap_or(false),
                    b,
                    thrash.get(i).unwrap_or(0),
                    stuck.get(i).is_some(),
                );
            }
            Ok(())
        },
    )?;
    let values = |d: &MetricDef| -> Result<Vec<Vec<f64>>, TableError> {
        let mut per: Vec<Vec<f64>> = facts
            .iter()
            .map(|f| Vec::with_capacity(f.sessions as usize))
            .collect();
        for_each_row_group(runs, &["setting_id", d.name], &mut |df| {
            let ids = setting_ids(df, &file)?;
            let vals = metric_column(df, d, &file)?;
            for (id, v) in ids.into_iter().zip(vals) {
                if let (Some(id), Some(v)) = (id, v) {
                    if let Some(p) = per.get_mut(id as usize) {
                        p.push(v);
                    }
                }
            }
            Ok(())
        })?;
        Ok(per)
    };
    summarize_by(settings, &facts, budgets, values)
}

/// The figures of one setting the recommendation rule reads: the one rule is
/// [`meets_budgets`], [`rank_order`] and [`pick`] over these, whether the figures come from
/// a sweep's rows or from a run folder's settings.json (the report's explorer embeds them
/// and applies the same rule in the page; a browser test holds the two to the same pick).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RuleFigures {
    pub setting_id: u32,
    pub baseline: bool,
    /// One of the guide's alternatives (never recommended; ranked after the baselines).
    pub alternative: bool,
    /// Another framework's policy (docs/policies.md): ranked with the ADK settings, never
    /// recommended (it is a finding, not a line for a manifest).
    pub policy: bool,
    /// `cost_usd_sum`, USD over all sessions.
    pub cost: f64,
    /// `references_broken_share_mean`, 0..1.
    pub broken_references: f64,
    /// `detail_lost_mean`, 0..1.
    pub detail_lost: f64,
    /// The larger of `end_of_run_latency_max_s_p95` and `pre_request_latency_max_s_p95`, s.
    pub wait_p95: f64,
    /// `thrash_sessions > 0`: its summary re-fires compaction every turn in some session
    /// (docs/pitfalls.md §1), so it is never recommended, whatever it costs.
    pub thrash: bool,
}

impl SettingSummary {
    pub fn rule_figures(&self) -> RuleFigures {
        RuleFigures {
            setting_id: self.setting.setting_id,
            baseline: self.setting.is_baseline(),
            alternative: self.setting.alternative.is_some(),
            policy: self.setting.policy.is_some(),
            cost: self.cost(),
            broken_references: self.broken_references(),
            detail_lost: self.detail_lost(),
            wait_p95: self.wait_p95(),
            thrash: self.pitfalls.thrash_sessions > 0,
        }
    }
}

/// Whether a setting may be recommended: a compacting ADK setting within every budget set (a
/// baseline never is: it is what compaction is compared with; another framework's policy and
/// the guide's alternatives are findings, not a `Compaction(...)` line), whose summary never
/// re-fires compaction every turn (a thrashing setting's cost is a sample's luck, not a
/// property to deploy).
pub fn meets_budgets(f: &RuleFigures, b: &Budgets) -> bool {
    may_be_recommended(f) && within_budgets(f, b)
}

/// Not another framework's policy, not an alternative, not thrashing: what [`pick`] looks
/// among, best-ranked first.
fn may_be_recommended(f: &RuleFigures) -> bool {
    !f.policy && !f.alternative && !f.thrash
}

/// Whether a non-baseline row's figures meet every budget set (how the ranking groups rows,
/// and how an alternative is weighed; [`meets_budgets`] adds what may be recommended).
pub fn within_budgets(f: &RuleFigures, b: &Budgets) -> bool {
    !f.baseline
        && b.broken_references.is_none_or(|x| f.broken_references <= x)
        && b.detail_lost.is_none_or(|x| f.detail_lost <= x)
        && b.latency_s.is_none_or(|x| f.wait_p95 <= x)
}

/// Indexes of `figures` best first: settings within budget by cost, then broken
/// references, then id; then those out of budget the same way; baselines last.
pub fn rank_order(figures: &[RuleFigures], b: &Budgets) -> Vec<usize> {
    let group = |f: &RuleFigures| {
        if f.alternative {
            3
        } else if f.baseline {
            2
        } else if within_budgets(f, b) {
            0
        } else {
            1
        }
    };
    let mut order: Vec<usize> = (0..figures.len()).collect();
    order.sort_by(|&a, &c| {
        let (x, y) = (&figures[a], &figures[c]);
        group(x)
            .cmp(&group(y))
            .then(x.cost.total_cmp(&y.cost))
            .then(x.broken_references.total_cmp(&y.broken_references))
            .then(x.setting_id.cmp(&y.setting_id))
    });
    order
}

/// The recommended setting's index: the best-ranked one that may be recommended (not a
/// policy, an alternative or a thrashing setting), when it meets the budgets.
pub fn pick(figures: &[RuleFigures], b: &Budgets) -> Option<usize> {
    rank_order(figures, b)
        .into_iter()
        .find(|&i| may_be_recommended(&figures[i]))
        .filter(|&i| meets_budgets(&figures[i], b))
}

/// The guide's alternative that beats the recommended setting (`None` when there is no
/// recommendation or none does): within every budget (its figures read as a compacting
/// setting's), no failed run (a cap that stops runs is never named, whatever it saves), and
/// cheaper than the recommended setting; the cheapest such, then by id.
pub fn better_alternative<'a>(
    summaries: &'a [SettingSummary],
    recommended: &SettingSummary,
    b: &Budgets,
) -> Option<&'a SettingSummary> {
    summaries
        .iter()
        .filter(|s| s.setting.alternative.is_some())
        .filter(|s| s.get("invocations_failed_sum").unwrap_or(0.0) == 0.0)
        .filter(|s| {
            let mut f = s.rule_figures();
            f.baseline = false;
            within_budgets(&f, b)
        })
        .filter(|s| s.cost() < recommended.cost())
        .min_by(|x, y| {
            x.cost()
                .total_cmp(&y.cost())
                .then(x.setting.setting_id.cmp(&y.setting.setting_id))
        })
}

/// What to do to deploy a setting of the guide's alternatives, in one line: the
/// alternative's action, and for a combination the compaction line to paste as well.
pub fn deploy_text(label: &str, alternative: &str) -> String {
    let action = alternative_action(alternative);
    match label.split_once(" + ") {
        Some((_, compaction)) => format!("{action}, and paste {compaction}"),
        None => action,
    }
}

/// What to do to deploy an alternative, in one line.
pub fn alternative_action(alternative: &str) -> String {
    if let Some(n) = crate::sweep::grid::parse_cap_alternative(alternative) {
        return format!("pass run_config=RunConfig(max_llm_calls={n}) to the runner");
    }
    if alternative == crate::sweep::grid::ARTIFACTS {
        return "save attached files as artifacts and read them with a load_artifact tool instead of attaching them to the message".into();
    }
    if alternative == "split:lossless" {
        return "start a new session (a new session id) when the task changes, at the points where no later turn uses an earlier fact".into();
    }
    if let Some(d) = alternative.strip_prefix("split:idle=") {
        return format!("start a new session (a new session id) after a pause longer than {d}");
    }
    alternative.to_string()
}

/// The recommended setting, or the one closest to the budgets when none meets them
/// (smallest worst ratio of value to limit).
pub fn recommended(summaries: &[SettingSummary]) -> Option<&SettingSummary> {
    summaries.iter().find(|s| s.recommended)
}

pub fn closest_to_budget<'a>(
    summaries: &'a [SettingSummary],
    b: &Budgets,
) -> Option<&'a SettingSummary> {
    let excess = |s: &SettingSummary| {
        let r = b
            .broken_references
            .map_or(0.0, |x| s.broken_references() / x.max(1e-12));
        let d = b
            .detail_lost
            .map_or(0.0, |x| s.detail_lost() / x.max(1e-12))
            .max(r);
        let l = b.latency_s.map_or(0.0, |x| s.wait_p95() / x.max(1e-12));
        d.max(l)
    };
    summaries
        .iter()
        .filter(|s| !s.setting.is_baseline() && s.setting.alternative.is_none())
        .filter(|s| s.pitfalls.thrash_sessions == 0)
        // the status quo is no setting to move toward
        .filter(|s| s.setting.policy != Some(crate::settings::PolicySpec::AsRecorded))
        .min_by(|x, y| {
            excess(x)
                .total_cmp(&excess(y))
                .then(x.cost().total_cmp(&y.cost()))
                .then(x.setting.setting_id.cmp(&y.setting.setting_id))
        })
}

/// The no-compaction baseline comparable to `s` (same agent model and tokenizer).
pub fn baseline_for<'a>(
    summaries: &'a [SettingSummary],
    s: &Setting,
) -> Option<&'a SettingSummary> {
    summaries.iter().find(|b| {
        b.setting.is_plain_baseline()
            && b.setting.agent_model == s.agent_model
            && b.setting.tokenizer == s.tokenizer
    })
}

/// The one-line message when budgets rule out every setting.
pub fn budget_error(summaries: &[SettingSummary], b: &Budgets) -> String {
    let mut limits = Vec::new();
    if let Some(d) = b.broken_references {
        limits.push(format!("--budget-broken-references {d}"));
    }
    if let Some(d) = b.detail_lost {
        limits.push(format!("--budget-detail-lost {d}"));
    }
    if let Some(l) = b.latency_s {
        limits.push(format!("--budget-latency {l}"));
    }
    let closest = closest_to_budget(summaries, b)
        .map(|s| {
            format!(
                "; closest: {} (references_broken_share_mean {:.4}, detail_lost_mean {:.4}, summary wait p95 {:.2} s, cost ${:.4})",
                s.label,
                s.broken_references(),
                s.detail_lost(),
                s.wait_p95(),
                s.cost()
            )
        })
        .unwrap_or_default();
    // Settings the budgets let through but the thrash rule does not (docs/pitfalls.md).
    let thrashing = summaries
        .iter()
        .filter(|s| {
            let f = s.rule_figures();
            f.thrash && meets_budgets(&RuleFigures { thrash: false, ..f }, b)
        })
        .count();
    let thrash = if thrashing == 0 {
        String::new()
    } else {
        format!(
            " without thrashing ({thrashing} that meet it re-fire compaction every turn: their summary alone reaches after_tokens, docs/pitfalls.md)"
        )
    };
    format!(
        "budget {}: no setting meets it{thrash}{closest}",
        limits.join(" and ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::metrics::SessionMetrics;
    use crate::sweep::grid::{GridSpec, Known};

    fn grid() -> Vec<Setting> {
        let k = Known {
            model: &|_| true,
            tokenizers: &["o200k"],
        };
        // the baseline and the ADK settings (not the `as recorded` row)
        GridSpec::from_toml("g", "after_tokens=[1000,2000,3000]\nkeep_recent_events=[1]")
            .unwrap()
            .resolve(&k)
            .unwrap()
            .settings
            .into_iter()
            .filter(|s| s.policy.is_none())
            .collect()
    }

    fn row(session: u32, setting: u32, cost: f64, lost: f64, calls: u64) -> RunRow {
        RunRow {
            session,
            setting,
            metrics: SessionMetrics {
                cost_usd: cost,
                references_broken_share: lost,
                // Opposite order to the broken share: the trade-off must not follow it.
                detail_lost: 0.9 - lost,
                summarizer_calls: calls,
                cost_complete: true,
                ..Default::default()
            },
        }
    }

    /// Issue 27: an alternative is named when it meets the budgets, fails no run and costs
    /// less than the recommended setting; it never takes the recommendation, and it is on the
    /// frontier where it wins (a cap that stopped runs never is).
    #[test]
    fn an_alternative_is_named_only_when_it_beats_the_recommendation_without_failed_runs() {
        let k = Known {
            model: &|_| true,
            tokenizers: &["o200k"],
        };
        let settings = GridSpec::from_toml(
            "g",
            "after_tokens=[1000]\nkeep_recent_events=[1]\nmax_llm_calls=[3]\nsplit=['lossless']",
        )
        .unwrap()
        .resolve(&k)
        .unwrap()
        .settings;
        let alt = |a: &str| {
            settings
                .iter()
                .find(|s| s.alternative_text() == a)
                .unwrap()
                .setting_id
        };
        let (cap, split) = (alt("max_llm_calls=3"), alt("split:lossless"));
        let budgets = Budgets {
            broken_references: Some(0.2),
            ..Default::default()
        };
        let run = |split_cost: f64, split_lost: f64| {
            let mut rows = vec![row(0, 0, 10.0, 0.0, 0), row(0, 1, 5.0, 0.1, 2)];
            // the `as recorded` row of a session that records no setting: no compaction
            rows.extend(
                settings
                    .iter()
                    .filter(|s| s.policy.is_some())
                    .map(|s| row(0, s.setting_id, 10.0, 0.0, 0)),
            );
            let mut capped = row(0, cap, 1.0, 0.0, 0);
            capped.metrics.invocations_failed = 2;
            rows.push(capped);
            rows.push(row(0, split, split_cost, split_lost, 0));
            summarize(&settings, &rows, &budgets)
        };
        let s = run(3.0, 0.0);
        let r = recommended(&s).unwrap();
        assert_eq!(
            r.setting.setting_id, 1,
            "the recommendation stays a compaction setting"
        );
        // On the frontier where it wins: the split (3.0, 0 %) beats the baseline (10.0, 0 %)
        // and the compaction setting (5.0, 10 %); the cheaper cap stopped runs, so it is
        // weighed in the Alternatives table, never on the frontier.
        let pareto = |id: u32| {
            s.iter()
                .find(|x| x.setting.setting_id == id)
                .unwrap()
                .pareto
        };
        assert!(pareto(split));
        assert!(!pareto(cap) && !pareto(0) && !pareto(1));
        let named = better_alternative(&s, r, &budgets).unwrap();
        assert_eq!(
            named.setting.setting_id, split,
            "the cheaper cap fails runs"
        );
        assert!(alternative_action("split:lossless").contains("new session"));
        // Dearer than the recommendation, or over the budget: not named.
        let s = run(6.0, 0.0);
        assert!(better_alternative(&s, recommended(&s).unwrap(), &budgets).is_none());
        let pareto = |id: u32| {
            s.iter()
                .find(|x| x.setting.setting_id == id)
                .unwrap()
                .pareto
        };
        assert!(
            pareto(split) && pareto(1) && !pareto(0),
            "both trade cost for detail"
        );
        let s = run(3.0, 0.5);
        assert!(better_alternative(&s, recommended(&s).unwrap(), &budgets).is_none());
    }

    #[test]
    fn aggregates_pareto_rank_and_recommendation() {
        let set = grid(); // 0 baseline, 1..3 after_tokens 1000, 2000, 3000
                          // (cost, lost) per setting, two sessions each.
        let per = [(10.0, 0.0), (4.0, 0.5), (6.0, 0.2), (7.0, 0.3)];
        let mut rows = Vec::new();
        for s in 0..2u32 {
            for (i, &(c, l)) in per.iter().enumerate() {
                rows.push(row(s, i as u32, c / 2.0 + s as f64, l, s as u64 + 1));
            }
        }
        let out = summarize(&set, &rows, &Budgets::default());
        // cost_usd_sum for setting 1: 2 + 3 = 5; summarizer_calls sum = 1 + 2 = 3 (integer).
        assert_eq!(out[1].get("cost_usd_sum"), Some(5.0));
        assert_eq!(
            out[1]
                .aggs
                .iter()
                .find(|(n, _)| n == "summarizer_calls_sum")
                .unwrap()
                .1,
            AggValue::Int(3)
        );
        assert_eq!(out[1].get("summarizer_calls_mean"), Some(1.5));
        assert!(
            out[1].aggs.iter().all(|(n, _)| n != "detail_lost_sum"),
            "detail_lost has no sum"
        );
        // Setting 3 (7, 0.3) is dominated by setting 2 (6, 0.2); the rest are on the frontier.
        let pareto: Vec<bool> = out.iter().map(|s| s.pareto).collect();
        assert_eq!(pareto, vec![true, true, true, false]);
        // No budget: cheapest compaction setting wins; baseline ranks last.
        assert!(out[1].recommended && out[1].rank == 1);
        assert_eq!(out[0].rank, 4);

        let b = Budgets {
            broken_references: Some(0.25),
            ..Default::default()
        };
        let out = summarize(&set, &rows, &b);
        assert!(
            out[2].recommended,
            "cheapest within the broken-references budget"
        );
        assert!(!out[1].within_budget && out[1].rank == 2 && out[3].rank == 3);

        // A detail_lost budget still limits how much is compacted: only setting 1 (0.4).
        let b = Budgets {
            detail_lost: Some(0.45),
            ..Default::default()
        };
        assert!(summarize(&set, &rows, &b)[1].recommended);

        let b = Budgets {
            broken_references: Some(0.1),
            ..Default::default()
        };
        let out = summarize(&set, &rows, &b);
        assert!(recommended(&out).is_none());
        let msg = budget_error(&out, &b);
        assert!(
            msg.contains("--budget-broken-references 0.1") && msg.contains("no setting meets it"),
            "{msg}"
        );
        assert!(
            msg.contains("after_tokens=2000"),
            "closest is the 0.2 setting: {msg}"
        );
    }
}

#[cfg(test)]
mod policy_tests {
    use super::*;

    fn f(id: u32, cost: f64, policy: bool) -> RuleFigures {
        RuleFigures {
            setting_id: id,
            baseline: id == 0,
            alternative: false,
            policy,
            cost,
            broken_references: 0.01,
            detail_lost: 0.1,
            wait_p95: 0.0,
            thrash: false,
        }
    }

    /// Issue 38: a thrashing setting keeps its rank but the next one is recommended.
    #[test]
    fn a_thrashing_setting_is_never_picked() {
        let mut figures = [f(0, 10.0, false), f(1, 8.0, false), f(2, 5.0, false)];
        let b = Budgets::default();
        assert_eq!(pick(&figures, &b), Some(2));
        figures[2].thrash = true;
        assert_eq!(rank_order(&figures, &b)[0], 2, "still ranked by cost");
        assert_eq!(pick(&figures, &b), Some(1));
        assert!(!meets_budgets(&figures[2], &b));
    }

    /// Issue 28: a policy is ranked with the ADK settings (cheapest first) but the
    /// recommendation is the best-ranked ADK setting: a policy is never a line to paste.
    #[test]
    fn a_cheaper_policy_ranks_first_but_is_never_picked() {
        let figures = [f(0, 10.0, false), f(1, 8.0, false), f(2, 5.0, true)];
        let b = Budgets::default();
        assert_eq!(rank_order(&figures, &b), vec![2, 1, 0]);
        assert_eq!(pick(&figures, &b), Some(1));
        assert!(!meets_budgets(&figures[2], &b));
        // only policies and the baseline: nothing to recommend
        assert_eq!(pick(&[f(0, 10.0, false), f(2, 5.0, true)], &b), None);
    }
}
