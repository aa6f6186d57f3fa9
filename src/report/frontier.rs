//! The report's frontier table and per-summarizer table, and how they print the figures
//! that must tell close settings apart.

use super::build::{money, money_decimals, opt, opt_with, secs, table_label};
use super::figures::{frontier_axis, idle_frontier_figures, IdleFrontier};
use super::{t, Block, Inline};
use crate::table::folder::{frontier_groups, summarizer_rows, RunData, SettingRow};
use crate::table::format::{
    decimals_to_tell_apart, fmt_int as int, fmt_pct, fmt_pct_to, fmt_usd_to, MAX_PCT_DECIMALS,
    MAX_USD_DECIMALS,
};

/// How the frontier table and the advice under the recommendation print cost and broken
/// references: the report's precision, or more where two frontier rows (or a row and the
/// recommendation) would otherwise print the same figure and read as a trade that buys
/// nothing (issue #29).
pub(super) struct FrontierFormat {
    pub usd: Box<dyn Fn(f64) -> String>,
    pub pct: Box<dyn Fn(f64) -> String>,
}

pub(super) fn frontier_format(d: &RunData) -> FrontierFormat {
    let groups = frontier_groups(d);
    let heads = groups.iter().map(|g| g[0]);
    let costs: Vec<f64> = heads.clone().filter_map(|s| s.cost_usd()).collect();
    let mut shares: Vec<f64> = heads.filter_map(frontier_axis).collect();
    shares.extend(d.recommended().and_then(frontier_axis));
    let base = money_decimals(d);
    let usd_dec = decimals_to_tell_apart(&costs, base, MAX_USD_DECIMALS, fmt_usd_to);
    let usd: Box<dyn Fn(f64) -> String> = if usd_dec == base {
        Box::new(money(d))
    } else {
        Box::new(move |v| fmt_usd_to(v, usd_dec))
    };
    let pct_dec = decimals_to_tell_apart(&shares, 1, MAX_PCT_DECIMALS, fmt_pct_to);
    FrontierFormat {
        usd,
        pct: Box::new(move |v| fmt_pct_to(v, pct_dec)),
    }
}

pub(super) fn frontier_table(d: &RunData, b: &mut Vec<Block>) {
    b.push(Block::Heading(2, "The frontier".into()));
    b.push(Block::Para(t(
        "Settings no other setting beats on both cost and detail lost (broken references: the facts the agent used later that no text it could still read held), cheapest first (F1, F2, ... as labelled in the first chart). Anything off this list is dominated: some frontier setting is at least as cheap and loses no more detail. Going down the table, each setting costs more and keeps more of what the agent used; pick the first whose loss you accept. The history column is the share of history read only through summaries, whatever they keep.",
    )));
    let groups = frontier_groups(d);
    if groups.iter().flatten().any(|s| s.is_alternative()) {
        b.push(Block::Para(t(
            "Rows marked alternative are the guide's alternatives to compaction, replayed on the same sessions (docs/alternatives.md): they win here on cost or detail, but they are an action, not a line to paste; the Alternatives section says what to do for each. A cap that stopped runs is never listed: its failed runs are a loss this table does not show.",
        )));
    }
    let cols = FrontierColumns {
        with_refs: d.settings.iter().any(|s| s.broken_references().is_some()),
        // One client mode: it is in "what was run", and the column would only repeat it.
        by_client: d.distinct(|s| &s.client).len() > 1,
        base_cost: d.baseline().and_then(|x| x.cost_usd()),
        recorded_cost: d.as_recorded().and_then(|x| x.cost_usd()),
        format: frontier_format(d),
    };
    let rows = groups
        .iter()
        .enumerate()
        .map(|(i, g)| cols.row(i, g))
        .collect();
    let (head, numeric) = cols.head();
    b.push(Block::Table {
        head,
        rows,
        numeric,
    });
    if let Some(idle) = idle_frontier_figures(d) {
        b.push(idle_words(&idle));
    }
}

/// What the frontier table shows, decided once for all its rows.
struct FrontierColumns {
    /// Runs made before broken references have no such column.
    with_refs: bool,
    by_client: bool,
    base_cost: Option<f64>,
    /// The `as recorded` row's cost; `None` (no column) for runs made before it.
    recorded_cost: Option<f64>,
    format: FrontierFormat,
}

impl FrontierColumns {
    /// The header and which columns are numbers. No trigger column: the setting names its
    /// trigger fields.
    fn head(&self) -> (Vec<String>, Vec<bool>) {
        let mut head = vec!["#", "setting", "summarizer"];
        let mut numeric = vec![false, false, false];
        if self.by_client {
            head.push("client");
            numeric.push(false);
        }
        head.extend(["cost (USD)", "saved vs none (USD)"]);
        if self.recorded_cost.is_some() {
            head.push("saved vs as recorded (USD)");
        }
        if self.with_refs {
            head.push("broken references");
        }
        head.extend([
            "history read only through summaries",
            "critical hidden",
            "end-of-run wait (p95)",
            "summarizer calls",
        ]);
        numeric.resize(head.len(), true);
        (head.into_iter().map(String::from).collect(), numeric)
    }

