//! The first half of a run: the inputs listed, the target checked, every pair replayed into
//! runs.parquet in a build folder beside the target.

use super::{Destination, Inputs, Phase, Progress, RunError, Summarizers};
use crate::sweep::grid::ResolvedGrid;
use crate::sweep::pipeline::{self, CacheOpts, Costing};
use crate::sweep::run::{run_windows, shard_sessions, Failure, SummarizerFailure};
use crate::sweep::shard::Shard;
use crate::table::frames::RunsWriter;
use crate::table::publish::{self, Chosen, Target};
use crate::table::rundir::{self, RunInputs, Skipped};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

/// The sessions listed (and read again a window at a time during the replay), sampled,
/// and every path the run folder must not overwrite.
pub(super) struct Scanned {
    pub catalog: pipeline::Catalog,
    pub sampled_from: Option<u64>,
    pub input_paths: Vec<PathBuf>,
}

/// List the inputs, refuse an `out` the run may not write before any work, and say what
/// was skipped (always: a bad file is reported and skipped, never dropped).
pub(super) fn scan(
    inputs: &Inputs,
    destination: &Destination,
    tokenizers: &[String],
    progress: &dyn Progress,
) -> Result<Scanned, RunError> {
    let paths = if inputs.paths.is_empty() {
        vec!["transcripts".to_string()]
    } else {
        inputs.paths.clone()
    };
    let mut input_paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    if let Some(out) = &destination.out {
        let chosen = Chosen::ByUser {
            force: destination.force,
        };
        publish::check_target(out, &input_paths, chosen)?;
    }
    let mut catalog =
        pipeline::Catalog::scan(&paths, inputs.format.as_deref(), &inputs.filter, tokenizers)?;
    let sampled_from = inputs
        .sample
        .map(|n| catalog.sample(usize::try_from(n).unwrap_or(usize::MAX)) as u64);
    input_paths.extend(catalog.inputs.iter().map(|i| PathBuf::from(&i.path)));
    if catalog.is_empty() {
        let first_problem = catalog
            .skipped
            .first()
            .map(|s| format!(" (first problem: {}: {})", s.path, s.reason))
            .unwrap_or_default();
        let shown: Vec<String> = paths
            .iter()
            .map(|p| crate::transcript::db::url::redact(p))
            .collect();
        return Err(RunError::NoSessions {
            inputs: shown.join(" "),
            first_problem,
        });
    }
    progress.skipped(&catalog.skipped);
    progress.merged(&catalog.merged);
    progress.notes(&catalog.notes);
    for i in &catalog.infos {
        progress.orphan_responses(&i.source, &i.session_id, i.orphan_responses);
    }
    Ok(Scanned {
        catalog,
        sampled_from,
        input_paths,
    })
}

/// What the run folder records about its inputs and tables, before any replay.
pub(super) fn run_inputs(
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
pub(super) fn sweep_target(
    destination: &Destination,
    shard: Option<Shard>,
    name: &str,
    inputs: &[PathBuf],
) -> Result<(Target, bool), RunError> {
    let chosen = Chosen::ByUser {
        force: destination.force,
    };
    let Some(shard) = shard else {
        return super::run_target(&destination.out, &destination.reports, name, inputs, chosen);
    };
    let (dir, chosen) = match &destination.out {
        Some(d) => (d.clone(), chosen),
        None => (
            destination
                .reports
                .join(format!("{name}-shard-{}-of-{}", shard.k, shard.n)),
            Chosen::Default,
        ),
    };
    Ok((publish::check_target(&dir, inputs, chosen)?, false))
}

/// What the replay reads besides the sessions: the grid, its prices, whether this is a
/// shard, the summarizers and the cancel flag.
pub(super) struct Work<'a> {
    pub grid: &'a ResolvedGrid,
    pub costing: &'a Costing,
    pub shard: Option<Shard>,
    pub runs_csv: bool,
    pub summarizers: &'a Summarizers,
    pub cancel: &'a AtomicBool,
}

