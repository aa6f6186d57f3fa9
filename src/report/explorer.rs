//! The explorer on top of report.html: the run's settings as a JSON data island and a small
//! hand-written script (`explorer.js`, no library) that lets a reviewer pick a setting,
//! compare it with the recommended one and the baseline, and move the budgets.
//!
//! The page stays the static report: the explorer's section is hidden until the script runs
//! and never printed. The script applies the recommendation rule of
//! [`crate::table::summary::pick`] to the [`RuleFigures`] embedded here; a browser test holds
//! the page's pick to the CLI's. Bounded: per setting only the figures the page shows and at
//! most [`WORST_SESSIONS`] sessions; beyond [`MAX_SETTINGS`] settings, those any budget
//! could recommend, the frontier, the baselines and an even sample, and the page says so.

use crate::table::folder::{RunData, SessionRow, SettingRow, WORST_SESSIONS};
use crate::table::summary::RuleFigures;
use base64::Engine as _;
use serde_json::{json, Value};
use sha2::Digest as _;

/// The explorer's script, included in the page verbatim.
pub const SCRIPT: &str = include_str!("explorer.js");

/// The most settings embedded in full; a larger run embeds a subset (see [`embedded`]).
pub const MAX_SETTINGS: usize = 2_000;

/// The script's `'sha256-…'` source for the page's Content-Security-Policy: the only script
/// the page may run.
pub fn script_source() -> String {
    let hash = sha2::Sha256::digest(SCRIPT.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(hash)
    )
}

/// What the recommendation rule reads of a settings.json row: the same columns
/// `SettingSummary` reads (missing ones as 0), so the rule sees the figures the sweep saw.
pub fn rule_figures(s: &SettingRow, index: usize) -> RuleFigures {
    let n = |c: &str| s.num(&[c]).unwrap_or(0.0);
    RuleFigures {
        setting_id: s.setting_id.parse().unwrap_or(index as u32),
        baseline: s.is_plain_baseline(),
        alternative: s.is_alternative(),
        policy: s.is_policy(),
        cost: n("cost_usd_sum"),
        broken_references: n("references_broken_share_mean"),
        detail_lost: n("detail_lost_mean"),
        wait_p95: n("end_of_run_latency_max_s_p95").max(n("pre_request_latency_max_s_p95")),
        thrash: n("thrash_sessions") > 0.0,
    }
}

/// The settings any budgets could recommend: a compacting setting is left out only when an
/// earlier one in the rule's order (cost, broken references, id) is no worse on broken
/// references, history read only through summaries and wait, so it meets every budget this
/// one meets and is picked first.
fn could_be_picked(figures: &[RuleFigures]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..figures.len())
        .filter(|&i| !figures[i].baseline && !figures[i].policy && !figures[i].thrash)
        .collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&figures[a], &figures[b]);
        x.cost
            .total_cmp(&y.cost)
            .then(x.broken_references.total_cmp(&y.broken_references))
            .then(x.setting_id.cmp(&y.setting_id))
    });
    let mut kept: Vec<usize> = Vec::new();
    for i in order {
        let p = &figures[i];
        let beaten = kept.iter().any(|&k| {
            let q = &figures[k];
            q.broken_references <= p.broken_references
                && q.detail_lost <= p.detail_lost
                && q.wait_p95 <= p.wait_p95
        });
        if !beaten {
            kept.push(i);
        }
    }
    kept
}

/// Indexes (into `d.settings`, in file order) of the settings the page embeds, and whether
/// that is a subset.
pub fn embedded(d: &RunData) -> (Vec<usize>, bool) {
    let n = d.settings.len();
    if n <= MAX_SETTINGS {
        return ((0..n).collect(), false);
    }
    let figures: Vec<RuleFigures> = d
        .settings
        .iter()
        .enumerate()
        .map(|(i, s)| rule_figures(s, i))
        .collect();
    let mut keep = vec![false; n];
    for i in could_be_picked(&figures) {
        keep[i] = true;
    }
    for (i, s) in d.settings.iter().enumerate() {
        keep[i] |= s.is_baseline() || s.recommended || s.pareto;
    }
    let required = keep.iter().filter(|k| **k).count();
    let room = MAX_SETTINGS.saturating_sub(required);
    let rest: Vec<usize> = (0..n).filter(|&i| !keep[i]).collect();
    // An even sample of the rest, by position in settings.json: the same on every render.
    if room > 0 && !rest.is_empty() {
        let step = rest.len() as f64 / room as f64;
        for k in 0..room.min(rest.len()) {
            keep[rest[(k as f64 * step) as usize]] = true;
        }
    }
    ((0..n).filter(|&i| keep[i]).collect(), true)
}

