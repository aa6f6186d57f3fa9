//! `compaction-sim calibrate PATH...`: fit the latency model (ttft, prefill and decode rates
//! per model) from transcripts that record request times and sizes (Codex, Claude Code,
//! OpenHands), and the summary length model from recorded Claude Code compact summaries.
//! Prints the fit quality and writes a TOML file that `--latency FILE` reads.

use crate::cost::calibrate::{
    fit_retention, has_measured_latency, latency_samples, length_samples,
    openhands_latency_samples, retention_samples, RetentionSample,
};
use crate::cost::latency::{
    fit_latency, fit_length, LatencyEntry, LatencyFile, LatencySample, LatencyTable, LengthSample,
};
use crate::cost::pricing::PriceTable;
use crate::transcript::db::is_db_url;
use crate::transcript::detect::{expand_paths, load_file};
use anyhow::Context;
use clap::Args;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Transcript files or folders (searched recursively for .json / .jsonl), or ADK session
    /// database URLs (sqlite:///FILE.db, postgresql://USER@HOST:PORT/DB).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Filters for database inputs.
    #[command(flatten)]
    pub db: super::db_flags::DbFlags,
    /// Where to write the fitted parameters (TOML, read by `--latency FILE`) [default:
    /// latency.toml]. An existing file is replaced only when calibrate wrote it, and (unless
    /// it is the default path) only with --force.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replace the --out file when an earlier `calibrate` wrote it.
    #[arg(long)]
    pub force: bool,
    /// Fewest timed requests needed to fit a model.
    #[arg(long, default_value_t = 5)]
    pub min_samples: usize,
}

/// OpenHands evaluation rows (JSON or JSONL) with measured latencies.
fn openhands_rows(text: &str) -> Vec<(String, LatencySample)> {
    if !text.contains("response_latencies") {
        return Vec::new();
    }
    let mut out = Vec::new();
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(text) {
        out.extend(openhands_latency_samples(&v));
        return out;
    }
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
            out.extend(openhands_latency_samples(&v));
        }
    }
    out
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

