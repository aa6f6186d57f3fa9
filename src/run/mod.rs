//! A sweep run as one library call: [`sweep`] takes the resolved plan (inputs, grid,
//! budgets, output folder, concurrency) and a [`Progress`] sink, lists the inputs, replays
//! every (session, setting) pair a window at a time into runs.parquet, then aggregates,
//! draws the timelines, writes the rest of the folder and its report and publishes it
//! (`latest` moved when the run goes to the reports folder). A shard's run publishes its
//! partial folder instead, which [`finish_merge`] (`merge`) completes.
//!
//! The command line (`cli/sweep.rs`) maps flags onto a [`SweepJob`] and prints through the
//! sink; `sweep-bench` and the tests call the same function, so there is one path.

mod finish;
mod merge;
mod replay;

pub use finish::{kept_recorded, rerender, run_target, Finished, Published, RerenderError};
pub use merge::{finish_merge, MergeJob, Partials};

use crate::error::Cancelled;
use crate::summarize::live::{Client, LiveError};
use crate::sweep::pipeline::{CacheOpts, Costing, PrepTimes};
use crate::sweep::plan::{PlanError, SweepPlan};
use crate::sweep::run::{SessionInfo, Skipped, SummarizerFailure};
use crate::sweep::shard::Shard;
use crate::table::publish::PublishError;
use crate::table::TableError;
use crate::transcript::db::DbFilter;
use crate::transcript::detect::Merged;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// What the run reads: transcript files, folders, globs or database URLs, read as `format`
/// (detected when `None`), database sessions filtered by `filter`, and `sample` sessions of
/// them when given (a fixed hash of each session's source and id decides which).
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    pub paths: Vec<String>,
    pub format: Option<String>,
    pub filter: DbFilter,
    pub sample: Option<u64>,
    /// What the inputs are when they are the tool's own samples (`sweep --samples`), as
    /// run.json's `sample_data` and the report say it; `None` for the user's sessions.
    pub sample_data: Option<String>,
}

/// Where the run folder goes: `out` (a new path, an empty folder, or with `force` an
/// earlier compaction-sim output), else `<reports>/<date>-<hash>` with `latest` pointing at it.
#[derive(Debug, Clone)]
pub struct Destination {
    pub out: Option<PathBuf>,
    pub reports: PathBuf,
    pub force: bool,
}

/// How the grid's summarizers run: the time limit of one call, and the `live:` clients
/// (started by the caller) with how many of their calls may be in flight at once.
#[derive(Clone)]
pub struct Summarizers {
    pub timeout: Duration,
    pub live: Vec<Arc<Client>>,
    pub live_concurrency: usize,
}

/// The resolved sweep: everything [`sweep`] needs, decided before any transcript is read.
pub struct SweepJob<'a> {
    /// The grid (with its budgets) and the alternatives; fitted to the sessions once they
    /// are listed ([`SweepPlan::fit_to_sessions`]).
    pub plan: SweepPlan,
    pub costing: &'a Costing,
    pub inputs: Inputs,
    pub destination: Destination,
    /// This process's part of a sharded run (a partial folder for `merge`).
    pub shard: Option<Shard>,
    /// Write runs.csv whatever the run's size.
    pub runs_csv: bool,
    /// The token-count cache.
    pub cache: CacheOpts,
    pub summarizers: Summarizers,
    /// Set (by a signal handler) to stop between phases: nothing is published.
    pub cancel: &'a AtomicBool,
}

/// The steps of a run, for a sink that times them (`sweep-bench`). `Window` (a window's
/// sessions read again, counted and sized) and `Rows` (a window's rows written) happen once
/// per window, inside `Replay`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// The inputs listed (every session read once for what the run records about it).
    List,
    Replay,
    Window,
    Rows,
    /// Aggregates computed from runs.parquet.
    Aggregate,
    /// Timelines drawn (their sessions replayed again) and the data files written.
    Write,
    /// Charts, report.md and report.html.
    Report,
    /// The folder moved into place (and `latest`).
    Publish,
}

