//! The Python wheel, tested as a user would use it (issue 46; docs/python.md): maturin packs
//! the binary this test run already built (`--profile dev` into the same target folder: no
//! second build), the wheel is installed into a fresh venv, and everything then runs from the
//! venv with no Rust toolchain on `PATH`.
//!
//! These tests need maturin (`COMPACTION_SIM_TEST_MATURIN`) and a folder of wheels for the
//! venv, polars among them (`COMPACTION_SIM_TEST_WHEELHOUSE`); `scripts/test-env.sh` installs
//! both from PyPI under ~/.cache. Without them they fail, saying so: they never pass by not
//! running.

use crate::common::{bin, root};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const HOW: &str = "run `. scripts/test-env.sh` first (it installs maturin and polars' wheels \
    from PyPI under ~/.cache and exports COMPACTION_SIM_TEST_MATURIN and \
    COMPACTION_SIM_TEST_WHEELHOUSE)";

/// A variable the wheel tests need, or the test fails saying how to set it.
fn needed(var: &str) -> PathBuf {
    let v = std::env::var_os(var)
        .unwrap_or_else(|| panic!("{var} is not set: the wheel tests need it: {HOW}"));
    let p = PathBuf::from(v);
    assert!(p.exists(), "{var}={} does not exist: {HOW}", p.display());
    p
}

/// The venv the wheel was installed into, shared by this module's tests.
struct Installed {
    /// Keeps the temporary folder (wheel, venv, outputs) alive for the test process.
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    venv: PathBuf,
    wheel: PathBuf,
}

static INSTALLED: OnceLock<Result<Installed, String>> = OnceLock::new();

/// Build the wheel once and install it into a fresh venv (a failure is each test's failure).
fn installed() -> &'static Installed {
    match INSTALLED.get_or_init(install) {
        Ok(i) => i,
        Err(e) => panic!("{e}"),
    }
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The target folder this test binary and the binary under test were built in.
fn target_dir() -> PathBuf {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_compaction-sim"));
    // <target>/debug/compaction-sim
    exe.parent()
        .and_then(Path::parent)
        .expect("the binary is in <target>/<profile>/")
        .to_path_buf()
}

fn install() -> Result<Installed, String> {
    let maturin = needed("COMPACTION_SIM_TEST_MATURIN");
    let wheelhouse = needed("COMPACTION_SIM_TEST_WHEELHOUSE");
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let dir = tmp.path().to_path_buf();
    let wheels = dir.join("wheels");
    // The test build's own profile and target folder, nothing stripped: cargo finds the
    // binary fresh and compiles nothing (asserted below).
    let mut maturin_cmd = Command::new(&maturin);
    // What cargo sets for this test process (CARGO_PKG_NAME, CARGO_MANIFEST_DIR, ...) must
    // not reach maturin's cargo: build scripts that read them (ring's) would be rerun, and
    // everything above them rebuilt over the binary the other tests are running.
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        let set_for_tests = [
            "CARGO_PKG_",
            "CARGO_MANIFEST_",
            "CARGO_BIN_",
            "CARGO_CRATE_",
        ]
        .iter()
        .any(|p| k.starts_with(p))
            || [
                "CARGO_PRIMARY_PACKAGE",
                "CARGO_TARGET_TMPDIR",
                "CARGO_RUSTC_CURRENT_DIR",
                "OUT_DIR",
            ]
            .contains(&k.as_ref());
        if set_for_tests {
            maturin_cmd.env_remove(&key);
        }
    }
    let out = maturin_cmd
        .args(["build", "--profile", "dev", "--strip", "false", "--locked"])
        // Stored, not deflated: a debug binary is 150 MB, and this wheel is never shipped.
        .args(["--compression-method", "stored", "--out"])
        .arg(&wheels)
        .arg("--manifest-path")
        .arg(root().join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target_dir())
        .current_dir(root())
        .output()
        .map_err(|e| format!("{} does not run ({e}): {HOW}", maturin.display()))?;
    if !out.status.success() {
        return Err(format!("maturin build failed: {}", text(&out)));
    }
    let log = String::from_utf8_lossy(&out.stderr);
    let compiled: Vec<&str> = log
        .lines()
        .filter(|l| l.trim_start().starts_with("Compiling "))
        .collect();
    if !compiled.is_empty() {
        return Err(format!(
            "maturin rebuilt what the test build had built (a second build, with other flags \
             or features): {}",
            compiled.join("; ")
        ));
    }
    let wheel = std::fs::read_dir(&wheels)
        .map_err(|e| e.to_string())?
        .map(|e| e.expect("wheels/ entry").path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or("maturin wrote no .whl")?;
    let venv = dir.join("venv");
    // No pip inside (ensurepip costs seconds): maturin's own pip installs into it.
    let made = Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .output()
        .map_err(|e| format!("python3 does not run: {e}"))?;
    if !made.status.success() {
        return Err(format!("python3 -m venv failed: {}", text(&made)));
    }
    // Offline and from the cache only: the wheel, and polars for the frames.
    let pip = Command::new(maturin.with_file_name("pip"))
        .arg("--python")
        .arg(venv.join("bin/python"))
        .args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-index",
        ])
        .arg("--find-links")
        .arg(&wheelhouse)
        .arg(&wheel)
        .arg("polars")
        .output()
        .map_err(|e| e.to_string())?;
    if !pip.status.success() {
        return Err(format!("pip install of the wheel failed: {}", text(&pip)));
    }
    Ok(Installed {
        _tmp: tmp,
        dir,
        venv,
        wheel,
    })
}

