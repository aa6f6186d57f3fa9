//! The report's account of the run itself: what was run on what ("What was run"), the
//! inputs skipped and the summarizer calls that failed.

use super::build::{flat, s, secs};
use super::figures::size_basis;
use super::{t, Block, Inline};
use crate::table::folder::RunData;
use crate::table::format::{fmt_int as int, fmt_pct};
use serde_json::Value;

pub(super) fn what_was_run(d: &RunData, sessions: usize, b: &mut Vec<Block>) {
    b.push(Block::Heading(2, "What was run".into()));
    let mut rows = input_rows(d, sessions);
    rows.extend(grid_rows(&d.run));
    rows.push(tokenizer_row(d));
    rows.extend(size_basis_row(d));
    rows.push(pricing_row(&d.run));
    rows.extend(latency_row(&d.run));
    rows.extend(semantics_rows(d));
    rows.push((
        "budgets".into(),
        budgets_words(d.run.get("budgets")).unwrap_or_else(|| "none".into()),
    ));
    if let Some(v) = run_field(&d.run, "compaction_sim_version", &["version"]) {
        rows.push(("compaction-sim version".into(), v));
    }
    b.push(Block::Table {
        head: vec!["".into(), "value".into()],
        rows: rows.into_iter().map(|(k, v)| vec![t(k), t(v)]).collect(),
        numeric: vec![false, false],
    });
}

/// The first of `key` and `alts` (dotted paths) that `run.json` holds, flattened to text.
fn run_field(run: &Value, key: &str, alts: &[&str]) -> Option<String> {
    std::iter::once(key)
        .chain(alts.iter().copied())
        .find_map(|k| {
            let mut v = run;
            for part in k.split('.') {
                v = v.get(part)?;
            }
            Some(flat(v))
        })
}

/// What was read: inputs, sessions replayed (and sampled from), inputs skipped, settings.
fn input_rows(d: &RunData, sessions: usize) -> Vec<(String, String)> {
    let run = &d.run;
    let skipped = run
        .get("skipped")
        .and_then(Value::as_array)
        .map(|a| a.len())
        .unwrap_or(0);
    vec![
        (
            "inputs".into(),
            inputs_row(run),
        ),
        (
            "sessions replayed".into(),
            match run.get("sampled_from").and_then(Value::as_u64) {
                Some(of) => format!(
                    "{sessions} (a sample drawn with --sample from {of} sessions read: by a hash of each session's source and id, the same on every run)"
                ),
                None => sessions.to_string(),
            },
        ),
        ("inputs skipped".into(), skipped.to_string()),
        (
            "settings".into(),
            format!("{} (one is the no-compaction baseline)", d.settings.len()),
        ),
    ]
}

/// The grid's trigger axes; the other axes (summarizer, client, model, tokenizer) get a row
/// of their own, with what they mean.
fn grid_rows(run: &Value) -> Vec<(String, String)> {
    let explained = ["budget", "summarizer", "client", "agent_model", "tokenizer"];
    match run.get("grid") {
        Some(Value::Object(o)) => o
            .iter()
            .filter(|(k, _)| !explained.contains(&k.as_str()))
            .map(|(k, v)| (format!("grid: {k}"), flat(v)))
            .collect(),
        Some(g) => vec![("grid".into(), flat(g))],
        None => Vec::new(),
    }
}

fn tokenizer_row(d: &RunData) -> (String, String) {
    let tokenizer = run_field(&d.run, "tokenizer", &[])
        .unwrap_or_else(|| d.distinct(|x| &x.tokenizer).join(", "));
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
    (
        "tokenizer".into(),
        format!("{tokenizer_words}: counts the prompt tokens each setting would send; compaction triggers and history read only through summaries are measured in it"),
    )
}