pub fn run(args: CalibrateArgs) -> anyhow::Result<u8> {
    let out = out_path(&args)?;
    let paths: Vec<String> = args.paths.iter().map(|p| p.display().to_string()).collect();
    let filter = args.db.filter(&paths, false)?;
    let (urls, paths): (Vec<String>, Vec<String>) = paths.into_iter().partition(|p| is_db_url(p));
    let (files, mut skipped) = expand_paths(&paths);
    // Database sessions: only the reader's timings (no OpenHands evaluation rows there).
    let mut db_sessions = Vec::new();
    for u in &urls {
        let (sessions, bad) = crate::transcript::db::load_arg(u, &filter);
        db_sessions.extend(sessions);
        skipped.extend(bad);
    }
    for e in &skipped {
        errln!("warning: {e}; skipped");
    }
    let prices = PriceTable::builtin();
    let defaults = LatencyTable::builtin();
    let count = |t: &str| crate::tokens::count_text(crate::tokens::Tokenizer::O200k, t) as u64;
    let mut by_model: BTreeMap<String, Vec<LatencySample>> = BTreeMap::new();
    let mut lengths: Vec<LengthSample> = Vec::new();
    let mut kept: Vec<RetentionSample> = Vec::new();
    let mut measured = 0usize;
    let family_of = |model: &str| {
        prices
            .lookup(model)
            .map(|(k, _)| k.to_string())
            .unwrap_or_else(|_| {
                model
                    .rsplit('/')
                    .next()
                    .unwrap_or(model)
                    .to_ascii_lowercase()
            })
    };
    for s in &db_sessions {
        for (model, x) in latency_samples(s) {
            by_model.entry(family_of(&model)).or_default().push(x);
        }
        lengths.extend(length_samples(s, &count));
        measured += s.events.iter().filter(|e| e.latency_s.is_some()).count();
    }
    for f in &files {
        let name = f.display().to_string();
        let text = match std::fs::read_to_string(f) {
            Ok(t) => t,
            Err(e) => {
                errln!("warning: {name}: {e}; skipped");
                continue;
            }
        };
        // Measured latencies: from the reader (`Event::latency_s`) when it kept them, else
        // straight from OpenHands evaluation rows (which need not parse as transcripts).
        let sessions = load_file(f, None);
        let raw = openhands_rows(&text);
        let mut samples = Vec::new();
        match &sessions {
            Ok(sessions) => {
                let reader_measured = sessions.iter().any(has_measured_latency);
                for s in sessions {
                    let skip_gaps = !reader_measured
                        && !raw.is_empty()
                        && s.format == crate::transcript::Format::Openhands;
                    if !skip_gaps {
                        samples.extend(latency_samples(s));
                    }
                    lengths.extend(length_samples(s, &count));
                    kept.extend(retention_samples(s));
                }
                if !reader_measured {
                    samples.extend(raw.iter().cloned());
                }
                measured += sessions
                    .iter()
                    .flat_map(|s| &s.events)
                    .filter(|e| e.latency_s.is_some())
                    .count();
                if !reader_measured {
                    measured += raw.len();
                }
            }
            Err(e) => {
                if raw.is_empty() {
                    errln!("warning: {e}; skipped");
                }
                measured += raw.len();
                samples.extend(raw.iter().cloned());
            }
        }
        for (model, s) in samples {
            by_model.entry(family_of(&model)).or_default().push(s);
        }
    }

    let mut file = LatencyFile::default();
    outln!("latency fit: seconds = ttft + input/prefill + output/decode, per model ({measured} measured latencies, the rest from timestamp gaps)");
    outln!(
        "{:<36} {:>7} {:>8} {:>13} {:>12} {:>6} {:>10} {:>10}  held at default",
        "model",
        "samples",
        "ttft_s",
        "prefill tok/s",
        "decode tok/s",
        "R2",
        "|res| p50",
        "|res| p95"
    );
    for (model, samples) in &by_model {
        if samples.len() < args.min_samples {
            outln!(
                "{model:<36} {:>7}  too few timed requests (need {})",
                samples.len(),
                args.min_samples
            );
            continue;
        }
        let prior = defaults.for_model(model);
        let Some(fit) = fit_latency(samples, &prior) else {
            continue;
        };
        outln!(
            "{model:<36} {:>7} {:>8.3} {:>13.1} {:>12.1} {:>6.3} {:>8.2} s {:>8.2} s  {}",
            fit.samples,
            fit.params.ttft_s,
            fit.params.prefill_tokens_per_s,
            fit.params.decode_tokens_per_s,
            fit.r2,
            fit.residual_p50_s,
            fit.residual_p95_s,
            if fit.held.is_empty() {
                "-".to_string()
            } else {
                fit.held.join(", ")
            }
        );
        file.models.insert(
            model.clone(),
            LatencyEntry {
                ttft_s: round(fit.params.ttft_s, 4),
                prefill_tokens_per_s: round(fit.params.prefill_tokens_per_s, 1),
                decode_tokens_per_s: round(fit.params.decode_tokens_per_s, 2),
                samples: Some(fit.samples as u64),
                r2: Some(round(fit.r2, 4)),
                residual_p50_s: Some(round(fit.residual_p50_s, 3)),
                residual_p95_s: Some(round(fit.residual_p95_s, 3)),
            },
        );
    }
    match fit_length(&lengths, &defaults.length) {
        Some(l) => {
            outln!(
                "summary length: {} recorded summaries (o200k tokens): ratio {:.4} (median of summary/pre-compaction prompt), cap {} tokens (largest)",
                lengths.len(),
                l.ratio,
                l.cap_tokens
            );
            file.summary_length = Some(crate::cost::latency::LengthModel {
                ratio: round(l.ratio, 5),
                ..l
            });
        }
        None => {
            outln!("summary length: no recorded summaries with a pre-compaction size; default kept")
        }
    }
    if kept.is_empty() {
        outln!("fact retention: no recorded summaries with a text; built-in retention kept");
    } else {
        let r = fit_retention(&kept, &format!("calibrate over {}", paths.join(", ")));
        outln!(
            "fact retention: {} recorded summaries (written by {}); per kind: kept/facts = rate [95% interval over summaries]",
            r.summaries,
            r.models.join(", ")
        );
        for (name, k) in &r.kinds {
            match (k.rate, k.rate_low, k.rate_high) {
                (Some(rate), Some(lo), Some(hi)) => outln!(
                    "  {name:<7} {:>6}/{:<6} = {rate:.4} [{lo:.4}, {hi:.4}] over {} summaries",
                    k.kept,
                    k.facts,
                    k.summaries
                ),
                _ => outln!(
                    "  {name:<7} {:>6}/{:<6} too few summaries ({} of {} needed): estimates use the upper bound",
                    k.kept,
                    k.facts,
                    k.summaries,
                    crate::cost::references::MIN_SUMMARIES_PER_KIND
                ),
            }
        }
        file.retention = Some(r);
    }
    if file.models.is_empty() && file.summary_length.is_none() && file.retention.is_none() {
        anyhow::bail!("no timed model requests or recorded summaries found in the given paths");
    }
    let text = format!(
        "{HEADER}; read with `--latency FILE`.\n# seconds = ttft_s + input_tokens / prefill_tokens_per_s + output_tokens / decode_tokens_per_s\n{}",
        toml::to_string(&file).context("serializing the fit")?
    );
    crate::atomic::write_atomic(&out, text.as_bytes())?;
    outln!("wrote {}", super::term(&out.display().to_string()));
    Ok(crate::cli::EXIT_OK)
}

/// The first line of every file calibrate writes: how it knows a file is its own.
const HEADER: &str = "# Written by `compaction-sim calibrate`";

/// Where the fit goes, checked before any work (docs/cli.md "Where outputs go").
fn out_path(args: &CalibrateArgs) -> anyhow::Result<PathBuf> {
    use crate::table::publish::{check_file_target, Chosen};
    let (out, chosen) = match &args.out {
        Some(p) => (p.clone(), Chosen::ByUser { force: args.force }),
        None => (PathBuf::from("latency.toml"), Chosen::Default),
    };
    check_file_target(&out, chosen, |head| head.starts_with(HEADER.as_bytes()))?;
    Ok(out)
}
