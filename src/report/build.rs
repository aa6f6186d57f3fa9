//! The report's content, as renderer-neutral blocks: the sections in order, and the small
//! text helpers they share. The figures are computed in [`super::figures`]; each section's
//! wording lives in its own file.

use super::alternatives::{alternatives, other_policies};
use super::frontier::{frontier_table, summarizers};
use super::pitfalls::pitfalls;
use super::recommend::recommendation;
use super::recorded::recorded_compactions;
use super::run_facts::{skipped, summarizer_errors, what_was_run};
use super::{t, Block, Inline};
use crate::chart::ChartOutcome;
use crate::table::folder::{RunData, SettingRow};
use crate::table::format::{money_format, CENTS_FROM_USD};
use serde_json::Value;

pub(super) fn s(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(x) => Some(x.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

pub(super) fn secs(v: f64) -> String {
    format!("{v:.1} s")
}

/// One money format for the whole report, chosen from the no-compaction cost (see
/// [`money_format`]).
pub(super) fn money(d: &RunData) -> fn(f64) -> String {
    money_format(money_scale(d))
}

/// The decimals of the run's money (see [`money`]), for the explorer.
pub fn money_decimals(d: &RunData) -> usize {
    if money_scale(d) >= CENTS_FROM_USD {
        2
    } else {
        4
    }
}

/// What the run's money is measured against: the no-compaction cost, else the dearest
/// setting's.
fn money_scale(d: &RunData) -> f64 {
    d.baseline()
        .and_then(|b| b.cost_usd())
        .or_else(|| {
            d.settings
                .iter()
                .filter_map(|x| x.cost_usd())
                .reduce(f64::max)
        })
        .unwrap_or(0.0)
}

pub(super) fn opt(v: Option<f64>, f: fn(f64) -> String) -> String {
    opt_with(v, &f)
}

pub(super) fn opt_with(v: Option<f64>, f: &dyn Fn(f64) -> String) -> String {
    v.map(f).unwrap_or_else(|| "n/a".to_string())
}

/// Flattens a JSON value into `key: value` text for the "what was run" table.
pub(super) fn flat(v: &Value) -> String {
    match v {
        Value::Null => "none".to_string(),
        Value::Object(o) if o.is_empty() => "none".to_string(),
        Value::String(x) => x.clone(),
        Value::Array(a) => a.iter().map(flat).collect::<Vec<_>>().join(", "),
        Value::Object(o) => o
            .iter()
            .map(|(k, x)| format!("{k}: {}", flat(x)))
            .collect::<Vec<_>>()
            .join("; "),
        other => other.to_string(),
    }
}

/// The `Compaction(...)` part of the label, for tables.
pub(super) fn table_label(s: &SettingRow) -> String {
    s.label.trim().trim_start_matches("compaction=").to_string()
}

/// The `compaction=Compaction(...)` line ready to paste into the manifest.
pub fn paste_line(s: &SettingRow) -> String {
    let l = s.label.trim();
    if s.is_policy() || l.starts_with("compaction=") {
        l.to_string()
    } else {
        format!("compaction={l}")
    }
}

/// The run's name (`run.json` `run`, else `name`).
pub fn run_name(d: &RunData) -> String {
    s(d.run.get("run"))
        .or_else(|| s(d.run.get("name")))
        .unwrap_or_else(|| "run".into())
}

pub fn build(d: &RunData, charts: &[ChartOutcome]) -> Vec<Block> {
    let mut b = Vec::new();
    let name = run_name(d);
    let sessions = d.sessions;
    b.push(Block::Heading(1, format!("Compaction report: {name}")));
    let detail_words = if d.settings.iter().any(|s| s.broken_references().is_some()) {
        "detail lost is measured as broken references: the share of the facts the agent used later that no text it could still read held (measured on summary texts, estimated for summarizers that write none), averaged over sessions"
    } else {
        "detail lost is the share of history a model request read only through a summary, averaged over sessions (a run made before broken references)"
    };
    b.push(Block::Para(vec![Inline::Text(format!(
        "{} settings replayed over {sessions} sessions with google-adk 2.13.0 compaction semantics. All money is USD over all sessions of the run; {detail_words}.",
        d.settings.len()
    ))]));
    b.push(Block::Para(t(
        "Read it in order: the recommendation says what to deploy and what it costs you; the frontier lists the settings worth considering instead; the charts show why; the alternatives say where something other than compaction would do better.",
    )));
    recommendation(d, &mut b);
    pitfalls(d, &mut b);
    b.push(Block::Explorer);
    what_was_run(d, sessions, &mut b);
    frontier_table(d, &mut b);
    b.push(Block::Heading(2, "Charts".into()));
    for c in charts {
        let info = c.info();
        match c {
            ChartOutcome::Rendered { svg, note, .. } => b.push(Block::Chart {
                stem: info.stem.to_string(),
                title: info.title.to_string(),
                how: info.how_to_read.to_string(),
                note: note.clone(),
                svg: Some(svg.clone()),
                skipped: None,
            }),
            ChartOutcome::Skipped { reason, .. } => b.push(Block::Chart {
                stem: info.stem.to_string(),
                title: info.title.to_string(),
                how: info.how_to_read.to_string(),
                note: String::new(),
                svg: None,
                skipped: Some(reason.clone()),
            }),
        }
    }
    summarizers(d, &mut b);
    skipped(d, &mut b);
    summarizer_errors(d, &mut b);
    other_policies(d, &mut b);
    recorded_compactions(d, &mut b);
    alternatives(d, &mut b);
    glossary(&mut b);
    b
}

fn glossary(b: &mut Vec<Block>) {
    b.push(Block::Heading(2, "How to read the numbers".into()));
    b.push(Block::List(vec![
        t("cost: agent model requests plus summarizer calls, USD, at the run's dated prices, with prompt caching where the price table has cached rates; a compaction rewrites the prompt, so the next request misses the cache."),
        t("saved vs none: the no-compaction cost minus the setting's cost, both over all sessions at the same prices; negative means compaction costs more (summaries, cache misses)."),
        t("broken references (the detail lost the charts and the recommendation use): over a session, of the facts (paths, ids, numbers, URLs, quoted strings) each model event used that its request's history held, the share that no text the request could still read held: neither an event kept verbatim nor a summary's text. Measured on the text of summarizers that write one; estimated for modelled ones from the retention of recorded summaries, between a low bound (facts only beyond ADK's 2,000-character cut of a tool payload) and a high bound (every reference at risk)."),
        t("history read only through summaries (detail_lost): over a session, the share of the history tokens its model requests would have read verbatim that they read only through a summary (0 % = nothing summarized), whatever the summary keeps."),
        t("critical hidden: approvals, refusals, confirmations, tool errors and interruptions that a later request saw only through a summary."),
        t("facts dropped: for summarizers that write text (terse, command), the share of facts (numbers, ids, emails, URLs, paths, quoted strings) of the compacted spans missing from the summary."),
        t("end-of-run latency: summarizer time after a run's last event; the reply has streamed, but a client that waits for the terminal event (runtime.run(), client mode waits) waits for it."),
        t("pre-request latency: summarizer time before a model request (size trigger); the answer itself waits for it."),
        t("client waits / streams: whether the next turn starts after the summary (waits) or at its recorded time, discarding a summary still being written (streams)."),
    ]));
}

#[cfg(test)]
mod tests {
    use super::super::run_facts::budgets_words;
    use super::*;
    use crate::table::folder::parse_settings;
    use std::path::Path;

    fn data(base_cost: f64) -> RunData {
        let settings = serde_json::json!([
            {"setting_id": 0, "trigger_kind": "none", "cost_usd_sum": base_cost, "pareto": true, "summarizer_calls_sum": 0},
            {"setting_id": 1, "trigger_kind": "tokens", "after_tokens": 20000, "keep_recent_events": 5, "cost_usd_sum": base_cost / 2.0, "pareto": true, "summarizer_calls_sum": 3, "recommended": true}
        ]);
        RunData::from_rows(
            Path::new("."),
            serde_json::json!({}),
            parse_settings(Path::new("settings.json"), &settings).expect("settings"),
            Vec::new(),
            Vec::new(),
        )
    }

    #[test]
    fn money_has_one_precision_per_run_chosen_from_the_baseline_cost() {
        // A few dollars: 4 decimals, so $1.3912 and $1.4259 do not both read $1.39/$1.43.
        let small = money(&data(1.98));
        assert_eq!(small(1.425865), "$1.4259");
        assert_eq!(small(-0.026447), "-$0.0264");
        assert_eq!(small(0.0), "$0.0000");
        // Hundreds of dollars: cents, grouped.
        let big = money(&data(2500.0));
        assert_eq!(big(1234.567), "$1,234.57");
        assert_eq!(crate::table::format::fmt_usd4(12345.6), "$12,345.6000");
    }

    /// A run whose settings are `(id, cost, broken share, recommended)`, all on the frontier,
    /// plus a dominated baseline.
    fn frontier_run(rows: &[(u32, f64, f64, bool)]) -> RunData {
        let mut v = vec![
            serde_json::json!({"setting_id": 0, "trigger_kind": "none", "cost_usd_sum": 9.0,
            "references_broken_share_mean": 0.0, "pareto": false, "summarizer_calls_sum": 0,
            "label": "compaction=None"}),
        ];
        for &(id, cost, broken, reco) in rows {
            v.push(
                serde_json::json!({"setting_id": id, "trigger_kind": "invocations",
                "after_invocations": id, "overlap": 0, "summarizer": "terse",
                "label": format!("compaction=Compaction(after_invocations={id}, overlap=0)"),
                "cost_usd_sum": cost, "references_broken_share_mean": broken,
                "references_basis": "measured", "pareto": true, "summarizer_calls_sum": 3,
                "recommended": reco}),
            );
        }
        RunData::from_rows(
            Path::new("."),
            serde_json::json!({}),
            parse_settings(Path::new("settings.json"), &serde_json::Value::Array(v))
                .expect("settings"),
            Vec::new(),
            Vec::new(),
        )
    }

    fn frontier_lines(md: &str) -> Vec<Vec<String>> {
        md.lines()
            .filter(|l| l.starts_with("| F"))
            .map(|l| l.split(" | ").map(str::to_string).collect())
            .collect()
    }

    #[test]
    fn frontier_rows_never_print_the_same_cost_or_broken_references() {
        // F1 and F2 of the default run: 10.6843 % and 10.6518 % both read 10.7 % at one
        // decimal; costs $1.00001 and $1.00004 both read $1.0000 at four.
        let d = frontier_run(&[
            (1, 1.00001, 0.106843, true),
            (2, 1.00004, 0.106518, false),
            (3, 1.5, 0.01, false),
        ]);
        let md = super::super::to_markdown(&build(&d, &[]));
        let rows = frontier_lines(&md);
        assert_eq!(rows.len(), 3, "{md}");
        for col in [3, 5] {
            let printed: std::collections::BTreeSet<&str> =
                rows.iter().map(|r| r[col].as_str()).collect();
            assert_eq!(
                printed.len(),
                rows.len(),
                "column {col} repeats a figure: {md}"
            );
        }
        assert!(md.contains("10.68 %") && md.contains("10.65 %"), "{md}");
        assert!(md.contains("$1.00001") && md.contains("$1.00004"), "{md}");
    }

    #[test]
    fn settings_tied_on_cost_and_broken_references_are_one_frontier_row() {
        let d = frontier_run(&[
            (1, 1.0, 0.2, true),
            (2, 1.2, 0.1, false),
            (3, 1.2, 0.1, false),
        ]);
        let md = super::super::to_markdown(&build(&d, &[]));
        let rows = frontier_lines(&md);
        assert_eq!(rows.len(), 2, "{md}");
        assert!(
            rows[1][1].contains(
                "`Compaction(after_invocations=2, overlap=0)` or `Compaction(after_invocations=3, overlap=0)`"
            ),
            "{md}"
        );
        // Two settings that differ only beyond the stored precision are one row too.
        let d = frontier_run(&[(1, 1.0, 0.1068431, true), (2, 1.0000001, 0.1068430, false)]);
        let md = super::super::to_markdown(&build(&d, &[]));
        assert_eq!(frontier_lines(&md).len(), 1, "{md}");
    }

    #[test]
    fn advice_names_only_a_setting_that_loses_strictly_less_as_printed() {
        // The cheaper step loses less only beyond any printed precision: it is not advice.
        let d = frontier_run(&[
            (1, 1.0, 0.1068431, true),
            (2, 1.1, 0.1068430, false),
            (3, 1.3, 0.05, false),
        ]);
        let md = super::super::to_markdown(&build(&d, &[]));
        let advice = md
            .lines()
            .find(|l| l.starts_with("If that loses too much detail"))
            .expect("an advice line");
        assert!(
            advice.contains("`Compaction(after_invocations=3, overlap=0)`"),
            "{advice}"
        );
        assert!(advice.contains("loses 5.0 % instead of 10.7 %"), "{advice}");
        // With no setting losing less as printed there is no advice at all.
        let d = frontier_run(&[(1, 1.0, 0.1068431, true), (2, 1.1, 0.1068430, false)]);
        let md = super::super::to_markdown(&build(&d, &[]));
        assert!(!md.contains("If that loses too much detail"), "{md}");
    }

    #[test]
    fn budgets_read_as_words_with_units() {
        let v = serde_json::json!({"detail_lost": 0.2, "latency_s": 5});
        let w = budgets_words(Some(&v)).expect("words");
        assert!(
            w.contains("history read only through summaries at most 20.0 % (mean per session)"),
            "{w}"
        );
        assert!(w.contains("longest summarizer wait at most 5.0 s"), "{w}");
        assert_eq!(budgets_words(Some(&serde_json::json!({}))), None);
        assert_eq!(budgets_words(None), None);
    }
}
