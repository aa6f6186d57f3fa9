//! `compaction-sim sweep` and `merge`, driven through the binary.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

fn bin() -> Command {
    Command::cargo_bin("compaction-sim").expect("binary builds")
}

#[allow(dead_code)]
fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sweep")
}

/// Runs `sweep` with `args` and returns (exit code, stdout, stderr).
fn sweep(args: &[&str], cwd: &Path) -> (i32, String, String) {
    let out = bin()
        .current_dir(cwd)
        .arg("sweep")
        .args(args)
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

mod grid_errors {
    use super::*;

    /// Each bad grid gets exit code 2 and one line naming the axis and the value.
    fn refused(args: &[&str], must_contain: &[&str]) {
        let dir = tempfile::tempdir().unwrap();
        let (code, _out, err) = sweep(args, dir.path());
        assert_eq!(code, 2, "args {args:?}: stderr {err}");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "one line for {args:?}: {err}");
        for m in must_contain {
            assert!(err.contains(m), "`{m}` missing from: {err}");
        }
        // Nothing was written.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn reversed_range() {
        refused(
            &["--after-tokens", "200k..40k:20k", "--show-grid"],
            &["after_tokens", "200k..40k:20k", "reversed"],
        );
    }

    #[test]
    fn empty_range() {
        refused(
            &["--keep-recent-events", "..", "--show-grid"],
            &["keep_recent_events", "`..`", "empty"],
        );
        refused(
            &["--overlap", "0..4:0", "--show-grid"],
            &["overlap", "0..4:0", "step 0"],
        );
    }

    #[test]
    fn unknown_summarizer_and_model() {
        refused(
            &["--summarizer", "clever", "--show-grid"],
            &["summarizer", "clever", "unknown summarizer"],
        );
        refused(
            &["--summarizer", "model:no-such-model-9", "--show-grid"],
            &["summarizer", "no-such-model-9", "unknown model"],
        );
        refused(
            &["--agent-model", "no-such-model-9", "--show-grid"],
            &["agent_model", "no-such-model-9", "unknown model"],
        );
    }

    #[test]
    fn zero_threshold_in_manifest_words() {
        refused(
            &["--after-invocations", "0,5", "--show-grid"],
            &["after_invocations", "greater than 0"],
        );
    }

    #[test]
    fn half_pair_in_grid_file() {
        let dir = tempfile::tempdir().unwrap();
        let g = dir.path().join("g.toml");
        std::fs::write(&g, "after_tokens = '40k..80k:20k'\n").unwrap();
        let (code, _o, err) = sweep(&["--grid", g.to_str().unwrap(), "--show-grid"], dir.path());
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains("keep_recent_events") && err.contains("Set both, or neither."),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

mod show_grid {
    use super::*;

    #[test]
    fn default_grid_is_printed_and_reparses() {
        let dir = tempfile::tempdir().unwrap();
        let (code, out, err) = sweep(&["--show-grid"], dir.path());
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("after_tokens = [20000, 40000"), "{out}");
        assert!(
            out.contains("# 105 settings (104 compaction + 1 no-compaction baseline)"),
            "{out}"
        );
        // The printed grid is itself a grid file giving the same settings.
        let g = dir.path().join("g.toml");
        std::fs::write(&g, &out).unwrap();
        let (code, again, err) = sweep(&["--grid", g.to_str().unwrap(), "--show-grid"], dir.path());
        assert_eq!(code, 0, "{err}");
        assert_eq!(out, again);
    }

    #[test]
    fn flags_override_axes() {
        let dir = tempfile::tempdir().unwrap();
        let (code, out, err) = sweep(
            &[
                "--trigger",
                "invocations",
                "--after-invocations",
                "3,6",
                "--overlap",
                "1",
                "--summarizer",
                "terse",
                "--show-grid",
            ],
            dir.path(),
        );
        assert_eq!(code, 0, "{err}");
        assert!(!out.contains("after_tokens"), "{out}");
        assert!(out.contains("after_invocations = [3, 6]"), "{out}");
        assert!(
            out.contains("# 3 settings (2 compaction + 1 no-compaction baseline)"),
            "{out}"
        );
    }
}
