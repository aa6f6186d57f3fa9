//! `compaction-sim sweep`: map the flags onto a sweep plan (`sweep::plan` decides the grid
//! and the alternatives' defaults), read and count the transcripts once, replay every
//! (session, setting) pair in parallel with a progress bar, and write the run folder.

use crate::error::Cancelled;
use crate::sweep::grid::{AxisItem, AxisSpec, Budgets, GridSpec, ResolvedGrid};
use crate::sweep::pipeline::{self, Costing};
use crate::sweep::plan::{SweepPlan, SweepRequest};
use crate::sweep::run::{run_windows, shard_sessions, Failure, RunRow, SessionInfo};
use crate::sweep::shard::Shard;
use crate::sweep::Setting;
use crate::table::frames::RunsWriter;
use crate::table::publish::{self, Chosen, Target};
use crate::table::rundir::{self, RunInputs, Skipped};
use anyhow::Result;
use clap::Args;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

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

/// The grid axes and budgets as flags (boxed: they would make every `Command` large).
#[derive(Debug, Args)]
pub struct AxisFlags {
    /// Trigger kinds: tokens, invocations, both (comma-separated).
    #[arg(long, value_name = "LIST")]
    pub trigger: Option<String>,
    /// Values or ranges, e.g. `40k..200k:20k` or `40k,80k`.
    #[arg(long, value_name = "LIST")]
    pub after_tokens: Option<String>,
    #[arg(long, value_name = "LIST")]
    pub keep_recent_events: Option<String>,
    #[arg(long, value_name = "LIST")]
    pub after_invocations: Option<String>,
    #[arg(long, value_name = "LIST")]
    pub overlap: Option<String>,
    /// agent, model:NAME, terse, command:PROGRAM, ... (comma-separated or repeated).
    #[arg(long, value_name = "LIST")]
    pub summarizer: Vec<String>,
    /// Agent model(s) to price requests at; `recorded` = each session's own.
    #[arg(long, value_name = "LIST")]
    pub agent_model: Option<String>,
    /// Client mode(s): waits, streams.
    #[arg(long, value_name = "LIST")]
    pub client: Option<String>,
    /// Token counter(s): o200k, cl100k, adk-chars.
    #[arg(long, value_name = "LIST")]
    pub tokenizer: Option<String>,
    /// Caps of the capped-runs alternative, e.g. `10,25,50`: each replays the sessions as
    /// RunConfig(max_llm_calls=N) would have run them.
    #[arg(long, value_name = "LIST")]
    pub max_llm_calls: Option<String>,
    /// Split rules of the split alternative, e.g. `lossless,idle=30m`: each replays every
    /// session cut into independent sessions (docs/alternatives.md "Split").
    #[arg(long, value_name = "LIST")]
    pub split: Option<String>,
    /// Largest acceptable share of broken references (0..1, mean per session) for the
    /// recommendation [default grid: 0.2].
    #[arg(long, value_name = "X")]
    pub budget_broken_references: Option<f64>,
    /// Largest acceptable mean detail lost (0..1: history read only through summaries).
    #[arg(long, value_name = "X")]
    pub budget_detail_lost: Option<f64>,
    /// Largest acceptable summary wait, seconds (p95 over sessions of the longest wait).
    #[arg(long, value_name = "S")]
    pub budget_latency: Option<f64>,
    /// Other frameworks' policies replayed beside the ADK settings (docs/policies.md):
    /// clear-tool-results, mask-observations, claude-code, codex, openhands, langchain,
    /// gemini-cli, turn-summary, hybrid, anthropic-compaction, or all.
    #[arg(long, value_name = "LIST")]
    pub policy: Option<String>,
    /// clear-tool-results: prompt tokens above which old tool results are cleared [100k].
    #[arg(long, value_name = "LIST")]
    pub clear_trigger: Option<String>,
    /// clear-tool-results: newest tool results kept [3].
    #[arg(long, value_name = "LIST")]
    pub clear_keep: Option<String>,
    /// clear-tool-results: clear only when at least this many tokens would be [0].
    #[arg(long, value_name = "LIST")]
    pub clear_at_least: Option<String>,
    /// clear-tool-results: tool names never cleared (one list, not an axis).
    #[arg(long, value_name = "NAMES")]
    pub clear_exclude_tools: Option<String>,
    /// mask-observations: turns whose tool results stay verbatim [10].
    #[arg(long, value_name = "LIST")]
    pub mask_window: Option<String>,
    /// claude-code: CLAUDE_AUTOCOMPACT_PCT_OVERRIDE values, 1..100 [unset].
    #[arg(long, value_name = "LIST")]
    pub pct: Option<String>,
    /// claude-code: its auto-compact window (autoCompactWindow /
    /// CLAUDE_CODE_AUTO_COMPACT_WINDOW), tokens [200k]; not the price table's window.
    #[arg(long, value_name = "LIST")]
    pub cc_window: Option<String>,
    /// codex: auto_compact_token_limit as % of the context window [90].
    #[arg(long, value_name = "LIST")]
    pub codex_pct: Option<String>,
    /// openhands: max_size, events in the view [240].
    #[arg(long, value_name = "LIST")]
    pub openhands_max_size: Option<String>,
    /// openhands: keep_first [2].
    #[arg(long, value_name = "LIST")]
    pub openhands_keep_first: Option<String>,
    /// langchain: triggers auto (deepagents: fraction:0.85, tokens:170000 without a window),
    /// tokens:N, messages:N or fraction:F [auto].
    #[arg(long, value_name = "LIST")]
    pub lc_trigger: Option<String>,
    /// langchain: messages kept [20].
    #[arg(long, value_name = "LIST")]
    pub lc_keep: Option<String>,
    /// gemini-cli: compression threshold, fraction of the window [0.5].
    #[arg(long, value_name = "LIST")]
    pub gemini_threshold: Option<String>,
    /// turn-summary: turns each summary replaces (summarize_every_n_turns n) [21].
    #[arg(long, value_name = "LIST")]
    pub ts_n: Option<String>,
    /// turn-summary: newest turns kept raw (keep_last_m_turns) [10].
    #[arg(long, value_name = "LIST")]
    pub ts_m: Option<String>,
    /// hybrid: turns each summary replaces [43].
    #[arg(long, value_name = "LIST")]
    pub hybrid_n: Option<String>,
    /// hybrid: newest turns kept raw at a summary [10].
    #[arg(long, value_name = "LIST")]
    pub hybrid_m: Option<String>,
    /// hybrid: turns whose observations stay unmasked (last_n_observations n) [10].
    #[arg(long, value_name = "LIST")]
    pub hybrid_window: Option<String>,
    /// codex: tokens of user messages kept, 64k (remote compaction v2) or 20k (local) [64k].
    #[arg(long, value_name = "LIST")]
    pub codex_retain: Option<String>,
    /// gemini-cli: default (chat compression) or generalist (experimental profile) [default].
    #[arg(long, value_name = "LIST")]
    pub gemini_profile: Option<String>,
    /// langchain: trim_tokens_to_summarize, tokens the summarizer reads, or none [4000].
    #[arg(long, value_name = "LIST")]
    pub lc_trim: Option<String>,
    /// openhands: max_tokens, the condenser's token trigger, or none [none].
    #[arg(long, value_name = "LIST")]
    pub openhands_max_tokens: Option<String>,
    /// anthropic-compaction: input tokens above which the API compacts, 50k or more [150k].
    #[arg(long, value_name = "LIST")]
    pub anthropic_trigger: Option<String>,
}

