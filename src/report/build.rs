//! The report's content, as renderer-neutral blocks.

use super::{t, Block, Inline};
use crate::chart::data::{RunData, RunRow, SettingRow};
use crate::chart::plots::{frontier_groups, idle_frontier, summarizer_rows};
use crate::chart::{
    decimals_to_tell_apart, fmt_pct, fmt_pct_to, fmt_usd, fmt_usd4 as usd4, fmt_usd_to,
    ChartOutcome, MAX_PCT_DECIMALS, MAX_USD_DECIMALS,
};
use serde_json::Value;

/// A share of sessions' history above which a session is listed as better kept short.
const SHORT_DETAIL: f64 = 0.30;
/// Model calls in one invocation above which `max_llm_calls` is worth suggesting.
const LLM_CALLS_CAP: f64 = 25.0;
/// Share of a session's prompt tokens spent re-sending attachments above which loading them
/// as artifacts is suggested.
const ATTACH_SHARE: f64 = 0.10;

fn s(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(x) => Some(x.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn int(v: f64) -> String {
    let n = v.round() as i64;
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

fn secs(v: f64) -> String {
    format!("{v:.1} s")
}

/// One money format for the whole report, chosen from the no-compaction cost: cents from
/// $100 up, else 4 decimals, so every amount in a table has the same precision.
fn money(d: &RunData) -> fn(f64) -> String {
    if in_cents(d) {
        fmt_usd
    } else {
        usd4
    }
}

/// The decimals of the run's money (see [`money`]), for the explorer.
pub fn money_decimals(d: &RunData) -> usize {
    if in_cents(d) {
        2
    } else {
        4
    }
}

/// Whether the run's money reads in cents (a no-compaction cost of $100 or more).
fn in_cents(d: &RunData) -> bool {
    let scale = d
        .baseline()
        .and_then(|b| b.cost_usd())
        .or_else(|| {
            d.settings
                .iter()
                .filter_map(|x| x.cost_usd())
                .reduce(f64::max)
        })
        .unwrap_or(0.0);
    scale >= 100.0
}

/// How the frontier table and the advice under the recommendation print cost and broken
/// references: the report's precision, or more where two frontier rows (or a row and the
/// recommendation) would otherwise print the same figure and read as a trade that buys
/// nothing (issue #29).
struct FrontierFormat {
    usd: Box<dyn Fn(f64) -> String>,
    pct: Box<dyn Fn(f64) -> String>,
}

/// The frontier's detail axis: broken references, or detail lost for older runs.
fn frontier_axis(x: &SettingRow) -> Option<f64> {
    x.broken_references().or_else(|| x.detail_lost())
}

fn frontier_format(d: &RunData) -> FrontierFormat {
    let groups = frontier_groups(d);
    let heads = groups.iter().map(|g| g[0]);
    let costs: Vec<f64> = heads.clone().filter_map(|s| s.cost_usd()).collect();
    let mut shares: Vec<f64> = heads.filter_map(frontier_axis).collect();
    shares.extend(d.recommended().and_then(frontier_axis));
    let base = if in_cents(d) { 2 } else { 4 };
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

/// `run.json` `budgets` in words, or `None` when the run set none.
fn budgets_words(v: Option<&Value>) -> Option<String> {
    let o = v?.as_object()?;
    let mut parts = Vec::new();
    for (k, x) in o {
        let Some(n) = x.as_f64() else {
            if !x.is_null() {
                parts.push(format!("{k}: {}", flat(x)));
            }
            continue;
        };
        parts.push(match k.as_str() {
            "broken_references" => format!(
                "broken references at most {} (share of the facts the agent used later that no text it could still read held, mean per session)",
                fmt_pct(n)
            ),
            "detail_lost" => format!(
                "history read only through summaries at most {} (mean per session)",
                fmt_pct(n)
            ),
            "latency_s" => format!(
                "longest summarizer wait at most {} (p95 over sessions, end of run and before a request)",
                secs(n)
            ),
            _ => format!("{k} at most {n}"),
        });
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// What a summarizer name means, for the "what was run" table.
fn summarizer_words(name: &str) -> String {
    match name {
        "agent" => "agent (ADK's default: the agent's own model writes the summary; modelled from token counts, so cost and wait are estimated and no text is written)".into(),
        "terse" => "terse (rule-based, no model call: keeps each text part as author: text and drops tool chatter; $0, 0 s, writes real text)".into(),
        n if n.starts_with("model:") => format!("{n} (that model writes the summary; modelled from token counts)"),
        n if n.starts_with("command:") => format!("{n} (your program writes the summary)"),
        n if n.starts_with("live:") => format!("{n} (that model really wrote the summaries, with ADK's prompt: cost from the usage it reported at the table's prices, waits measured, detail measured on the texts)"),
        n => n.to_string(),
    }
}

fn opt(v: Option<f64>, f: fn(f64) -> String) -> String {
    opt_with(v, &f)
}

fn opt_with(v: Option<f64>, f: &dyn Fn(f64) -> String) -> String {
    v.map(f).unwrap_or_else(|| "n/a".to_string())
}

/// `run.json` `inputs`: a list of `{path, sessions}` (or paths), shortened to a count and
/// the first few paths.
fn inputs_text(v: &Value) -> String {
    let Some(a) = v.as_array() else {
        return flat(v);
    };
    let paths: Vec<String> = a
        .iter()
        .map(|x| s(x.get("path")).unwrap_or_else(|| flat(x)))
        .collect();
    let shown = paths.iter().take(3).cloned().collect::<Vec<_>>().join(", ");
    match paths.len() {
        0 => "none".into(),
        n if n <= 3 => format!("{n} files: {shown}"),
        n => format!("{n} files: {shown} and {} more", n - 3),
    }
}

/// Flattens a JSON value into `key: value` text for the "what was run" table.
fn flat(v: &Value) -> String {
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
fn table_label(s: &SettingRow) -> String {
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
    alternatives(d, &mut b);
    glossary(&mut b);
    b
}

/// When no setting meets the budgets: the compacting settings closest to them (smallest
/// relative excess over a budget, then cheapest) and by how much each misses.
fn closest_settings(d: &RunData, b: &mut Vec<Block>) {
    let budget = |k: &str| {
        d.run
            .get("budgets")
            .and_then(|o| o.get(k))
            .and_then(Value::as_f64)
    };
    let (detail_budget, wait_budget) = (budget("detail_lost"), budget("latency_s"));
    let broken_budget = budget("broken_references");
    let wait = |r: &SettingRow| {
        r.end_of_run_latency_p95()
            .unwrap_or(0.0)
            .max(r.pre_request_latency_p95().unwrap_or(0.0))
    };
    let excess = |r: &SettingRow| {
        let dl = detail_budget.map_or(0.0, |x| r.detail_lost().unwrap_or(0.0) / x.max(1e-12));
        let br = broken_budget.map_or(0.0, |x| r.broken_references().unwrap_or(0.0) / x.max(1e-12));
        let w = wait_budget.map_or(0.0, |x| wait(r) / x.max(1e-12));
        dl.max(br).max(w)
    };
    let mut rows: Vec<&SettingRow> = d
        .settings
        .iter()
        .filter(|r| !r.is_baseline() && !r.never_compacts())
        .collect();
    rows.sort_by(|x, y| {
        excess(x)
            .total_cmp(&excess(y))
            .then(
                x.cost_usd()
                    .unwrap_or(0.0)
                    .total_cmp(&y.cost_usd().unwrap_or(0.0)),
            )
            .then(x.setting_id.cmp(&y.setting_id))
    });
    rows.truncate(3);
    if rows.is_empty() {
        b.push(Block::Para(t(
            "No compacting setting fired on these sessions, so there is nothing to compare with the budgets.",
        )));
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
                        Some(v) => miss(v, broken_budget, &|v| fmt_pct(v)),
                        None => "n/a".into(),
                    }),
                    t(miss(r.detail_lost().unwrap_or(0.0), detail_budget, &|v| {
                        fmt_pct(v)
                    })),
                    t(miss(wait(r), wait_budget, &secs)),
                    t(r.cost_usd().map(usd).unwrap_or_else(|| "n/a".into())),
                ]
            })
            .collect(),
        numeric: vec![false, true, true, true, true],
    });
}

fn recommendation(d: &RunData, b: &mut Vec<Block>) {
    b.push(Block::Heading(2, "Recommendation".into()));
    let base = d.baseline();
    let Some(r) = d.recommended() else {
        let why = s(d.run.get("recommendation_note"))
            .or_else(|| s(d.run.get("recommendation").and_then(|r| r.get("reason"))))
            .unwrap_or_else(|| "no setting met the run's budgets".to_string());
        b.push(Block::Para(vec![
            Inline::Strong("No setting meets the run's budgets, so none is recommended.".into()),
            Inline::Text(format!(" {why}.")),
        ]));
        closest_settings(d, b);
        return;
    };
    if let Some(a) = beating_alternative(d) {
        let m = money(d);
        b.push(Block::Para(vec![
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
        ]));
    }
    b.push(Block::Para(t(
        "Paste this line into the agent's MANIFEST (AgentManifest(..., compaction=...)):",
    )));
    b.push(Block::Code(paste_line(r)));
    let usd = money(d);
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
    let mut why = match budgets_words(d.run.get("budgets")) {
        None => flags(
            "Why: it is the cheapest compacting setting; the run set no budget, so nothing limited the detail it may lose (sweep with ".into(),
            " to set limits). ",
        ),
        Some(b) => flags(
            format!("Why: it is the cheapest setting within the run's budget, {b}; budgets are set with "),
            ". ",
        ),
    };
    if let (Some(c), Some(bc)) = (r.cost_usd(), base.and_then(|x| x.cost_usd())) {
        let saved = bc - c;
        let pct = if bc > 0.0 { saved / bc } else { 0.0 };
        why.push(Inline::Text(format!(
            "It costs {} against {} with no compaction (all sessions), {} {} ({}); it ",
            usd(c),
            usd(bc),
            if saved >= 0.0 { "saving" } else { "adding" },
            usd(saved.abs()),
            fmt_pct(pct.abs())
        )));
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
        )));
    }
    let bases: std::collections::BTreeSet<&str> = d
        .settings
        .iter()
        .filter(|s| !s.is_baseline() && !s.references_basis.is_empty())
        .map(|s| s.references_basis.as_str())
        .filter(|b| *b != "none")
        .collect();
    if bases.len() > 1 {
        why.push(Inline::Text(
            " Summarizers here rest on different bases: broken references are measured on the texts of summarizers that write one and estimated (retention of recorded summaries, with bounds) for modelled ones, so compare them with the bounds in the summarizer comparison.".into(),
        ));
    }
    b.push(Block::Para(why));
    // The next frontier step toward less detail lost, so a reader who finds the loss too high
    // sees what keeping more costs: only a setting that loses strictly less as printed.
    if let Some((f, fc, fd, rc, rd)) = safer_step(d, r) {
        let ff = frontier_format(d);
        b.push(Block::Para(vec![
            Inline::Text("If that loses too much detail: ".into()),
            Inline::Code(table_label(f)),
            Inline::Text(format!(
                " loses {} instead of {} and costs {} {}.",
                (ff.pct)(fd),
                (ff.pct)(rd),
                (ff.usd)((fc - rc).abs()),
                if fc >= rc { "more" } else { "less" }
            )),
        ]));
    }
    if d.settings
        .iter()
        .any(|x| x.numbers.get("cost_complete") == Some(&0.0))
    {
        b.push(Block::Para(t(
            "Caution: some model had no price in the run's pricing table, so some cost columns are lower bounds (cost_complete = false in settings.json).",
        )));
    }
    type Getter = fn(&SettingRow) -> Option<f64>;
    type Fmt = fn(f64) -> String;
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
    let mut table = Vec::new();
    for (label, get, f) in rows {
        table.push(vec![
            t(label),
            t(opt(get(r), f)),
            t(base.map(|x| opt(get(x), f)).unwrap_or_else(|| "n/a".into())),
        ]);
    }
    b.push(Block::Table {
        head: vec!["".into(), "recommended".into(), "no compaction".into()],
        rows: table,
        numeric: vec![false, true, true],
    });
    if r.facts_dropped().is_none() {
        b.push(Block::Para(t(format!(
            "Facts dropped is n/a: the {} summarizer is modelled from token counts and writes no text to check; the summarizer table below shows it for summarizers that do.",
            if r.summarizer.is_empty() { "chosen" } else { r.summarizer.as_str() }
        ))));
    }
}