/// What a run tells its caller while it works. Every method has a default that says nothing,
/// so a caller implements only what it shows. Called from the thread that called [`sweep`],
/// but for [`Progress::replayed_one`], which replay threads call.
pub trait Progress: Sync {
    /// Inputs (or sessions) left out, and why.
    fn skipped(&self, _skipped: &[Skipped]) {}
    /// Spellings of one file read once (`./x` beside `x`, a link beside its target).
    fn merged(&self, _merged: &[Merged]) {}
    /// What the readers found wrong in a session's record and did not use, or adjusted.
    fn notes(&self, _notes: &[String]) {}
    /// The sessions the run holds, listed (sampled when asked), before any replay.
    fn listed(&self, _sessions: &[SessionInfo]) {}
    /// A session kept with `n` tool responses that answer no call.
    fn orphan_responses(&self, _source: &str, _session_id: &str, _n: u64) {}
    /// Before the first `live:` call: `dry_run` replays every pair with the live clients
    /// counting the calls they would make (see `Client::set_dry`); an error refuses the run.
    fn approve_live(
        &self,
        _clients: &[Arc<Client>],
        _costing: &Costing,
        _dry_run: &mut dyn FnMut() -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        Ok(())
    }
    /// The replays begin: `planned` (session, setting) pairs.
    fn replays_planned(&self, _planned: u64) {}
    /// One pair replayed.
    fn replayed_one(&self) {}
    /// The replays are over: sessions whose replay failed left the run (listed in
    /// `skipped`), `failures` are the failed summarizer calls of the rest. An error (the
    /// sink could not show them) stops the run.
    fn replays_done(
        &self,
        _skipped: &[Skipped],
        _failures: &[SummarizerFailure],
    ) -> anyhow::Result<()> {
        Ok(())
    }
    /// Seconds spent reading, counting and sizing the windows' sessions.
    fn prepared(&self, _times: PrepTimes) {}
    fn began(&self, _phase: Phase) {}
    fn ended(&self, _phase: Phase) {}
}

/// A sink that shows nothing.
pub struct Silent;

impl Progress for Silent {}

/// Why a run stopped without publishing.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The plan does not fit the sessions found (too many settings once the data's
    /// alternatives are added).
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error("no sessions found in {inputs}{first_problem}")]
    NoSessions {
        inputs: String,
        first_problem: String,
    },
    #[error(transparent)]
    Publish(#[from] PublishError),
    #[error(transparent)]
    Table(#[from] TableError),
    #[error(transparent)]
    Report(#[from] crate::report::ReportError),
    #[error(transparent)]
    Live(#[from] LiveError),
    #[error(transparent)]
    Cancelled(#[from] Cancelled),
    /// Reading, counting or replaying the sessions.
    #[error(transparent)]
    Replay(#[from] anyhow::Error),
}

impl RunError {
    /// The error the run met, as itself (a wrapper's transparent variants hide their inner
    /// error from the source chain a caller sorts errors by).
    pub fn into_inner(self) -> anyhow::Error {
        match self {
            RunError::Plan(e) => e.into(),
            RunError::Publish(e) => e.into(),
            RunError::Table(e) => e.into(),
            RunError::Report(e) => e.into(),
            RunError::Live(e) => e.into(),
            RunError::Cancelled(e) => e.into(),
            RunError::Replay(e) => e,
            e @ RunError::NoSessions { .. } => anyhow::Error::new(e),
        }
    }
}

/// Today's date as run folders are named by default.
pub fn today() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}

/// Run the sweep `job` describes and publish its folder (a shard's partial folder for a
/// sharded job). Nothing is published when any step fails or `job.cancel` is set.
pub fn sweep(job: SweepJob<'_>, progress: &dyn Progress) -> Result<Published, RunError> {
    let SweepJob {
        mut plan,
        costing,
        inputs,
        destination,
        shard,
        runs_csv,
        cache,
        summarizers,
        cancel,
    } = job;
    progress.began(Phase::List);
    let scanned = replay::scan(&inputs, &destination, &plan.grid.tokenizer, progress)?;
    progress.ended(Phase::List);
    progress.listed(&scanned.catalog.infos);
    plan.fit_to_sessions(&scanned.catalog.infos)?;
    let grid = &plan.grid;
    let mut run_inputs = replay::run_inputs(&scanned.catalog, grid, costing, scanned.sampled_from);
    run_inputs.sample_data = inputs.sample_data.clone();
    let name = run_inputs.default_name(&today());
    let (target, latest) = replay::sweep_target(&destination, shard, &name, &scanned.input_paths)?;
    let work = replay::Work {
        grid,
        costing,
        shard,
        runs_csv,
        summarizers: &summarizers,
        cancel,
    };
    let mut done = replay::replay_all(
        &work,
        scanned.catalog,
        &mut run_inputs,
        &cache,
        &target,
        progress,
    )?;
    let Some(shard) = shard else {
        let eval = done.timeline_eval(&run_inputs)?;
        let fin = finish::Finish {
            target: &target,
            latest,
            name: &name,
            inputs: &run_inputs,
            grid,
            cancel,
        };
        return fin.run(done.build, &eval, progress);
    };
    let size = (done.replayed_sessions, grid.settings.len());
    finish::finish_shard(
        shard,
        done.build,
        &target,
        &run_inputs,
        size,
        cancel,
        progress,
    )
}
