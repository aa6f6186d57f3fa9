//! The figures the report states, computed from the run folder's data before any sentence is
//! written: the sections in [`super::recommend`], [`super::frontier`] and
//! [`super::alternatives`] only word them.

use crate::table::folder::{frontier_groups, idle_frontier, RunData, SessionRow, SettingRow};
use serde_json::Value;

/// A share of sessions' history above which a session is listed as better kept short.
pub(super) const SHORT_DETAIL: f64 = 0.30;

/// Model calls in one invocation above which `max_llm_calls` is worth suggesting.
pub(super) const LLM_CALLS_CAP: f64 = 25.0;

/// Share of a session's prompt tokens spent re-sending attachments above which loading them
/// as artifacts is suggested.
pub(super) const ATTACH_SHARE: f64 = 0.10;

/// The frontier's detail axis: broken references, or detail lost for older runs.
pub(super) fn frontier_axis(x: &SettingRow) -> Option<f64> {
    x.broken_references().or_else(|| x.detail_lost())
}

/// The next frontier step toward less detail lost from the recommended setting.
pub(super) struct SaferStep<'a> {
    pub setting: &'a SettingRow,
    pub cost: f64,
    pub loss: f64,
    pub recommended_cost: f64,
    pub recommended_loss: f64,
}

/// The cheapest frontier setting other than `r` that loses strictly less than `r`, both as
/// stored and as the frontier prints it (`pct`).
pub(super) fn safer_step<'a>(
    d: &'a RunData,
    r: &SettingRow,
    pct: &dyn Fn(f64) -> String,
) -> Option<SaferStep<'a>> {
    let (rc, rd) = (r.cost_usd()?, frontier_axis(r)?);
    frontier_groups(d)
        .into_iter()
        .flatten()
        .filter(|f| !f.is_baseline() && !f.is_alternative() && f.setting_id != r.setting_id)
        .filter_map(|f| Some((f, f.cost_usd()?, frontier_axis(f)?)))
        .filter(|(_, _, fd)| *fd < rd && pct(*fd) != pct(rd))
        .min_by(|a, c| a.1.total_cmp(&c.1))
        .map(|(setting, cost, loss)| SaferStep {
            setting,
            cost,
            loss,
            recommended_cost: rc,
            recommended_loss: rd,
        })
}

/// What the recommended setting saves (negative: adds) against no compaction, over all
/// sessions.
pub(super) struct Saving {
    pub cost: f64,
    pub baseline_cost: f64,
    pub saved: f64,
    /// `saved` as a share of the baseline's cost (0 when that is 0).
    pub share: f64,
}

pub(super) fn saving(r: &SettingRow, base: Option<&SettingRow>) -> Option<Saving> {
    let (c, bc) = (r.cost_usd()?, base.and_then(|x| x.cost_usd())?);
    let saved = bc - c;
    Some(Saving {
        cost: c,
        baseline_cost: bc,
        saved,
        share: if bc > 0.0 { saved / bc } else { 0.0 },
    })
}

/// What a setting saves against both baselines: no compaction, and each session as its
/// framework ran it (`None` for runs made before the `as recorded` row).
pub(super) struct Savings {
    pub none: Option<Saving>,
    pub as_recorded: Option<Saving>,
}

pub(super) fn savings(d: &RunData, r: &SettingRow) -> Savings {
    Savings {
        none: saving(r, d.baseline()),
        as_recorded: saving(r, d.as_recorded()),
    }
}

/// How many sessions record the setting their framework ran with, of how many (run.json
/// `session_facts`); `None` for runs made before it was recorded.
pub(super) struct RecordedSettings {
    pub recorded: usize,
    pub sessions: usize,
}

pub(super) fn recorded_settings(d: &RunData) -> Option<RecordedSettings> {
    if !facts_record(d, "records_setting") {
        return None;
    }
    let facts = d.run.get("session_facts").and_then(Value::as_array)?;
    Some(RecordedSettings {
        recorded: facts
            .iter()
            .filter(|x| x.get("records_setting").and_then(Value::as_bool) == Some(true))
            .count(),
        sessions: facts.len(),
    })
}

/// What the sessions' prompt sizes rest on: how many record enough sizes for the
/// provider-scale fit (runs' `prompt_scale`), with the fits' medians; `None` for runs made
/// before the columns.
pub(super) struct SizeBasis {
    pub fitted: usize,
    pub sessions: usize,
    pub scale_p50: Option<f64>,
    pub error_p50: Option<f64>,
}