fn text_axis(s: &Option<String>) -> Option<AxisSpec> {
    s.as_ref().map(|t| AxisSpec::One(AxisItem::Text(t.clone())))
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

/// The axis flags as grid keys; those not given stay `None` (the base grid's stand).
fn flag_axes(a: &AxisFlags, combine: bool) -> GridSpec {
    GridSpec {
        trigger: text_axis(&a.trigger),
        after_tokens: text_axis(&a.after_tokens),
        keep_recent_events: text_axis(&a.keep_recent_events),
        after_invocations: text_axis(&a.after_invocations),
        overlap: text_axis(&a.overlap),
        summarizer: (!a.summarizer.is_empty()).then(|| {
            AxisSpec::Many(
                a.summarizer
                    .iter()
                    .map(|s| AxisItem::Text(s.clone()))
                    .collect(),
            )
        }),
        agent_model: text_axis(&a.agent_model),
        client: text_axis(&a.client),
        tokenizer: text_axis(&a.tokenizer),
        max_llm_calls: text_axis(&a.max_llm_calls),
        artifacts: None,
        split: text_axis(&a.split),
        combine: combine.then_some(true),
        budget: flag_budgets(a),
        policy: text_axis(&a.policy),
        clear_trigger: text_axis(&a.clear_trigger),
        clear_keep: text_axis(&a.clear_keep),
        clear_at_least: text_axis(&a.clear_at_least),
        clear_exclude_tools: text_axis(&a.clear_exclude_tools),
        mask_window: text_axis(&a.mask_window),
        pct: text_axis(&a.pct),
        cc_window: text_axis(&a.cc_window),
        codex_pct: text_axis(&a.codex_pct),
        openhands_max_size: text_axis(&a.openhands_max_size),
        openhands_keep_first: text_axis(&a.openhands_keep_first),
        lc_trigger: text_axis(&a.lc_trigger),
        lc_keep: text_axis(&a.lc_keep),
        gemini_threshold: text_axis(&a.gemini_threshold),
        ts_n: text_axis(&a.ts_n),
        ts_m: text_axis(&a.ts_m),
        hybrid_n: text_axis(&a.hybrid_n),
        hybrid_m: text_axis(&a.hybrid_m),
        hybrid_window: text_axis(&a.hybrid_window),
        codex_retain: text_axis(&a.codex_retain),
        gemini_profile: text_axis(&a.gemini_profile),
        lc_trim: text_axis(&a.lc_trim),
        openhands_max_tokens: text_axis(&a.openhands_max_tokens),
        anthropic_trigger: text_axis(&a.anthropic_trigger),
    }
}

/// The budget flags, when any is given (they replace the base grid's budget whole).
fn flag_budgets(a: &AxisFlags) -> Option<Budgets> {
    let given = a.budget_broken_references.is_some()
        || a.budget_detail_lost.is_some()
        || a.budget_latency.is_some();
    given.then_some(Budgets {
        broken_references: a.budget_broken_references,
        detail_lost: a.budget_detail_lost,
        latency_s: a.budget_latency,
    })
}

use super::{install_signal_handler, CANCEL};

fn progress(total: u64, quiet: bool) -> Option<indicatif::ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = indicatif::ProgressBar::new(total);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{bar:40} {pos}/{len} replays  {per_sec}  eta {eta}",
    ) {
        pb.set_style(style);
    }
    Some(pb)
}