/// The rows streamed into a build folder (with recorded_compactions.json), and the
/// sessions, still counted, that the timelines read again.
pub(super) struct Replayed {
    pub build: publish::BuildDir,
    pub counted: pipeline::Counted,
    /// How many sessions this process replayed (a shard's share).
    pub replayed_sessions: usize,
}

impl Replayed {
    /// The sessions the timelines draw (the longest kept ones), read again.
    pub fn timeline_eval(
        &mut self,
        inputs: &RunInputs,
    ) -> Result<pipeline::PipelineEval, RunError> {
        let live_sessions = rundir::live_sessions(inputs);
        let mut drawn =
            rundir::longest_sessions(&inputs.sessions, &live_sessions, rundir::TIMELINE_SESSIONS);
        drawn.sort_unstable();
        Ok(self.counted.window(&drawn)?)
    }
}

/// What the replays gave besides the rows.
#[derive(Default)]
struct Outcomes {
    failed: Vec<Failure>,
    summarizer_errors: Vec<(u32, u32, String)>,
    /// The backtest of the sessions recording compactions of their own.
    recorded: crate::backtest::Backtest,
}

/// Replay every (session, setting) pair of this process into runs.parquet in a build folder
/// beside `target`, after the live summarizers' calls are approved; sessions whose replay
/// failed leave `inputs`, the failed summarizer calls of the rest are recorded in it.
pub(super) fn replay_all(
    work: &Work<'_>,
    catalog: pipeline::Catalog,
    inputs: &mut RunInputs,
    cache: &CacheOpts,
    target: &Target,
    progress: &dyn Progress,
) -> Result<Replayed, RunError> {
    let mine = shard_sessions(inputs.sessions.len(), work.shard);
    let mut counted = pipeline::Counted::new(catalog, &work.grid.tokenizer, work.costing, cache)?;
    counted.set_summarizer_timeout(work.summarizers.timeout);
    if work.cancel.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(crate::error::Cancelled.into());
    }
    progress.began(Phase::Replay);
    let replayed = replay_pairs(work, &mine, inputs, &mut counted, target, progress);
    progress.ended(Phase::Replay);
    let (build, outcomes) = replayed?;
    progress.prepared(counted.times);
    counted.save_counts();
    let skipped = record_failures(inputs, outcomes.failed, outcomes.summarizer_errors);
    progress.replays_done(&skipped, &inputs.summarizer_errors)?;
    // The backtest rows of the kept sessions: the run's recorded_compactions.json (a
    // shard's part of it, which `merge` combines).
    let recorded = super::finish::kept_recorded(outcomes.recorded, inputs);
    rundir::write_recorded_compactions(build.path(), &recorded, work.cancel)?;
    Ok(Replayed {
        build,
        counted,
        replayed_sessions: mine.len(),
    })
}