/// Indexes (into `d.alternatives`) of the guide's alternatives the page embeds, after the
/// settings: each alternative on its own, and a combination with compaction where it is on
/// the frontier (a run with `--combine` has one per compaction setting; the report's
/// Alternatives table weighs the rest).
pub fn embedded_alternatives(d: &RunData) -> Vec<usize> {
    (0..d.alternatives.len())
        .filter(|&i| d.alternatives[i].is_baseline() || d.alternatives[i].pareto)
        .collect()
}

/// Index of `v` in `list`, added when new.
fn intern(list: &mut Vec<String>, v: &str) -> usize {
    match list.iter().position(|x| x == v) {
        Some(i) => i,
        None => {
            list.push(v.to_string());
            list.len() - 1
        }
    }
}

/// The column names of a row of the island, in order (explorer.js reads them by name).
const COLS: &[&str] = &[
    "id", "kind", "at", "keep", "ai", "ov", "sum", "cli", "model", "tok", "label", "base",
    "pareto", "reco", "baseline", "cost", "broken", "detail", "wait", "saved", "eor", "pre",
    "basis", "low", "high", "refs", "crit", "calls", "policy", "alt", "thrash",
];

/// The names the island's rows refer to by index (summarizers, clients, ...) and the
/// sessions its drill-down rows name, each listed once in first-seen order.
#[derive(Default)]
struct Names {
    summarizers: Vec<String>,
    clients: Vec<String>,
    models: Vec<String>,
    tokenizers: Vec<String>,
    bases: Vec<String>,
    sessions: Vec<(String, String)>,
    session_index: std::collections::HashMap<(String, String), usize>,
}

impl Names {
    /// One row of the island, in [`COLS`] order: `base` is the embedded index of its
    /// baseline, `saved` what it saves against that baseline.
    fn row(&mut self, s: &SettingRow, f: &RuleFigures, base: Option<usize>, saved: Value) -> Value {
        let opt = |v: Option<f64>| v.map_or(Value::Null, |x| json!(x));
        let row = vec![
            json!(f.setting_id),
            json!(s.trigger_kind),
            json!(s.after_tokens),
            json!(s.keep_recent_events),
            json!(s.after_invocations),
            json!(s.overlap),
            json!(intern(&mut self.summarizers, &s.summarizer)),
            json!(intern(&mut self.clients, &s.client)),
            json!(intern(&mut self.models, &s.agent_model)),
            json!(intern(&mut self.tokenizers, &s.tokenizer)),
            json!(if s.is_alternative() {
                s.label.clone()
            } else {
                super::build::paste_line(s)
            }),
            json!(base),
            json!(s.pareto),
            json!(s.recommended),
            json!(f.baseline),
            json!(f.cost),
            opt(s.broken_references()),
            json!(f.detail_lost),
            json!(f.wait_p95),
            saved,
            opt(s.end_of_run_latency_p95()),
            opt(s.pre_request_latency_p95()),
            json!(intern(&mut self.bases, &s.references_basis)),
            opt(s.num(&["references_broken_low_sum"])),
            opt(s.num(&["references_broken_high_sum"])),
            opt(s.num(&["references_sum"])),
            opt(s.critical_hidden()),
            opt(s.summarizer_calls()),
            json!(f.policy),
            json!(s.alternative),
            json!(f.thrash),
        ];
        debug_assert_eq!(row.len(), COLS.len());
        Value::Array(row)
    }

    /// A setting's drill-down rows: session index, then the figures explorer.js lists.
    fn worst(&mut self, rows: &[SessionRow]) -> Value {
        let w: Vec<Value> = rows
            .iter()
            .map(|r| {
                let key = (r.session_id.clone(), r.source.clone());
                let k = *self.session_index.entry(key.clone()).or_insert_with(|| {
                    self.sessions.push(key);
                    self.sessions.len() - 1
                });
                json!([
                    k,
                    r.figures.references_broken_share,
                    r.figures.detail_lost,
                    r.figures.critical_hidden,
                    r.figures.cost_usd,
                    r.figures.model_requests
                ])
            })
            .collect();
        Value::Array(w)
    }
}