fn today() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}

/// Drop sessions whose replay failed under any setting (report and skip), keeping the
/// rest's rows.
pub fn drop_failed(inputs: &mut RunInputs, rows: &mut Vec<RunRow>, failed: Vec<Failure>) {
    let mut bad: Vec<(u32, String)> = failed
        .into_iter()
        .map(|(s, set, m)| (s, format!("setting {set}: {m}")))
        .collect();
    bad.sort();
    bad.dedup_by_key(|(s, _)| *s);
    for (s, m) in &bad {
        if let Some(info) = inputs.sessions.get(*s as usize) {
            inputs.skipped.push(Skipped {
                path: format!("{}#{}", info.source, info.session_id),
                reason: format!("replay failed: {m}"),
            });
        }
        inputs.failed_sessions.push(*s);
    }
    inputs.failed_sessions.sort_unstable();
    inputs.failed_sessions.dedup();
    rows.retain(|r| !inputs.failed_sessions.contains(&r.session));
}

/// `f` (a streamed replay) on a pool of `concurrency` threads when live summarizers want
/// more calls in flight than there are threads, else on the current pool.
fn with_concurrency<R: Send>(
    concurrency: Option<usize>,
    f: impl FnOnce() -> R + Send,
) -> Result<R> {
    let threads = rayon::current_num_threads();
    Ok(match concurrency.filter(|&c| c > threads) {
        Some(c) => rayon::ThreadPoolBuilder::new()
            .num_threads(c)
            .build()?
            .install(f),
        None => f(),
    })
}

