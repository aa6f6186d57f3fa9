//! The second half of a run, shared by `sweep` and `merge`: aggregates from runs.parquet,
//! timelines, the rest of the folder and its report, then the folder moved into place and
//! `latest` pointed at it; or a shard's partial folder published as it is.

use super::{Phase, Progress, RunError};
use crate::sweep::grid::ResolvedGrid;
use crate::sweep::run::Evaluator;
use crate::sweep::shard::Shard;
use crate::table::publish::{self, BuildDir, Chosen, Target};
use crate::table::rundir::{self, RunInputs};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// A published folder.
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    pub dir: PathBuf,
    /// What replacing an earlier run folder removed that this run did not write (a file the
    /// user added there), by name.
    pub dropped: Vec<String>,
    /// Sessions in the run (those whose replay failed left it) and settings replayed.
    pub sessions: usize,
    pub settings: usize,
    /// A full run's recommendation and report; `None` for a shard's partial folder.
    pub finished: Option<Finished>,
    /// The shard a partial folder holds.
    pub shard: Option<Shard>,
}

/// What a full run concluded.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    /// The recommendation as the lines to show, or why there is none.
    pub recommendation: Vec<String>,
    /// False when no setting met the budgets (the lines say so).
    pub recommended: bool,
    /// When the run-folder reader refused a figure of the run's own (a bug of ours), the
    /// folder is published without its report and this line names the figure.
    pub report_refused: Option<String>,
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
) -> Result<(Target, bool), RunError> {
    let (dir, chosen) = match out {
        Some(d) => (d.clone(), chosen),
        None => (reports.join(name), Chosen::Default),
    };
    let target = publish::check_target(&dir, inputs, chosen)?;
    let latest = out.is_none() || same_dir(parent_of(&target.dir), reports);
    if latest {
        publish::check_latest(parent_of(&target.dir))?;
    }
    Ok((target, latest))
}

/// The folder holding `dir` (`.` for a bare name).
fn parent_of(dir: &Path) -> &Path {
    dir.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// The backtest rows of the sessions the run kept (a session whose replay failed leaves the
/// run), summarized per framework.
pub fn kept_recorded(
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

fn check(cancel: &AtomicBool) -> Result<(), RunError> {
    if cancel.load(Ordering::SeqCst) {
        return Err(crate::error::Cancelled.into());
    }
    Ok(())
}

/// A full run whose rows are in a build folder, to be finished and published.
pub(super) struct Finish<'a> {
    pub target: &'a Target,
    /// Point `latest` at the run (see [`run_target`], which the caller ran before any work).
    pub latest: bool,
    /// The run's default name (the folder's own name is used when it has one).
    pub name: &'a str,
    pub inputs: &'a RunInputs,
    pub grid: &'a ResolvedGrid,
    pub cancel: &'a AtomicBool,
}

impl Finish<'_> {
    /// Aggregate (from the rows streamed into `build`'s runs.parquet), draw timelines with
    /// `eval`, write the rest of the folder and its report, move it into place, point
    /// `latest` at it. Any failure (disk full, a chart that cannot be drawn, a signal) leaves
    /// the earlier state as it was.
    pub fn run(
        &self,
        build: BuildDir,
        eval: &dyn Evaluator,
        progress: &dyn Progress,
    ) -> Result<Published, RunError> {
        let (inputs, grid) = (self.inputs, self.grid);
        progress.began(Phase::Aggregate);
        let outcome = rundir::outcome_parquet(
            &grid.settings,
            &build.path().join("runs.parquet"),
            &grid.budget,
        )?;
        progress.ended(Phase::Aggregate);
        progress.began(Phase::Write);
        let live = rundir::live_sessions(inputs);
        let timelines = rundir::timelines_json(
            eval,
            &|i| Some(i as usize),
            &inputs.sessions,
            &live,
            &outcome,
        )?;
        let run_name = self
            .target
            .dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(self.name)
            .to_string();
        rundir::RunFiles {
            name: &run_name,
            inputs,
            grid,
            outcome: &outcome,
            timelines: &timelines,
        }
        .write(build.path(), self.cancel)?;
        check(self.cancel)?;
        progress.ended(Phase::Write);
        // The report is part of the run: a folder without it is published only when a
        // figure of the run's own is what the report refused.
        progress.began(Phase::Report);
        let report_refused = render_or_keep(build.path(), &self.target.dir, self.cancel)?;
        check(self.cancel)?;
        progress.ended(Phase::Report);
        progress.began(Phase::Publish);
        let dropped = publish::publish(build, self.target)?;
        if self.latest {
            publish::update_latest(parent_of(&self.target.dir), &run_name)?;
        }
        progress.ended(Phase::Publish);
        Ok(Published {
            dir: self.target.dir.clone(),
            dropped,
            sessions: live.len(),
            settings: grid.settings.len(),
            finished: Some(Finished {
                recommendation: rundir::recommendation_lines(&outcome),
                recommended: outcome.recommendation.is_ok(),
                report_refused,
            }),
            shard: None,
        })
    }
}