/// What the prompt sizes rest on: recorded, fitted to the provider's scale, or counted.
fn size_basis_row(d: &RunData) -> Option<(String, String)> {
    let b = size_basis(d)?;
    let fit = match (b.scale_p50, b.error_p50) {
        (Some(s), Some(e)) => format!(
            " (median scale {s:.3} provider tokens per counted token, median fit error {e:.1} %)"
        ),
        _ => String::new(),
    };
    Some((
        "prompt sizes".into(),
        format!(
            "recorded where the transcript records them; {} of {} sessions record enough to fit recorded ≈ overhead + scale × counted{fit} (runs' prompt_overhead, prompt_scale, prompt_fit_error_p50), and for them every size not recorded (a request after a compaction the framework made) and every amount a setting, policy or alternative removes or adds is on that fit's scale (provider tokens, fitted); the other {} are counted with the run's tokenizer (no overhead, no scale)",
            b.fitted,
            b.sessions,
            b.sessions - b.fitted
        ),
    ))
}

fn pricing_row(run: &Value) -> (String, String) {
    (
        "pricing date".into(),
        match run_field(run, "pricing_date", &["pricing.date", "pricing"]) {
            Some(date) => {
                let source = run_field(run, "pricing_source", &[])
                    .filter(|s| !s.is_empty())
                    .map(|s| format!("; source: {s}"))
                    .unwrap_or_default();
                format!("{date}: list prices as of that date (pricing.toml in this folder{source}); check current prices before relying on absolute dollars")
            }
            None => "n/a".into(),
        },
    )
}

/// Models timed with latency.toml's `default` figures, when there are any.
fn latency_row(run: &Value) -> Option<(String, String)> {
    let list = run
        .get("latency_default_models")
        .and_then(|v| v.as_array())
        .filter(|a| !a.is_empty())?;
    let names: Vec<String> = list.iter().map(flat).collect();
    Some((
        "latency".into(),
        format!(
            "{}: timed with the `default` planning figures, as no family of latency.toml (in this folder) matches",
            names.join(", ")
        ),
    ))
}

/// How the sessions were replayed: ADK semantics, client mode, agent model, summarizers.
fn semantics_rows(d: &RunData) -> Vec<(String, String)> {
    let run = &d.run;
    let adk = (
        "ADK semantics".into(),
        format!(
            "{}: events compaction as that release runs it (the size trigger is checked before each model request and after each invocation, the turn trigger after each invocation; later prompts carry the summary instead of the compacted events)",
            run_field(run, "adk_semantics", &["adk"]).unwrap_or_else(|| "google-adk 2.13.0".into())
        ),
    );
    let clients = run_field(run, "client_modes", &["client"])
        .unwrap_or_else(|| d.distinct(|x| &x.client).join(", "));
    let client_words = clients
        .split(", ")
        .map(|c| match c {
            "waits" => "waits (the client waits for the run's terminal event, as runtime.run() does, so every summary lands and its time is added to the run)".to_string(),
            "streams" => "streams (the next turn starts at its recorded time; a summary still being written is discarded)".to_string(),
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join("; ");
    let models = d
        .distinct(|x| &x.agent_model)
        .iter()
        .map(|m| {
            if m == "recorded" {
                format!("recorded (each session is priced and timed as the model its transcript names; sessions that name none as {})", crate::cost::compute::FALLBACK_AGENT_MODEL)
            } else {
                m.clone()
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    let summarizers = d
        .distinct(|x| &x.summarizer)
        .iter()
        .map(|x| summarizer_words(x))
        .collect::<Vec<_>>()
        .join("; ");
    vec![
        adk,
        ("client mode".into(), client_words),
        ("agent model".into(), models),
        ("summarizers".into(), summarizers),
    ]
}

/// `run.json` `budgets` in words, or `None` when the run set none.
pub(super) fn budgets_words(v: Option<&Value>) -> Option<String> {
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

/// `run.json` `inputs`: a list of `{path, sessions}` (or paths), shortened to a count and
/// the first few paths.
/// The inputs row: the files read, and with `--samples` first what they are (sample data,
/// not the user's sessions).
fn inputs_row(run: &Value) -> String {
    let files = run
        .get("inputs")
        .map(inputs_text)
        .unwrap_or_else(|| "n/a".into());
    match run.get("sample_data").and_then(Value::as_str) {
        Some(what) => format!("{what}; {files}"),
        None => files,
    }
}

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

pub(super) fn skipped(d: &RunData, b: &mut Vec<Block>) {
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
pub(super) fn summarizer_errors(d: &RunData, b: &mut Vec<Block>) {
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