/// The failed summarizer calls of the rows kept, for run.json and the report.
fn summarizer_failures(
    errors: Vec<(u32, u32, String)>,
    inputs: &RunInputs,
) -> Vec<crate::table::rundir::SummarizerFailure> {
    let mut v: Vec<_> = errors
        .into_iter()
        .filter(|(s, _, _)| !inputs.failed_sessions.contains(s))
        .filter_map(|(s, setting_id, message)| {
            inputs
                .sessions
                .get(s as usize)
                .map(|info| crate::table::rundir::SummarizerFailure {
                    source: info.source.clone(),
                    session_id: info.session_id.clone(),
                    setting_id,
                    message,
                })
        })
        .collect();
    v.sort();
    v
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
        errln!("warning: {}", super::term(&w.to_string()));
    }
    let mut plan = match plan {
        Ok(p) => p,
        Err(e) => {
            errln!("error: {}", super::term(&e.to_string()));
            return Ok(super::EXIT_BAD_INPUT);
        }
    };
    for note in &plan.grid.collapsed {
        errln!("note: {}", super::term(note));
    }
    if args.show_grid {
        out!("{}", plan.grid.describe());
        return Ok(super::EXIT_OK);
    }
    let cache = pipeline::cache_opts(args.cache_dir.clone(), args.no_cache);
    let token_cache = pipeline::cache_opts(args.cache_dir.clone(), false).dir;
    let (timeout, live) = args
        .summarizers
        .start(&plan.grid.summarizer, token_cache.as_deref())?;
    let scanned = scan(&args, &plan.grid.tokenizer)?;
    if let Err(e) = plan.fit_to_sessions(&scanned.catalog.infos) {
        errln!("error: {}", super::term(&e.to_string()));
        return Ok(super::EXIT_BAD_INPUT);
    }
    let grid = &plan.grid;
    let mut inputs = run_inputs(&scanned.catalog, grid, &costing, scanned.sampled_from);
    if scanned.samples.is_some() {
        inputs.sample_data = Some(super::samples::SAMPLE_DATA.to_string());
    }
    let name = inputs.default_name(&today());
    let (target, latest) = sweep_target(&args, &name, &scanned.input_paths)?;
    let mine = shard_sessions(inputs.sessions.len(), args.shard);
    // Sessions are read again, counted, sized and replayed a window at a time and their
    // rows streamed into runs.parquet.
    let mut counted = pipeline::Counted::new(scanned.catalog, &grid.tokenizer, &costing, &cache)?;
    if CANCEL.load(Ordering::SeqCst) {
        return Err(Cancelled.into());
    }
    let job = Job {
        sessions: &inputs.sessions,
        mine: &mine,
        settings: &grid.settings,
        costing: &costing,
        timeout,
        live: &live,
    };
    let replayed = replay_all(&args, &job, &mut counted, &target)?;
    counted.save_counts();
    record_failures(&mut inputs, replayed.failed, replayed.summarizer_errors);
    super::cost_flags::report_live(&live, args.quiet)?;
    let Some(shard) = args.shard else {
        let eval = timeline_eval(&mut counted, &inputs, timeout)?;
        let build = replayed.build;
        let recorded = kept_recorded(replayed.recorded, &inputs);
        rundir::write_recorded_compactions(build.path(), &recorded, &CANCEL)?;
        return finish_run(
            &target, latest, &name, &inputs, grid, build, &eval, None, args.quiet,
        );
    };
    // the shard's part of recorded_compactions.json, which `merge` combines
    let recorded = kept_recorded(replayed.recorded, &inputs);
    rundir::write_recorded_compactions(replayed.build.path(), &recorded, &CANCEL)?;
    let size = (mine.len(), grid.settings.len());
    finish_shard(shard, replayed.build, &target, &inputs, size, args.quiet)
}

/// The backtest rows of the sessions the run kept (a session whose replay failed leaves the
/// run), summarized per framework.
pub(super) fn kept_recorded(
    mut recorded: crate::backtest::Backtest,
    inputs: &RunInputs,
) -> crate::backtest::Backtest {
    let failed: std::collections::HashSet<(&str, &str)> = inputs
        .failed_sessions
        .iter()
        .filter_map(|&i| inputs.sessions.get(i as usize))
        .map(|s| (s.source.as_str(), s.session_id.as_str()))
        .collect();
    if !failed.is_empty() {
        recorded
            .compactions
            .retain(|c| !failed.contains(&(c.source.as_str(), c.session_id.as_str())));
        recorded
            .sessions
            .retain(|c| !failed.contains(&(c.source.as_str(), c.session_id.as_str())));
    }
    recorded.summarize();
    recorded
}

