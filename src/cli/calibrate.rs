//! `compaction-sim calibrate PATH...`: fit the latency model (ttft, prefill and decode rates
//! per model) from transcripts that record request times and sizes (Codex, Claude Code,
//! OpenHands), and the summary length model from recorded Claude Code compact summaries.
//! Prints the fit quality and writes a TOML file that `--latency FILE` reads.

use crate::cost::calibrate::{latency_samples, length_samples, openhands_latency_samples};
use crate::cost::latency::{
    fit_latency, fit_length, LatencyEntry, LatencyFile, LatencySample, LatencyTable, LengthSample,
};
use crate::cost::pricing::PriceTable;
use crate::transcript::{claude_code, codex, openhands, Session};
use anyhow::Context;
use clap::Args;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Transcript files or folders (searched recursively for .json / .jsonl).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Where to write the fitted parameters (TOML, read by `--latency FILE`).
    #[arg(long, default_value = "latency.toml")]
    pub out: PathBuf,
    /// Fewest timed requests needed to fit a model.
    #[arg(long, default_value_t = 5)]
    pub min_samples: usize,
}

fn collect_files(path: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for e in entries {
            collect_files(&e, out)?;
        }
    } else if path.is_file() {
        out.push(path.to_path_buf());
    } else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no such file or folder",
        ));
    }
    Ok(())
}

/// Sessions of a file in the formats that record request times and sizes.
fn read_sessions(file: &str, text: &str) -> Result<Vec<Session>, String> {
    let result = if claude_code::sniff(text) {
        claude_code::read(file, text)
    } else if codex::sniff(text) {
        codex::read(file, text)
    } else if openhands::sniff(text) {
        openhands::read(file, text)
    } else {
        return Ok(Vec::new());
    };
    result.map_err(|e| e.to_string())
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
    let mut files = Vec::new();
    for p in &args.paths {
        collect_files(p, &mut files).with_context(|| format!("{}", p.display()))?;
    }
    let prices = PriceTable::builtin();
    let defaults = LatencyTable::builtin();
    // TODO(tokens merge): count with o200k.
    let count = |t: &str| t.chars().count().div_ceil(4) as u64;
    let mut by_model: BTreeMap<String, Vec<LatencySample>> = BTreeMap::new();
    let mut lengths: Vec<LengthSample> = Vec::new();
    let mut measured = 0usize;
    for f in &files {
        let name = f.display().to_string();
        let ext = f.extension().and_then(|e| e.to_str()).unwrap_or("");
        if ext != "json" && ext != "jsonl" {
            continue;
        }
        let text = match std::fs::read_to_string(f) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("warning: {name}: {e}; skipped");
                continue;
            }
        };
        let oh = openhands_rows(&text);
        measured += oh.len();
        let mut samples = oh;
        match read_sessions(&name, &text) {
            Ok(sessions) => {
                for s in &sessions {
                    // OpenHands rows with measured latency: use those, not timestamp gaps.
                    if samples.is_empty() || s.format != crate::transcript::Format::Openhands {
                        samples.extend(latency_samples(s));
                    }
                    lengths.extend(length_samples(s, &count));
                }
            }
            Err(e) => eprintln!("warning: {e}; skipped"),
        }
        for (model, s) in samples {
            let family = prices
                .lookup(&model)
                .map(|(k, _)| k.to_string())
                .unwrap_or_else(|_| {
                    model
                        .rsplit('/')
                        .next()
                        .unwrap_or(&model)
                        .to_ascii_lowercase()
                });
            by_model.entry(family).or_default().push(s);
        }
    }

    let mut file = LatencyFile::default();
    println!("latency fit: seconds = ttft + input/prefill + output/decode, per model ({measured} measured OpenHands latencies, the rest from timestamp gaps)");
    println!(
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
            println!(
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
        println!(
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
            println!(
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
        None => println!(
            "summary length: no recorded summaries with a pre-compaction size; default kept"
        ),
    }
    if file.models.is_empty() && file.summary_length.is_none() {
        anyhow::bail!("no timed model requests or recorded summaries found in the given paths");
    }
    let text = format!(
        "# Written by `compaction-sim calibrate`; read with `--latency FILE`.\n# seconds = ttft_s + input_tokens / prefill_tokens_per_s + output_tokens / decode_tokens_per_s\n{}",
        toml::to_string(&file).context("serializing the fit")?
    );
    write_atomic(&args.out, text.as_bytes()).with_context(|| format!("{}", args.out.display()))?;
    println!("wrote {}", args.out.display());
    Ok(crate::cli::EXIT_OK)
}

/// Write to a temp file in the same folder, then rename over the target.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