/// The cheapest frontier setting other than `r` that loses strictly less than `r`, both as
/// stored and as the frontier prints it: `(setting, its cost, its loss, r's cost, r's loss)`.
fn safer_step<'a>(d: &'a RunData, r: &SettingRow) -> Option<(&'a SettingRow, f64, f64, f64, f64)> {
    let (rc, rd) = (r.cost_usd()?, frontier_axis(r)?);
    let ff = frontier_format(d);
    frontier_groups(d)
        .into_iter()
        .flatten()
        .filter(|f| !f.is_baseline() && !f.is_alternative() && f.setting_id != r.setting_id)
        .filter_map(|f| Some((f, f.cost_usd()?, frontier_axis(f)?)))
        .filter(|(_, _, fd)| *fd < rd && (ff.pct)(*fd) != (ff.pct)(rd))
        .min_by(|a, c| a.1.total_cmp(&c.1))
        .map(|(f, fc, fd)| (f, fc, fd, rc, rd))
}

fn what_was_run(d: &RunData, sessions: usize, b: &mut Vec<Block>) {
    b.push(Block::Heading(2, "What was run".into()));
    let run = &d.run;
    let mut rows: Vec<(String, String)> = Vec::new();
    rows.push((
        "inputs".into(),
        run.get("inputs")
            .map(inputs_text)
            .unwrap_or_else(|| "n/a".into()),
    ));
    rows.push((
        "sessions replayed".into(),
        match run.get("sampled_from").and_then(Value::as_u64) {
            Some(of) => format!(
                "{sessions} (a sample drawn with --sample from {of} sessions read: by a hash of each session's source and id, the same on every run)"
            ),
            None => sessions.to_string(),
        },
    ));
    let skipped = run
        .get("skipped")
        .and_then(Value::as_array)
        .map(|a| a.len())
        .unwrap_or(0);
    rows.push(("inputs skipped".into(), skipped.to_string()));
    rows.push((
        "settings".into(),
        format!("{} (one is the no-compaction baseline)", d.settings.len()),
    ));
    // The grid's trigger axes; the other axes (summarizer, client, model, tokenizer) get a
    // row of their own below, with what they mean.
    let explained = ["budget", "summarizer", "client", "agent_model", "tokenizer"];
    if let Some(g) = run.get("grid") {
        if let Some(o) = g.as_object() {
            for (k, v) in o.iter().filter(|(k, _)| !explained.contains(&k.as_str())) {
                rows.push((format!("grid: {k}"), flat(v)));
            }
        } else {
            rows.push(("grid".into(), flat(g)));
        }
    }
    let first = |key: &str, alts: &[&str]| -> Option<String> {
        std::iter::once(key)
            .chain(alts.iter().copied())
            .find_map(|k| {
                let mut v = run;
                for part in k.split('.') {
                    v = v.get(part)?;
                }
                Some(flat(v))
            })
    };
    let tokenizer =
        first("tokenizer", &[]).unwrap_or_else(|| d.distinct(|x| &x.tokenizer).join(", "));
    let tokenizer_words = tokenizer
        .split(", ")
        .map(|t| match t {
            "o200k" => "o200k (tiktoken o200k_base, offline)".to_string(),
            "cl100k" => "cl100k (tiktoken cl100k_base, offline)".to_string(),
            "adk-chars" => "adk-chars (ADK's own estimate, characters / 4)".to_string(),
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ");
    rows.push((
        "tokenizer".into(),
        format!("{tokenizer_words}: counts the prompt tokens each setting would send; compaction triggers and history read only through summaries are measured in it"),
    ));
    rows.push((
        "pricing date".into(),
        match first("pricing_date", &["pricing.date", "pricing"]) {
            Some(date) => {
                let source = first("pricing_source", &[])
                    .filter(|s| !s.is_empty())
                    .map(|s| format!("; source: {s}"))
                    .unwrap_or_default();
                format!("{date}: list prices as of that date (pricing.toml in this folder{source}); check current prices before relying on absolute dollars")
            }
            None => "n/a".into(),
        },
    ));
    if let Some(list) = run
        .get("latency_default_models")
        .and_then(|v| v.as_array())
        .filter(|a| !a.is_empty())
    {
        let names: Vec<String> = list.iter().map(flat).collect();
        rows.push((
            "latency".into(),
            format!(
                "{}: timed with the `default` planning figures, as no family of latency.toml (in this folder) matches",
                names.join(", ")
            ),
        ));
    }
    rows.push((
        "ADK semantics".into(),
        format!(
            "{}: events compaction as that release runs it (the size trigger is checked before each model request and after each invocation, the turn trigger after each invocation; later prompts carry the summary instead of the compacted events)",
            first("adk_semantics", &["adk"]).unwrap_or_else(|| "google-adk 2.13.0".into())
        ),
    ));
    let clients =
        first("client_modes", &["client"]).unwrap_or_else(|| d.distinct(|x| &x.client).join(", "));
    let client_words = clients
        .split(", ")
        .map(|c| match c {
            "waits" => "waits (the client waits for the run's terminal event, as runtime.run() does, so every summary lands and its time is added to the run)".to_string(),
            "streams" => "streams (the next turn starts at its recorded time; a summary still being written is discarded)".to_string(),
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join("; ");
    rows.push(("client mode".into(), client_words));
    let models = d.distinct(|x| &x.agent_model);
    rows.push((
        "agent model".into(),
        models
            .iter()
            .map(|m| {
                if m == "recorded" {
                    format!("recorded (each session is priced and timed as the model its transcript names; sessions that name none as {})", crate::cost::compute::FALLBACK_AGENT_MODEL)
                } else {
                    m.clone()
                }
            })
            .collect::<Vec<_>>()
            .join("; "),
    ));
    rows.push((
        "summarizers".into(),
        d.distinct(|x| &x.summarizer)
            .iter()
            .map(|x| summarizer_words(x))
            .collect::<Vec<_>>()
            .join("; "),
    ));
    rows.push((
        "budgets".into(),
        budgets_words(run.get("budgets")).unwrap_or_else(|| "none".into()),
    ));
    if let Some(v) = first("compaction_sim_version", &["version"]) {
        rows.push(("compaction-sim version".into(), v));
    }
    b.push(Block::Table {
        head: vec!["".into(), "value".into()],
        rows: rows.into_iter().map(|(k, v)| vec![t(k), t(v)]).collect(),
        numeric: vec![false, false],
    });
}

fn frontier_table(d: &RunData, b: &mut Vec<Block>) {
    b.push(Block::Heading(2, "The frontier".into()));
    b.push(Block::Para(t(
        "Settings no other setting beats on both cost and detail lost (broken references: the facts the agent used later that no text it could still read held), cheapest first (F1, F2, ... as labelled in the first chart). Anything off this list is dominated: some frontier setting is at least as cheap and loses no more detail. Going down the table, each setting costs more and keeps more of what the agent used; pick the first whose loss you accept. The history column is the share of history read only through summaries, whatever they keep.",
    )));
    if frontier_groups(d)
        .iter()
        .flatten()
        .any(|s| s.is_alternative())
    {
        b.push(Block::Para(t(
            "Rows marked alternative are the guide's alternatives to compaction, replayed on the same sessions (docs/alternatives.md): they win here on cost or detail, but they are an action, not a line to paste; the Alternatives section says what to do for each. A cap that stopped runs is never listed: its failed runs are a loss this table does not show.",
        )));
    }
    let with_refs = d.settings.iter().any(|s| s.broken_references().is_some());
    let ff = frontier_format(d);
    let usd = &ff.usd;
    let base_cost = d.baseline().and_then(|x| x.cost_usd());
    // One client mode: it is in "what was run", and the column would only repeat it.
    let by_client = d.distinct(|s| &s.client).len() > 1;
    // A cell of a row that stands for several tied settings: each distinct value once.
    let either = |g: &[&SettingRow], f: &dyn Fn(&SettingRow) -> String| {
        let mut v: Vec<String> = Vec::new();
        for s in g {
            let x = f(s);
            if !v.contains(&x) {
                v.push(x);
            }
        }
        t(v.join(" or "))
    };
    let rows: Vec<Vec<Vec<Inline>>> = frontier_groups(d)
        .iter()
        .enumerate()
        .map(|(i, g)| {
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
            let mut setting = Vec::new();
            for (k, s) in g.iter().enumerate() {
                if k > 0 {
                    setting.push(Inline::Text(" or ".into()));
                }
                setting.push(Inline::Code(if s.is_plain_baseline() {
                    "(no compaction)".into()
                } else {
                    table_label(s)
                }));
            }
            let mut row = vec![
                id,
                setting,
                either(g, &|s| {
                    if s.summarizer.is_empty() {
                        "none".to_string()
                    } else {
                        s.summarizer.clone()
                    }
                }),
            ];
            if by_client {
                row.push(either(g, &|s| s.client.clone()));
            }
            row.push(either(g, &|s| opt_with(s.cost_usd(), usd)));
            row.push(either(g, &|s| match (base_cost, s.cost_usd()) {
                (Some(b0), Some(c)) => usd(b0 - c),
                _ => "n/a".into(),
            }));
            if with_refs {
                row.push(either(g, &|s| broken_words(s, &ff.pct)));
            }
            row.extend([
                either(g, &|s| opt(s.detail_lost(), fmt_pct)),
                either(g, &|s| opt(s.critical_hidden(), int)),
                either(g, &|s| opt(s.end_of_run_latency_p95(), secs)),
                either(g, &|s| opt(s.summarizer_calls(), int)),
            ]);
            row
        })
        .collect();
    // No trigger column: the setting names its trigger fields.
    let mut head = vec!["#", "setting", "summarizer"];
    let mut numeric = vec![false, false, false];
    if by_client {
        head.push("client");
        numeric.push(false);
    }
    head.extend(["cost (USD)", "saved vs none (USD)"]);
    if with_refs {
        head.push("broken references");
    }
    head.extend([
        "history read only through summaries",
        "critical hidden",
        "end-of-run wait (p95)",
        "summarizer calls",
    ]);
    numeric.resize(head.len(), true);
    b.push(Block::Table {
        head: head.into_iter().map(String::from).collect(),
        rows,
        numeric,
    });
    let idle = idle_frontier(d);
    if !idle.is_empty() {
        let thresholds: Vec<u64> = idle.iter().filter_map(|s| s.after_tokens).collect();
        let invocations: Vec<u64> = idle.iter().filter_map(|s| s.after_invocations).collect();
        let mut reach = Vec::new();
        if let Some(m) = thresholds.iter().min() {
            reach.push(format!("lowest after_tokens {}", int(*m as f64)));
        }
        if let Some(m) = invocations.iter().min() {
            reach.push(format!("lowest after_invocations {m}"));
        }
        b.push(Block::Para(t(format!(
            "Not listed: {} more {} whose trigger no session reached{}; {} exactly as no compaction (same cost, nothing summarized).",
            idle.len(),
            if idle.len() == 1 { "setting" } else { "settings" },
            if reach.is_empty() {
                String::new()
            } else {
                format!(" ({})", reach.join(", "))
            },
            if idle.len() == 1 { "it behaves" } else { "they behave" },
        ))));
    }
}

fn summarizers(d: &RunData, b: &mut Vec<Block>) {
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

fn skipped(d: &RunData, b: &mut Vec<Block>) {
    b.push(Block::Heading(2, "Skipped inputs".into()));
    let items: Vec<(String, String)> = d
        .run
        .get("skipped")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|x| match x {
                    Value::Object(_) => (
                        s(x.get("path")
                            .or_else(|| x.get("source"))
                            .or_else(|| x.get("file")))
                        .unwrap_or_default(),
                        s(x.get("reason").or_else(|| x.get("error"))).unwrap_or_default(),
                    ),
                    other => (String::new(), flat(other)),
                })
                .collect()
        })
        .unwrap_or_default();
    if items.is_empty() {
        b.push(Block::Para(t("None: every input was read.")));
        return;
    }
    b.push(Block::Table {
        head: vec!["input".into(), "reason".into()],
        rows: items
            .into_iter()
            .map(|(p, r)| vec![vec![Inline::Code(p)], t(r)])
            .collect(),
        numeric: vec![false, false],
    });
}

/// Most failed summarizer calls listed in the report (run.json keeps them all).
const SUMMARIZER_ERRORS_SHOWN: usize = 50;

/// `run.json` `summarizer_errors[]`: failed `command:`, `python:` and `live:` calls (the
/// replay went on without that compaction, as ADK does). No section when there is none.
fn summarizer_errors(d: &RunData, b: &mut Vec<Block>) {
    let Some(items) = d
        .run
        .get("summarizer_errors")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
    else {
        return;
    };
    b.push(Block::Heading(2, "Failed summarizer calls".into()));
    b.push(Block::Para(t(format!(
        "{} failed {}: as in ADK, each one compacted nothing and left the trigger armed, so the next turn tried again.{}",
        int(items.len() as f64),
        if items.len() == 1 { "call" } else { "calls" },
        if items.len() > SUMMARIZER_ERRORS_SHOWN {
            format!(" The first {SUMMARIZER_ERRORS_SHOWN} are listed; run.json has them all.")
        } else {
            String::new()
        }
    ))));
    b.push(Block::Table {
        head: vec!["session".into(), "setting".into(), "error".into()],
        rows: items
            .iter()
            .take(SUMMARIZER_ERRORS_SHOWN)
            .map(|x| {
                vec![
                    vec![Inline::Code(format!(
                        "{}#{}",
                        s(x.get("source")).unwrap_or_default(),
                        s(x.get("session_id")).unwrap_or_default()
                    ))],
                    t(s(x.get("setting_id")).unwrap_or_default()),
                    t(s(x.get("message")).unwrap_or_default()),
                ]
            })
            .collect(),
        numeric: vec![false, true, false],
    });
}

/// Per-session input facts from `run.json` `session_facts[]`, when the run recorded them,
/// matched on session id and (when both name one) source file: ids need not be unique.
/// Indexed by session id once, so a run of many sessions is not searched once per row.
struct SessionFacts<'a> {
    by_id: std::collections::HashMap<&'a str, Vec<&'a Value>>,
}

impl<'a> SessionFacts<'a> {
    fn new(d: &'a RunData) -> SessionFacts<'a> {
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
    fn get(&self, r: &RunRow, key: &str) -> Option<f64> {
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

/// "Other policies": other frameworks' compaction policies replayed on the same sessions
/// (`--policy`, docs/policies.md), in one table with the recommended ADK setting and the
/// baseline, cheapest first. Nothing when the run has none.
fn other_policies(d: &RunData, b: &mut Vec<Block>) {
    let policies: Vec<&SettingRow> = d.settings.iter().filter(|s| s.is_policy()).collect();
    if policies.is_empty() {
        return;
    }
    let usd = money(d);
    b.push(Block::Heading(2, "Other policies".into()));
    b.push(Block::Para(t(
        "Other frameworks' compaction policies, replayed on the same sessions and priced the same way (caching, summarizer calls, broken references), beside the recommended ADK setting and no compaction. Their numbers are modelled: each policy is a rule read from its framework's source (docs/policies.md says what is left out). None is an ADK setting a manifest can take: a policy is a finding about what kind of compaction suits these sessions, never a line to paste, so none is recommended. Where ADK can come near one, the last column says how (a `python:` summarizer only changes the summary text, not what is kept).",
    )));
    let mut rows: Vec<&SettingRow> = policies.clone();
    rows.extend(d.recommended());
    rows.extend(d.baseline());
    rows.sort_by(|a, c| {
        a.cost_usd()
            .unwrap_or(f64::INFINITY)
            .total_cmp(&c.cost_usd().unwrap_or(f64::INFINITY))
            .then(a.setting_id.cmp(&c.setting_id))
    });
    let pct = |v: Option<f64>| v.map_or("n/a".to_string(), |x| format!("{:.1} %", x * 100.0));
    let num = |v: Option<f64>| v.map_or("n/a".to_string(), int);
    let table_rows = rows
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let (name, setting, adk) = if s.is_policy() {
                let setting = if s.summarizer.is_empty() {
                    s.policy_setting.clone()
                } else {
                    format!("{} summarizer={}", s.policy_setting, s.summarizer)
                };
                (
                    s.policy.clone(),
                    setting,
                    crate::policy::adk_expressible(&s.policy).to_string(),
                )
            } else if s.is_baseline() {
                (
                    "ADK: no compaction".to_string(),
                    "leave compaction out of the manifest".to_string(),
                    "yes".to_string(),
                )
            } else {
                (
                    "ADK: recommended".to_string(),
                    table_label(s),
                    "yes: paste it".to_string(),
                )
            };
            vec![
                t((i + 1).to_string()),
                t(name),
                vec![Inline::Code(setting)],
                t(s.cost_usd().map_or("n/a".to_string(), usd)),
                t(s.cost_saved_usd().map_or("n/a".to_string(), usd)),
                t(num(s.num(&["tokens_saved_net_sum"]))),
                t(num(s.summarizer_calls())),
                t(pct(s.broken_references())),
                t(num(s.critical_hidden())),
                t(adk),
            ]
        })
        .collect();
    b.push(Block::Table {
        head: vec![
            "rank by cost".into(),
            "policy".into(),
            "its setting".into(),
            "cost (USD, modelled for policies)".into(),
            "saved vs no compaction (USD)".into(),
            "tokens saved (net)".into(),
            "summarizer calls".into(),
            "broken references (mean share)".into(),
            "critical events hidden".into(),
            "an ADK setting?".into(),
        ],
        rows: table_rows,
        numeric: vec![
            true, false, false, true, true, true, true, true, true, false,
        ],
    });
}

fn alternatives(d: &RunData, b: &mut Vec<Block>) {
    b.push(Block::Heading(2, "Alternatives from the guide".into()));
    b.push(Block::Para(t(
        "Compaction is one answer to a long history; the platform guide lists others. Each is suggested below only where this run's data points to it.",
    )));
    priced_alternatives(d, b);
    let facts = SessionFacts::new(d);
    let reco_rows: Vec<&RunRow> = match d.recommended() {
        Some(r) => d
            .runs
            .iter()
            .filter(|x| x.setting_id == r.setting_id)
            .collect(),
        None => Vec::new(),
    };
    let base_id = d.baseline().map(|x| x.setting_id.clone());
    let base_rows: Vec<&RunRow> = d
        .runs
        .iter()
        .filter(|x| Some(&x.setting_id) == base_id.as_ref())
        .collect();

    // Keep sessions short.
    b.push(Block::Heading(3, "Keep sessions short".into()));
    let mut short: Vec<&RunRow> = reco_rows
        .iter()
        .copied()
        .filter(|r| {
            r.num("detail_lost").unwrap_or(0.0) > SHORT_DETAIL
                || r.num("critical_hidden").unwrap_or(0.0) > 0.0
        })
        .collect();
    short.sort_by(|a, c| {
        c.num("detail_lost")
            .unwrap_or(0.0)
            .total_cmp(&a.num("detail_lost").unwrap_or(0.0))
            .then(a.session_id.cmp(&c.session_id))
    });
    if short.is_empty() {
        b.push(Block::Para(t(format!(
            "No session points to it: under the recommended setting none loses more than {} of its history or hides a critical event.",
            fmt_pct(SHORT_DETAIL)
        ))));
    } else {
        b.push(Block::Para(t(format!(
            "{} of {} sessions lose more than {} of their history to summaries, or hide approvals, refusals or tool errors, even under the recommended setting. Starting a new session when the task changes is free and lossless.{}",
            short.len(),
            reco_rows.len(),
            fmt_pct(SHORT_DETAIL),
            if short.len() > 10 { " The 10 that lose most:" } else { "" }
        ))));
        b.push(Block::List(
            short
                .iter()
                .take(10)
                .map(|r| {
                    let mut item = vec![
                        Inline::Text("session ".into()),
                        Inline::Code(r.session_id.clone()),
                    ];
                    if !r.source.is_empty() {
                        item.push(Inline::Text(" (".into()));
                        item.push(Inline::Code(r.source.clone()));
                        item.push(Inline::Text(")".into()));
                    }
                    item.push(Inline::Text(format!(
                            ": {} model requests, {} of history read only through summaries, critical events hidden: {}",
                            opt(r.num("model_requests"), int),
                            opt(r.num("detail_lost"), fmt_pct),
                            opt(r.num("critical_hidden"), int)
                        )));
                    item
                })
                .collect(),
        ));
    }

    // Attachments as artifacts.
    b.push(Block::Heading(3, "Load large files as artifacts".into()));
    let has_attach = d
        .run
        .get("session_facts")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|x| x.get("attachment_tokens").is_some()));
    if !has_attach {
        b.push(Block::Para(t(
            "Not checked: the run's data records no attachment sizes per session.",
        )));
    } else {
        let mut hits = Vec::new();
        for r in &base_rows {
            let at = facts.get(r, "attachment_tokens").unwrap_or(0.0);
            let reqs = facts.get(r, "requests_with_attachment").unwrap_or(0.0);
            let total = r.num("baseline_prompt_tokens").unwrap_or(0.0);
            let resent = at * reqs;
            if at > 0.0 && total > 0.0 && resent / total > ATTACH_SHARE {
                hits.push((r.session_id.clone(), at, reqs, resent / total));
            }
        }
        if hits.is_empty() {
            b.push(Block::Para(t(format!(
                "No session points to it: attached files are under {} of every session's prompt tokens.",
                fmt_pct(ATTACH_SHARE)
            ))));
        } else {
            b.push(Block::Para(t(
                "A file the user's message names is sent with every request while its name is in the conversation. In these sessions that re-sending is a large share of the prompt; a tool that reads the file with load_artifact puts only what it returns into the prompt.",
            )));
            b.push(Block::List(
                hits.iter()
                    .map(|(id, at, reqs, share)| {
                        vec![
                            Inline::Text("session ".into()),
                            Inline::Code(id.clone()),
                            Inline::Text(format!(
                                ": {} attachment tokens sent with {} requests, {} of its prompt tokens",
                                int(*at),
                                int(*reqs),
                                fmt_pct(*share)
                            )),
                        ]
                    })
                    .collect(),
            ));
        }
    }

    // max_llm_calls.
    b.push(Block::Heading(
        3,
        "Cap the growth with max_llm_calls".into(),
    ));
    let has_calls = d
        .run
        .get("session_facts")
        .and_then(Value::as_array)
        .is_some_and(|a| {
            a.iter()
                .any(|x| x.get("max_model_requests_per_invocation").is_some())
        });
    if !has_calls {
        b.push(Block::Para(t(
            "Not checked: the run's data records no model requests per invocation.",
        )));
    } else {
        let mut hits: Vec<(String, f64)> = base_rows
            .iter()
            .filter_map(|r| {
                let m = facts.get(r, "max_model_requests_per_invocation")?;
                (m > LLM_CALLS_CAP).then(|| (r.session_id.clone(), m))
            })
            .collect();
        hits.sort_by(|a, c| c.1.total_cmp(&a.1).then(a.0.cmp(&c.0)));
        if hits.is_empty() {
            b.push(Block::Para(t(format!(
                "No session points to it: no invocation made more than {} model calls.",
                int(LLM_CALLS_CAP)
            ))));
        } else {
            b.push(Block::Para(t(format!(
                "An agent looping on tool results is usually what grew the history. In these sessions one invocation made more than {} model calls; RunConfig(max_llm_calls={}) would cap each run there.",
                int(LLM_CALLS_CAP),
                int(LLM_CALLS_CAP)
            ))));
            b.push(Block::List(
                hits.iter()
                    .map(|(id, m)| {
                        vec![
                            Inline::Text("session ".into()),
                            Inline::Code(id.clone()),
                            Inline::Text(format!(
                                ": up to {} model calls in one invocation",
                                int(*m)
                            )),
                        ]
                    })
                    .collect(),
            ));
        }
    }
}

/// The alternative that beats the recommended setting: the rule of
/// [`crate::table::summary::better_alternative`] over settings.json's rows and the run's
/// budgets.
fn beating_alternative(d: &RunData) -> Option<&SettingRow> {
    let rc = d.recommended()?.cost_usd()?;
    best_within_budgets(d, d.alternatives.iter()).filter(|a| a.cost_usd().is_some_and(|c| c < rc))
}

/// The cheapest of `rows` that meets the run's budgets with no failed run.
fn best_within_budgets<'a>(
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

/// The alternatives the sweep replayed, priced like compaction settings: the recommended
/// setting first, then each alternative, against the recorded sessions with no compaction.
fn priced_alternatives(d: &RunData, b: &mut Vec<Block>) {
    b.push(Block::Para(t(
        "Summarize deliberately, as a tool: not priced, since no transcript records where a person would have called such a tool; to weigh the summarizer class you would write, replay it with --summarizer python:REF (docs/summarizers.md).",
    )));
    if d.alternatives.is_empty() {
        b.push(Block::Para(t(
            "No alternative was replayed in this run (sweep --alternatives none, or no session where one applies): the sections below only point to the sessions where one might help.",
        )));
        return;
    }
    let m = money(d);
    let base = d.baseline();
    let base_cost = base.and_then(|x| x.cost_usd());
    let mut rows = Vec::new();
    let row = |name: String, x: &SettingRow| {
        let saved = match (base_cost, x.cost_usd()) {
            (Some(bc), Some(c)) => m(bc - c),
            _ => "n/a".into(),
        };
        vec![
            t(name),
            t(opt(x.cost_usd(), m)),
            t(saved),
            t(opt(x.broken_references(), fmt_pct)),
            t(opt(x.critical_hidden(), int)),
            t(opt(x.num(&["invocations_failed_sum"]), int)),
        ]
    };
    if let Some(r) = d.recommended() {
        rows.push(row(format!("recommended: {}", r.label), r));
    }
    for a in d.alternatives.iter().filter(|a| a.is_baseline()) {
        rows.push(row(a.label.clone(), a));
    }
    // The best combination (alternative + compaction), when the run replayed them: the
    // cheapest within the budgets with no failed run.
    let combos = d.alternatives.iter().filter(|a| !a.is_baseline()).count();
    if combos > 0 {
        match best_within_budgets(d, d.alternatives.iter().filter(|a| !a.is_baseline())) {
            Some(c) => rows.push(row(format!("best combination: {}", c.label), c)),
            None => rows.push(vec![
                t(format!(
                    "best combination: none of the {combos} combinations meets the budgets without a failed run"
                )),
                t(""),
                t(""),
                t(""),
                t(""),
                t(""),
            ]),
        }
    }
    b.push(Block::Table {
        head: vec![
            "alternative".into(),
            "cost (USD, all sessions)".into(),
            "saved vs none (USD)".into(),
            "broken references (mean share per session)".into(),
            "critical hidden (events)".into(),
            "failed runs (invocations)".into(),
        ],
        rows,
        numeric: vec![false, true, true, true, true, true],
    });
    b.push(Block::Para(t(
        "Each alternative is a counterfactual replay of the same sessions through the same ADK 2.13.0 engine and prices (docs/alternatives.md): saved is against the recorded sessions with no compaction. A capped run is not free: every invocation counted as failed raised LlmCallsLimitExceededError in ADK and returned no final answer. The rows above are replayed with no compaction (the last, when the run combined them, with its compaction setting); alternatives are not candidates for the recommendation, which stays a compaction setting and names an alternative that beats it. A split session's broken references count the references an earlier part alone held (0 at lossless split points); each new session's first request starts with nothing cached, which can make a split cost more than the tokens it saves suggest.",
    )));
    if let Some(a) = d.alternatives.iter().find(|a| a.alternative == "artifacts") {
        let share = |num: &str, den: &str| match (a.num(&[num]), a.num(&[den])) {
            (Some(n), Some(d)) if d > 0.0 => Some(n / d),
            _ => None,
        };
        let tokens = share("tokens_saved_gross_sum", "baseline_prompt_tokens_sum");
        let dollars = share("cost_saved_usd_sum", "baseline_cost_usd_sum");
        let mut line = String::from(
            "Files loaded once as artifacts: each attached file is priced in the first request after the message that names it only, not in every request while the message is in the history; a later reference to a fact only the file held is not counted as broken (facts are found per event, not per file).",
        );
        if let (Some(tk), Some(usd)) = (tokens, dollars) {
            line.push_str(&format!(
                " It removes {} of the prompt tokens and {} of the dollars.",
                fmt_pct(tk),
                fmt_pct(usd)
            ));
            if usd < tk / 2.0 {
                line.push_str(" The saving in dollars is small because prompt caching already bills a file re-sent in a cached prefix at the cached-input rate.");
            }
        }
        b.push(Block::Para(t(line)));
    }
    // Which invocations fail, per session, for the tightest cap.
    if let Some(tight) = crate::chart::data::tightest_cap(&d.alternatives) {
        let mut hit: Vec<(&RunRow, f64)> = d
            .runs
            .iter()
            .filter(|r| r.setting_id == tight.setting_id)
            .filter_map(|r| {
                let n = r.num("invocations_failed")?;
                (n > 0.0).then_some((r, n))
            })
            .collect();
        hit.sort_by(|a, c| {
            c.1.total_cmp(&a.1)
                .then(a.0.session_id.cmp(&c.0.session_id))
        });
        if !hit.is_empty() {
            b.push(Block::Para(t(format!(
                "Under {} these sessions' runs would have failed{}:",
                tight.alternative,
                if hit.len() > 10 {
                    " (the 10 with most failures)"
                } else {
                    ""
                }
            ))));
            b.push(Block::List(
                hit.iter()
                    .take(10)
                    .map(|(r, n)| {
                        vec![
                            Inline::Text("session ".into()),
                            Inline::Code(r.session_id.clone()),
                            Inline::Text(format!(
                                ": {} failed invocation{}",
                                int(*n),
                                if *n == 1.0 { "" } else { "s" }
                            )),
                        ]
                    })
                    .collect(),
            ));
        }
    }
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
    use super::*;
    use crate::chart::data::parse_settings;
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
        assert_eq!(usd4(12345.6), "$12,345.6000");
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