pub(super) fn size_basis(d: &RunData) -> Option<SizeBasis> {
    if !facts_record(d, "records_setting") {
        return None;
    }
    let rows = rows_of(d, d.baseline());
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (!v.is_empty()).then(|| crate::stats::percentile(&v, 0.5))
    };
    let scales: Vec<f64> = rows.iter().filter_map(|r| r.figures.prompt_scale).collect();
    let errors: Vec<f64> = rows
        .iter()
        .filter_map(|r| r.figures.prompt_fit_error_p50)
        .collect();
    Some(SizeBasis {
        fitted: scales.len(),
        sessions: rows.len(),
        scale_p50: median(scales),
        error_p50: median(errors),
    })
}

/// The references bases (`measured`, `estimated`) the compacting settings rest on.
pub(super) fn reference_bases(d: &RunData) -> std::collections::BTreeSet<&str> {
    d.settings
        .iter()
        .filter(|s| !s.is_baseline() && !s.references_basis.is_empty())
        .map(|s| s.references_basis.as_str())
        .filter(|b| *b != "none")
        .collect()
}

/// The run's budgets as `run.json` states them (`None`: not set).
pub(super) struct BudgetLimits {
    pub detail_lost: Option<f64>,
    pub broken_references: Option<f64>,
    pub latency_s: Option<f64>,
}

impl BudgetLimits {
    pub fn of(d: &RunData) -> BudgetLimits {
        let budget = |k: &str| {
            d.run
                .get("budgets")
                .and_then(|o| o.get(k))
                .and_then(Value::as_f64)
        };
        BudgetLimits {
            detail_lost: budget("detail_lost"),
            broken_references: budget("broken_references"),
            latency_s: budget("latency_s"),
        }
    }

    /// How far `r` is from the budgets: its largest share of a budget (1 = exactly at it).
    fn excess(&self, r: &SettingRow) -> f64 {
        let dl = self
            .detail_lost
            .map_or(0.0, |x| r.detail_lost().unwrap_or(0.0) / x.max(1e-12));
        let br = self
            .broken_references
            .map_or(0.0, |x| r.broken_references().unwrap_or(0.0) / x.max(1e-12));
        let w = self
            .latency_s
            .map_or(0.0, |x| summary_wait(r) / x.max(1e-12));
        dl.max(br).max(w)
    }
}

/// A setting's longest summary wait, end of run or before a request (p95 over sessions).
pub(super) fn summary_wait(r: &SettingRow) -> f64 {
    r.end_of_run_latency_p95()
        .unwrap_or(0.0)
        .max(r.pre_request_latency_p95().unwrap_or(0.0))
}

/// When no setting meets the budgets: the three compacting settings closest to them
/// (smallest relative excess over a budget, then cheapest), thrashing ones left out (they
/// are never recommended, docs/pitfalls.md).
pub(super) fn closest_to_budgets<'a>(d: &'a RunData, limits: &BudgetLimits) -> Vec<&'a SettingRow> {
    let mut rows: Vec<&SettingRow> = d
        .settings
        .iter()
        .filter(|r| !r.is_baseline() && !r.never_compacts() && !r.is_as_recorded())
        .filter(|r| r.num(&["thrash_sessions"]).unwrap_or(0.0) == 0.0)
        .collect();
    rows.sort_by(|x, y| {
        limits
            .excess(x)
            .total_cmp(&limits.excess(y))
            .then(
                x.cost_usd()
                    .unwrap_or(0.0)
                    .total_cmp(&y.cost_usd().unwrap_or(0.0)),
            )
            .then(x.setting_id.cmp(&y.setting_id))
    });
    rows.truncate(3);
    rows
}

/// Frontier settings whose trigger no session reached, and the lowest triggers among them.
pub(super) struct IdleFrontier {
    pub count: usize,
    pub lowest_after_tokens: Option<u64>,
    pub lowest_after_invocations: Option<u64>,
}

pub(super) fn idle_frontier_figures(d: &RunData) -> Option<IdleFrontier> {
    let idle = idle_frontier(d);
    (!idle.is_empty()).then(|| IdleFrontier {
        count: idle.len(),
        lowest_after_tokens: idle.iter().filter_map(|s| s.after_tokens).min(),
        lowest_after_invocations: idle.iter().filter_map(|s| s.after_invocations).min(),
    })
}