/// Render the report of the run built in `build` (to be published as `fin`). A figure the
/// run itself wrote that the run-folder reader refuses (a share above 1: a bug of ours)
/// never costs the user the run: the data files are kept, without the report, and the line
/// naming the figure (file as published, JSON path or line, what is wrong) is returned.
/// Any other failure is an error.
fn render_or_keep(
    build: &Path,
    fin: &Path,
    cancel: &AtomicBool,
) -> Result<Option<String>, RunError> {
    use crate::report::ReportError;
    use crate::table::folder::DataError;
    match crate::report::render_run(build, cancel) {
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

/// A shard's partial folder, for `merge`: its rows and inputs, no aggregates, no report.
pub(super) fn finish_shard(
    shard: Shard,
    build: BuildDir,
    target: &Target,
    inputs: &RunInputs,
    (sessions, settings): (usize, usize),
    cancel: &AtomicBool,
    progress: &dyn Progress,
) -> Result<Published, RunError> {
    progress.began(Phase::Write);
    rundir::write_partial_files(build.path(), shard, inputs, cancel)?;
    check(cancel)?;
    progress.ended(Phase::Write);
    progress.began(Phase::Publish);
    let dropped = publish::publish(build, target)?;
    progress.ended(Phase::Publish);
    Ok(Published {
        dir: target.dir.clone(),
        dropped,
        sessions,
        settings,
        finished: None,
        shard: Some(shard),
    })
}

/// Draw a run folder's charts, report.md and report.html again from its data files alone
/// (`report`): only in a folder the tool wrote, since report.md in any other is the user's.
pub fn rerender(dir: &Path, cancel: &AtomicBool) -> Result<crate::report::Rendered, RerenderError> {
    if !dir.is_dir() {
        return Err(RerenderError::NotARunFolder(dir.to_path_buf()));
    }
    if !publish::is_ours(dir) {
        return Err(RerenderError::NotOurs(dir.to_path_buf()));
    }
    Ok(crate::report::render_run(dir, cancel)?)
}

/// Why a report was not drawn again.
#[derive(Debug, thiserror::Error)]
pub enum RerenderError {
    #[error("{}: not a run folder", .0.display())]
    NotARunFolder(PathBuf),
    #[error("{}: is a folder compaction-sim did not write (it has no {} file), so its report.md, report.html and charts are not replaced (nothing was touched)", .0.display(), publish::MARKER)]
    NotOurs(PathBuf),
    #[error(transparent)]
    Report(#[from] crate::report::ReportError),
}

#[cfg(test)]
mod tests {
    use super::render_or_keep;
    use std::path::Path;
    use std::sync::atomic::AtomicBool;

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
        assert_eq!(
            render_or_keep(&build, &fin, &AtomicBool::new(false)).unwrap(),
            None
        );
        assert!(build.join("report.md").exists());
        let p = build.join("settings.json");
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        v[1]["detail_lost_max"] = 1.0018.into();
        std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
        let line = render_or_keep(&build, &fin, &AtomicBool::new(false))
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
        assert!(render_or_keep(&build, &fin, &AtomicBool::new(false)).is_err());
    }
}
