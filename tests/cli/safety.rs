//! Output safety (docs/cli.md "Where outputs go", "Exit codes"): the tool never touches what it
//! did not write, never publishes half a run, never panics on stdout, and escapes what it
//! prints. Each test is named after the failure it guards against.

use crate::common::{bin, root};
use std::path::{Path, PathBuf};
use std::process::{Command as Std, Stdio};
use std::time::{Duration, Instant};

fn exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_compaction-sim"))
}

/// One small sample session and a one-setting grid: a complete sweep in about a second.
fn one_session() -> PathBuf {
    root().join("transcripts/01-support-3.session.json")
}

const SMALL: &[&str] = &[
    "--trigger",
    "invocations",
    "--after-invocations",
    "1",
    "--overlap",
    "0",
    "--summarizer",
    "terse",
    "--budget-detail-lost",
    "1",
    "--budget-broken-references",
    "1",
    "--no-cache",
];

fn run(cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let out = bin().current_dir(cwd).args(args).output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn sweep_small(cwd: &Path, extra: &[&str]) -> (i32, String, String) {
    let input = one_session();
    let mut args = vec!["sweep", input.to_str().unwrap()];
    args.extend_from_slice(SMALL);
    args.extend_from_slice(extra);
    run(cwd, &args)
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn assert_no_panic(stderr: &str) {
    assert!(
        !stderr.contains("panicked"),
        "the binary panicked: {stderr}"
    );
}

mod out_paths {
    use super::*;

    #[test]
    fn the_file_holding_notes_txt_survives_sweep_out() {
        let cwd = tempfile::tempdir().unwrap();
        let keep = cwd.path().join("x/keep");
        std::fs::create_dir_all(&keep).unwrap();
        std::fs::write(keep.join("notes.txt"), "p\n").unwrap();
        for force in [false, true] {
            let mut extra = vec!["--out", "x/keep", "-q"];
            if force {
                extra.push("--force");
            }
            let (code, _, err) = sweep_small(cwd.path(), &extra);
            assert_eq!(code, 2, "force={force}: {err}");
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(
                err.contains("x/keep") && err.contains("did not write"),
                "{err}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(keep.join("notes.txt")).unwrap(),
            "p\n"
        );
        assert_eq!(names(&keep), vec!["notes.txt"]);
        assert_eq!(names(&cwd.path().join("x")), vec!["keep"]);
    }

    #[test]
    fn sweep_never_writes_over_its_inputs() {
        let cwd = tempfile::tempdir().unwrap();
        let input = cwd.path().join("in");
        std::fs::create_dir(&input).unwrap();
        std::fs::copy(one_session(), input.join("s.session.json")).unwrap();
        for out in ["in", "."] {
            let mut args = vec!["sweep", "in", "--out", out, "--force"];
            args.extend_from_slice(SMALL);
            let (code, _, err) = run(cwd.path(), &args);
            assert_eq!(code, 2, "--out {out}: {err}");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
        assert_eq!(names(&input), vec!["s.session.json"]);
        assert_eq!(names(cwd.path()), vec!["in"]);
    }

    #[test]
    fn files_devices_dot_paths_and_home_are_refused_untouched() {
        let cwd = tempfile::tempdir().unwrap();
        std::fs::write(cwd.path().join("a-file"), "mine").unwrap();
        std::fs::create_dir(cwd.path().join("sub")).unwrap();
        let mut outs = vec!["a-file", ".", "..", "../..", "sub/.."];
        if Path::new("/dev/full").exists() {
            outs.push("/dev/full");
        }
        for out in outs {
            let (code, _, err) = sweep_small(cwd.path(), &["--out", out, "--force"]);
            assert_eq!(code, 2, "--out {out}: {err}");
            assert_eq!(err.lines().count(), 1, "--out {out}: {err}");
        }
        assert_eq!(
            std::fs::read_to_string(cwd.path().join("a-file")).unwrap(),
            "mine"
        );
        assert_eq!(names(cwd.path()), vec!["a-file", "sub"]);
        if Path::new("/dev/full").exists() {
            use std::os::unix::fs::FileTypeExt;
            let m = std::fs::metadata("/dev/full").unwrap();
            assert!(m.file_type().is_char_device(), "/dev/full was replaced");
        }
    }

    #[test]
    fn an_earlier_run_is_replaced_only_with_force() {
        let cwd = tempfile::tempdir().unwrap();
        let (code, _, err) = sweep_small(cwd.path(), &["--out", "runs/a", "-q"]);
        assert_eq!(code, 0, "{err}");
        let first = std::fs::read(cwd.path().join("runs/a/settings.csv")).unwrap();
        std::fs::write(cwd.path().join("runs/a/settings.csv"), "changed").unwrap();
        let (code, _, err) = sweep_small(cwd.path(), &["--out", "runs/a", "-q"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("--force"), "{err}");
        assert_eq!(
            std::fs::read(cwd.path().join("runs/a/settings.csv")).unwrap(),
            b"changed"
        );
        let (code, _, err) = sweep_small(cwd.path(), &["--out", "runs/a", "-q", "--force"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            std::fs::read(cwd.path().join("runs/a/settings.csv")).unwrap(),
            first
        );
        // Nothing hidden is left beside it.
        assert_eq!(names(&cwd.path().join("runs")), vec!["a"]);
    }

    #[test]
    fn a_link_to_an_earlier_run_is_followed_and_leaves_nothing() {
        let cwd = tempfile::tempdir().unwrap();
        let (code, _, err) = sweep_small(cwd.path(), &["--out", "runs/a", "-q"]);
        assert_eq!(code, 0, "{err}");
        std::os::unix::fs::symlink("runs/a", cwd.path().join("link")).unwrap();
        let (code, _, err) = sweep_small(cwd.path(), &["--out", "link", "-q", "--force"]);
        assert_eq!(code, 0, "{err}");
        assert!(cwd.path().join("link/report.html").exists());
        assert!(std::fs::symlink_metadata(cwd.path().join("link"))
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(names(&cwd.path().join("runs")), vec!["a"]);
        assert_eq!(names(cwd.path()), vec!["link", "runs"]);
        // A link to a folder the tool did not write is refused.
        std::fs::create_dir(cwd.path().join("mine")).unwrap();
        std::fs::write(cwd.path().join("mine/x"), "x").unwrap();
        std::os::unix::fs::symlink("mine", cwd.path().join("link2")).unwrap();
        let (code, _, err) = sweep_small(cwd.path(), &["--out", "link2", "--force"]);
        assert_eq!(code, 2, "{err}");
        assert_eq!(names(&cwd.path().join("mine")), vec!["x"]);
    }

    #[test]
    fn merge_never_writes_over_a_shard() {
        let cwd = tempfile::tempdir().unwrap();
        for k in 1..=2 {
            let shard = format!("{k}/2");
            let out = format!("p{k}");
            let (code, _, err) = sweep_small(cwd.path(), &["--shard", &shard, "--out", &out, "-q"]);
            assert_eq!(code, 0, "{err}");
        }
        let before = std::fs::read(cwd.path().join("p1/shard.json")).unwrap();
        let (code, _, err) = run(
            cwd.path(),
            &["merge", "p1", "p2", "--out", "p1", "--force", "--no-cache"],
        );
        assert_eq!(code, 2, "{err}");
        assert_eq!(
            std::fs::read(cwd.path().join("p1/shard.json")).unwrap(),
            before
        );
        let (code, _, err) = run(
            cwd.path(),
            &["merge", "p1", "p2", "--out", "merged", "--no-cache", "-q"],
        );
        assert_eq!(code, 0, "{err}");
        assert!(cwd.path().join("merged/report.html").exists());
    }

    #[test]
    fn a_real_latest_folder_is_refused_before_the_run_and_leaves_no_link() {
        let cwd = tempfile::tempdir().unwrap();
        let latest = cwd.path().join("reports/latest");
        std::fs::create_dir_all(&latest).unwrap();
        std::fs::write(latest.join("mine.txt"), "x").unwrap();
        let (code, _, err) = sweep_small(cwd.path(), &["-q"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("latest"), "{err}");
        assert_eq!(names(&cwd.path().join("reports")), vec!["latest"]);
        assert_eq!(names(&latest), vec!["mine.txt"]);
    }

    #[test]
    fn calibrate_never_replaces_a_users_file() {
        let cwd = tempfile::tempdir().unwrap();
        let input = root().join("tests/fixtures/cost/openhands_latency.jsonl");
        let input = input.to_str().unwrap();
        std::fs::write(cwd.path().join("mine.toml"), "# my notes\n").unwrap();
        for extra in [&[][..], &["--force"][..]] {
            let mut args = vec!["calibrate", input, "--out", "mine.toml"];
            args.extend_from_slice(extra);
            let (code, _, err) = run(cwd.path(), &args);
            assert_eq!(code, 2, "{err}");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
        assert_eq!(
            std::fs::read_to_string(cwd.path().join("mine.toml")).unwrap(),
            "# my notes\n"
        );
        // Its own earlier output: replaced with --force, refused without.
        let (code, _, err) = run(cwd.path(), &["calibrate", input, "--out", "fit.toml"]);
        assert_eq!(code, 0, "{err}");
        let (code, _, err) = run(cwd.path(), &["calibrate", input, "--out", "fit.toml"]);
        assert_eq!(code, 2, "{err}");
        let (code, _, err) = run(
            cwd.path(),
            &["calibrate", input, "--out", "fit.toml", "--force"],
        );
        assert_eq!(code, 0, "{err}");
        // The default path is the tool's own: a rerun replaces it.
        for _ in 0..2 {
            let (code, _, err) = run(cwd.path(), &["calibrate", input]);
            assert_eq!(code, 0, "{err}");
        }
    }

    #[test]
    fn synth_never_writes_into_a_users_folder() {
        let cwd = tempfile::tempdir().unwrap();
        std::fs::create_dir(cwd.path().join("mine")).unwrap();
        std::fs::write(cwd.path().join("mine/01-support-3.session.json"), "keep").unwrap();
        let (code, _, err) = run(
            cwd.path(),
            &["synth", "--sessions", "2", "--out", "mine", "--force"],
        );
        assert_eq!(code, 2, "{err}");
        assert_eq!(
            std::fs::read_to_string(cwd.path().join("mine/01-support-3.session.json")).unwrap(),
            "keep"
        );
    }

    #[test]
    fn inspect_emit_never_writes_into_a_users_folder() {
        let cwd = tempfile::tempdir().unwrap();
        std::fs::create_dir(cwd.path().join("mine")).unwrap();
        std::fs::write(cwd.path().join("mine/a.jsonl"), "keep").unwrap();
        let s = one_session();
        let emit = |out: &str| {
            run(
                cwd.path(),
                &[
                    "inspect",
                    s.to_str().unwrap(),
                    "--emit",
                    "jsonl",
                    "--out",
                    out,
                    "--no-cache",
                ],
            )
        };
        let (code, _, err) = emit("mine");
        assert_eq!(code, 2, "{err}");
        assert_eq!(names(&cwd.path().join("mine")), vec!["a.jsonl"]);
        let (code, _, err) = emit("new");
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            names(&cwd.path().join("new")).len(),
            2,
            "one session + the marker"
        );
    }
}

mod publishing {
    use super::*;

    #[test]
    fn the_no_budget_run_has_a_report() {
        let cwd = tempfile::tempdir().unwrap();
        let args = [
            "sweep",
            root().join("transcripts").to_str().unwrap(),
            "--trigger",
            "tokens",
            "--after-tokens",
            // above every terse summary, so the setting does not thrash (docs/pitfalls.md)
            "30k",
            "--keep-recent-events",
            "0",
            "--summarizer",
            "terse",
            "--budget-detail-lost",
            "0.01",
            "--out",
            "nb",
            "--no-cache",
        ]
        .map(String::from);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, _, err) = run(cwd.path(), &args);
        assert_eq!(code, 1, "{err}");
        assert!(!err.contains("report not written"), "{err}");
        let md = std::fs::read_to_string(cwd.path().join("nb/report.md")).expect("report.md");
        let top: String = md.lines().take(12).collect::<Vec<_>>().join("\n");
        assert!(top.contains("No setting meets the run's budgets"), "{top}");
        assert!(
            md.contains("over by"),
            "the closest settings and what they miss by: {md}"
        );
        assert!(cwd.path().join("nb/report.html").exists());
        // And `report` re-renders it.
        let (code, _, err) = run(cwd.path(), &["report", "nb"]);
        assert_eq!(code, 0, "{err}");
    }

    /// The paste-ready lines name the trade-off's detail measure and its basis (`terse`
    /// writes text, so its broken references are measured); `-q` prints none of them.
    #[test]
    fn the_recommendation_names_broken_references_and_their_basis() {
        let cwd = tempfile::tempdir().unwrap();
        let (code, out, err) = sweep_small(cwd.path(), &["--out", "r1"]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("compaction=Compaction("), "{out}");
        assert!(out.contains("references broken"), "{out}");
        assert!(out.contains("(mean, measured)"), "{out}");
        let (code, out, err) = sweep_small(cwd.path(), &["--out", "r2", "-q"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(out, "", "-q prints nothing on stdout");
    }

    /// A 200 KB disk: the run fails with exit 3, and nothing is published or left behind.
    /// Needs a private mount namespace (`unshare`, as CI has as root); without one the test
    /// fails saying so rather than passing.
    #[test]
    fn a_full_disk_publishes_nothing_and_exits_3() {
        let cwd = tempfile::tempdir().unwrap();
        let small = cwd.path().join("small");
        std::fs::create_dir(&small).unwrap();
        let script = format!(
            "mount -t tmpfs -o size=200k tmpfs '{small}' && cd '{small}' && \
             '{exe}' sweep '{input}' {grid} --reports reports; code=$?; \
             echo \"exit=$code\"; ls -A reports 2>/dev/null | sed 's/^/left: /'; exit 0",
            small = small.display(),
            exe = exe().display(),
            input = one_session().display(),
            grid = SMALL.join(" "),
        );
        let out = Std::new("unshare")
            .args(["--user", "--map-root-user", "--mount", "sh", "-c", &script])
            .output()
            .expect("unshare runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stdout.contains("exit="),
            "could not mount a small disk (unshare/tmpfs unavailable): {stderr}"
        );
        assert_no_panic(&stderr);
        assert!(stdout.contains("exit=3"), "{stdout} {stderr}");
        let left: Vec<&str> = stdout.lines().filter(|l| l.starts_with("left: ")).collect();
        assert!(left.is_empty(), "left behind on a full disk: {left:?}");
        let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "{stderr}");
        assert!(errors[0].contains("No space left"), "{stderr}");
    }

    #[test]
    fn a_killed_runs_build_folder_is_removed_by_the_next_run() {
        let cwd = tempfile::tempdir().unwrap();
        let reports = cwd.path().join("reports");
        std::fs::create_dir(&reports).unwrap();
        // What a SIGKILLed run leaves: a marked build folder of a process that is gone.
        let dead = reports.join(".building-4000000000-x1");
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join(".compaction-sim-run"), "x").unwrap();
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        std::fs::write(
            dead.join(".compaction-sim-owner"),
            format!("{} 4000000000\n", host.trim()),
        )
        .unwrap();
        std::fs::write(dead.join("runs.csv"), vec![b'x'; 4096]).unwrap();
        // Not ours: never removed, whatever its name.
        let foreign = reports.join(".building-4000000000-x2");
        std::fs::create_dir(&foreign).unwrap();
        std::fs::write(foreign.join("notes.txt"), "p").unwrap();
        let (code, _, err) = sweep_small(cwd.path(), &["-q"]);
        assert_eq!(code, 0, "{err}");
        assert!(!dead.exists(), "the dead run's build folder is still there");
        assert!(foreign.join("notes.txt").exists());
    }
}

mod signals {
    use super::*;

    /// Sends `sig` to a default sweep over the sample transcripts once `when` says so, and
    /// checks the outcome: exit 130 and nothing left, or (if it finished first) a whole run.
    fn signal_leaves_nothing(sig: &str, when: &dyn Fn(&Path, Duration) -> bool) {
        let cwd = tempfile::tempdir().unwrap();
        let mut child = Std::new(exe())
            .current_dir(cwd.path())
            .env("RAYON_NUM_THREADS", "1")
            .arg("sweep")
            .arg(root().join("transcripts"))
            .args(["--no-cache", "--quiet"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawns");
        let reports = cwd.path().join("reports");
        let start = Instant::now();
        while !when(&reports, start.elapsed()) {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(300), "never reached");
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = Std::new("kill")
            .args([&format!("-{sig}"), &child.id().to_string()])
            .status();
        let t = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "sweep ignored SIG{sig}"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let stderr = {
            use std::io::Read;
            let mut s = String::new();
            let _ = child.stderr.take().unwrap().read_to_string(&mut s);
            s
        };
        assert_no_panic(&stderr);
        let left = names(&reports);
        if status.code() == Some(0) {
            assert!(reports.join("latest/report.html").exists(), "{left:?}");
        } else {
            assert_eq!(status.code(), Some(130), "SIG{sig}: {status:?} {stderr}");
            assert!(left.is_empty(), "left behind after SIG{sig}: {left:?}");
        }
    }

    #[test]
    fn sigterm_during_the_replays_leaves_nothing() {
        signal_leaves_nothing("TERM", &|_, t| t > Duration::from_millis(1500));
    }

    #[test]
    fn sighup_during_the_replays_leaves_nothing() {
        signal_leaves_nothing("HUP", &|_, t| t > Duration::from_millis(800));
    }

    /// The write phase: the signal lands once the build folder exists.
    #[test]
    fn sigterm_during_the_write_phase_leaves_nothing() {
        signal_leaves_nothing("TERM", &|reports, _| {
            names(reports).iter().any(|n| n.starts_with(".building-"))
        });
    }

    /// Issue 39 item 12: SIGTERM while `--grid` is a FIFO no one writes (the run blocked
    /// in `open`) exits 130 like any interruption, not 143.
    #[test]
    fn sigterm_while_the_grid_fifo_has_no_writer_exits_130() {
        let cwd = tempfile::tempdir().unwrap();
        let fifo = cwd.path().join("grid.toml");
        let made = Std::new("mkfifo").arg(&fifo).status().expect("mkfifo runs");
        assert!(made.success());
        let mut child = Std::new(exe())
            .current_dir(cwd.path())
            .args(["sweep", "--grid", "grid.toml", "--show-grid"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawns");
        std::thread::sleep(Duration::from_millis(1500));
        assert!(
            child.try_wait().unwrap().is_none(),
            "did not wait for a writer"
        );
        let _ = Std::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_no_panic(&err);
        assert_eq!(out.status.code(), Some(130), "{:?}: {err}", out.status);
    }

    #[test]
    fn sigint_leaves_no_partial_run_folder() {
        signal_leaves_nothing("INT", &|_, t| t > Duration::from_millis(1500));
    }
}

mod stdout {
    use super::*;

    /// Runs `args`, reads one line of stdout and closes the pipe: the command must end
    /// quietly with exit 0, never panic (exit 101).
    fn head_1(args: &[&str]) {
        use std::io::{BufRead, BufReader};
        let mut child = Std::new(exe())
            .args(args)
            .env_remove("COMPACTION_SIM_CACHE")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawns");
        let mut first = String::new();
        {
            let mut r = BufReader::new(child.stdout.take().unwrap());
            r.read_line(&mut first).unwrap();
        } // the read end is closed here
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!first.is_empty(), "{args:?} printed nothing: {err}");
        assert_no_panic(&err);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("Broken pipe"), "{args:?}: {err}");
    }

    #[test]
    fn replay_piped_to_head_exits_0() {
        let f = one_session();
        let f = f.to_str().unwrap();
        head_1(&[
            "replay",
            f,
            "--after-tokens",
            "2000",
            "--keep-recent-events",
            "2",
        ]);
        head_1(&[
            "replay",
            f,
            "--after-tokens",
            "2000",
            "--keep-recent-events",
            "2",
            "--json",
        ]);
    }

    #[test]
    fn inspect_sweep_and_conform_piped_to_head_exit_0() {
        let t = root().join("transcripts");
        head_1(&["inspect", t.to_str().unwrap(), "--no-cache"]);
        head_1(&["sweep", "--show-grid"]);
        let goldens = root().join("tests/fixtures/oracle/goldens");
        head_1(&["conform", goldens.to_str().unwrap()]);
    }

    /// Runs `args` in `cwd` with stdout a pipe whose reader is already gone: (exit code,
    /// stderr).
    fn closed_stdout(cwd: &Path, args: &[&str]) -> (Option<i32>, String) {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Std::new(exe())
            .current_dir(cwd)
            .args(args)
            .env_remove("COMPACTION_SIM_CACHE")
            .stdout(writer)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_no_panic(&err);
        (out.status.code(), err)
    }

    /// Issue 39 item 11: a closed stdout drops the output, not the outcome: a refused check
    /// exits 1, a sweep with no setting within budget exits 1 (and says so on stderr),
    /// calibrate still writes its --out file.
    #[test]
    fn a_closed_stdout_never_hides_the_outcome_or_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let (code, err) = closed_stdout(dir.path(), &["check", "Compaction(after_tokens=1)"]);
        assert_eq!(code, Some(1), "{err}");
        let input = one_session();
        let mut args = vec!["sweep", input.to_str().unwrap()];
        args.extend_from_slice(&SMALL[..SMALL.len() - 5]);
        args.extend([
            "--no-cache",
            "--budget-latency",
            "0",
            "--budget-detail-lost",
            "0",
        ]);
        args.extend(["--out", "run"]);
        let (code, err) = closed_stdout(dir.path(), &args);
        assert_eq!(code, Some(1), "{err}");
        assert!(err.contains("no setting meets it"), "{err}");
        assert!(dir.path().join("run/report.md").is_file(), "{err}");
        let transcripts = root().join("transcripts");
        let (code, err) = closed_stdout(
            dir.path(),
            &[
                "calibrate",
                transcripts.to_str().unwrap(),
                "--out",
                "cal.toml",
            ],
        );
        assert_eq!(code, Some(0), "{err}");
        assert!(dir.path().join("cal.toml").is_file(), "{err}");
    }

    /// Issue 39 item 11: `--help` and `--version` on a full device fail like any output.
    #[test]
    fn help_and_version_on_a_full_stdout_exit_3() {
        for flag in ["--help", "--version"] {
            let full = std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap();
            let out = Std::new(exe()).arg(flag).stdout(full).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_no_panic(&err);
            assert_eq!(out.status.code(), Some(3), "{flag}: {err}");
            assert!(err.contains("standard output"), "{flag}: {err}");
        }
    }

    /// stdout on a full device: one line, exit 3 (an I/O failure, not bad input), no panic.
    #[test]
    fn a_full_stdout_is_one_line_and_exit_3() {
        if !Path::new("/dev/full").exists() {
            panic!("/dev/full is missing: this test needs it");
        }
        let run_dir = {
            let (tmp, dir) = crate::common::report_fixture_copy();
            let _kept = tmp.keep();
            dir
        };
        let cases: Vec<Vec<String>> = vec![
            vec![
                "check".into(),
                "Compaction(after_tokens=80_000, keep_recent_events=20)".into(),
            ],
            vec!["report".into(), run_dir.display().to_string()],
            vec!["sweep".into(), "--show-grid".into()],
        ];
        for args in cases {
            let full = std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap();
            let out = Std::new(exe()).args(&args).stdout(full).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_no_panic(&err);
            assert_eq!(out.status.code(), Some(3), "{args:?}: {err}");
            let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
            assert_eq!(errors.len(), 1, "{args:?}: {err}");
            assert!(errors[0].contains("standard output"), "{err}");
        }
        let _ = std::fs::remove_dir_all(run_dir.parent().unwrap());
    }
}

mod terminal {
    use super::*;

    /// A session id holding escape sequences (retitle the window, clear the screen) and a
    /// file name holding a newline reach the terminal escaped.
    #[test]
    fn ids_and_file_names_are_escaped_in_terminal_output() {
        let cwd = tempfile::tempdir().unwrap();
        let text = std::fs::read_to_string(one_session()).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["id"] = "evil\u{1b}]0;pwned\u{7}\u{1b}[2J".into();
        let name = "bad\nname.session.json";
        std::fs::write(cwd.path().join(name), v.to_string()).unwrap();
        let path = cwd.path().join(name);
        let path = path.to_str().unwrap();
        let out = bin()
            .args([
                "replay",
                path,
                "--after-tokens",
                "2000",
                "--keep-recent-events",
                "2",
            ])
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(shown.contains("evil\\u{1b}]0;pwned"), "{shown}");
        assert!(
            !shown.contains('\u{1b}') && !shown.contains('\u{7}'),
            "{shown}"
        );
        let out = bin()
            .current_dir(cwd.path())
            .args(["inspect", ".", "--no-cache"])
            .output()
            .unwrap();
        let table = String::from_utf8_lossy(&out.stdout);
        assert!(table.contains("bad\\nname.session.json"), "{table}");
        assert!(!table.contains('\u{1b}'), "{table}");
        // The newline forged no row of its own.
        assert!(
            !table.lines().any(|l| l.starts_with("name.session.json")),
            "{table}"
        );
    }
}

mod forged_lines {
    use super::*;

    /// A recorded model name holding a newline (`"x\nwrote /etc/passwd"`) forges no line of
    /// `replay`'s output: the metrics header, the latency row and every warning show it
    /// escaped.
    #[test]
    fn a_model_name_with_a_newline_forges_no_replay_line() {
        let cwd = tempfile::tempdir().unwrap();
        let text = std::fs::read_to_string(one_session()).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let events = v["events"].as_array_mut().unwrap();
        for e in events.iter_mut() {
            if e["content"]["role"] == "model" {
                e["model_version"] = "x\nwrote /etc/passwd".into();
            }
        }
        let path = cwd.path().join("s.session.json");
        std::fs::write(&path, v.to_string()).unwrap();
        let out = bin()
            .args([
                "replay",
                path.to_str().unwrap(),
                "--after-tokens",
                "2000",
                "--keep-recent-events",
                "2",
            ])
            .output()
            .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(
            stdout.contains("agent model x\\nwrote /etc/passwd"),
            "{stdout}"
        );
        for line in stdout.lines().chain(stderr.lines()) {
            assert!(!line.starts_with("wrote /etc/passwd"), "forged: {line}");
        }
    }
}

/// Database URLs carry passwords; none reaches a terminal, a log or a file (docs/databases.md).
mod secrets {
    use super::*;

    /// Marker passwords, one per position a URL can hold a secret in.
    const MARK_USERINFO: &str = "MarkUserinfo7";
    const MARK_PASSWORD: &str = "MarkPasswordParam7";
    const MARK_SSLPASSWORD: &str = "MarkSslPassword7";
    const MARK_PASSFILE: &str = "MarkPassfile7";
    const MARK_SSLKEY: &str = "MarkSslKey7";

    /// Every file under `dir` (recursively), as bytes.
    fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.extend(files(&p));
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
        out
    }

    fn contains(hay: &[u8], needle: &str) -> bool {
        hay.windows(needle.len()).any(|w| w == needle.as_bytes())
    }

    /// Runs `args` in `cwd` and fails when stdout, stderr or any file under `cwd` holds one of
    /// `secrets`. Returns the exit code.
    fn run_clean(cwd: &Path, args: &[&str], env: &[(&str, &str)], secrets: &[&str]) -> i32 {
        let out = bin()
            .current_dir(cwd)
            .args(args)
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        for s in secrets {
            for (what, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
                assert!(
                    !contains(bytes, s),
                    "{args:?}: {what} shows `{s}`:\n{}",
                    String::from_utf8_lossy(bytes)
                );
            }
            for (p, bytes) in files(cwd) {
                assert!(
                    !contains(&bytes, s),
                    "{args:?}: {} holds `{s}`",
                    p.display()
                );
            }
        }
        out.status.code().unwrap_or(-1)
    }

    /// The URL-taking commands, each on `url`, in a fresh folder; a sweep in two shards is
    /// merged. `reachable`: the commands must succeed (else they must fail cleanly).
    fn every_command(url: &str, secrets: &[&str], env: &[(&str, &str)], reachable: bool) {
        let cwd = tempfile::tempdir().unwrap();
        let c = cwd.path();
        let setting = ["--after-invocations", "1", "--overlap", "0"];
        let sweep = |out: &str, shard: Option<&str>| {
            let mut a = vec![
                "sweep",
                url,
                "--trigger",
                "invocations",
                "--summarizer",
                "terse",
            ];
            a.extend(["--after-invocations", "1", "--overlap", "0", "--out", out]);
            if let Some(s) = shard {
                a.extend(["--shard", s]);
            }
            a.into_iter().map(String::from).collect::<Vec<_>>()
        };
        let mut runs: Vec<Vec<String>> = vec![
            vec!["inspect".into(), url.into()],
            vec!["inspect".into(), url.into(), "--json".into()],
            ["inspect", url, "--emit", "jsonl", "--out", "jsonl"]
                .map(String::from)
                .to_vec(),
            [&["replay", url][..], &setting]
                .concat()
                .iter()
                .map(|s| s.to_string())
                .collect(),
            [&["replay", url, "--json"][..], &setting]
                .concat()
                .iter()
                .map(|s| s.to_string())
                .collect(),
            vec![
                "calibrate".into(),
                url.into(),
                "--out".into(),
                "cal.toml".into(),
            ],
            vec!["backtest".into(), url.into()],
        ];
        if reachable {
            // The sweep in two shards (each a sweep over the URL) and their merge, which
            // writes every file a full run writes: one run of the URL's sessions, not two.
            runs.push(sweep("s1", Some("1/2")));
            runs.push(sweep("s2", Some("2/2")));
            runs.push(
                ["merge", "s1", "s2", "--out", "merged"]
                    .map(String::from)
                    .to_vec(),
            );
        } else {
            runs.push(sweep("run", None));
        }
        for args in &runs {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            // Only `merge` reads the database from the sources the shards recorded.
            let env = if args[0] == "merge" { env } else { &[] };
            let code = run_clean(c, &args, env, secrets);
            if reachable {
                assert_eq!(code, 0, "{args:?}");
            } else {
                assert_ne!(code, 0, "{args:?}");
            }
        }
        if reachable {
            for dir in ["s1", "s2", "merged", "jsonl"] {
                assert!(c.join(dir).is_dir(), "{dir} not written");
            }
            assert!(c.join("cal.toml").is_file());
        }
    }

    /// An unreachable server (127.0.0.1:1): the connection error names the URL, never a
    /// secret, whichever position holds it, and a refused parameter's value is not quoted.
    #[test]
    fn no_url_secret_is_shown_when_the_server_is_unreachable() {
        let base = "postgresql://ann";
        for url in [
            format!("{base}:{MARK_USERINFO}@127.0.0.1:1/db"),
            format!("{base}@127.0.0.1:1/db?password={MARK_PASSWORD}"),
            format!("{base}@127.0.0.1:1/db?sslmode=disable&sslpassword={MARK_SSLPASSWORD}"),
            format!("{base}@127.0.0.1:1/db?passfile=/tmp/{MARK_PASSFILE}&connect_timeout=2"),
            format!("{base}@127.0.0.1:1/db?sslkey=/k/{MARK_SSLKEY}"),
            format!("{base}:{MARK_USERINFO}@127.0.0.1:1/db?password={MARK_PASSWORD}&passfile={MARK_PASSFILE}&sslpassword={MARK_SSLPASSWORD}"),
        ] {
            every_command(
                &url,
                &[MARK_USERINFO, MARK_PASSWORD, MARK_SSLPASSWORD, MARK_PASSFILE, MARK_SSLKEY],
                &[],
                false,
            );
        }
    }

    /// The test database (`COMPACTION_SIM_TEST_POSTGRES`), reached with its real password in
    /// the user part and in `password=` at once, with a marker `sslpassword` and `passfile`
    /// beside them (one URL holding every position: one pass of the commands, not two):
    /// every command works, and neither the password nor a marker is in any output or file
    /// (sessions' sources included). `merge` reads sessions
    /// again from their sources, which hold no password: it gets it from `PGPASSWORD`, as for
    /// a URL given without one.
    #[test]
    fn no_url_secret_reaches_any_output_or_file_of_a_real_database_run() {
        let given = crate::db::pg_url();
        let rest = given.split_once("://").unwrap().1;
        let (userinfo, server) = rest.rsplit_once('@').expect("a user in the test URL");
        let (_user, password) = userinfo
            .split_once(':')
            .expect("a password in the test URL");
        assert!(
            password.len() >= 6,
            "the test password is too short to grep for"
        );
        let env = [("PGPASSWORD", password)];
        let q = if server.contains('?') { "&" } else { "?" };
        let url = format!(
            "{given}{q}password={password}&sslpassword={MARK_SSLPASSWORD}&passfile=/no/{MARK_PASSFILE}"
        );
        every_command(
            &url,
            &[password, MARK_SSLPASSWORD, MARK_PASSFILE],
            &env,
            true,
        );
    }
}

/// Issue 39 items 13-15: the run folder's edges (a folder not the tool's, files a user added
/// to a run folder, a publish cut short, two runs racing on one `--out`).
mod run_folder_edges {
    use super::*;

    /// Item 14: `report` on a folder without the tool's marker refuses it, as `sweep --out`
    /// does, and leaves the user's report.md as it was.
    #[test]
    fn report_never_rewrites_a_folder_the_tool_did_not_write() {
        let (_tmp, dir) = crate::common::report_fixture_copy();
        std::fs::remove_file(dir.join(".compaction-sim-run")).unwrap();
        std::fs::write(dir.join("report.md"), "my notes").unwrap();
        let (code, _, err) = run(dir.parent().unwrap(), &["report", "run"]);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains("did not write") && err.contains("nothing was touched"),
            "{err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert_eq!(
            std::fs::read_to_string(dir.join("report.md")).unwrap(),
            "my notes"
        );
        assert!(!dir.join("report.html").exists());
    }

    /// Item 14: rerunning a sweep into its own run folder replaces it whole; each file a
    /// user had added there is named on stderr (and nothing is said when there is none).
    #[test]
    fn a_rerun_names_the_files_a_user_added_to_its_run_folder() {
        let cwd = tempfile::tempdir().unwrap();
        let (code, _, err) = sweep_small(cwd.path(), &["--out", "r", "-q"]);
        assert_eq!(code, 0, "{err}");
        let (code, _, err) = sweep_small(cwd.path(), &["--out", "r", "-q", "--force"]);
        assert_eq!(code, 0, "{err}");
        assert!(!err.contains("note:"), "{err}");
        std::fs::write(cwd.path().join("r/my-notes.txt"), "p").unwrap();
        std::fs::create_dir(cwd.path().join("r/plots")).unwrap();
        let (code, _, err) = sweep_small(cwd.path(), &["--out", "r", "-q", "--force"]);
        assert_eq!(code, 0, "{err}");
        let notes: Vec<&str> = err.lines().filter(|l| l.starts_with("note:")).collect();
        assert_eq!(notes.len(), 1, "{err}");
        assert!(
            notes[0].contains("my-notes.txt, plots") && notes[0].contains("gone"),
            "{err}"
        );
    }

    fn host() -> String {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .unwrap()
            .trim()
            .to_string()
    }

    /// Item 13: a run SIGKILLed between the two renames that publish its folder left the
    /// earlier run moved aside and the new one complete in its build folder: the next run in
    /// the same folder finishes that publish (and deletes nothing that is still wanted).
    #[test]
    fn a_publish_killed_between_its_renames_is_finished_by_the_next_run() {
        let cwd = tempfile::tempdir().unwrap();
        let (code, _, err) = sweep_small(cwd.path(), &["--out", "runs/a", "-q"]);
        assert_eq!(code, 0, "{err}");
        let runs = cwd.path().join("runs");
        // The dead run (pid 4000000000 is above Linux's limit): its new folder complete, its
        // owner file gone, the earlier run moved aside, its publish record beside them.
        let pid = 4_000_000_000u32;
        let build = runs.join(format!(".building-{pid}-k1"));
        let copy = Std::new("cp")
            .arg("-r")
            .arg(runs.join("a"))
            .arg(&build)
            .status()
            .unwrap();
        assert!(copy.success());
        std::fs::write(build.join("settings.csv"), "the new run").unwrap();
        std::fs::rename(runs.join("a"), runs.join(format!(".replaced-{pid}-a"))).unwrap();
        std::fs::write(
            runs.join(format!(".publishing-{pid}-a")),
            format!("{} {pid}\n.building-{pid}-k1\n", host()),
        )
        .unwrap();
        let (code, _, err) = sweep_small(cwd.path(), &["--out", "runs/b", "-q"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            std::fs::read_to_string(runs.join("a/settings.csv")).unwrap(),
            "the new run"
        );
        assert_eq!(names(&runs), vec!["a", "b"]);
    }

    /// Item 15: a sweep whose `--out` another live run is building is told so before any
    /// work (not that the folder is one compaction-sim did not write), and touches nothing.
    #[test]
    fn a_second_sweep_on_one_out_is_told_another_run_is_writing_it() {
        let cwd = tempfile::tempdir().unwrap();
        // The other run: this tool, waiting to read a FIFO nobody writes.
        let fifo = cwd.path().join("input.json");
        assert!(Std::new("mkfifo").arg(&fifo).status().unwrap().success());
        let mut other = Std::new(exe())
            .arg("inspect")
            .arg(&fifo)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let build = cwd.path().join(format!(".building-{}-zz", other.id()));
        std::fs::create_dir(&build).unwrap();
        std::fs::write(build.join(".compaction-sim-run"), "x").unwrap();
        std::fs::write(
            build.join(".compaction-sim-owner"),
            format!("{} {} r\n", host(), other.id()),
        )
        .unwrap();
        let (code, _, err) = sweep_small(cwd.path(), &["--out", "r", "-q"]);
        let _ = other.kill();
        let _ = other.wait();
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains(&format!("another compaction-sim run (pid {})", other.id())),
            "{err}"
        );
        assert!(!err.contains("did not write"), "{err}");
        assert!(!cwd.path().join("r").exists());
        assert!(build.exists());
    }
}

/// Issue 47: hostile and unlucky input, round five.
mod round_five {
    use super::*;

    /// Sessions `inspect --json` lists.
    fn inspected(cwd: &Path, paths: &[&str]) -> (usize, String) {
        let mut args = vec!["inspect", "--json", "--no-cache"];
        args.extend_from_slice(paths);
        let (code, out, err) = run(cwd, &args);
        assert_eq!(code, 0, "inspect failed: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("inspect --json");
        (v["sessions"].as_array().expect("sessions[]").len(), err)
    }

    #[test]
    fn one_file_under_several_spellings_is_read_once_and_the_merge_is_said() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("x");
        std::fs::create_dir(&dir).unwrap();
        let recorded = root().join("tests/fixtures/recorded/claude_two_compactions.jsonl");
        std::fs::copy(recorded, dir.join("a.jsonl")).unwrap();
        std::os::unix::fs::symlink(dir.join("a.jsonl"), tmp.path().join("link.jsonl")).unwrap();
        let abs = dir.to_str().unwrap().to_string();
        let (alone, _) = inspected(tmp.path(), &["x"]);
        assert_eq!(alone, 1);
        let (n, err) = inspected(tmp.path(), &["x", "./x", &abs, "link.jsonl"]);
        assert_eq!(n, alone, "the same file read more than once: {err}");
        assert!(
            err.contains("./x/a.jsonl are the same file; read once"),
            "{err}"
        );
        assert!(err.contains("link.jsonl are the same file"), "{err}");
        let backtest = |paths: &[&str]| {
            let mut args = vec!["backtest", "--json", "--tokenizer", "adk-chars"];
            args.extend_from_slice(paths);
            let (code, out, err) = run(tmp.path(), &args);
            assert_eq!(code, 0, "{err}");
            let v: serde_json::Value = serde_json::from_str(&out).expect("backtest --json");
            (v["compactions"].as_array().map_or(0, Vec::len), err)
        };
        let (once, _) = backtest(&["x"]);
        assert_eq!(once, 2);
        let (twice, err) = backtest(&["x", "link.jsonl", "./x"]);
        assert_eq!(twice, once, "compactions listed twice: {err}");
        assert!(err.contains("are the same file"), "{err}");
    }

    /// `kill -TERM` to a running `args`, which must still be running after `wait`; its exit.
    fn terminated(args: &[&str], wait: Duration) -> (Option<i32>, String) {
        let mut child = Std::new(exe())
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawns");
        std::thread::sleep(wait);
        assert!(
            child.try_wait().unwrap().is_none(),
            "{args:?} ended before the signal"
        );
        let _ = Std::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let t = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "{args:?} ignored SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut err = String::new();
        use std::io::Read;
        let _ = child.stderr.take().unwrap().read_to_string(&mut err);
        (status.code(), err)
    }

    #[test]
    fn backtest_inspect_and_replay_exit_130_on_sigterm() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("waiting.json");
        assert!(Std::new("mkfifo").arg(&fifo).status().unwrap().success());
        let f = fifo.to_str().unwrap();
        for cmd in [
            vec!["backtest", f],
            vec!["inspect", "--no-cache", f],
            vec!["replay", f, "--after-invocations", "1", "--overlap", "0"],
        ] {
            let (code, err) = terminated(&cmd, Duration::from_millis(700));
            assert_no_panic(&err);
            assert_eq!(code, Some(130), "{cmd:?}: {err}");
        }
    }

    #[test]
    fn a_fifo_publish_record_or_owner_file_hangs_no_sweep() {
        let cwd = tempfile::tempdir().unwrap();
        let runs = cwd.path().join("runs");
        std::fs::create_dir(&runs).unwrap();
        let building = runs.join(".building-4000000001-q");
        std::fs::create_dir(&building).unwrap();
        std::fs::write(building.join(".compaction-sim-run"), "x").unwrap();
        for fifo in [
            runs.join(".publishing-4000000002-a"),
            runs.join(".publishing-1-a"),
            building.join(".compaction-sim-owner"),
        ] {
            assert!(Std::new("mkfifo").arg(&fifo).status().unwrap().success());
        }
        let input = one_session();
        let mut args = vec!["sweep", input.to_str().unwrap()];
        args.extend_from_slice(SMALL);
        args.extend_from_slice(&["--out", "runs/a", "-q"]);
        let mut child = Std::new(exe())
            .current_dir(cwd.path())
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let t = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if t.elapsed() > Duration::from_secs(120) {
                let _ = child.kill();
                panic!("the sweep hangs on a FIFO record");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut err = String::new();
        use std::io::Read;
        let _ = child.stderr.take().unwrap().read_to_string(&mut err);
        assert_eq!(status.code(), Some(0), "{err}");
        assert!(runs.join("a/report.html").exists(), "{err}");
    }

    #[test]
    fn synth_refuses_an_unbounded_output_before_writing_anything() {
        let cwd = tempfile::tempdir().unwrap();
        for extra in [
            vec!["--swe-agent-turns", "2000000"],
            vec![
                "--swe-agent-turns",
                "3",
                "--turn-tokens",
                "18446744073709551615",
            ],
            vec![
                "--swe-agent-turns",
                "3",
                "--fixed-tokens",
                "18446744073709551615",
            ],
            vec!["--swe-agent-turns", "3", "--turn-tokens", "1000000000"],
            vec!["--invocations", "100000000"],
        ] {
            let mut args = vec!["synth", "--out", "out"];
            args.extend_from_slice(&extra);
            let t = Instant::now();
            let (code, _, err) = run(cwd.path(), &args);
            assert_eq!(code, 2, "{extra:?}: {err}");
            assert!(
                err.contains("over the limit of 536870912 bytes per file")
                    && err.contains("would be about"),
                "{extra:?}: {err}"
            );
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "{extra:?} took {:?}",
                t.elapsed()
            );
            assert!(
                names(cwd.path()).is_empty(),
                "{extra:?} wrote {:?}",
                names(cwd.path())
            );
        }
    }

    #[test]
    fn sigterm_and_sigint_stop_synth_with_130_and_leave_no_build_folder() {
        for sig in ["TERM", "INT"] {
            let cwd = tempfile::tempdir().unwrap();
            let mut child = Std::new(exe())
                .current_dir(cwd.path())
                .args(["synth", "--out", "out", "--sessions", "20000"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            std::thread::sleep(Duration::from_millis(1500));
            assert!(
                child.try_wait().unwrap().is_none(),
                "synth ended before SIG{sig}"
            );
            let _ = Std::new("kill")
                .args([&format!("-{sig}"), &child.id().to_string()])
                .status();
            let t = Instant::now();
            let status = loop {
                if let Some(s) = child.try_wait().unwrap() {
                    break s;
                }
                assert!(
                    t.elapsed() < Duration::from_secs(30),
                    "synth ignored SIG{sig}"
                );
                std::thread::sleep(Duration::from_millis(20));
            };
            let mut err = String::new();
            use std::io::Read;
            let _ = child.stderr.take().unwrap().read_to_string(&mut err);
            assert_eq!(status.code(), Some(130), "SIG{sig}: {err}");
            assert!(
                names(cwd.path()).is_empty(),
                "left after SIG{sig}: {:?}",
                names(cwd.path())
            );
        }
    }

    /// Issue 47 item 8: shards of a database reached with the password in its URL are merged
    /// with the password from PGPASSWORD; without it, merge says it reads the database again
    /// and needs PGPASSWORD or a password file (not that file paths do not resolve).
    #[test]
    fn merging_database_shards_without_pgpassword_says_merge_needs_it() {
        let url = crate::db::pg_url();
        let password = url
            .split_once("://")
            .and_then(|(_, r)| r.rsplit_once('@'))
            .and_then(|(u, _)| u.split_once(':'))
            .map(|(_, p)| p.to_string())
            .expect("a password in the test URL");
        let cwd = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let c = cwd.path();
        let out = bin()
            .current_dir(c)
            .args([
                "sweep",
                &url,
                "--trigger",
                "invocations",
                "--summarizer",
                "terse",
                "--after-invocations",
                "1",
                "--overlap",
                "0",
                "--out",
                "s1",
                "--shard",
                "1/1",
                "-q",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let merge = |with_password: bool| {
            let mut cmd = bin();
            cmd.current_dir(c)
                .args([
                    "merge",
                    "s1",
                    "--out",
                    if with_password { "m2" } else { "m1" },
                ])
                .env_remove("PGPASSWORD")
                .env_remove("PGPASSFILE")
                .env("HOME", home.path());
            if with_password {
                cmd.env("PGPASSWORD", &password);
            }
            cmd.output().unwrap()
        };
        let out = merge(false);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{err}");
        assert!(
            err.contains("merge reads the database again") && err.contains("PGPASSWORD"),
            "{err}"
        );
        assert!(!err.contains("input paths resolve"), "{err}");
        assert!(!err.contains(&password), "{err}");
        let out = merge(true);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
