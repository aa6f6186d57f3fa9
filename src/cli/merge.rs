//! `compaction-sim merge DIR...`: combine the partial folders of `sweep --shard K/N` into
//! one run folder, byte-identical to the run on a single machine.
//!
//! Rows come from the shards; aggregates, ranks and the recommendation are recomputed from
//! them. The timelines replay the recommended setting on the longest sessions, so merge
//! re-reads those few transcripts (at the paths the shards recorded).

use crate::sweep::grid::{GridSpec, Known};
use crate::sweep::pipeline::{self, Costing};
use crate::table::frames::RunsWriter;
use crate::table::rundir::{self, TIMELINE_SESSIONS};
use anyhow::{anyhow, Result};
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
    let (inputs, _shard, parts) = rundir::read_partials(&args.dirs)?;
    // Where the run goes, checked before the transcripts are read again: never over a shard
    // folder (or a folder holding one), nor over anything the tool did not write.
    let name = inputs.default_name(&chrono::Utc::now().format("%Y-%m-%d").to_string());
    let chosen = crate::table::publish::Chosen::ByUser { force: args.force };
    let (target, latest) =
        super::sweep::run_target(&args.out, &args.reports, &name, &args.dirs, chosen)?;
    let costing = Costing::from_texts(
        "pricing.toml",
        &inputs.pricing_toml,
        "latency.toml",
        &inputs.latency_toml,
    )?;
    let known_model = |m: &str| costing.knows_model(m);
    let tokenizers = pipeline::tokenizer_names();
    let grid = GridSpec::from_toml("grid.toml", &inputs.grid_toml)
        .and_then(|g| {
            g.resolve_with_limit(
                &Known {
                    model: &known_model,
                    tokenizers: &tokenizers,
                },
                args.max_settings,
            )
        })
        .map_err(|e| anyhow!("{}: {e}", args.dirs[0].join("grid.toml").display()))?;

    // Load only the sessions the timelines draw.
    let live = rundir::live_sessions(&inputs);
    let longest = rundir::longest_sessions(&inputs.sessions, &live, TIMELINE_SESSIONS);
    // Each file read again with the format its sessions were read as.
    let mut files: Vec<(String, String)> = longest
        .iter()
        .map(|&i| {
            let s = &inputs.sessions[i as usize];
            (
                pipeline::source_file(&s.source).to_string(),
                s.format.clone(),
            )
        })
        .collect();
    files.sort();
    files.dedup();
    let mut placed = vec![None; inputs.sessions.len()];
    let mut unread: Vec<(String, String)> = Vec::new();
    for (file, format) in &files {
        let loaded = pipeline::load_sessions(std::slice::from_ref(file), Some(format))?;
        if let Some(e) = loaded.skipped.first() {
            unread.push((file.clone(), format!("{}: {}", e.path, e.reason)));
        }
        for s in loaded.sessions {
            let info = pipeline::session_info(&s, Default::default());
            let found = inputs
                .sessions
                .iter()
                .position(|x| x.source == info.source && x.session_id == info.session_id);
            if let Some(i) = found.filter(|&i| longest.contains(&(i as u32))) {
                placed[i] = Some(s);
            }
        }
    }
    for &i in &longest {
        if placed[i as usize].is_none() {
            let s = &inputs.sessions[i as usize];
            let file = pipeline::source_file(&s.source);
            let cause = unread
                .iter()
                .find(|(f, _)| f == file)
                .map_or(String::new(), |(_, e)| format!(" ({e})"));
            if crate::transcript::db::is_db_url(file) {
                anyhow::bail!("{}: session `{}` is needed for timelines.json but could not be read again{cause}: merge reads the database again, and a shard records its URL without the password; give it in PGPASSWORD or a password file (~/.pgpass, or PGPASSFILE) and run merge again (docs/scale-out.md)", s.source, s.session_id);
            }
            anyhow::bail!("{}: session `{}` is needed for timelines.json but could not be read again{cause} (run merge where the shards' input paths resolve)", s.source, s.session_id);
        }
    }
    let (timeout, live) = args.summarizers.start(
        &grid.summarizer,
        pipeline::cache_opts(args.cache_dir.clone(), false)
            .dir
            .as_deref(),
    )?;
    let cache = pipeline::cache_opts(args.cache_dir.clone(), args.no_cache);
    let (mut eval, _) =
        pipeline::PipelineEval::build_placed(placed, &grid.tokenizer, &costing, &cache)?;
    eval.set_summarizer_timeout(timeout);
    // The shards' rows, merged into the run's runs.parquet a row group per shard at a time.
    let build = crate::table::publish::build_dir_for(&target)?;
    let rows = inputs.sessions.len() as u64 * grid.settings.len() as u64;
    let mut w = RunsWriter::create(
        build.path(),
        &inputs.sessions,
        &grid.settings,
        rundir::wants_runs_csv(rows, args.runs_csv),
    )?;
    rundir::merge_runs(&parts, &inputs, &mut w)?;
    w.finish()?;
    let recorded = super::sweep::kept_recorded(rundir::merge_recorded(&parts, &inputs)?, &inputs);
    rundir::write_recorded_compactions(build.path(), &recorded, &super::CANCEL)?;
    let code = super::sweep::finish_run(
        &target, latest, &name, &inputs, &grid, build, &eval, None, args.quiet,
    )?;
    super::cost_flags::report_live(&live, args.quiet)?;
    Ok(code)
}