/// The sessions listed (and read again a window at a time during the replay), sampled,
/// and every path the run folder must not overwrite.
struct Scanned {
    catalog: pipeline::Catalog,
    sampled_from: Option<u64>,
    input_paths: Vec<PathBuf>,
    /// With `--samples`: the temporary folder they are read from, kept until the run ends.
    samples: Option<super::samples::Samples>,
}

/// List the inputs, refuse an `--out` the run may not write before any work, and say what
/// was skipped (always, even with -q: a bad file is reported and skipped, never dropped).
fn scan(args: &SweepArgs, tokenizers: &[String]) -> Result<Scanned> {
    let given = if args.paths.is_empty() && !args.samples {
        vec![super::samples::DEFAULT_INPUT.to_string()]
    } else {
        args.paths.clone()
    };
    let (paths, samples) = super::samples::inputs(args.samples, &given, "sweep")?;
    if samples.is_some() && !args.quiet {
        errln!("note: {}", super::samples::SAMPLE_DATA);
    }
    let mut input_paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    if let Some(out) = &args.out {
        let chosen = Chosen::ByUser { force: args.force };
        publish::check_target(out, &input_paths, chosen)?;
    }
    let filter = args.db.filter(&paths, false)?;
    let mut catalog = pipeline::Catalog::scan(&paths, args.format.as_deref(), &filter, tokenizers)?;
    let sampled_from = args
        .sample
        .map(|n| catalog.sample(usize::try_from(n).unwrap_or(usize::MAX)) as u64);
    input_paths.extend(catalog.inputs.iter().map(|i| PathBuf::from(&i.path)));
    if catalog.is_empty() {
        let why = catalog
            .skipped
            .first()
            .map(|s| format!(" (first problem: {}: {})", s.path, s.reason))
            .unwrap_or_default();
        let shown: Vec<String> = paths
            .iter()
            .map(|p| crate::transcript::db::url::redact(p))
            .collect();
        anyhow::bail!("no sessions found in {}{why}", shown.join(" "));
    }
    print_skipped(&catalog.skipped);
    super::warn_orphan_responses(
        catalog
            .infos
            .iter()
            .map(|i| (i.source.as_str(), i.session_id.as_str(), i.orphan_responses)),
    );
    Ok(Scanned {
        catalog,
        sampled_from,
        input_paths,
        samples,
    })
}

fn print_skipped<'a>(skipped: impl IntoIterator<Item = &'a Skipped>) {
    for s in skipped {
        errln!(
            "skipped {}: {}",
            super::term(&s.path),
            super::term(&s.reason)
        );
    }
}

/// What the run folder records about its inputs and tables, before any replay.
fn run_inputs(
    catalog: &pipeline::Catalog,
    grid: &ResolvedGrid,
    costing: &Costing,
    sampled_from: Option<u64>,
) -> RunInputs {
    RunInputs {
        sessions: catalog.infos.clone(),
        inputs: catalog.inputs.clone(),
        skipped: catalog.skipped.clone(),
        failed_sessions: Vec::new(),
        grid_toml: grid.to_toml(),
        pricing_toml: costing.pricing_text.clone(),
        latency_toml: costing.latency_text.clone(),
        pricing_date: costing.pricing_date.clone(),
        pricing_source: costing.pricing_source.clone(),
        latency_default_models: pipeline::latency_default_models(
            &costing.model.latency,
            &grid.agent_model,
            &grid.summarizer,
            &catalog.recorded_models(),
        ),
        summarizer_errors: Vec::new(),
        sampled_from,
        sample_data: None,
    }
}

/// Where this run goes and whether `latest` is to point at it (never for a shard's partial
/// folder). Checked once, before any replay; `publish` itself refuses anything that appears
/// at the path meanwhile.
fn sweep_target(args: &SweepArgs, name: &str, inputs: &[PathBuf]) -> Result<(Target, bool)> {
    let chosen = Chosen::ByUser { force: args.force };
    let Some(shard) = args.shard else {
        return run_target(&args.out, &args.reports, name, inputs, chosen);
    };
    let (dir, chosen) = match &args.out {
        Some(d) => (d.clone(), chosen),
        None => (
            args.reports
                .join(format!("{name}-shard-{}-of-{}", shard.k, shard.n)),
            Chosen::Default,
        ),
    };
    Ok((publish::check_target(&dir, inputs, chosen)?, false))
}