/// Per-session input facts from `run.json` `session_facts[]`, when the run recorded them,
/// matched on session id and (when both name one) source file: ids need not be unique.
/// Indexed by session id once, so a run of many sessions is not searched once per row.
pub(super) struct SessionFacts<'a> {
    by_id: std::collections::HashMap<&'a str, Vec<&'a Value>>,
}

impl<'a> SessionFacts<'a> {
    pub fn new(d: &'a RunData) -> SessionFacts<'a> {
        let mut by_id: std::collections::HashMap<&str, Vec<&Value>> = Default::default();
        let facts = d.run.get("session_facts").and_then(Value::as_array);
        for x in facts.into_iter().flatten() {
            if let Some(id) = x.get("session_id").and_then(Value::as_str) {
                by_id.entry(id).or_default().push(x);
            }
        }
        SessionFacts { by_id }
    }

    /// The first fact of `r`'s session (in run.json order) holding `key`'s value.
    pub fn get(&self, r: &SessionRow, key: &str) -> Option<f64> {
        self.by_id
            .get(r.session_id.as_str())?
            .iter()
            .find(|x| match x.get("source").and_then(Value::as_str) {
                Some(src) if !r.source.is_empty() => src == r.source,
                _ => true,
            })?
            .get(key)?
            .as_f64()
    }
}

/// Whether any session fact of the run records `key` (older runs lack some).
fn facts_record(d: &RunData, key: &str) -> bool {
    d.run
        .get("session_facts")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|x| x.get(key).is_some()))
}

/// The rows of one setting, in file order (empty for `None`).
fn rows_of<'a>(d: &'a RunData, setting: Option<&SettingRow>) -> Vec<&'a SessionRow> {
    match setting {
        Some(s) => d
            .runs
            .iter()
            .filter(|x| x.setting_id == s.setting_id)
            .collect(),
        None => Vec::new(),
    }
}

/// Sessions that lose much even under the recommended setting (more than [`SHORT_DETAIL`]
/// of their history, or a critical event), most detail lost first, of how many.
pub(super) struct ShortSessions<'a> {
    pub sessions: Vec<&'a SessionRow>,
    /// The recommended setting's sessions.
    pub of: usize,
}

pub(super) fn short_sessions(d: &RunData) -> ShortSessions<'_> {
    let reco = rows_of(d, d.recommended());
    let mut short: Vec<&SessionRow> = reco
        .iter()
        .copied()
        .filter(|r| {
            r.figures.detail_lost.unwrap_or(0.0) > SHORT_DETAIL
                || r.figures.critical_hidden.unwrap_or(0.0) > 0.0
        })
        .collect();
    short.sort_by(|a, c| {
        c.figures
            .detail_lost
            .unwrap_or(0.0)
            .total_cmp(&a.figures.detail_lost.unwrap_or(0.0))
            .then(a.session_id.cmp(&c.session_id))
    });
    ShortSessions {
        sessions: short,
        of: reco.len(),
    }
}

/// A session whose attached files, re-sent with every request, are a large share of its
/// prompt tokens.
pub(super) struct AttachmentHit {
    pub session_id: String,
    pub tokens: f64,
    pub requests: f64,
    pub share: f64,
}

/// Sessions re-sending attachments above [`ATTACH_SHARE`] of their prompt tokens; `None`
/// when the run recorded no attachment sizes.
pub(super) fn attachment_hits(d: &RunData) -> Option<Vec<AttachmentHit>> {
    if !facts_record(d, "attachment_tokens") {
        return None;
    }
    let facts = SessionFacts::new(d);
    let mut hits = Vec::new();
    for r in rows_of(d, d.baseline()) {
        let at = facts.get(r, "attachment_tokens").unwrap_or(0.0);
        let reqs = facts.get(r, "requests_with_attachment").unwrap_or(0.0);
        let total = r.figures.baseline_prompt_tokens.unwrap_or(0.0);
        let resent = at * reqs;
        if at > 0.0 && total > 0.0 && resent / total > ATTACH_SHARE {
            hits.push(AttachmentHit {
                session_id: r.session_id.clone(),
                tokens: at,
                requests: reqs,
                share: resent / total,
            });
        }
    }
    Some(hits)
}

