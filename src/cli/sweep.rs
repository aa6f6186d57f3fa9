//! `compaction-sim sweep`: map the flags onto a sweep plan (`sweep::plan` decides the grid
//! and the alternatives' defaults) and a [`SweepJob`], run it with [`crate::run::sweep`]
//! (the library lists, replays, writes and publishes the run folder), and show what it says:
//! a progress bar, what was skipped, the recommendation.

use super::grid_flags::{flag_axes, AxisFlags};
use super::{install_signal_handler, term, CANCEL};
use crate::run::{
    Destination, Inputs, Phase, Progress, Published, RunError, Summarizers, SweepJob,
};
use crate::summarize::live::Client;
use crate::sweep::pipeline::{self, Costing};
use crate::sweep::plan::{SweepPlan, SweepRequest};
use crate::sweep::run::{Skipped, SummarizerFailure};
use crate::sweep::shard::Shard;
use crate::transcript::detect::Merged;
use anyhow::Result;
use clap::Args;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Transcript files, folders or globs, or ADK session database URLs (sqlite:///FILE.db,
    /// postgresql://USER@HOST:PORT/DB) [default: transcripts/].
    pub paths: Vec<String>,
    /// Sweep the 40 sample sessions (a checkout's transcripts/: `synth --sessions 40 --seed
    /// 6`), generated into a temporary folder; the report labels them sample data.
    #[arg(long)]
    pub samples: bool,
    /// Filters for database inputs.
    #[command(flatten)]
    pub db: crate::cli::db_flags::DbFlags,
    /// Grid file (TOML, same keys as the axis flags); without it the default grid is the base.
    #[arg(long, value_name = "FILE.toml")]
    pub grid: Option<PathBuf>,
    #[command(flatten)]
    pub axes: Box<AxisFlags>,
    #[command(flatten)]
    pub summarizers: super::cost_flags::GridSummarizerFlags,
    /// Run folder [default: <reports>/<date>-<hash>]: a new path, an empty folder, or (with
    /// --force) an earlier compaction-sim output; anything else is refused untouched.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Replace the --out folder when it holds an earlier compaction-sim output.
    #[arg(long)]
    pub force: bool,
    /// Folder holding runs and the `latest` link.
    #[arg(long, value_name = "DIR", default_value = "reports")]
    pub reports: PathBuf,
    /// Replay only N of the sessions read, drawn deterministically (by a hash of each
    /// session's source and id: the same N on every run over the same inputs). For a first
    /// look, or to bound what a `live:` summarizer costs.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub sample: Option<u64>,
    /// Run only the K-th of N slices of the sessions and write a partial folder for `merge`.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<Shard>,
    /// Print the resolved grid and exit.
    #[arg(long)]
    pub show_grid: bool,
    /// The guide's alternatives to replay beside compaction (docs/alternatives.md): `all`,
    /// `cap` (capped runs, RunConfig(max_llm_calls=N)), `artifacts` (attached files sent
    /// once, as load_artifact would), `split` (sessions cut where nothing is lost, and after
    /// pauses) or `none`. With `all` or `cap` and no --max-llm-calls, the caps are 10, 25 and
    /// 50, each kept only when some invocation of the data made more model calls; `artifacts`
    /// is replayed when some session has an attachment; with no --split, the splits are
    /// `lossless` and `idle=30m`.
    #[arg(long, value_name = "WHICH", default_value = "all")]
    pub alternatives: String,
    /// Also replay each alternative combined with each compaction setting (e.g.
    /// `split:lossless + Compaction(...)`): one more setting per (alternative, compaction
    /// setting), so the sweep takes that many times longer.
    #[arg(long)]
    pub combine: bool,
    /// Write runs.csv whatever the run's size (by default only up to 500,000 rows;
    /// runs.parquet always holds every row).
    #[arg(long)]
    pub runs_csv: bool,
    /// Largest grid accepted, in settings (counted before any is built).
    #[arg(long, value_name = "N", default_value_t = crate::sweep::grid::MAX_SETTINGS)]
    pub max_settings: u64,
    /// Price table replacing or extending the built-in one (TOML or LiteLLM JSON).
    #[arg(long, value_name = "FILE")]
    pub pricing: Option<PathBuf>,
    /// Latency table replacing or extending the built-in one (TOML).
    #[arg(long, value_name = "FILE")]
    pub latency: Option<PathBuf>,
    /// Force one transcript format instead of detecting it.
    #[arg(long)]
    pub format: Option<String>,
    /// Token-count cache folder [default: the user cache folder].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Do not read or write the token-count cache.
    #[arg(long)]
    pub no_cache: bool,
    /// No progress bar, no summary lines and no recommendation on stdout (errors still go to
    /// stderr; the run folder holds everything).
    #[arg(long, short)]
    pub quiet: bool,
}