/// What the replay reads: the sessions this process replays, under which settings, priced
/// how, with which summarizer timeout and live clients.
#[derive(Clone, Copy)]
struct Job<'a> {
    sessions: &'a [SessionInfo],
    mine: &'a [u32],
    settings: &'a [Setting],
    costing: &'a Costing,
    timeout: std::time::Duration,
    live: &'a [std::sync::Arc<crate::cost::live::Client>],
}

/// The rows streamed into a build folder, and what failed on the way.
struct Replayed {
    build: publish::BuildDir,
    failed: Vec<Failure>,
    summarizer_errors: Vec<(u32, u32, String)>,
    /// The backtest of the sessions recording compactions of their own (full runs only).
    recorded: crate::backtest::Backtest,
}

/// Replay every (session, setting) pair of `job` into runs.parquet in a build folder beside
/// `target`, after the live summarizers' estimate is accepted, with a progress bar.
fn replay_all(
    args: &SweepArgs,
    job: &Job<'_>,
    counted: &mut pipeline::Counted,
    target: &Target,
) -> Result<Replayed> {
    let Job {
        sessions,
        mine,
        settings,
        costing,
        timeout,
        live,
    } = *job;
    let events = |s: u32| sessions.get(s as usize).map_or(0, |i| i.events);
    // A window's evaluator: its sessions read again, counted and sized.
    let mut window = |w: &[u32]| {
        let mut e = counted.window(w)?;
        e.set_summarizer_timeout(timeout);
        Ok(e)
    };
    let live_flags = &args.summarizers.live;
    live_flags.check_estimate(live, &costing.model, &costing.pricing_date, || {
        // A dry replay of every pair: the live clients count the calls they would make.
        run_windows::<_, anyhow::Error>(
            mine,
            &events,
            settings,
            &mut window,
            &CANCEL,
            &|| {},
            &mut |_, _, _| Ok(()),
        )
    })?;
    let concurrency = (!live.is_empty()).then_some(usize::from(live_flags.live_concurrency));
    let build = publish::build_dir_for(target)?;
    let planned = mine.len() as u64 * settings.len() as u64;
    let csv = args.shard.is_none() && rundir::wants_runs_csv(planned, args.runs_csv);
    let pb = progress(planned, args.quiet);
    let tick = || {
        if let Some(p) = &pb {
            p.inc(1)
        }
    };
    let mut failed: Vec<Failure> = Vec::new();
    let mut summarizer_errors: Vec<(u32, u32, String)> = Vec::new();
    let mut recorded = crate::backtest::Backtest::default();
    let mut writer = RunsWriter::create(build.path(), sessions, settings, csv)?;
    let result = with_concurrency(concurrency, || {
        run_windows::<_, anyhow::Error>(
            mine,
            &events,
            settings,
            &mut window,
            &CANCEL,
            &tick,
            &mut |eval, rows, f| {
                writer.push(rows)?;
                failed.extend(f);
                summarizer_errors.extend(eval.summarizer_errors());
                recorded.absorb(eval.recorded_compactions());
                Ok(())
            },
        )
    })?;
    if let Some(p) = &pb {
        p.finish_and_clear();
    }
    result?;
    writer.finish()?;
    Ok(Replayed {
        build,
        failed,
        summarizer_errors,
        recorded,
    })
}

/// Sessions whose replay failed leave the run (said on stderr); the failed summarizer calls
/// of the rest are kept for run.json, the first few said.
fn record_failures(
    inputs: &mut RunInputs,
    failed: Vec<Failure>,
    summarizer_errors: Vec<(u32, u32, String)>,
) {
    if !failed.is_empty() {
        drop_failed(inputs, &mut Vec::new(), failed);
        print_skipped(
            inputs
                .skipped
                .iter()
                .filter(|s| s.reason.starts_with("replay failed")),
        );
    }
    inputs.summarizer_errors = summarizer_failures(summarizer_errors, inputs);
    const SHOWN: usize = 5;
    for f in inputs.summarizer_errors.iter().take(SHOWN) {
        errln!(
            "warning: {}#{} setting {}: {}",
            super::term(&f.source),
            super::term(&f.session_id),
            f.setting_id,
            super::term(&f.message)
        );
    }
    if inputs.summarizer_errors.len() > SHOWN {
        errln!(
            "warning: {} more failed summarizer calls (run.json `summarizer_errors` lists them all)",
            inputs.summarizer_errors.len() - SHOWN
        );
    }
}

