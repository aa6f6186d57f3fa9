//! `python:REF` summarizers (the user's own `BaseEventsSummarizer`, run by google-adk in
//! worker processes) and `check --manifest --package` importing the summarizer path.
//!
//! These tests need a Python with google-adk 2.13.0, named by `COMPACTION_SIM_TEST_PYTHON`
//! (`.ci/run` makes one under ~/.cache). Without it they fail, saying how to set it up:
//! they never pass by not running.

use crate::common::{bin, read_text, root};
use compaction_sim::cost::client::ClientMode;
use compaction_sim::cost::compute::CostModel;
use compaction_sim::cost::evaluate::{evaluate, CostSetting, Evaluation, SessionCostInputs};
use compaction_sim::engine::{self, CallResult, Config, Summarizer, UsageMode};
use compaction_sim::summarize::python::{self, PythonOptions};
use compaction_sim::summarize::SummarizerSpec;
use compaction_sim::tokens::sizes::SessionSizes;
use compaction_sim::tokens::Tokenizer;
use compaction_sim::transcript::{detect, Session};
use std::path::PathBuf;
use std::time::Duration;

/// The interpreter the tests run summarizers with; fails the test when it is not set up.
pub(crate) fn test_python() -> String {
    const HOW: &str = "set COMPACTION_SIM_TEST_PYTHON to a Python with google-adk 2.13.0, e.g. \
        `python3 -m venv ~/.cache/compaction-sim-venv && ~/.cache/compaction-sim-venv/bin/pip \
        install google-adk==2.13.0 && export COMPACTION_SIM_TEST_PYTHON=~/.cache/compaction-sim-venv/bin/python` \
        (.ci/run does this)";
    let py = std::env::var("COMPACTION_SIM_TEST_PYTHON")
        .unwrap_or_else(|_| panic!("COMPACTION_SIM_TEST_PYTHON is not set: {HOW}"));
    let out = std::process::Command::new(&py)
        .args(["-c", "import google.adk; print(google.adk.__version__)"])
        .output()
        .unwrap_or_else(|e| panic!("COMPACTION_SIM_TEST_PYTHON={py} does not run ({e}): {HOW}"));
    assert!(
        out.status.success(),
        "COMPACTION_SIM_TEST_PYTHON={py} has no google-adk ({}): {HOW}",
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .last()
            .unwrap_or("")
    );
    py
}

fn fixtures() -> PathBuf {
    root().join("tests/fixtures/python")
}

fn package() -> PathBuf {
    fixtures().join("support_bot")
}

/// Both triggers, so spans are summarized by sliding windows and by rolling token summaries
/// (whose seed is the previous summary).
const SETTING: [&str; 8] = [
    "--after-tokens",
    "20000",
    "--keep-recent-events",
    "6",
    "--after-invocations",
    "3",
    "--overlap",
    "1",
];

fn config() -> Config {
    Config {
        token: Some((20_000, 6)),
        sliding: Some((3, 1)),
        usage: UsageMode::Adjust,
        pre_request: true,
    }
}

fn transcripts() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("transcripts"))
        .expect("transcripts/")
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".session.json"))
        .collect();
    v.sort();
    assert_eq!(v.len(), 40, "the 40 sample transcripts");
    v
}

/// Start the workers of `python:{reference}` with the test interpreter; its spec.
fn start_user_summarizer(reference: &str) -> SummarizerSpec {
    python::start(
        reference,
        &PythonOptions {
            python: test_python(),
            package: None,
            timeout: Duration::from_secs(60),
        },
    )
    .unwrap();
    SummarizerSpec::parse(&format!("python:{reference}")).unwrap()
}

/// One session under `cfg` and `spec`, with the default cost model.
fn evaluate_session(session: &Session, cfg: &Config, spec: &SummarizerSpec) -> Evaluation {
    let sizes = SessionSizes::new(session, None);
    let inputs = SessionCostInputs::new(session, Tokenizer::AdkChars);
    let run = |s: &dyn Summarizer| engine::replay(&sizes, cfg, s);
    evaluate(
        session,
        &sizes,
        &inputs,
        &CostModel::default(),
        &CostSetting::new(spec, Some("gemini-2.5-flash"), ClientMode::Waits),
        &run,
    )
    .unwrap()
}