/// A command of the venv as a user without Rust runs it: `PATH` is the venv and the system
/// folders only, no cargo variables, the token cache inside the test's folder.
fn user(venv: &Path, dir: &Path, program: &str) -> Command {
    let mut c = Command::new(venv.join("bin").join(program));
    c.env_clear()
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", venv.join("bin").display()),
        )
        .env("HOME", dir)
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env("LANG", "C.UTF-8")
        .current_dir(dir);
    c
}

/// Run a Python snippet in the venv and return its stdout (the test fails with its output
/// when it fails).
fn python(i: &Installed, code: &str) -> String {
    let out = user(&i.venv, &i.dir, "python")
        .args(["-c", code])
        .output()
        .expect("the venv's python runs");
    assert!(out.status.success(), "python failed: {}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn wheel_binary_runs_without_rust_on_path() {
    let i = installed();
    let name = i.wheel.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("compaction_sim-0.1.0-"), "{name}");
    let rust = python(
        i,
        "import shutil; print([t for t in ('cargo', 'rustc', 'rustup') if shutil.which(t)] or 'none')",
    );
    assert_eq!(
        rust.trim(),
        "none",
        "Rust is reachable from the user's PATH"
    );
    let installed_bin = i.venv.join("bin/compaction-sim");
    assert!(
        installed_bin.is_file() && !installed_bin.is_symlink(),
        "the wheel installed no binary at {}",
        installed_bin.display()
    );
    let v = user(&i.venv, &i.dir, "compaction-sim")
        .arg("--version")
        .output()
        .unwrap();
    assert!(v.status.success(), "{}", text(&v));
    assert_eq!(
        String::from_utf8_lossy(&v.stdout).trim(),
        "compaction-sim 0.1.0"
    );
}

