//! The report's content, as renderer-neutral blocks.

use super::{t, Block, Inline};
use crate::chart::data::{RunData, RunRow, SettingRow};
use crate::chart::plots::{frontier, summarizer_rows};
use crate::chart::{fmt_pct, fmt_usd, ChartOutcome};
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

fn opt(v: Option<f64>, f: fn(f64) -> String) -> String {
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
    if l.starts_with("compaction=") {
        l.to_string()
    } else {
        format!("compaction={l}")
    }
}

fn kind_words(k: &str) -> &str {
    match k {
        "tokens" => "size (after_tokens)",
        "invocations" => "turns (after_invocations)",
        "both" => "size or turns",
        _ => "none",
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
    let sessions = {
        let mut ids: Vec<&str> = d.runs.iter().map(|r| r.session_id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len()
    };
    b.push(Block::Heading(1, format!("Compaction report: {name}")));
    b.push(Block::Para(vec![Inline::Text(format!(
        "{} settings replayed over {sessions} sessions with google-adk 2.13.0 compaction semantics. All money is USD over all sessions of the run; detail lost is the share of history a model request read only through a summary, averaged over sessions.",
        d.settings.len()
    ))]));
    b.push(Block::Para(t(
        "Read it in order: the recommendation says what to deploy and what it costs you; the frontier lists the settings worth considering instead; the charts show why; the alternatives say where something other than compaction would do better.",
    )));
    recommendation(d, &mut b);
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
    alternatives(d, &mut b);
    glossary(&mut b);
    b
}

fn recommendation(d: &RunData, b: &mut Vec<Block>) {
    b.push(Block::Heading(2, "Recommendation".into()));
    let base = d.baseline();
    let Some(r) = d.recommended() else {
        let why = s(d.run.get("recommendation_note"))
            .or_else(|| s(d.run.get("recommendation").and_then(|r| r.get("reason"))))
            .unwrap_or_else(|| "no setting met the run's budgets".to_string());
        b.push(Block::Para(t(format!(
            "No setting is recommended: {why}. See the frontier below for the trade-offs."
        ))));
        return;
    };
    b.push(Block::Para(t(
        "Paste this line into the agent's MANIFEST (AgentManifest(..., compaction=...)):",
    )));
    b.push(Block::Code(paste_line(r)));
    let budgets = d
        .run
        .get("budgets")
        .map(flat)
        .unwrap_or_else(|| "none".into());
    let mut why = vec![Inline::Text(if budgets == "none" {
        "Why: it is the cheapest compacting setting; the run set no budget, so nothing limited the detail it may lose (sweep with --budget-detail-lost and --budget-latency to set limits). ".to_string()
    } else {
        format!("Why: it is the cheapest setting within the run's budgets ({budgets}). ")
    })];
    if let (Some(c), Some(bc)) = (r.cost_usd(), base.and_then(|x| x.cost_usd())) {
        let saved = bc - c;
        let pct = if bc > 0.0 { saved / bc } else { 0.0 };
        why.push(Inline::Text(format!(
            "It costs {} against {} with no compaction, {} {} ({}), ",
            fmt_usd(c),
            fmt_usd(bc),
            if saved >= 0.0 { "saving" } else { "adding" },
            fmt_usd(saved.abs()),
            fmt_pct(pct.abs())
        )));
    }
    why.push(Inline::Text(format!(
        "reads {} of the history only through summaries (mean per session), makes a run that compacts wait up to {} longer for its terminal event (p95), and hides {} behind a summary.",
        opt(r.detail_lost(), fmt_pct),
        opt(r.end_of_run_latency_p95(), secs),
        r.critical_hidden()
            .map(|n| format!("{} critical {} (approvals, refusals, confirmations, tool errors)", int(n), if n.round() == 1.0 { "event" } else { "events" }))
            .unwrap_or_else(|| "an unknown number of critical events".into())
    )));
    b.push(Block::Para(why));
    // The next frontier step toward less detail lost, so a reader who finds the loss too high
    // sees what keeping more costs.
    if let (Some(rc), Some(rd)) = (r.cost_usd(), r.detail_lost()) {
        let safer = frontier(d)
            .into_iter()
            .filter(|f| !f.is_baseline() && f.setting_id != r.setting_id)
            .filter_map(|f| Some((f, f.cost_usd()?, f.detail_lost()?)))
            .filter(|(_, _, fd)| *fd < rd)
            .min_by(|a, c| a.1.total_cmp(&c.1));
        if let Some((f, fc, fd)) = safer {
            b.push(Block::Para(vec![
                Inline::Text("If that loses too much detail: ".into()),
                Inline::Code(table_label(f)),
                Inline::Text(format!(
                    " loses {} instead and costs {} {}.",
                    fmt_pct(fd),
                    fmt_usd((fc - rc).abs()),
                    if fc >= rc { "more" } else { "less" }
                )),
            ]));
        }
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
        ("cost (USD, all sessions)", |x| x.cost_usd(), fmt_usd),
        (
            "prompt tokens sent (all sessions)",
            |x| x.num(&["prompt_tokens_sum"]),
            int,
        ),
        ("summarizer calls", |x| x.summarizer_calls(), int),
        (
            "detail lost (mean per session)",
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
    rows.push(("sessions replayed".into(), sessions.to_string()));
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
    if let Some(g) = run.get("grid") {
        if let Some(o) = g.as_object() {
            for (k, v) in o.iter().filter(|(k, _)| k.as_str() != "budget") {
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
    rows.push((
        "tokenizer".into(),
        first("tokenizer", &[]).unwrap_or_else(|| d.distinct(|x| &x.tokenizer).join(", ")),
    ));
    rows.push((
        "pricing date".into(),
        first("pricing_date", &["pricing.date", "pricing"]).unwrap_or_else(|| "n/a".into()),
    ));
    rows.push((
        "ADK semantics".into(),
        first("adk_semantics", &["adk"]).unwrap_or_else(|| "google-adk 2.13.0".into()),
    ));
    rows.push((
        "client mode".into(),
        first("client_modes", &["client"]).unwrap_or_else(|| d.distinct(|x| &x.client).join(", ")),
    ));
    rows.push((
        "agent model".into(),
        d.distinct(|x| &x.agent_model).join(", "),
    ));
    rows.push((
        "summarizers".into(),
        d.distinct(|x| &x.summarizer).join(", "),
    ));
    rows.push((
        "budgets".into(),
        first("budgets", &[]).unwrap_or_else(|| "none".into()),
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
        "Settings no other setting beats on both cost and detail lost, cheapest first (F1, F2, ... as labelled in the first chart). Anything off this list is dominated: some frontier setting is at least as cheap and loses no more detail.",
    )));
    let base_cost = d.baseline().and_then(|x| x.cost_usd());
    let rows: Vec<Vec<Vec<Inline>>> = frontier(d)
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut id = vec![Inline::Text(format!("F{}", i + 1))];
            if s.recommended {
                id.push(Inline::Text(" ".into()));
                id.push(Inline::Strong("recommended".into()));
            }
            if s.is_baseline() {
                id.push(Inline::Text(" baseline".into()));
            }
            let saved = match (base_cost, s.cost_usd()) {
                (Some(b0), Some(c)) => fmt_usd(b0 - c),
                _ => "n/a".into(),
            };
            vec![
                id,
                vec![Inline::Code(if s.is_baseline() {
                    "(no compaction)".into()
                } else {
                    table_label(s)
                })],
                t(kind_words(&s.trigger_kind)),
                t(if s.summarizer.is_empty() {
                    "none".to_string()
                } else {
                    s.summarizer.clone()
                }),
                t(s.client.clone()),
                t(opt(s.cost_usd(), fmt_usd)),
                t(saved),
                t(opt(s.detail_lost(), fmt_pct)),
                t(opt(s.critical_hidden(), int)),
                t(opt(s.end_of_run_latency_p95(), secs)),
                t(opt(s.summarizer_calls(), int)),
            ]
        })
        .collect();
    b.push(Block::Table {
        head: [
            "#",
            "setting",
            "trigger",
            "summarizer",
            "client",
            "cost (USD)",
            "saved vs none (USD)",
            "detail lost",
            "critical hidden",
            "end-of-run wait p95",
            "summarizer calls",
        ]
        .into_iter()
        .map(String::from)
        .collect(),
        rows,
        numeric: vec![
            false, false, false, false, false, true, true, true, true, true, true,
        ],
    });
}

fn summarizers(d: &RunData, b: &mut Vec<Block>) {
    b.push(Block::Heading(2, "Summarizers compared".into()));
    let rows = summarizer_rows(d);
    if rows.is_empty() {
        b.push(Block::Para(t("The run has no compacting setting.")));
        return;
    }
    b.push(Block::Para(t(
        "Each summarizer at the same trigger setting as the recommendation where the grid has it (else its best-ranked setting). Modelled summarizers write no text, so facts dropped is n/a for them.",
    )));
    b.push(Block::Table {
        head: [
            "summarizer",
            "setting",
            "cost (USD)",
            "end-of-run wait p95",
            "detail lost",
            "facts dropped",
            "summarizer calls",
            "summarizer tokens in+out",
        ]
        .into_iter()
        .map(String::from)
        .collect(),
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
                vec![
                    t(s.summarizer.clone()),
                    vec![Inline::Code(table_label(s))],
                    t(opt(s.cost_usd(), fmt_usd)),
                    t(opt(s.end_of_run_latency_p95(), secs)),
                    t(opt(s.detail_lost(), fmt_pct)),
                    t(opt(s.facts_dropped(), fmt_pct)),
                    t(opt(s.summarizer_calls(), int)),
                    t(toks),
                ]
            })
            .collect(),
        numeric: vec![false, false, true, true, true, true, true, true],
    });
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

/// Per-session input facts from `run.json` `session_facts[]`, when the run recorded them,
/// matched on session id and (when both name one) source file: ids need not be unique.
fn session_fact(d: &RunData, r: &RunRow, key: &str) -> Option<f64> {
    d.run
        .get("session_facts")?
        .as_array()?
        .iter()
        .find(|x| {
            x.get("session_id").and_then(Value::as_str) == Some(r.session_id.as_str())
                && match x.get("source").and_then(Value::as_str) {
                    Some(src) if !r.source.is_empty() => src == r.source,
                    _ => true,
                }
        })?
        .get(key)?
        .as_f64()
}

fn alternatives(d: &RunData, b: &mut Vec<Block>) {
    b.push(Block::Heading(2, "Alternatives from the guide".into()));
    b.push(Block::Para(t(
        "Compaction is one answer to a long history; the platform guide lists others. Each is suggested below only where this run's data points to it.",
    )));
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
                    vec![
                        Inline::Text("session ".into()),
                        Inline::Code(r.session_id.clone()),
                        Inline::Text(format!(
                            ": {} model requests, {} of history read only through summaries, critical events hidden: {}",
                            opt(r.num("model_requests"), int),
                            opt(r.num("detail_lost"), fmt_pct),
                            opt(r.num("critical_hidden"), int)
                        )),
                    ]
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
            let at = session_fact(d, r, "attachment_tokens").unwrap_or(0.0);
            let reqs = session_fact(d, r, "requests_with_attachment").unwrap_or(0.0);
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
                let m = session_fact(d, r, "max_model_requests_per_invocation")?;
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

fn glossary(b: &mut Vec<Block>) {
    b.push(Block::Heading(2, "How to read the numbers".into()));
    b.push(Block::List(vec![
        t("cost: agent model requests plus summarizer calls, USD, at the run's dated prices, with prompt caching where the price table has cached rates; a compaction rewrites the prompt, so the next request misses the cache."),
        t("detail lost: over a session, the share of the history tokens its model requests would have read verbatim that they read only through a summary (0 % = nothing summarized)."),
        t("critical hidden: approvals, refusals, confirmations, tool errors and interruptions that a later request saw only through a summary."),
        t("facts dropped: for summarizers that write text (terse, command), the share of facts (numbers, ids, emails, URLs, paths, quoted strings) of the compacted spans missing from the summary."),
        t("end-of-run latency: summarizer time after a run's last event; the reply has streamed, but a client that waits for the terminal event (runtime.run(), client mode waits) waits for it."),
        t("pre-request latency: summarizer time before a model request (size trigger); the answer itself waits for it."),
        t("client waits / streams: whether the next turn starts after the summary (waits) or at its recorded time, discarding a summary still being written (streams)."),
    ]));
}
