//! Helpers shared by every test module: the binary under test, the project root, and the
//! recorded corpus beside it.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

/// The project folder (where `Cargo.toml` is).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The release-independent binary under test, with the user's token cache kept out of reach:
/// a test that wants a cache sets `COMPACTION_SIM_CACHE` itself.
pub fn bin() -> Command {
    let mut c = Command::cargo_bin("compaction-sim").expect("the compaction-sim binary builds");
    c.env_remove("COMPACTION_SIM_CACHE")
        .env_remove("XDG_CACHE_HOME");
    c
}

/// `../shared/corpus`, the recorded sessions the tests read. A missing corpus fails the test
/// with a message saying so: a test must never pass because its input is not there.
pub fn corpus() -> PathBuf {
    let p = root().join("../shared/corpus");
    assert!(
        p.join("stats.json").is_file(),
        "the recorded corpus is missing: expected it at {} (tests that read real sessions \
         need ../shared/corpus beside the project)",
        p.display()
    );
    p
}

/// A folder of the corpus, which must exist (see [`corpus`]).
pub fn corpus_dir(sub: &str) -> PathBuf {
    let p = corpus().join(sub);
    assert!(
        p.is_dir(),
        "corpus folder {} is missing (the corpus at {} is incomplete)",
        sub,
        corpus().display()
    );
    p
}

/// Read a file the test needs, naming it when it is not there.
pub fn read_text(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The JSON a command printed, once it succeeded (its stderr shown when it did not).
pub fn json_stdout(out: &std::process::Output, what: &str) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{what}: stdout is not JSON ({e})"))
}

/// A fresh copy of the hand-written report fixture run folder (tests/fixtures/report/run), in
/// a temporary folder kept alive by the returned guard.
pub fn report_fixture_copy() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("run");
    std::fs::create_dir(&dir).expect("mkdir");
    let src = root().join("tests/fixtures/report/run");
    for f in [
        "settings.json",
        "runs.csv",
        "run.json",
        "timelines.json",
        ".compaction-sim-run",
    ] {
        std::fs::copy(src.join(f), dir.join(f)).expect("copy fixture");
    }
    (tmp, dir)
}