#[test]
fn python_m_compaction_sim_runs_the_installed_binary() {
    let i = installed();
    let out = user(&i.venv, &i.dir, "python")
        .args(["-m", "compaction_sim", "--version"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "compaction-sim 0.1.0"
    );
    let found = python(i, "import compaction_sim as c; print(c.find_binary())");
    assert_eq!(
        PathBuf::from(found.trim()),
        i.venv.join("bin/compaction-sim"),
        "the package must find the binary installed with it"
    );
}

#[test]
fn sweep_samples_from_the_wheel_writes_a_labelled_run_folder() {
    let i = installed();
    let out = user(&i.venv, &i.dir, "compaction-sim")
        .args(["sweep", "--samples", "--out", "x"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("wrote x (40 sessions × "),
        "{}",
        text(&out)
    );
    assert!(stdout.contains("compaction=Compaction("), "{stdout}");
    let x = i.dir.join("x");
    for f in ["report.html", "runs.parquet", "settings.csv", "run.json"] {
        assert!(x.join(f).is_file(), "sweep --samples wrote no {f}");
    }
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(x.join("run.json")).unwrap()).unwrap();
    assert!(
        run["sample_data"]
            .as_str()
            .is_some_and(|s| s.starts_with("sample data:")),
        "run.json does not say the inputs are sample data: {}",
        run["sample_data"]
    );
    let report = std::fs::read_to_string(x.join("report.md")).unwrap();
    assert!(
        report.contains("sample data: the 40 synthetic ADK sessions"),
        "report.md does not label the sample data"
    );
}

/// Read a Parquet file with the Rust polars the tool writes it with.
fn parquet(p: &Path) -> polars::prelude::DataFrame {
    use polars::prelude::*;
    let f = std::fs::File::open(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    ParquetReader::new(f)
        .finish()
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn api_sweep_frames_equal_the_run_folders_files() {
    let i = installed();
    let input = root().join("transcripts/06-coding-37.session.json");
    let code = format!(
        r#"
import json, compaction_sim as cs
run = cs.sweep({input:?}, out="api", after_tokens=[40000, 80000], keep_recent_events=10,
               summarizer="terse", alternatives="none", no_cache=True)
run.runs.write_parquet("api-runs.parquet")
rec = run.recommendation
print(json.dumps({{"folder": str(run.folder), "settings": run.settings.height,
                  "columns": run.settings.columns, "line": rec.line,
                  "cost": rec.figures.get("cost_usd_sum"), "text": rec.text,
                  "html": run.report_html.is_file()}}))
"#,
        input = input.display().to_string()
    );
    let got: serde_json::Value = serde_json::from_str(python(i, &code).trim()).unwrap();
    let folder = PathBuf::from(got["folder"].as_str().unwrap());
    assert_eq!(folder, i.dir.join("api"));
    assert_eq!(
        got["html"], true,
        "report_html is not the run's report.html"
    );
    let ours = parquet(&folder.join("runs.parquet"));
    let theirs = parquet(&i.dir.join("api-runs.parquet"));
    assert!(ours.height() > 0);
    assert!(
        ours.equals_missing(&theirs),
        "Run.runs differs from runs.parquet:\n{ours}\n{theirs}"
    );
    let settings: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(folder.join("settings.json")).unwrap()).unwrap();
    assert_eq!(got["settings"].as_u64(), Some(settings.len() as u64));
    let header = std::fs::read_to_string(folder.join("settings.csv")).unwrap();
    let columns: Vec<&str> = header.lines().next().unwrap().split(',').collect();
    assert_eq!(got["columns"], serde_json::json!(columns));
    let chosen = settings
        .iter()
        .find(|s| s["recommended"] == true)
        .expect("a setting is recommended");
    assert_eq!(got["line"], chosen["label"]);
    assert_eq!(got["cost"], chosen["cost_usd_sum"]);
    assert!(
        got["text"]
            .as_str()
            .is_some_and(|t| t.contains("  with it: $")),
        "the printed recommendation is missing: {}",
        got["text"]
    );
}

#[test]
fn api_errors_carry_the_exit_kind_and_the_tools_message() {
    let i = installed();
    let bad_setting = "Compaction(after_tokens=-5, keep_recent_events=10)";
    let code = format!(
        r#"
import json, compaction_sim as cs
out = {{}}
try:
    cs.check({bad_setting:?})
except cs.CompactionSimError as e:
    out["check"] = [e.kind, e.exit_code, e.message]
try:
    cs.sweep("no-such-folder/", out="never", after_tokens="lots")
except cs.CompactionSimError as e:
    out["sweep"] = [e.kind, e.exit_code, e.message]
print(json.dumps(out))
"#
    );
    let got: serde_json::Value = serde_json::from_str(python(i, &code).trim()).unwrap();
    // The same commands run directly: the API must carry the tool's own line.
    let check = bin().args(["check", bad_setting]).output().unwrap();
    assert_eq!(check.status.code(), Some(1));
    let refused = String::from_utf8_lossy(&check.stdout);
    let refused = refused
        .lines()
        .find(|l| l.starts_with("refused: "))
        .unwrap();
    assert_eq!(got["check"], serde_json::json!(["refused", 1, refused]));
    let sweep = bin()
        .current_dir(&i.dir)
        .args([
            "sweep",
            "no-such-folder/",
            "--out",
            "never",
            "--after-tokens",
            "lots",
        ])
        .output()
        .unwrap();
    assert_eq!(sweep.status.code(), Some(2), "{}", text(&sweep));
    let stderr = String::from_utf8_lossy(&sweep.stderr);
    let error = stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("error: "))
        .unwrap();
    assert_eq!(got["sweep"], serde_json::json!(["bad input", 2, error]));
}

#[test]
fn frames_without_polars_or_pandas_say_what_to_install() {
    let i = installed();
    let code = r#"
import sys
sys.modules["polars"] = None   # as if polars were not installed
sys.modules["pandas"] = None
from compaction_sim import Run, _frame_library
for kind in ("polars", "pandas"):
    try:
        _frame_library(kind)
    except ImportError as e:
        print(e)
"#;
    let out = python(i, code);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].contains("`pip install polars`"), "{out}");
    assert!(lines[1].contains("`pip install pandas pyarrow`"), "{out}");
}