/// The data island's JSON, escaped for a `<script type="application/json">` element: `<`,
/// `>`, `&` and U+2028/9 as `\uXXXX` escapes, so no transcript string can end the element or
/// be read as markup.
pub fn island(d: &RunData, money_decimals: usize) -> String {
    let (shown, sampled) = embedded(d);
    let mut names = Names {
        bases: vec![String::new()],
        ..Names::default()
    };
    let position: std::collections::HashMap<usize, usize> =
        shown.iter().enumerate().map(|(k, &i)| (i, k)).collect();
    let alternatives = embedded_alternatives(d);
    let mut rows = Vec::with_capacity(shown.len() + alternatives.len());
    let mut worst = Vec::with_capacity(shown.len() + alternatives.len());
    // The settings, then the alternatives (no per-session rows are kept for those).
    let none = Vec::new();
    let listed = shown
        .iter()
        .map(|&i| (&d.settings[i], i, d.worst.get(i).unwrap_or(&none)))
        .chain(
            alternatives
                .iter()
                .map(|&i| (&d.alternatives[i], d.settings.len() + i, &none)),
        );
    for (s, i, worst_rows) in listed {
        let base = d.settings.iter().position(|b| {
            b.is_baseline() && b.agent_model == s.agent_model && b.tokenizer == s.tokenizer
        });
        let base = base.and_then(|b| position.get(&b).copied());
        let saved = match (
            base.map(|b| &d.settings[shown[b]])
                .and_then(|b| b.cost_usd()),
            s.cost_usd(),
        ) {
            (Some(b), Some(c)) => json!(b - c),
            _ => Value::Null,
        };
        rows.push(names.row(s, &rule_figures(s, i), base, saved));
        worst.push(names.worst(worst_rows));
    }
    let budget = |k: &str| {
        d.run
            .get("budgets")
            .and_then(|b| b.get(k))
            .and_then(Value::as_f64)
    };
    let v = json!({
        "note": island_note(d, shown.len(), sampled, alternatives.len()),
        "sampled": sampled,
        "total": d.settings.len(),
        "money_decimals": money_decimals,
        "worst_per_setting": WORST_SESSIONS,
        "budgets": {
            "broken_references": budget("broken_references"),
            "detail_lost": budget("detail_lost"),
            "latency_s": budget("latency_s"),
        },
        "summarizers": names.summarizers,
        "clients": names.clients,
        "models": names.models,
        "tokenizers": names.tokenizers,
        "bases": names.bases,
        "cols": COLS,
        "rows": rows,
        "worst": worst,
        "sessions": names.sessions.into_iter().map(|(a, b)| json!([a, b])).collect::<Vec<_>>(),
    });
    super::escape::script_safe(&v.to_string())
}

/// The sentence above the explorer: what it shows of the run and how to use it.
fn island_note(d: &RunData, shown: usize, sampled: bool, alternatives: usize) -> String {
    let note = if sampled {
        format!(
            "This page shows {} of the run's {} settings: every setting any budgets could recommend, the frontier, the baselines and an even sample of the rest (settings.json has them all). Pick a setting with the controls or on the chart; change a budget and the recommendation follows, by the rule the sweep uses.",
            shown,
            d.settings.len()
        )
    } else {
        format!(
            "All {} settings of the run. Pick a setting with the controls or on the chart to see its row beside the recommended one and the baseline; change a budget and the recommendation follows, by the rule the sweep uses (the cheapest compacting setting within every budget). Money is USD over all sessions; broken references and history are means per session.",
            shown
        )
    };
    if alternatives == 0 {
        note
    } else {
        format!(
            "{note} Also shown, as squares: {} of the guide's alternatives to compaction (each on its own, and a combination with compaction where it is on the frontier); they are weighed, never recommended, and the report's Alternatives section says how to deploy each.",
            alternatives
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn island_json_cannot_close_its_script_element() {
        let s = crate::report::escape::script_safe(
            &json!({"id": "</script><img src=x onerror=alert(1)>&\u{2028}"}).to_string(),
        );
        assert!(
            !s.contains('<') && !s.contains('>') && !s.contains('&') && !s.contains('\u{2028}')
        );
        let back: Value = serde_json::from_str(&s).expect("still JSON");
        assert_eq!(back["id"], "</script><img src=x onerror=alert(1)>&\u{2028}");
    }

    #[test]
    fn could_be_picked_keeps_every_budgets_pick() {
        // Every (broken, detail, wait) budget on a small lattice: the rule's pick over all
        // settings is always among the kept ones.
        let mut figures = Vec::new();
        for i in 0..60u32 {
            let h = |k: u32| ((i * 7919 + k * 104729) % 97) as f64 / 97.0;
            figures.push(RuleFigures {
                setting_id: i,
                baseline: i == 0,
                alternative: false,
                policy: i % 11 == 3,
                cost: (h(1) * 10.0).round() / 10.0,
                broken_references: (h(2) * 5.0).round() / 5.0,
                detail_lost: h(3),
                wait_p95: (h(4) * 3.0).round(),
                thrash: i % 13 == 5,
            });
        }
        let kept = could_be_picked(&figures);
        assert!(kept.len() < figures.len(), "some are left out");
        for b in [None, Some(0.2), Some(0.5), Some(0.8)] {
            for dl in [None, Some(0.3), Some(0.6)] {
                for w in [None, Some(0.0), Some(1.0), Some(2.0)] {
                    let budgets = crate::sweep::grid::Budgets {
                        broken_references: b,
                        detail_lost: dl,
                        latency_s: w,
                    };
                    if let Some(p) = crate::table::summary::pick(&figures, &budgets) {
                        assert!(kept.contains(&p), "{budgets:?} picks {p}, left out");
                    }
                }
            }
        }
    }
}