/// The replays themselves: a dry run first when live summarizers are to be approved, then
/// every pair with its rows streamed into runs.parquet (and runs.csv) in a build folder
/// beside `target`.
fn replay_pairs(
    work: &Work<'_>,
    mine: &[u32],
    inputs: &RunInputs,
    counted: &mut pipeline::Counted,
    target: &Target,
    progress: &dyn Progress,
) -> Result<(publish::BuildDir, Outcomes), RunError> {
    let (settings, sessions) = (&work.grid.settings, &inputs.sessions);
    let events = |s: u32| sessions.get(s as usize).map_or(0, |i| i.events);
    let live = &work.summarizers.live;
    if !live.is_empty() {
        progress.approve_live(live, work.costing, &mut || {
            // A dry replay of every pair: the live clients count the calls they would make.
            run_windows::<_, anyhow::Error>(
                mine,
                &events,
                settings,
                &mut |w: &[u32]| counted.window(w),
                work.cancel,
                &|| {},
                &mut |_| Ok(()),
                &mut |_, _| Ok(()),
            )
        })?;
    }
    let concurrency = (!live.is_empty()).then_some(work.summarizers.live_concurrency);
    let build = publish::build_dir_for(target)?;
    let planned = mine.len() as u64 * settings.len() as u64;
    let csv = work.shard.is_none() && rundir::wants_runs_csv(planned, work.runs_csv);
    progress.replays_planned(planned);
    let mut out = Outcomes::default();
    let mut writer = RunsWriter::create(build.path(), sessions, settings, csv)?;
    with_concurrency(concurrency, || {
        run_windows::<_, RunError>(
            mine,
            &events,
            settings,
            &mut |w: &[u32]| {
                progress.began(Phase::Window);
                let e = counted.window(w)?;
                progress.ended(Phase::Window);
                Ok(e)
            },
            work.cancel,
            &|| progress.replayed_one(),
            &mut |rows| {
                progress.began(Phase::Rows);
                writer.push(rows)?;
                progress.ended(Phase::Rows);
                Ok(())
            },
            &mut |eval, f| {
                out.failed.extend(f);
                out.summarizer_errors.extend(eval.summarizer_errors());
                out.recorded.absorb(eval.recorded_compactions());
                Ok(())
            },
        )
    })??;
    progress.began(Phase::Rows);
    writer.finish()?;
    progress.ended(Phase::Rows);
    Ok((build, out))
}

/// `f` (a streamed replay) on a pool of `concurrency` threads when live summarizers want
/// more calls in flight than there are threads, else on the current pool.
fn with_concurrency<R: Send>(
    concurrency: Option<usize>,
    f: impl FnOnce() -> R + Send,
) -> Result<R, RunError> {
    let threads = rayon::current_num_threads();
    Ok(match concurrency.filter(|&c| c > threads) {
        Some(c) => rayon::ThreadPoolBuilder::new()
            .num_threads(c)
            .build()
            .map_err(anyhow::Error::from)?
            .install(f),
        None => f(),
    })
}

/// Sessions whose replay failed leave the run; the failed summarizer calls of the rest are
/// kept for run.json and the report.
fn record_failures(
    inputs: &mut RunInputs,
    failed: Vec<Failure>,
    summarizer_errors: Vec<(u32, u32, String)>,
) -> Vec<Skipped> {
    let dropped = drop_failed(inputs, failed);
    inputs.summarizer_errors = summarizer_failures(summarizer_errors, inputs);
    dropped
}

/// Drop sessions whose replay failed under any setting (reported as skipped); returns what
/// it added to the skipped list.
fn drop_failed(inputs: &mut RunInputs, failed: Vec<Failure>) -> Vec<Skipped> {
    let mut bad: Vec<(u32, String)> = failed
        .into_iter()
        .map(|(s, set, m)| (s, format!("setting {set}: {m}")))
        .collect();
    bad.sort();
    bad.dedup_by_key(|(s, _)| *s);
    let mut dropped = Vec::new();
    for (s, m) in &bad {
        if let Some(info) = inputs.sessions.get(*s as usize) {
            dropped.push(Skipped {
                path: format!("{}#{}", info.source, info.session_id),
                reason: format!("replay failed: {m}"),
            });
        }
        inputs.failed_sessions.push(*s);
    }
    inputs.skipped.extend(dropped.iter().cloned());
    inputs.failed_sessions.sort_unstable();
    inputs.failed_sessions.dedup();
    dropped
}

/// The failed summarizer calls of the sessions kept, for run.json and the report.
fn summarizer_failures(
    errors: Vec<(u32, u32, String)>,
    inputs: &RunInputs,
) -> Vec<SummarizerFailure> {
    let mut v: Vec<_> = errors
        .into_iter()
        .filter(|(s, _, _)| !inputs.failed_sessions.contains(s))
        .filter_map(|(s, setting_id, message)| {
            inputs
                .sessions
                .get(s as usize)
                .map(|info| SummarizerFailure {
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