/// Outside a checkout (an empty folder, as after `pip install`): the commands that read
/// `transcripts/` say it is absent and offer `--samples`, and `--samples` reads the same
/// sessions as the checkout's `transcripts/`. Needs no wheel.
#[test]
fn outside_a_checkout_transcripts_is_named_absent_and_samples_offered() {
    let empty = tempfile::tempdir().unwrap();
    let replay_args = [
        "--after-tokens",
        "40000",
        "--keep-recent-events",
        "10",
        "--json",
    ];
    let cases: [(&[&str], &str); 3] = [
        (&["sweep"], "`compaction-sim sweep --samples` reads the same 40 sample sessions"),
        (
            &["inspect", "transcripts/"],
            "`compaction-sim inspect --samples` reads the same 40 sample sessions",
        ),
        (
            &["replay", "transcripts/06-coding-37.session.json"],
            "`compaction-sim replay --samples transcripts/06-coding-37.session.json` replays that sample session",
        ),
    ];
    for (args, hint) in cases {
        let out = bin().current_dir(empty.path()).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(hint), "{args:?}: {stderr}");
    }
    // The sample session replays exactly as the checkout's file does.
    let sample = bin()
        .current_dir(empty.path())
        .args([
            "replay",
            "--samples",
            "transcripts/06-coding-37.session.json",
        ])
        .args(replay_args)
        .output()
        .unwrap();
    let checkout = bin()
        .current_dir(root())
        .args(["replay", "transcripts/06-coding-37.session.json"])
        .args(replay_args)
        .output()
        .unwrap();
    assert!(sample.status.success(), "{}", text(&sample));
    assert!(checkout.status.success(), "{}", text(&checkout));
    let mut a: serde_json::Value = serde_json::from_slice(&sample.stdout).unwrap();
    let b: serde_json::Value = serde_json::from_slice(&checkout.stdout).unwrap();
    // Only where it was read from differs.
    let path = &mut a["transcript"]["path"];
    assert!(
        path.as_str()
            .is_some_and(|p| p.ends_with("/06-coding-37.session.json")),
        "{path}"
    );
    *path = b["transcript"]["path"].clone();
    assert_eq!(a, b, "the sample replays differently from transcripts/");
}
