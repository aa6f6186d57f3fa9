//! `compaction-sim calibrate PATH...`: fit the latency model (ttft, prefill and decode rates
//! per model) from transcripts that record request times and sizes (Codex, Claude Code,
//! OpenHands), and the summary length model from recorded Claude Code compact summaries.
//! Prints the fit quality and writes a TOML file that `--latency FILE` reads.

use crate::cost::calibrate::{
    check_retention, fit_retention, latency_entry, round_to, RetentionSample, Samples,
};
use crate::cost::latency::{
    fit_latency, fit_length, LatencyFile, LatencyTable, LengthModel, LengthSample,
};
use crate::cost::pricing::PriceTable;
use crate::transcript::db::is_db_url;
use crate::transcript::detect::{expand_paths, load_file};
use anyhow::Context;
use clap::Args;
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

pub fn run(args: CalibrateArgs) -> anyhow::Result<u8> {
    let out = out_path(&args)?;
    let paths: Vec<String> = args.paths.iter().map(|p| p.display().to_string()).collect();
    let (samples, unread) = read_samples(&args, &paths)?;
    let defaults = LatencyTable::builtin();
    let mut file = LatencyFile::default();
    fit_models(&samples, &defaults, args.min_samples, &mut file)?;
    fit_summary_length(&samples.lengths, &defaults, &mut file)?;
    let files: Vec<&str> = paths
        .iter()
        .map(String::as_str)
        .filter(|p| !is_db_url(p))
        .collect();
    let source = format!("calibrate over {}", files.join(", "));
    fit_fact_retention(&samples.retention, &source, &mut file)?;
    if file.models.is_empty() && file.summary_length.is_none() && file.retention.is_none() {
        if let Some(first) = unread.first() {
            // Nothing found because an input could not be read: that is the error to say.
            anyhow::bail!(
                "no timed model requests or recorded summaries found: {first}{}",
                match unread.len() {
                    1 => String::new(),
                    n => format!(" (and {} more inputs not read)", n - 1),
                }
            );
        }
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

/// Every input read: database sessions first (only the reader's timings: no OpenHands
/// evaluation rows there), then the files; what cannot be read is said and skipped, and
/// returned (the reason when nothing is found).
fn read_samples(args: &CalibrateArgs, paths: &[String]) -> anyhow::Result<(Samples, Vec<String>)> {
    let filter = args.db.filter(paths, false)?;
    let (urls, paths): (Vec<String>, Vec<String>) =
        paths.iter().cloned().partition(|p| is_db_url(p));
    let (files, mut skipped) = expand_paths(&paths);
    let mut db_sessions = Vec::new();
    for u in &urls {
        let (sessions, bad) = crate::transcript::db::load_arg(u, &filter);
        db_sessions.extend(sessions);
        skipped.extend(bad);
    }
    let mut unread: Vec<String> = skipped.iter().map(|e| e.to_string()).collect();
    for e in &unread {
        errln!("warning: {}; skipped", super::term(e));
    }
    let prices = PriceTable::builtin();
    let mut samples = Samples::default();
    for s in &db_sessions {
        samples.add_db_session(s, &prices);
    }
    for f in &files {
        // an OpenHands SDK v1 conversation folder is one session, read by its reader
        let text = match std::fs::read_to_string(f) {
            Ok(t) => t,
            Err(_) if f.is_dir() => String::new(),
            Err(e) => {
                let e = format!("{}: {e}", f.display());
                errln!("warning: {}; skipped", super::term(&e));
                unread.push(e);
                continue;
            }
        };
        let sessions = load_file(f, None);
        let used = samples.add_file(&text, sessions.as_deref().ok(), &prices);
        if let (Err(e), false) = (&sessions, used) {
            errln!("warning: {}; skipped", super::term(&e.to_string()));
            unread.push(e.to_string());
        }
    }
    Ok((samples, unread))
}

/// Per model family with enough timed requests, its fit: printed, and kept in `file`.
fn fit_models(
    samples: &Samples,
    defaults: &LatencyTable,
    min_samples: usize,
    file: &mut LatencyFile,
) -> anyhow::Result<()> {
    outln!("latency fit: seconds = ttft + input/prefill + output/decode, per model ({} measured latencies, the rest from timestamp gaps)", samples.measured);
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
    for (model, timings) in &samples.by_model {
        // Model names come from transcripts: escaped, as every printed transcript string.
        let shown = super::term(model);
        if timings.len() < min_samples {
            outln!(
                "{shown:<36} {:>7}  too few timed requests (need {min_samples})",
                timings.len(),
            );
            continue;
        }
        let prior = defaults.for_model(model);
        let Some(fit) = fit_latency(timings, &prior) else {
            continue;
        };
        outln!(
            "{shown:<36} {:>7} {:>8.3} {:>13.1} {:>12.1} {:>6.3} {:>8.2} s {:>8.2} s  {}",
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
        file.models.insert(model.clone(), latency_entry(&fit));
    }
    Ok(())
}

/// The summary length model from recorded summaries, else the default kept.
fn fit_summary_length(
    lengths: &[LengthSample],
    defaults: &LatencyTable,
    file: &mut LatencyFile,
) -> anyhow::Result<()> {
    let Some(l) = fit_length(lengths, &defaults.length) else {
        outln!("summary length: no recorded summaries with a pre-compaction size; default kept");
        return Ok(());
    };
    outln!(
        "summary length: {} recorded summaries (o200k tokens): ratio {:.4} (median of summary/pre-compaction prompt), cap {} tokens (largest)",
        lengths.len(),
        l.ratio,
        l.cap_tokens
    );
    file.summary_length = Some(LengthModel {
        ratio: round_to(l.ratio, 5),
        ..l
    });
    Ok(())
}

/// Per fact kind, the share of the references at risk at recorded summaries that their text
/// held (pooled, and per summarizer family), with the `agent` estimate against the real
/// count in sample and leave-one-session-out; else the built-in retention.
fn fit_fact_retention(
    kept: &[RetentionSample],
    source: &str,
    file: &mut LatencyFile,
) -> anyhow::Result<()> {
    if kept.is_empty() {
        outln!("fact retention: no recorded summaries with a text and references at risk; built-in retention kept");
        return Ok(());
    }
    let r = fit_retention(kept, source);
    outln!(
        "fact retention: references at risk at {}, written by {}; per kind: held/at risk = rate [95% interval over summaries]",
        r.rests_on(),
        super::term(&r.models.join(", "))
    );
    print_kinds("pooled", &r.kinds)?;
    for (name, f) in &r.families {
        print_kinds(&format!("{name} ({} summaries)", f.summaries), &f.kinds)?;
    }
    let c = check_retention(kept);
    let ratio = |x: f64| x / c.real.max(1) as f64;
    outln!(
        "  check: broken references at these {} summaries ({} sessions): real {}; estimate with the pooled fit {:.1} ({:.2}x) in sample, {:.1} ({:.2}x) leaving each session out",
        c.summaries,
        c.sessions,
        c.real,
        c.in_sample,
        ratio(c.in_sample),
        c.leave_one_session_out,
        ratio(c.leave_one_session_out)
    );
    for f in &c.families {
        let r = |x: f64| x / f.real.max(1) as f64;
        outln!(
            "    {} ({} summaries): real {}; pooled fit {:.1} ({:.2}x) in sample, {:.1} ({:.2}x) leaving each session out; its own fit {:.1} ({:.2}x), {:.1} ({:.2}x)",
            super::term(&f.family),
            f.summaries,
            f.real,
            f.pooled.0,
            r(f.pooled.0),
            f.pooled.1,
            r(f.pooled.1),
            f.own.0,
            r(f.own.0),
            f.own.1,
            r(f.own.1)
        );
    }
    file.retention = Some(r);
    Ok(())
}

fn print_kinds(
    label: &str,
    kinds: &std::collections::BTreeMap<String, crate::detail::references::KindRetention>,
) -> anyhow::Result<()> {
    outln!("  {}", super::term(label));
    for (name, k) in kinds {
        match (k.rate, k.rate_low, k.rate_high) {
            (Some(rate), Some(lo), Some(hi)) => outln!(
                "    {name:<7} {:>6}/{:<6} = {rate:.4} [{lo:.4}, {hi:.4}] over {} summaries",
                k.kept,
                k.at_risk,
                k.summaries
            ),
            _ => outln!(
                "    {name:<7} {:>6}/{:<6} too few summaries ({} of {} needed): estimates use the upper bound",
                k.kept,
                k.at_risk,
                k.summaries,
                crate::detail::references::MIN_SUMMARIES_PER_KIND
            ),
        }
    }
    Ok(())
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
