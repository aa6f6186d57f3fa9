//! `run::sweep`, the call `sweep`, `sweep-bench` and a library caller share: what it tells
//! its progress sink and what it returns.

use crate::common::root;
use compaction_sim::run::{Destination, Inputs, Phase, Progress, RunError, Summarizers, SweepJob};
use compaction_sim::sweep::grid::{GridSpec, MAX_SETTINGS};
use compaction_sim::sweep::pipeline::{self, Costing};
use compaction_sim::sweep::plan::{SweepPlan, SweepRequest};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Every call the run makes, in order (replays counted, not listed).
#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<String>>,
    planned: AtomicU64,
    replayed: AtomicU64,
}

impl Progress for Recorder {
    fn replays_planned(&self, planned: u64) {
        self.planned.store(planned, Ordering::SeqCst);
    }
    fn replayed_one(&self) {
        self.replayed.fetch_add(1, Ordering::SeqCst);
    }
    fn began(&self, phase: Phase) {
        self.calls.lock().unwrap().push(format!("+{phase:?}"));
    }
    fn ended(&self, phase: Phase) {
        self.calls.lock().unwrap().push(format!("-{phase:?}"));
    }
}

fn job<'a>(costing: &'a Costing, out: &std::path::Path, cancel: &'a AtomicBool) -> SweepJob<'a> {
    let request = SweepRequest {
        grid_file: None,
        flags: GridSpec::default(),
        alternatives: "none",
        max_settings: MAX_SETTINGS,
    };
    SweepJob {
        plan: SweepPlan::resolve(request, costing).unwrap(),
        costing,
        inputs: Inputs {
            paths: vec![
                root()
                    .join("transcripts/10-coding-11.session.json")
                    .display()
                    .to_string(),
                root()
                    .join("transcripts/15-support-2.session.json")
                    .display()
                    .to_string(),
            ],
            ..Inputs::default()
        },
        destination: Destination {
            out: Some(out.to_path_buf()),
            reports: out.with_extension("reports"),
            force: false,
        },
        shard: None,
        runs_csv: false,
        cache: pipeline::cache_opts(None, true),
        summarizers: Summarizers {
            timeout: Duration::from_secs(60),
            live: Vec::new(),
            live_concurrency: 1,
        },
        cancel,
    }
}

#[test]
fn the_library_sweep_tells_its_sink_every_phase_and_replay_and_publishes() {
    let costing = Costing::load(None, None).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let cancel = AtomicBool::new(false);
    let sink = Recorder::default();
    let run = compaction_sim::run::sweep(job(&costing, &out, &cancel), &sink).unwrap();
    assert_eq!(run.dir, out);
    assert!(out.join("report.html").is_file() && out.join("settings.json").is_file());
    assert_eq!(run.sessions, 2);
    let planned = sink.planned.load(Ordering::SeqCst);
    assert_eq!(planned, 2 * run.settings as u64);
    assert_eq!(sink.replayed.load(Ordering::SeqCst), planned);
    // Phases in the run's order, each closed; windows and rows inside the replay.
    let calls = sink.calls.into_inner().unwrap();
    let outer: Vec<&str> = calls
        .iter()
        .map(String::as_str)
        .filter(|c| !c.ends_with("Window") && !c.ends_with("Rows"))
        .collect();
    assert_eq!(
        outer,
        [
            "+List",
            "-List",
            "+Replay",
            "-Replay",
            "+Aggregate",
            "-Aggregate",
            "+Write",
            "-Write",
            "+Report",
            "-Report",
            "+Publish",
            "-Publish"
        ]
    );
    let replay = |c: &String| {
        let at = calls.iter().position(|x| x == c).unwrap();
        at > calls.iter().position(|x| x == "+Replay").unwrap()
            && at < calls.iter().position(|x| x == "-Replay").unwrap()
    };
    assert!(
        calls.contains(&"+Window".to_string())
            && calls
                .iter()
                .filter(|c| c.ends_with("Window") || c.ends_with("Rows"))
                .all(replay)
    );
    let finished = run.finished.expect("a full run has a recommendation");
    assert!(finished.report_refused.is_none());
}

/// A run cancelled before it starts publishes nothing and says so with its own error.
#[test]
fn a_cancelled_library_sweep_publishes_nothing() {
    let costing = Costing::load(None, None).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let cancel = AtomicBool::new(true);
    let err =
        compaction_sim::run::sweep(job(&costing, &out, &cancel), &Recorder::default()).unwrap_err();
    assert!(matches!(err, RunError::Cancelled(_)), "{err}");
    assert!(!out.exists());
}
