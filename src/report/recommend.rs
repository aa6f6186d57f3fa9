//! The report's "Recommendation" section: what to deploy, why, what it costs, and when none
//! meets the budgets, how close the nearest settings come.

use super::build::{money, opt, paste_line, s, secs, table_label};
use super::figures::{
    beating_alternative, closest_to_budgets, recorded_settings, reference_bases, safer_step,
    savings, summary_wait, BudgetLimits, SaferStep, Saving, Savings,
};
use super::frontier::frontier_format;
use super::run_facts::budgets_words;
use super::{t, Block, Inline};
use crate::table::folder::{RunData, SettingRow};
use crate::table::format::{fmt_int as int, fmt_pct};

pub(super) fn recommendation(d: &RunData, b: &mut Vec<Block>) {
    b.push(Block::Heading(2, "Recommendation".into()));
    let Some(r) = d.recommended() else {
        none_recommended(d, b);
        return;
    };
    if let Some(a) = beating_alternative(d) {
        b.push(beaten_by(d, r, a));
    }
    b.push(Block::Para(t(
        "Paste this line into the agent's MANIFEST (AgentManifest(..., compaction=...)):",
    )));
    b.push(Block::Code(paste_line(r)));
    b.push(Block::Para(why(d, r)));
    // The next frontier step toward less detail lost, so a reader who finds the loss too high
    // sees what keeping more costs: only a setting that loses strictly less as printed.
    let ff = frontier_format(d);
    if let Some(step) = safer_step(d, r, &ff.pct) {
        b.push(safer_step_words(&step, &ff.usd, &ff.pct));
    }
    if d.settings
        .iter()
        .any(|x| x.numbers.get("cost_complete") == Some(&0.0))
    {
        b.push(Block::Para(t(
            "Caution: some model had no price in the run's pricing table, so some cost columns are lower bounds (cost_complete = false in settings.json).",
        )));
    }
    b.push(against_baseline(d, r));
    if let Some(words) = as_recorded_words(d) {
        b.push(words);
    }
    if r.facts_dropped().is_none() {
        b.push(Block::Para(t(format!(
            "Facts dropped is n/a: the {} summarizer is modelled from token counts and writes no text to check; the summarizer table below shows it for summarizers that do.",
            if r.summarizer.is_empty() { "chosen" } else { r.summarizer.as_str() }
        ))));
    }
}

/// No setting met the budgets: why, and the settings closest to them.
fn none_recommended(d: &RunData, b: &mut Vec<Block>) {
    let why = s(d.run.get("recommendation_note"))
        .or_else(|| s(d.run.get("recommendation").and_then(|r| r.get("reason"))))
        .unwrap_or_else(|| "no setting met the run's budgets".to_string());
    b.push(Block::Para(vec![
        Inline::Strong("No setting meets the run's budgets, so none is recommended.".into()),
        Inline::Text(format!(" {why}.")),
    ]));
    closest_settings(d, b);
}

/// One of the guide's alternatives is cheaper than the recommended setting within the budgets.
fn beaten_by(d: &RunData, r: &SettingRow, a: &SettingRow) -> Block {
    let m = money(d);
    Block::Para(vec![
        Inline::Strong(format!(
            "One of the guide's alternatives beats every compaction setting within the budgets: {}.",
            a.label
        )),
        Inline::Text(format!(
            " It costs {} against {} for the recommended setting, with {} broken references (mean per session) and no failed run. To deploy it: {}. The Alternatives section prices it beside the others; the compaction setting below is the best if you keep the sessions as they are.",
            opt(a.cost_usd(), m),
            opt(r.cost_usd(), m),
            opt(a.broken_references(), fmt_pct),
            crate::table::summary::deploy_text(&a.label, &a.alternative)
        )),
    ])
}