    /// Row F`i+1`: a group of settings tied on the frontier.
    fn row(&self, i: usize, g: &[&SettingRow]) -> Vec<Vec<Inline>> {
        let usd = &self.format.usd;
        let mut row = vec![
            frontier_id(i, g),
            frontier_settings(g),
            either(g, &|s| {
                if s.summarizer.is_empty() {
                    "none".to_string()
                } else {
                    s.summarizer.clone()
                }
            }),
        ];
        if self.by_client {
            row.push(either(g, &|s| s.client.clone()));
        }
        row.push(either(g, &|s| opt_with(s.cost_usd(), usd)));
        for base in [Some(self.base_cost), self.recorded_cost.map(Some)]
            .into_iter()
            .flatten()
        {
            row.push(either(g, &|s| match (base, s.cost_usd()) {
                (Some(b0), Some(c)) => usd(b0 - c),
                _ => "n/a".into(),
            }));
        }
        if self.with_refs {
            row.push(either(g, &|s| broken_words(s, &self.format.pct)));
        }
        row.extend([
            either(g, &|s| opt(s.detail_lost(), fmt_pct)),
            either(g, &|s| opt(s.critical_hidden(), int)),
            either(g, &|s| opt(s.end_of_run_latency_p95(), secs)),
            either(g, &|s| opt(s.summarizer_calls(), int)),
        ]);
        row
    }
}

/// A cell of a row that stands for several tied settings: each distinct value once.
fn either(g: &[&SettingRow], f: &dyn Fn(&SettingRow) -> String) -> Vec<Inline> {
    let mut v: Vec<String> = Vec::new();
    for s in g {
        let x = f(s);
        if !v.contains(&x) {
            v.push(x);
        }
    }
    t(v.join(" or "))
}

/// `F<n>` and what the row is: recommended, the baseline, an alternative.
fn frontier_id(i: usize, g: &[&SettingRow]) -> Vec<Inline> {
    let mut id = vec![Inline::Text(format!("F{}", i + 1))];
    if g.iter().any(|s| s.recommended) {
        id.push(Inline::Text(" ".into()));
        id.push(Inline::Strong("recommended".into()));
    }
    if g.iter().any(|s| s.is_plain_baseline()) {
        id.push(Inline::Text(" baseline".into()));
    }
    if g.iter().any(|s| s.is_alternative()) {
        id.push(Inline::Text(" alternative".into()));
    }
    if g.iter().any(|s| s.is_as_recorded()) {
        id.push(Inline::Text(" as recorded".into()));
    }
    id
}

/// The group's settings as code, `or` between them.
fn frontier_settings(g: &[&SettingRow]) -> Vec<Inline> {
    let mut setting = Vec::new();
    for (k, s) in g.iter().enumerate() {
        if k > 0 {
            setting.push(Inline::Text(" or ".into()));
        }
        setting.push(Inline::Code(if s.is_plain_baseline() {
            "(no compaction)".into()
        } else if s.is_as_recorded() {
            "(as recorded)".into()
        } else {
            table_label(s)
        }));
    }
    setting
}

/// The frontier settings left out because they never compacted.
fn idle_words(idle: &IdleFrontier) -> Block {
    let mut reach = Vec::new();
    if let Some(m) = idle.lowest_after_tokens {
        reach.push(format!("lowest after_tokens {}", int(m as f64)));
    }
    if let Some(m) = idle.lowest_after_invocations {
        reach.push(format!("lowest after_invocations {m}"));
    }
    let one = idle.count == 1;
    Block::Para(t(format!(
        "Not listed: {} more {} whose trigger no session reached{}; {} exactly as no compaction (same cost, nothing summarized).",
        idle.count,
        if one { "setting" } else { "settings" },
        if reach.is_empty() {
            String::new()
        } else {
            format!(" ({})", reach.join(", "))
        },
        if one { "it behaves" } else { "they behave" },
    )))
}

/// The retention of the run's latency.toml (the table the sweep used, copied into the run
/// folder); `None` when it has none.
pub(super) fn run_retention(d: &RunData) -> Option<crate::detail::references::Retention> {
    let text = std::fs::read_to_string(d.dir.join("latency.toml")).ok()?;
    let mut table = crate::cost::latency::LatencyTable::builtin();
    table.retention = None;
    table.apply_file("latency.toml", &text).ok()?;
    table.retention
}

/// What the estimated broken references rest on: the retention of the run's latency.toml
/// (the table the sweep used, copied into the run folder); `None` when it has none.
fn retention_basis(d: &RunData) -> Option<String> {
    let r = run_retention(d)?;
    Some(format!(
        "The estimates (agent, model:NAME) use retention fitted on {} written by {}: per fact kind, the share of the references at risk at each summary's cut (facts a later request used that only the summary could hold) that the real summary held, pooled over the families (docs/validation.md, section Retention of what is used later).",
        r.rests_on(),
        r.models.join(", ")
    ))
}