/// The sweep as plain data for [`SweepPlan::resolve`]: the flags become the grid keys they
/// mirror.
pub fn request(args: &SweepArgs) -> SweepRequest<'_> {
    SweepRequest {
        grid_file: args.grid.as_deref(),
        flags: flag_axes(&args.axes, args.combine),
        alternatives: &args.alternatives,
        max_settings: args.max_settings,
    }
}

pub fn run(args: SweepArgs) -> Result<u8> {
    // The price, latency and grid files may be FIFOs that block: a signal while they are
    // read ends the run at once (nothing is written yet).
    install_signal_handler();
    super::EXIT_AT_ONCE.store(true, Ordering::SeqCst);
    let loaded = Costing::load(args.pricing.as_deref(), args.latency.as_deref()).map(|c| {
        let plan = SweepPlan::resolve(request(&args), &c);
        (c, plan)
    });
    super::EXIT_AT_ONCE.store(false, Ordering::SeqCst);
    let (costing, plan) = loaded?;
    for w in &costing.model.prices.warnings {
        errln!("warning: {}", term(&w.to_string()));
    }
    let plan = match plan {
        Ok(p) => p,
        Err(e) => {
            errln!("error: {}", term(&e.to_string()));
            return Ok(super::EXIT_BAD_INPUT);
        }
    };
    for note in &plan.grid.collapsed {
        errln!("note: {}", term(note));
    }
    if args.show_grid {
        out!("{}", plan.grid.describe());
        return Ok(super::EXIT_OK);
    }
    let token_cache = pipeline::cache_opts(args.cache_dir.clone(), false).dir;
    let (timeout, live) = args
        .summarizers
        .start(&plan.grid.summarizer, token_cache.as_deref())?;
    let given = if args.paths.is_empty() && !args.samples {
        vec![super::samples::DEFAULT_INPUT.to_string()]
    } else {
        args.paths.clone()
    };
    // `--samples`: generated into a temporary folder that lives until the run ends
    let (paths, samples) = super::samples::inputs(args.samples, &given, "sweep")?;
    if samples.is_some() && !args.quiet {
        errln!("note: {}", super::samples::SAMPLE_DATA);
    }
    let filter = args.db.filter(&paths, false)?;
    let job = SweepJob {
        plan,
        costing: &costing,
        inputs: Inputs {
            paths,
            format: args.format.clone(),
            filter,
            sample: args.sample,
            sample_data: samples
                .as_ref()
                .map(|_| super::samples::SAMPLE_DATA.to_string()),
        },
        destination: Destination {
            out: args.out.clone(),
            reports: args.reports.clone(),
            force: args.force,
        },
        shard: args.shard,
        runs_csv: args.runs_csv,
        cache: pipeline::cache_opts(args.cache_dir.clone(), args.no_cache),
        summarizers: Summarizers {
            timeout,
            live: live.clone(),
            live_concurrency: usize::from(args.summarizers.live.live_concurrency),
        },
        cancel: &CANCEL,
    };
    let shown = Shown {
        quiet: args.quiet,
        live_flags: &args.summarizers.live,
        live: &live,
        bar: OnceLock::new(),
    };
    match crate::run::sweep(job, &shown) {
        Ok(p) => say_published(&p, args.quiet),
        Err(RunError::Plan(e)) => {
            errln!("error: {}", term(&e.to_string()));
            Ok(super::EXIT_BAD_INPUT)
        }
        Err(e) => Err(e.into_inner()),
    }
}

/// The run shown on the terminal: a progress bar while replaying (when stderr is one and not
/// `--quiet`), what was skipped and why (always), the live clients' estimate and calls.
pub(super) struct Shown<'a> {
    pub quiet: bool,
    pub live_flags: &'a super::cost_flags::LiveFlags,
    pub live: &'a [Arc<Client>],
    pub bar: OnceLock<indicatif::ProgressBar>,
}