/// The sessions the timelines draw (the longest kept ones), read again.
fn timeline_eval(
    counted: &mut pipeline::Counted,
    inputs: &RunInputs,
    timeout: std::time::Duration,
) -> Result<pipeline::PipelineEval> {
    let live_sessions = rundir::live_sessions(inputs);
    let mut drawn =
        rundir::longest_sessions(&inputs.sessions, &live_sessions, rundir::TIMELINE_SESSIONS);
    drawn.sort_unstable();
    let mut eval = counted.window(&drawn)?;
    eval.set_summarizer_timeout(timeout);
    Ok(eval)
}

/// Names what replacing an earlier run folder removed that the new run did not write (a
/// file the user added there), so it is never lost without a word.
fn say_dropped(dir: &Path, dropped: &[String]) {
    if dropped.is_empty() {
        return;
    }
    let names: Vec<String> = dropped
        .iter()
        .map(|n| super::term(n).into_owned())
        .collect();
    errln!(
        "note: {}: the earlier run folder was replaced as a whole; {} it held and this run did not write {} gone: {}",
        super::term(&dir.display().to_string()),
        if names.len() == 1 { "a file" } else { "files" },
        if names.len() == 1 { "is" } else { "are" },
        names.join(", ")
    );
}

/// A shard's partial folder, for `merge`: its rows and inputs, no aggregates, no report.
fn finish_shard(
    shard: Shard,
    build: publish::BuildDir,
    target: &Target,
    inputs: &RunInputs,
    (sessions, settings): (usize, usize),
    quiet: bool,
) -> Result<u8> {
    rundir::write_partial_files(build.path(), shard, inputs, &CANCEL)?;
    if CANCEL.load(Ordering::SeqCst) {
        return Err(Cancelled.into());
    }
    let dropped = publish::publish(build, target)?;
    say_dropped(&target.dir, &dropped);
    if !quiet {
        outln!(
            "wrote partial run {} (shard {shard}: {sessions} sessions × {settings} settings)",
            super::term(&target.dir.display().to_string()),
        );
    }
    Ok(super::EXIT_OK)
}

/// Where a full run goes, checked (see [`publish::check_target`]), and whether `latest` is to
/// point at it (the default place, or an `--out` inside the reports folder). `latest` is
/// checked here too, so a run that could not move it is refused before any work.
pub fn run_target(
    out: &Option<PathBuf>,
    reports: &Path,
    name: &str,
    inputs: &[PathBuf],
    chosen: Chosen,
) -> Result<(Target, bool)> {
    let (dir, chosen) = match out {
        Some(d) => (d.clone(), chosen),
        None => (reports.join(name), Chosen::Default),
    };
    let target = publish::check_target(&dir, inputs, chosen)?;
    let parent = target
        .dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let latest = out.is_none() || same_dir(parent, reports);
    if latest {
        publish::check_latest(parent)?;
    }
    Ok((target, latest))
}