pub(super) fn summarizers(d: &RunData, b: &mut Vec<Block>) {
    b.push(Block::Heading(2, "Per summarizer".into()));
    let usd = money(d);
    let rows = summarizer_rows(d);
    if rows.is_empty() {
        b.push(Block::Para(t("The run has no compacting setting.")));
        return;
    }
    let live = if rows.iter().any(|s| s.summarizer.starts_with("live:")) {
        " Live summarizers (live:PROVIDER/MODEL) really called the model with ADK's prompt: their cost (the usage the API reported, at the table's prices), tokens and waits are measured."
    } else {
        ""
    };
    b.push(Block::Para(t(format!(
        "Each summarizer at the same trigger setting as the recommendation where the grid has it (else its best-ranked setting). Broken references are the facts the agent used later that no text it could still read held: measured on the summary text of summarizers that write one (terse, command:, python:, live:), estimated for modelled ones (agent, model:NAME), which write no text: at-risk references × (1 − retention fitted from recorded summaries), with the low bound (facts only beyond ADK's 2,000-character cut of a tool payload, lost whatever the model writes) and the high bound (every reference at risk). Facts dropped is n/a for modelled summarizers; terse calls no model, so it adds no cost and no wait, but keeps only the conversation's text.{live}",
    ))));
    let bases = d.distinct(|x| &x.references_basis);
    if let Some(r) = retention_basis(d).filter(|_| bases.iter().any(|x| x == "estimated")) {
        b.push(Block::Para(t(r)));
    }
    if bases.iter().any(|x| x == "measured") && bases.iter().any(|x| x == "estimated") {
        b.push(Block::Para(t(
            "These summarizers' broken references rest on different bases (measured on text against estimated from retention); compare an estimate with its bounds, not only its central value.",
        )));
    }
    // Runs made before broken references have no such columns: leave them out.
    let with_refs = rows.iter().any(|s| s.broken_references().is_some());
    let mut head = vec!["summarizer", "setting", "cost (USD)", "end-of-run wait p95"];
    let mut numeric = vec![false, false, true, true];
    if with_refs {
        head.extend([
            "broken references",
            "basis",
            "broken / at risk / references [bounds], all sessions",
        ]);
        numeric.extend([true, false, true]);
    }
    head.extend([
        "history read only through summaries",
        "facts dropped",
        "summarizer calls",
        "summarizer tokens in+out",
    ]);
    numeric.resize(head.len(), true);
    b.push(Block::Table {
        head: head.into_iter().map(String::from).collect(),
        rows: rows
            .iter()
            .map(|s| {
                let toks = match (
                    s.num(&["summarizer_input_tokens_sum"]),
                    s.num(&["summarizer_output_tokens_sum"]),
                ) {
                    (Some(i), Some(o)) => int(i + o),
                    _ => "n/a".into(),
                };
                let mut row = vec![
                    t(s.summarizer.clone()),
                    vec![Inline::Code(table_label(s))],
                    t(opt(s.cost_usd(), usd)),
                    t(opt(s.end_of_run_latency_p95(), secs)),
                ];
                if with_refs {
                    row.extend([
                        t(opt(s.broken_references(), fmt_pct)),
                        t(if s.references_basis.is_empty() {
                            "n/a".to_string()
                        } else {
                            s.references_basis.clone()
                        }),
                        t(reference_counts(s)),
                    ]);
                }
                row.extend([
                    t(opt(s.detail_lost(), fmt_pct)),
                    t(opt(s.facts_dropped(), fmt_pct)),
                    t(opt(s.summarizer_calls(), int)),
                    t(toks),
                ]);
                row
            })
            .collect(),
        numeric,
    });
}

/// Broken references of a setting as the frontier shows them: the mean share, and for an
/// estimate its basis.
fn broken_words(s: &SettingRow, pct: &dyn Fn(f64) -> String) -> String {
    match s.broken_references() {
        None => "n/a".into(),
        Some(v) if s.references_basis == "estimated" => format!("{} (estimated)", pct(v)),
        Some(v) => pct(v),
    }
}

/// `broken / at risk / references` summed over sessions, with `[low–high]` for estimates.
fn reference_counts(s: &SettingRow) -> String {
    let (Some(broken), Some(risk), Some(refs)) = (
        s.num(&["references_broken_sum"]),
        s.num(&["references_at_risk_sum"]),
        s.num(&["references_sum"]),
    ) else {
        return "n/a".into();
    };
    let bounds = match (
        s.num(&["references_broken_low_sum"]),
        s.num(&["references_broken_high_sum"]),
    ) {
        (Some(lo), Some(hi)) if s.references_basis == "estimated" => {
            format!(" [{}–{}]", int(lo), int(hi))
        }
        _ => String::new(),
    };
    format!("{} / {} / {}{bounds}", int(broken), int(risk), int(refs))
}