impl Progress for Shown<'_> {
    fn skipped(&self, skipped: &[Skipped]) {
        super::print_capped(
            "skipped ",
            skipped.iter().map(|s| format!("{}: {}", s.path, s.reason)),
        );
    }

    fn merged(&self, merged: &[Merged]) {
        super::print_merged(merged);
    }

    fn notes(&self, notes: &[String]) {
        super::print_notes(notes);
    }

    fn orphan_responses(&self, source: &str, session_id: &str, n: u64) {
        super::warn_orphan_responses([(source, session_id, n)]);
    }

    fn approve_live(
        &self,
        clients: &[Arc<Client>],
        costing: &Costing,
        dry_run: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        self.live_flags
            .check_estimate(clients, &costing.model, &costing.pricing_date, dry_run)
    }

    fn replays_planned(&self, planned: u64) {
        if self.quiet || !std::io::stderr().is_terminal() {
            return;
        }
        let pb = indicatif::ProgressBar::new(planned);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} replays  {per_sec}  eta {eta}",
        ) {
            pb.set_style(style);
        }
        let _ = self.bar.set(pb);
    }

    fn replayed_one(&self) {
        if let Some(p) = self.bar.get() {
            p.inc(1)
        }
    }

    fn ended(&self, phase: Phase) {
        if let (Phase::Replay, Some(p)) = (phase, self.bar.get()) {
            p.finish_and_clear();
        }
    }

    /// Sessions whose replay failed left the run; the first few failed summarizer calls of
    /// the rest are said (run.json lists them all); what the live clients really did.
    fn replays_done(&self, skipped: &[Skipped], failures: &[SummarizerFailure]) -> Result<()> {
        self.skipped(skipped);
        const SHOWN: usize = 5;
        for f in failures.iter().take(SHOWN) {
            errln!(
                "warning: {}#{} setting {}: {}",
                term(&f.source),
                term(&f.session_id),
                f.setting_id,
                term(&f.message)
            );
        }
        if failures.len() > SHOWN {
            errln!(
                "warning: {} more failed summarizer calls (run.json `summarizer_errors` lists them all)",
                failures.len() - SHOWN
            );
        }
        super::cost_flags::report_live(self.live, self.quiet)
    }
}

/// What a published run says: files an earlier folder held that are gone, where the run
/// went, the recommendation (or why there is none: exit 1), a report refused (exit 2).
/// Shared by `sweep` and `merge`.
pub(super) fn say_published(p: &Published, quiet: bool) -> Result<u8> {
    say_dropped(&p.dir, &p.dropped);
    let dir = p.dir.display().to_string();
    let Some(fin) = &p.finished else {
        if !quiet {
            let shard = p.shard.map(|s: Shard| s.to_string()).unwrap_or_default();
            outln!(
                "wrote partial run {} (shard {shard}: {} sessions × {} settings)",
                term(&dir),
                p.sessions,
                p.settings
            );
        }
        return Ok(super::EXIT_OK);
    };
    if !quiet {
        outln!(
            "wrote {} ({} sessions × {} settings)",
            term(&dir),
            p.sessions,
            p.settings
        );
    }
    for line in &fin.recommendation {
        if !fin.recommended {
            errln!("error: {}", term(line));
        } else if !quiet {
            outln!("{}", term(line));
        }
    }
    if let Some(line) = &fin.report_refused {
        errln!("error: {}", term(line));
        return Ok(super::EXIT_BAD_INPUT);
    }
    Ok(if fin.recommended {
        super::EXIT_OK
    } else {
        super::EXIT_REFUSED
    })
}

/// Names what replacing an earlier run folder removed that the new run did not write (a
/// file the user added there), so it is never lost without a word.
fn say_dropped(dir: &Path, dropped: &[String]) {
    if dropped.is_empty() {
        return;
    }
    let names: Vec<String> = dropped.iter().map(|n| term(n).into_owned()).collect();
    errln!(
        "note: {}: the earlier run folder was replaced as a whole; {} it held and this run did not write {} gone: {}",
        term(&dir.display().to_string()),
        if names.len() == 1 { "a file" } else { "files" },
        if names.len() == 1 { "is" } else { "are" },
        names.join(", ")
    );
}