#[test]
fn the_guides_terse_class_is_copied_verbatim() {
    // The fixture must be the guide's code, byte for byte: the comparison below is only
    // worth something if the class is the one users copy.
    let guide = read_text(&root().join("../shared/spec/platform-compaction-guide.txt"));
    let start = guide
        .find("# agents/support_bot/summarizers.py")
        .expect("the guide's Terse example");
    let end = guide[start..].find("terse = Terse()\n").expect("its end") + start + 16;
    assert_eq!(
        read_text(&package().join("summarizers.py")),
        &guide[start..end]
    );
}

/// The guide's `Terse` class, run by google-adk, writes exactly the built-in `terse`
/// summaries (text, sizes, tokens) and so the same metrics, on every sample transcript.
#[test]
fn the_guides_terse_class_matches_the_builtin_terse_on_the_sample_transcripts() {
    let reference = format!("{}:terse", package().join("summarizers.py").display());
    let user = start_user_summarizer(&reference);
    let builtin = SummarizerSpec::Terse;
    let cfg = config();
    let (mut summaries, mut seeded) = (0, 0);
    for path in transcripts() {
        let name = path.display().to_string();
        for session in detect::load_file(&name, None).unwrap() {
            let eval = |spec| evaluate_session(&session, &cfg, spec);
            let (a, b) = (eval(&builtin), eval(&user));
            assert!(
                b.summarizer_errors.is_empty(),
                "{name}: {:?}",
                b.summarizer_errors
            );
            assert_eq!(a.log.texts, b.log.texts, "{name}: summary texts");
            assert_eq!(a.replay, b.replay, "{name}: replay");
            assert_eq!(
                serde_json::to_string(&a.metrics).unwrap(),
                serde_json::to_string(&b.metrics).unwrap(),
                "{name}: metrics"
            );
            summaries += a.log.texts.len();
            seeded += a
                .replay
                .compactions
                .iter()
                .filter(|c| c.seeded_with_previous_summary)
                .count();
        }
    }
    // The comparison covered real work: many summaries, rolling ones among them.
    assert!(summaries > 100, "{summaries} summaries");
    assert!(seeded > 10, "{seeded} seeded summaries");
}

