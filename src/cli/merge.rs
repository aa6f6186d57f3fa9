//! `compaction-sim merge DIR...`: combine the partial folders of `sweep --shard K/N` into
//! one run folder, byte-identical to the run on a single machine ([`crate::run::finish_merge`]
//! does the work; this maps the flags and prints).

use crate::run::{Destination, MergeJob, Partials, Silent};
use crate::sweep::pipeline;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Partial folders written by `sweep --shard K/N` (all N of them).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Run folder [default: <reports>/<date>-<hash>, the name the unsharded run would get]:
    /// a new path, an empty folder, or (with --force) an earlier compaction-sim output.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Replace the --out folder when it holds an earlier compaction-sim output.
    #[arg(long)]
    pub force: bool,
    #[arg(long, value_name = "DIR", default_value = "reports")]
    pub reports: PathBuf,
    /// Token-count cache folder.
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    #[arg(long)]
    pub no_cache: bool,
    #[arg(long, short)]
    pub quiet: bool,
    /// Write runs.csv whatever the run's size (by default only up to 500,000 rows).
    #[arg(long)]
    pub runs_csv: bool,
    /// Largest grid accepted, in settings: give the sweep's own `--max-settings` when it
    /// raised the limit.
    #[arg(long, value_name = "N", default_value_t = crate::sweep::grid::MAX_SETTINGS)]
    pub max_settings: u64,
    /// How the grid's summarizers run (the timelines replay them: `python:` workers are
    /// started; `live:` spans the shards summarized are read from the summary cache when it
    /// is shared, others are called).
    #[command(flatten)]
    pub summarizers: super::cost_flags::GridSummarizerFlags,
}

pub fn run(args: MergeArgs) -> Result<u8> {
    super::install_signal_handler();
    let partials = Partials::read(&args.dirs, args.max_settings).map_err(|e| e.into_inner())?;
    // The timelines replay the grid's summarizers: `python:` workers are started, `live:`
    // clients too.
    let (timeout, live) = args.summarizers.start(
        &partials.grid.summarizer,
        pipeline::cache_opts(args.cache_dir.clone(), false)
            .dir
            .as_deref(),
    )?;
    let job = MergeJob {
        partials,
        destination: Destination {
            out: args.out.clone(),
            reports: args.reports.clone(),
            force: args.force,
        },
        cache: pipeline::cache_opts(args.cache_dir.clone(), args.no_cache),
        summarizer_timeout: timeout,
        runs_csv: args.runs_csv,
        cancel: &super::CANCEL,
    };
    let published = crate::run::finish_merge(job, &Silent).map_err(|e| e.into_inner())?;
    let code = super::sweep::say_published(&published, args.quiet)?;
    super::cost_flags::report_live(&live, args.quiet)?;
    Ok(code)
}