/// Aggregate (from the rows streamed into `build`'s runs.parquet), draw timelines, write the
/// rest of the folder and its report, move it into place, point
/// `latest` at it when `latest` (see [`run_target`], which the caller ran before any work),
/// print the recommendation. Shared by `sweep` and `merge`. Any failure (disk full, a chart
/// that cannot be drawn, a signal) leaves the earlier state as it was.
#[allow(clippy::too_many_arguments)]
pub fn finish_run(
    target: &Target,
    latest: bool,
    name: &str,
    inputs: &RunInputs,
    grid: &ResolvedGrid,
    build: publish::BuildDir,
    eval: &dyn crate::sweep::run::Evaluator,
    shards: Option<u32>,
    quiet: bool,
) -> Result<u8> {
    let outcome = rundir::outcome_parquet(
        &grid.settings,
        &build.path().join("runs.parquet"),
        &grid.budget,
    )?;
    let live = rundir::live_sessions(inputs);
    let timelines = rundir::timelines_json(
        eval,
        &|i| Some(i as usize),
        &inputs.sessions,
        &live,
        &outcome,
    )?;
    let run_name = target
        .dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(name)
        .to_string();
    rundir::RunFiles {
        name: &run_name,
        inputs,
        grid,
        outcome: &outcome,
        timelines: &timelines,
        shards,
    }
    .write(build.path(), &CANCEL)?;
    if CANCEL.load(Ordering::SeqCst) {
        return Err(Cancelled.into());
    }
    // The report is part of the run: a folder without it is published only when a figure
    // of the run's own is what the report refused (said below, exit 2).
    let refused = render_or_keep(build.path(), &target.dir)?;
    if CANCEL.load(Ordering::SeqCst) {
        return Err(Cancelled.into());
    }
    let dropped = publish::publish(build, target)?;
    say_dropped(&target.dir, &dropped);
    if latest {
        let parent = target
            .dir
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        publish::update_latest(parent, &run_name)?;
    }
    if !quiet {
        outln!(
            "wrote {} ({} sessions × {} settings)",
            super::term(&target.dir.display().to_string()),
            live.len(),
            grid.settings.len()
        );
    }
    for line in rundir::recommendation_lines(&outcome) {
        if outcome.recommendation.is_err() {
            errln!("error: {}", super::term(&line));
        } else if !quiet {
            outln!("{}", super::term(&line));
        }
    }
    if let Some(line) = refused {
        errln!("error: {}", super::term(&line));
        return Ok(super::EXIT_BAD_INPUT);
    }
    Ok(if outcome.recommendation.is_ok() {
        super::EXIT_OK
    } else {
        super::EXIT_REFUSED
    })
}

/// Render the report of the run built in `build` (to be published as `fin`). A figure the
/// run itself wrote that the run-folder reader refuses (a share above 1: a bug of ours)
/// never costs the user the run: the data files are kept, without the report, and the line
/// naming the figure (file as published, JSON path or line, what is wrong) is returned.
/// Any other failure is an error.
fn render_or_keep(build: &Path, fin: &Path) -> Result<Option<String>> {
    use crate::report::ReportError;
    use crate::table::folder::DataError;
    match crate::report::render_run(build, &CANCEL) {
        Ok(_) => Ok(None),
        Err(ReportError::Data(DataError::Bad { path, what })) => {
            for f in ["report.md", "report.html"] {
                let _ = std::fs::remove_file(build.join(f));
            }
            let file = path.strip_prefix(build).unwrap_or(&path);
            Ok(Some(format!(
                "{}: {what}: a figure this run wrote is refused by the run-folder reader (a bug of compaction-sim: please report it); {} holds the run's data files, without its report",
                fin.join(file).display(),
                fin.display()
            )))
        }
        Err(e) => Err(e.into()),
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::render_or_keep;
    use std::path::Path;

    /// Issue 39 item 7: a share above 1 that the run wrote (LangChain's `detail_lost_max`
    /// 1.0018 was one) keeps the run's data files and names the figure, with the path it is
    /// published at, instead of discarding every replay.
    #[test]
    fn a_figure_the_run_wrote_and_the_reader_refuses_keeps_the_data_files() {
        let tmp = tempfile::tempdir().unwrap();
        let build = tmp.path().join(".building-1-x");
        std::fs::create_dir(&build).unwrap();
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report/run");
        for f in ["settings.json", "runs.csv", "run.json", "timelines.json"] {
            std::fs::copy(fixture.join(f), build.join(f)).unwrap();
        }
        let fin = tmp.path().join("run");
        assert_eq!(render_or_keep(&build, &fin).unwrap(), None);
        assert!(build.join("report.md").exists());
        let p = build.join("settings.json");
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        v[1]["detail_lost_max"] = 1.0018.into();
        std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
        let line = render_or_keep(&build, &fin)
            .unwrap()
            .expect("the figure is named");
        let want = format!(
            "{}: $[1].detail_lost_max: 1.0018 is not a share",
            fin.join("settings.json").display()
        );
        assert!(line.starts_with(&want), "{line}");
        assert!(!line.contains(".building-"), "{line}");
        assert!(!build.join("report.md").exists() && !build.join("report.html").exists());
        for f in ["settings.json", "runs.csv", "run.json"] {
            assert!(build.join(f).exists(), "{f} kept");
        }
        // Anything else (here: no settings.json) is still an error: nothing is published.
        std::fs::remove_file(&p).unwrap();
        assert!(render_or_keep(&build, &fin).is_err());
    }
}
