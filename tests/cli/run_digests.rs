//! The default run's folder, byte for byte: `compaction-sim sweep` with the default grid and
//! alternatives over a small slice of `transcripts/` writes files whose SHA-256 digests are
//! those checked in at `tests/fixtures/run-digests/default.sha256` (first made with b339d94,
//! before the sweep became a library call, issue 44). No file of a run folder holds a
//! timestamp or an absolute path (docs/sweeps.md), and the folder is always named `run`, so
//! nothing is left out.
//!
//! A change that alters figures on purpose (issue 45's estimates, say) rewrites the digests
//! and shows the difference in review:
//!
//! ```text
//! COMPACTION_SIM_WRITE_DIGESTS=1 cargo test --test cli run_digests::
//! ```

use crate::common::{bin, root};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Three sessions of `transcripts/`: a coding session and a long support chat that the
/// default grid compacts (summaries written, references broken and detail lost measured),
/// and a short chat it never does: every file of the folder (report, charts, timelines)
/// written in about a CPU-second of a debug build.
const INPUTS: &[&str] = &[
    "transcripts/10-coding-11.session.json",
    "transcripts/27-support-31.session.json",
    "transcripts/15-support-2.session.json",
];

fn digests_file() -> PathBuf {
    root().join("tests/fixtures/run-digests/default.sha256")
}

/// Every file under `dir`, as `sha256sum` prints it (`HEX  ./PATH`), sorted by path.
fn digests(dir: &Path) -> String {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("the run folder is readable") {
            let p = e.expect("an entry").path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, &mut files);
    files.sort();
    let mut lines = String::new();
    for f in files {
        let bytes = std::fs::read(&f).expect("a readable file");
        let hex: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let rel = f.strip_prefix(dir).expect("under the run folder");
        lines.push_str(&format!("{hex}  ./{}\n", rel.display()));
    }
    lines
}

#[test]
fn the_default_run_writes_the_same_bytes_as_before() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = bin()
        .current_dir(root())
        .env("RAYON_NUM_THREADS", "2")
        .arg("sweep")
        .args(INPUTS)
        .args(["--no-cache", "--quiet", "--out"])
        .arg(&out)
        .output()
        .expect("the binary runs");
    assert!(
        o.status.success(),
        "sweep failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let got = digests(&out);
    if std::env::var_os("COMPACTION_SIM_WRITE_DIGESTS").is_some() {
        std::fs::create_dir_all(digests_file().parent().unwrap()).unwrap();
        std::fs::write(digests_file(), &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(digests_file()).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (write it with COMPACTION_SIM_WRITE_DIGESTS=1)",
            digests_file().display()
        )
    });
    let differ: Vec<&str> = want
        .lines()
        .filter(|l| !got.lines().any(|g| g == *l))
        .chain(got.lines().filter(|g| !want.lines().any(|l| l == *g)))
        .collect();
    assert!(
        differ.is_empty(),
        "the run folder differs from {} (files whose digest is not the one checked in, or \
         that are new or gone):\n{}",
        digests_file().display(),
        differ.join("\n")
    );
}