/// `replay --summarizer python:.summarizers.terse --package DIR` prints the same bytes as
/// `--summarizer terse` (the summarizer's name aside), timeline, metrics and JSON alike.
#[test]
fn replay_with_the_guides_class_prints_the_bytes_of_builtin_terse() {
    let py = test_python();
    for file in ["06-coding-37.session.json", "19-support-32.session.json"] {
        let t = root().join("transcripts").join(file);
        for json in [false, true] {
            let run = |summarizer: &str| {
                let mut c = bin();
                c.arg("replay").arg(&t).args(SETTING).args([
                    "--summarizer",
                    summarizer,
                    "--python",
                    &py,
                    "--package",
                ]);
                c.arg(package());
                if json {
                    c.arg("--json");
                }
                let out = c.output().unwrap();
                assert!(
                    out.status.success(),
                    "{summarizer}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                assert!(
                    out.stderr.is_empty(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                String::from_utf8(out.stdout).unwrap()
            };
            let builtin = run("terse");
            let user = run("python:.summarizers.terse");
            assert!(builtin.contains("terse"));
            assert_eq!(
                builtin,
                user.replace("python:.summarizers.terse", "terse"),
                "{file} json={json}"
            );
        }
    }
}

/// A replay with one of `behaviours.py`'s classes: (exit code, stdout JSON, stderr).
fn replay_with(class: &str, timeout: &str) -> (i32, serde_json::Value, String) {
    let py = test_python();
    // 5 user turns, a summary every 2: calls after turns 2, 3, 4 and 5 while none compacts.
    let t = root().join("transcripts/07-support-5.session.json");
    let out = bin()
        .arg("replay")
        .arg(&t)
        .args(["--after-invocations", "2", "--overlap", "0"])
        .arg("--summarizer")
        .arg(format!(
            "python:{}:{class}",
            fixtures().join("behaviours.py").display()
        ))
        .args(["--python", &py, "--summarizer-timeout", timeout, "--json"])
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (
        out.status.code().unwrap_or(-1),
        v,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The failed or empty calls of a replay's JSON, after checking every call is one of them.
fn calls(v: &serde_json::Value) -> Vec<serde_json::Value> {
    let v = if v.is_array() { &v[0] } else { v };
    let failures = v["failures"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        v["totals"]["summarizer_calls"].as_u64(),
        Some(failures.len() as u64),
        "every call fails or is empty: {v}"
    );
    assert_eq!(v["compactions"].as_array().map(Vec::len), Some(0), "{v}");
    failures
}

#[test]
fn a_class_that_raises_is_a_failed_call_with_its_message() {
    let (code, v, err) = replay_with("Raises", "60");
    assert_eq!(code, 0, "{err}");
    let c = calls(&v);
    assert!(!c.is_empty(), "{v}");
    assert!(c.iter().all(|c| c["result"] == "failed"), "{c:?}");
    // One warning line per failed call, with the exception's type and message.
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), c.len(), "{err}");
    for l in lines {
        assert!(l.starts_with("warning: call "), "{l}");
        assert!(l.contains(": summarizer `python:"), "{l}");
        assert!(
            l.contains(":Raises` raised ValueError: quota exhausted after "),
            "{l}"
        );
    }
}

#[test]
fn a_class_that_returns_none_compacts_nothing_and_stays_armed() {
    let (code, v, err) = replay_with("ReturnsNone", "60");
    assert_eq!(code, 0, "{err}");
    let c = calls(&v);
    // Armed: with nothing compacted, the trigger fires after every later turn.
    assert_eq!(c.len(), 4, "{c:?}");
    assert!(c.iter().all(|c| c["result"] == "empty"), "{c:?}");
    // Its print() went to stderr, not into the protocol; no call failed.
    assert!(!err.contains("warning"), "{err}");
}

#[test]
fn a_class_that_hangs_fails_after_the_timeout_and_the_replay_finishes() {
    let t0 = std::time::Instant::now();
    let (code, v, err) = replay_with("Hangs", "1");
    assert_eq!(code, 0, "{err}");
    let c = calls(&v);
    assert!(!c.is_empty());
    assert!(c.iter().all(|c| c["result"] == "failed"), "{c:?}");
    assert!(
        err.lines()
            .all(|l| l.ends_with("timed out after 1 s (worker stopped)")),
        "{err}"
    );
    // Each call waits 1 s plus a fresh worker's start: far below the class's hour.
    assert!(t0.elapsed() < Duration::from_secs(600));
}

#[test]
fn a_class_that_kills_its_worker_is_a_failed_call_naming_the_crash() {
    let (code, v, err) = replay_with("Crashes", "60");
    assert_eq!(code, 0, "{err}");
    let c = calls(&v);
    assert!(c.iter().all(|c| c["result"] == "failed"), "{c:?}");
    assert!(
        err.lines()
            .all(|l| l.ends_with("failed: the worker exited with status 3: fatal: out of memory")),
        "{err}"
    );
}

#[test]
fn a_reference_that_is_not_a_summarizer_is_one_line_before_any_replay() {
    let py = test_python();
    let t = root().join("transcripts/03-support-22.session.json");
    for (r, says) in [
        (
            "NotASummarizer",
            "names something that is not a BaseEventsSummarizer (the class NotASummarizer)",
        ),
        (
            "not_an_instance",
            "names something that is not a BaseEventsSummarizer (an object of type int)",
        ),
        ("Nope", "does not import: module `behaviours` has no `Nope`"),
    ] {
        let out = bin()
            .arg("replay")
            .arg(&t)
            .args(SETTING)
            .arg("--summarizer")
            .arg(format!(
                "python:{}:{r}",
                fixtures().join("behaviours.py").display()
            ))
            .args(["--python", &py])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(out.stdout.is_empty());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{err}");
    }
}

#[test]
fn no_interpreter_or_no_google_adk_is_one_line_with_the_install_command() {
    let t = root().join("transcripts/03-support-22.session.json");
    let reference = format!(
        "python:{}:Raises",
        fixtures().join("behaviours.py").display()
    );
    // No such interpreter.
    let out = bin()
        .arg("replay")
        .arg(&t)
        .args(SETTING)
        .args(["--summarizer", &reference, "--python", "/no/such/python3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("`/no/such/python3` could not be started"),
        "{err}"
    );
    assert!(err.contains("pip install google-adk==2.13.0"), "{err}");
    // A Python without google-adk: `python3 -S -I` sees no site-packages at all; picked
    // through the environment variable.
    let tmp = tempfile::tempdir().unwrap();
    let wrapper = tmp.path().join("bare-python");
    std::fs::write(&wrapper, "#!/bin/sh\nexec python3 -I -S \"$@\"\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = bin()
        .arg("replay")
        .arg(&t)
        .args(SETTING)
        .args(["--summarizer", &reference])
        .env("COMPACTION_SIM_PYTHON", &wrapper)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("has no google-adk (ModuleNotFoundError"),
        "{err}"
    );
    assert!(err.contains("-m pip install google-adk==2.13.0"), "{err}");
}

/// `check --manifest` imports the summarizer path as the pod would.
mod check {
    use super::*;

    fn check(manifest: &str, python: &str) -> (i32, String) {
        let out = bin()
            .args(["check", "--manifest"])
            .arg(package().join(manifest))
            .args(["--package"])
            .arg(package())
            .args(["--python", python])
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    }

    #[test]
    fn a_summarizer_path_that_imports_is_ok() {
        let (code, out) = check("manifest.py", &test_python());
        assert_eq!(code, 0, "{out}");
        assert!(out.starts_with("ok: "), "{out}");
        assert!(
            out.contains("summarizer: `.summarizers.terse` imports: support_bot.summarizers.Terse, a BaseEventsSummarizer (google-adk 2.13.0)"),
            "{out}"
        );
    }

    #[test]
    fn a_summarizer_path_that_does_not_import_is_refused_with_the_guides_words() {
        let (code, out) = check("manifest_missing.py", &test_python());
        assert_eq!(code, 1, "{out}");
        assert_eq!(
            out.trim_end().rsplit("support_bot/").next().unwrap(),
            "manifest_missing.py: summarizer: `.summarizers.brief` does not import: module `support_bot.summarizers` has no `brief`: it would fail when the pod starts"
        );
        assert!(out.starts_with("refused: "), "{out}");
    }

    #[test]
    fn a_summarizer_path_that_is_not_a_summarizer_is_refused() {
        let (code, out) = check("manifest_not_summarizer.py", &test_python());
        assert_eq!(code, 1, "{out}");
        assert!(out.starts_with("refused: "), "{out}");
        assert!(
            out.contains("`.summarizers.types` names something that is not a BaseEventsSummarizer (an object of type module)"),
            "{out}"
        );
    }

    #[test]
    fn without_google_adk_the_rest_is_checked_and_one_line_says_why_not_the_path() {
        // Without Python at all: the setting is still checked (ok), and one line says so.
        let (code, out) = check("manifest.py", "/no/such/python3");
        assert_eq!(code, 0, "{out}");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert!(lines[0].starts_with("ok: "), "{out}");
        assert!(lines[0].ends_with("Compaction(after_tokens=80_000, keep_recent_events=20, summarizer=\".summarizers.terse\")"), "{out}");
        assert!(
            lines[2].starts_with("    summarizer path not checked: Python interpreter `/no/such/python3` could not be started"),
            "{out}"
        );
        // A refused setting is still refused without Python.
        let tmp = tempfile::tempdir().unwrap();
        let m = tmp.path().join("manifest.py");
        std::fs::write(
            &m,
            "MANIFEST = AgentManifest(compaction=Compaction(after_tokens=80_000, summarizer=\".summarizers.terse\"))\n",
        )
        .unwrap();
        let out = bin()
            .args(["check", "--manifest"])
            .arg(&m)
            .args(["--python", "/no/such/python3"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stdout).contains("go together"));
    }
}

#[test]
fn a_python_call_that_fails_is_counted_as_a_failed_summarizer_call() {
    // Library level: the engine sees Failed, no compaction, and the error is one line.
    let reference = format!("{}:Raises", fixtures().join("behaviours.py").display());
    let spec = start_user_summarizer(&reference);
    let path = root().join("transcripts/01-support-3.session.json");
    let session = detect::load_file(path.display().to_string(), None)
        .unwrap()
        .remove(0);
    let cfg = Config {
        token: None,
        sliding: Some((1, 0)),
        usage: UsageMode::Adjust,
        pre_request: true,
    };
    let e = evaluate_session(&session, &cfg, &spec);
    assert!(!e.replay.calls.is_empty());
    assert!(e
        .replay
        .calls
        .iter()
        .all(|c| c.result == CallResult::Failed));
    assert_eq!(e.summarizer_errors.len(), e.replay.calls.len());
    assert!(e.summarizer_errors.iter().all(|l| !l.contains('\n')));
}

/// A sweep may put the user's class beside `terse`: with the guide's class, every row of
/// runs.csv is the built-in `terse`'s, the summarizer's name aside.
#[test]
fn a_sweep_with_the_guides_class_writes_the_rows_of_builtin_terse() {
    let py = test_python();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let files: Vec<PathBuf> = transcripts().into_iter().take(6).collect();
    let run = bin()
        .arg("sweep")
        .args(&files)
        .args([
            "--summarizer",
            "terse,python:.summarizers.terse",
            "--after-tokens",
            "20000",
            "--keep-recent-events",
            "6",
            "--python",
            &py,
            "--no-cache",
            "--quiet",
            "--package",
        ])
        .arg(package())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let csv = read_text(&out.join("runs.csv"));
    assert!(!csv.contains('"'), "plain fields only: {csv}");
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (summ, id) = (col("summarizer"), col("setting_id"));
    let mut rows: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        let rest: Vec<&str> = f
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != summ && *i != id)
            .map(|(_, v)| *v)
            .collect();
        rows.entry(f[summ]).or_default().push(rest.join(","));
    }
    let mut terse = rows.remove("terse").expect("terse rows");
    let mut user = rows
        .remove("python:.summarizers.terse")
        .expect("python rows");
    terse.sort();
    user.sort();
    assert!(terse.len() >= 6, "at least one row per session");
    assert_eq!(terse, user);
}

/// Sharded sweeps with a `python:` summarizer merge into the single run's rows (`merge`
/// replays the timelines, so it starts the workers too).
#[test]
fn sharded_sweeps_with_a_python_summarizer_merge_like_the_single_run() {
    let py = test_python();
    let tmp = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = transcripts().into_iter().take(4).collect();
    let sweep = |out: &std::path::Path, shard: Option<&str>| {
        let mut c = bin();
        c.arg("sweep").args(&files).args([
            "--summarizer",
            "python:.summarizers.terse",
            "--after-tokens",
            "20000",
            "--keep-recent-events",
            "6",
            "--python",
            &py,
            "--no-cache",
            "--quiet",
            "--package",
        ]);
        c.arg(package()).arg("--out").arg(out);
        if let Some(s) = shard {
            c.args(["--shard", s]);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    let single = tmp.path().join("single");
    sweep(&single, None);
    let parts = [tmp.path().join("p1"), tmp.path().join("p2")];
    sweep(&parts[0], Some("1/2"));
    sweep(&parts[1], Some("2/2"));
    let merged = tmp.path().join("merged");
    let o = bin()
        .arg("merge")
        .args(&parts)
        .args(["--no-cache", "--quiet", "--python", &py, "--package"])
        .arg(package())
        .arg("--out")
        .arg(&merged)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in ["runs.csv", "settings.csv", "timelines.json"] {
        assert_eq!(
            read_text(&single.join(f)),
            read_text(&merged.join(f)),
            "{f}"
        );
    }
}