/// Why this setting: the budget that chose it, what it saves, and what it loses.
fn why(d: &RunData, r: &SettingRow) -> Vec<Inline> {
    let mut why = why_chosen(d);
    let usd = money(d);
    match savings(d, r) {
        Savings {
            none: Some(sv),
            as_recorded: Some(ar),
        } => why.push(Inline::Text(format!(
            "It costs {} against {} with no compaction and {} as recorded (each session under the setting its framework ran with; all sessions): it {} against no compaction, {} against as recorded; it ",
            usd(sv.cost),
            usd(sv.baseline_cost),
            usd(ar.baseline_cost),
            saves_words(&sv, &usd),
            saves_words(&ar, &usd)
        ))),
        Savings { none: Some(sv), .. } => why.push(Inline::Text(format!(
            "It costs {} against {} with no compaction (all sessions), {} {} ({}); it ",
            usd(sv.cost),
            usd(sv.baseline_cost),
            if sv.saved >= 0.0 { "saving" } else { "adding" },
            usd(sv.saved.abs()),
            fmt_pct(sv.share.abs())
        ))),
        _ => {}
    }
    why.push(Inline::Text(format!(
        "reads {} of the history only through summaries (mean per session), makes a run that compacts wait up to {} longer for its terminal event (p95 over sessions), and hides {} behind a summary.",
        opt(r.detail_lost(), fmt_pct),
        opt(r.end_of_run_latency_p95(), secs),
        r.critical_hidden()
            .map(|n| format!("{} critical {} (approvals, refusals, confirmations, tool errors)", int(n), if n.round() == 1.0 { "event" } else { "events" }))
            .unwrap_or_else(|| "an unknown number of critical events".into())
    )));
    if let Some(br) = r.broken_references() {
        why.push(Inline::Text(format!(
            " Of the facts the agent used later, its summaries fail to keep {} (broken references, mean per session; {}).",
            fmt_pct(br),
            basis_words(r)
        )));
    }
    if reference_bases(d).len() > 1 {
        why.push(Inline::Text(
            " Summarizers here rest on different bases: broken references are measured on the texts of summarizers that write one and estimated (retention of recorded summaries, with bounds) for modelled ones, so compare them with the bounds in the summarizer comparison.".into(),
        ));
    }
    why
}

/// What the `as recorded` row replays: how many sessions record their framework's setting,
/// and that the others are replayed without compaction there.
fn as_recorded_words(d: &RunData) -> Option<Block> {
    d.as_recorded()?;
    let n = recorded_settings(d)?;
    let none = n.sessions - n.recorded;
    Some(Block::Para(t(format!(
        "As recorded: each session replayed under the setting its framework ran with, as its transcript records it (SWE-agent's history processors, OpenHands' condenser, Claude Code's version, Codex's auto-compact limit). {} of {} sessions record one; {} {} none, so as recorded is no compaction for {}.",
        n.recorded,
        n.sessions,
        none,
        if none == 1 { "records" } else { "record" },
        if none == 1 { "it" } else { "them" },
    ))))
}

/// `saves $X (P%)` or `adds $X (P%)`.
fn saves_words(sv: &Saving, usd: &dyn Fn(f64) -> String) -> String {
    format!(
        "{} {} ({})",
        if sv.saved >= 0.0 { "saves" } else { "adds" },
        usd(sv.saved.abs()),
        fmt_pct(sv.share.abs())
    )
}

/// The rule that chose the setting: the cheapest, within the run's budgets if it set any.
fn why_chosen(d: &RunData) -> Vec<Inline> {
    // The flags as code, so they read as flags and never break at their hyphens.
    let flags = |lead: String, tail: &str| {
        vec![
            Inline::Text(lead),
            Inline::Code("--budget-broken-references".into()),
            Inline::Text(", ".into()),
            Inline::Code("--budget-detail-lost".into()),
            Inline::Text(" and ".into()),
            Inline::Code("--budget-latency".into()),
            Inline::Text(tail.into()),
        ]
    };
    match budgets_words(d.run.get("budgets")) {
        None => flags(
            "Why: it is the cheapest compacting setting; the run set no budget, so nothing limited the detail it may lose (sweep with ".into(),
            " to set limits). ",
        ),
        Some(b) => flags(
            format!("Why: it is the cheapest setting within the run's budget, {b}; budgets are set with "),
            ". ",
        ),
    }
}

/// How a setting's broken references were found: measured, or estimated with bounds.
fn basis_words(r: &SettingRow) -> String {
    match r.references_basis.as_str() {
        "estimated" => format!(
            "estimated, as {} writes no text: between {} and {} references of {} over the run",
            r.summarizer,
            opt(r.num(&["references_broken_low_sum"]), int),
            opt(r.num(&["references_broken_high_sum"]), int),
            opt(r.num(&["references_sum"]), int)
        ),
        "measured" => "measured on the summary texts".to_string(),
        _ => "nothing was at risk".to_string(),
    }
}

fn safer_step_words(
    step: &SaferStep,
    usd: &dyn Fn(f64) -> String,
    pct: &dyn Fn(f64) -> String,
) -> Block {
    Block::Para(vec![
        Inline::Text("If that loses too much detail: ".into()),
        Inline::Code(table_label(step.setting)),
        Inline::Text(format!(
            " loses {} instead of {} and costs {} {}.",
            pct(step.loss),
            pct(step.recommended_loss),
            usd((step.cost - step.recommended_cost).abs()),
            if step.cost >= step.recommended_cost {
                "more"
            } else {
                "less"
            }
        )),
    ])
}