/// Sessions with an invocation of more than [`LLM_CALLS_CAP`] model calls (id, most calls
/// in one invocation), most first; `None` when the run recorded no calls per invocation.
pub(super) fn long_invocations(d: &RunData) -> Option<Vec<(String, f64)>> {
    if !facts_record(d, "max_model_requests_per_invocation") {
        return None;
    }
    let facts = SessionFacts::new(d);
    let mut hits: Vec<(String, f64)> = rows_of(d, d.baseline())
        .iter()
        .filter_map(|r| {
            let m = facts.get(r, "max_model_requests_per_invocation")?;
            (m > LLM_CALLS_CAP).then(|| (r.session_id.clone(), m))
        })
        .collect();
    hits.sort_by(|a, c| c.1.total_cmp(&a.1).then(a.0.cmp(&c.0)));
    Some(hits)
}

/// The sessions whose runs fail under the tightest `max_llm_calls` cap, with their failed
/// invocations, most first.
pub(super) fn failed_under_cap(d: &RunData) -> Option<(&SettingRow, Vec<(&SessionRow, f64)>)> {
    let tight = crate::table::folder::tightest_cap(&d.alternatives)?;
    let mut hit: Vec<(&SessionRow, f64)> = d
        .runs
        .iter()
        .filter(|r| r.setting_id == tight.setting_id)
        .filter_map(|r| {
            let n = r.figures.invocations_failed?;
            (n > 0.0).then_some((r, n))
        })
        .collect();
    hit.sort_by(|a, c| {
        c.1.total_cmp(&a.1)
            .then(a.0.session_id.cmp(&c.0.session_id))
    });
    Some((tight, hit))
}

/// What loading files as artifacts removes: shares of the prompt tokens and of the dollars.
pub(super) fn artifact_savings(a: &SettingRow) -> Option<(f64, f64)> {
    let share = |num: &str, den: &str| match (a.num(&[num]), a.num(&[den])) {
        (Some(n), Some(d)) if d > 0.0 => Some(n / d),
        _ => None,
    };
    Some((
        share("tokens_saved_gross_sum", "baseline_prompt_tokens_sum")?,
        share("cost_saved_usd_sum", "baseline_cost_usd_sum")?,
    ))
}

/// The alternative that beats the recommended setting: the rule of
/// [`crate::table::summary::better_alternative`] over settings.json's rows and the run's
/// budgets.
pub(super) fn beating_alternative(d: &RunData) -> Option<&SettingRow> {
    let rc = d.recommended()?.cost_usd()?;
    best_within_budgets(d, d.alternatives.iter()).filter(|a| a.cost_usd().is_some_and(|c| c < rc))
}

/// The cheapest of `rows` that meets the run's budgets with no failed run.
pub(super) fn best_within_budgets<'a>(
    d: &RunData,
    rows: impl Iterator<Item = &'a SettingRow>,
) -> Option<&'a SettingRow> {
    let budgets: crate::sweep::grid::Budgets = d
        .run
        .get("budgets")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    rows.enumerate()
        .filter(|(_, a)| a.num(&["invocations_failed_sum"]).unwrap_or(0.0) == 0.0)
        .filter(|(i, a)| {
            let mut f = super::explorer::rule_figures(a, *i);
            f.baseline = false;
            crate::table::summary::within_budgets(&f, &budgets)
        })
        .filter_map(|(_, a)| Some((a, a.cost_usd()?)))
        .min_by(|x, y| x.1.total_cmp(&y.1))
        .map(|(a, _)| a)
}

/// A setting whose summary alone reaches `after_tokens` in some sessions, so compaction
/// re-fires on every turn there (docs/pitfalls.md §1): never recommended.
pub(super) struct Thrashing<'a> {
    pub setting: &'a SettingRow,
    /// `thrash_sessions`: sessions where it thrashed.
    pub sessions: f64,
    /// `thrash`: the compactions (each a summarizer call) made only because of it.
    pub compactions: f64,
}

/// The thrashing settings in file order (none for runs made before the columns).
pub(super) fn thrashing(d: &RunData) -> Vec<Thrashing<'_>> {
    d.settings
        .iter()
        .filter_map(|s| {
            let sessions = s.num(&["thrash_sessions"]).filter(|&n| n > 0.0)?;
            Some(Thrashing {
                setting: s,
                sessions,
                compactions: s.num(&["thrash"]).unwrap_or(0.0),
            })
        })
        .collect()
}