/// The recommended setting's figures beside no compaction's.
fn against_baseline(d: &RunData, r: &SettingRow) -> Block {
    type Getter = fn(&SettingRow) -> Option<f64>;
    type Fmt = fn(f64) -> String;
    let usd = money(d);
    let rows: Vec<(&str, Getter, Fmt)> = vec![
        ("cost (USD, all sessions)", |x| x.cost_usd(), usd),
        (
            "prompt tokens sent (all sessions)",
            |x| x.num(&["prompt_tokens_sum"]),
            int,
        ),
        ("summarizer calls", |x| x.summarizer_calls(), int),
        (
            "broken references (mean per session)",
            |x| x.broken_references(),
            fmt_pct,
        ),
        (
            "history read only through summaries (mean per session)",
            |x| x.detail_lost(),
            fmt_pct,
        ),
        (
            "longest end-of-run wait (s, p95 over sessions)",
            |x| x.end_of_run_latency_p95(),
            secs,
        ),
        (
            "longest pre-request wait (s, p95 over sessions)",
            |x| x.pre_request_latency_p95(),
            secs,
        ),
        (
            "critical events hidden (all sessions)",
            |x| x.critical_hidden(),
            int,
        ),
        (
            "facts dropped (mean per session)",
            |x| x.facts_dropped(),
            fmt_pct,
        ),
    ];
    let base = d.baseline();
    let recorded = d.as_recorded();
    let mut head = vec!["".into(), "recommended".into(), "no compaction".into()];
    head.extend(recorded.map(|_| "as recorded".to_string()));
    let mut numeric = vec![true; head.len()];
    numeric[0] = false;
    Block::Table {
        head,
        rows: rows
            .into_iter()
            .map(|(label, get, f)| {
                let mut row = vec![
                    t(label),
                    t(opt(get(r), f)),
                    t(base.map(|x| opt(get(x), f)).unwrap_or_else(|| "n/a".into())),
                ];
                row.extend(recorded.map(|x| t(opt(get(x), f))));
                row
            })
            .collect(),
        numeric,
    }
}

/// When no setting meets the budgets: the compacting settings closest to them (smallest
/// relative excess over a budget, then cheapest) and by how much each misses.
fn closest_settings(d: &RunData, b: &mut Vec<Block>) {
    let limits = BudgetLimits::of(d);
    let rows = closest_to_budgets(d, &limits);
    if rows.is_empty() {
        let thrashing = d
            .settings
            .iter()
            .any(|r| r.num(&["thrash_sessions"]).unwrap_or(0.0) > 0.0);
        b.push(Block::Para(t(if thrashing {
            "Every compacting setting that fired re-fires on every turn (ADK pitfalls, below), so none is compared with the budgets."
        } else {
            "No compacting setting fired on these sessions, so there is nothing to compare with the budgets."
        })));
        return;
    }
    let usd = money(d);
    let miss = |v: f64, limit: Option<f64>, show: &dyn Fn(f64) -> String| match limit {
        Some(l) if v > l => format!("{} (over by {})", show(v), show(v - l)),
        Some(_) => format!("{} (within)", show(v)),
        None => show(v),
    };
    b.push(Block::Para(t(
        "The settings closest to the budgets, and what each misses by (loosen a budget by at least that much, or widen the grid, to get a recommendation):",
    )));
    b.push(Block::Table {
        head: vec![
            "setting".into(),
            "broken references (mean)".into(),
            "history read only through summaries (mean)".into(),
            "summary wait p95".into(),
            "cost".into(),
        ],
        rows: rows
            .iter()
            .map(|r| {
                vec![
                    vec![Inline::Code(r.label.clone())],
                    t(match r.broken_references() {
                        Some(v) => miss(v, limits.broken_references, &|v| fmt_pct(v)),
                        None => "n/a".into(),
                    }),
                    t(miss(
                        r.detail_lost().unwrap_or(0.0),
                        limits.detail_lost,
                        &|v| fmt_pct(v),
                    )),
                    t(miss(summary_wait(r), limits.latency_s, &secs)),
                    t(r.cost_usd().map(usd).unwrap_or_else(|| "n/a".into())),
                ]
            })
            .collect(),
        numeric: vec![false, true, true, true, true],
    });
}
