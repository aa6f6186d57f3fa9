//! `compaction-sim sweep` and `merge`, driven through the binary.

use std::path::{Path, PathBuf};

use crate::common::bin;

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

    /// Issue 13: this grid aborted with "memory allocation failed" (exit 134) while its
    /// settings were built; it is counted first and refused in one line.
    #[test]
    fn a_trillion_setting_grid_is_refused_not_an_allocation_abort() {
        refused(
            &[
                "--trigger",
                "tokens",
                "--after-tokens",
                "1..1000000:1",
                "--keep-recent-events",
                "0..999999:1",
                "--show-grid",
            ],
            &[
                "grid: 2_000_000_000_002 settings is over the limit of 100_000",
                "--max-settings N",
                "after_tokens 1_000_000",
                "keep_recent_events 1_000_000",
            ],
        );
        // The exact command line (the default grid's turn triggers stay in).
        refused(
            &[
                "--after-tokens",
                "1..1000000:1",
                "--keep-recent-events",
                "0..999999:1",
                "--show-grid",
            ],
            &["grid: 2_000_000_000_026 settings", "after_invocations 4"],
        );
    }

    /// Issue 13: the default limit is 100,000 settings, refused with the count before the
    /// grid is built; `--max-settings N` raises it (and is itself a limit).
    #[test]
    fn max_settings_raises_the_grid_limit() {
        let grid = [
            "--trigger",
            "tokens",
            "--after-tokens",
            "1..50000:1",
            "--keep-recent-events",
            "0",
            "--summarizer",
            "agent,terse",
            "--show-grid",
        ];
        refused(
            &grid,
            &[
                "grid: 100_002 settings is over the limit of 100_000",
                "after_tokens 50_000",
                "--max-settings N",
            ],
        );
        let mut raised = grid.to_vec();
        raised.extend(["--max-settings", "100002"]);
        let dir = tempfile::tempdir().unwrap();
        let (code, out, err) = sweep(&raised, dir.path());
        assert_eq!(code, 0, "{err}");
        assert!(
            out.contains(
                "# 100002 settings (100000 compaction + 1 no-compaction baseline + 1 as recorded)"
            ),
            "{}",
            out.lines().last().unwrap_or("")
        );
        let mut short = grid.to_vec();
        short.extend(["--max-settings", "100001"]);
        refused(
            &short,
            &["grid: 100_002 settings is over the limit of 100_001"],
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

    /// Issue 39 item 4: the alternatives' axes and --combine count toward --max-settings
    /// before anything runs.
    #[test]
    fn the_alternatives_and_combine_count_toward_the_grid_limit() {
        refused(
            &["--max-llm-calls", "1..200000:1", "--show-grid"],
            &["over the limit of 100_000", "max_llm_calls 200_000"],
        );
        // 106 default settings (the baseline, 104 compaction settings, as recorded), 2,000
        // caps, and each cap with each of the 104 compaction settings.
        refused(
            &["--max-llm-calls", "1..2000:1", "--combine", "--show-grid"],
            &["210_106 settings is over the limit of 100_000", "combine"],
        );
        let dir = tempfile::tempdir().unwrap();
        let (code, out, err) = sweep(
            &["--max-llm-calls", "1..100:1", "--combine", "--show-grid"],
            dir.path(),
        );
        assert_eq!(code, 0, "{err}");
        assert!(
            out.contains("# 10606 settings"),
            "{}",
            out.lines().last().unwrap_or("")
        );
    }

    /// Issue 39 item 5: endless inputs are refused at a cap instead of read until memory
    /// runs out, and a huge value is quoted as a short excerpt.
    #[test]
    fn endless_inputs_and_huge_values_are_refused_in_one_short_line() {
        for flag in ["--grid", "--pricing", "--latency"] {
            refused(
                &[flag, "/dev/zero", "--show-grid"],
                &["/dev/zero", "larger than 16 MiB"],
            );
        }
        let out = bin()
            .args(["check", "--manifest", "/dev/zero"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("larger than 16 MiB"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        for value in [
            format!("\"{}\"", "a".repeat(10_000_000)),
            format!("[{}]", "1".repeat(10_000_000)),
        ] {
            let grid = dir.path().join("big.toml");
            let toml = format!("after_tokens = {value}\nkeep_recent_events = [1]\n");
            std::fs::write(&grid, toml).unwrap();
            let (code, _, err) = sweep(
                &["--grid", grid.to_str().unwrap(), "--show-grid"],
                dir.path(),
            );
            assert_eq!(code, 2, "{}", &err[..err.len().min(300)]);
            assert!(err.len() < 1000, "{} bytes: {}", err.len(), &err[..300]);
            assert!(err.contains("after_tokens"), "{err}");
        }
    }

    /// Issue 39 item 16: a float axis value is accepted, and a grid file's type errors
    /// name the key and what it expects (never serde's "did not match any variant").
    #[test]
    fn grid_file_type_errors_name_the_key_and_floats_are_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let grid = dir.path().join("g.toml");
        std::fs::write(
            &grid,
            "policy = [\"gemini-cli\"]\ngemini_threshold = [0.3]\nafter_tokens = [40000]\nkeep_recent_events = [5]\n",
        )
        .unwrap();
        let (code, out, err) = sweep(
            &["--grid", grid.to_str().unwrap(), "--show-grid"],
            dir.path(),
        );
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("0.3"), "{out}");
        let cases = [
            ("after_tokens = true", "after_tokens", "a number, a text"),
            (
                "after_tokens = [\n 1,\n true]",
                "after_tokens",
                "a number, a text",
            ),
            ("budget = 3", "budget", "a table"),
        ];
        for (body, key, expects) in cases {
            std::fs::write(&grid, format!("{body}\n")).unwrap();
            let (code, _, err) = sweep(
                &["--grid", grid.to_str().unwrap(), "--show-grid"],
                dir.path(),
            );
            assert_eq!(code, 2, "{body}: {err}");
            assert!(err.contains(&format!("key `{key}`")), "{body}: {err}");
            assert!(err.contains(expects), "{body}: {err}");
            assert!(!err.contains("variant"), "{body}: {err}");
        }
    }

    /// Issue 39 item 17: two spellings of one split rule are one alternative, said once.
    #[test]
    fn one_split_rule_written_twice_is_replayed_once() {
        let dir = tempfile::tempdir().unwrap();
        let (code, out, err) = sweep(
            &["--split", "idle=30m,idle=1800s,lossless", "--show-grid"],
            dir.path(),
        );
        assert_eq!(code, 0, "{err}");
        assert!(
            out.contains("split = [\"idle=30m\", \"lossless\"]"),
            "{out}"
        );
        assert_eq!(err.matches("same rule").count(), 1, "{err}");
        assert!(err.contains("idle=1800s"), "{err}");
    }

    /// Issue 39 item 17: a value written twice on any axis (numbers in two spellings,
    /// names, policies) is replayed once, and each axis says so once on stderr.
    #[test]
    fn a_value_written_twice_on_any_axis_is_replayed_once_and_said_once() {
        let dir = tempfile::tempdir().unwrap();
        let (code, once, _) = sweep(
            &[
                "--after-tokens",
                "1000",
                "--summarizer",
                "terse",
                "--show-grid",
            ],
            dir.path(),
        );
        assert_eq!(code, 0);
        let (code, out, err) = sweep(
            &[
                "--after-tokens",
                "1000,1k,1000",
                "--summarizer",
                "terse,terse",
                "--show-grid",
            ],
            dir.path(),
        );
        assert_eq!(code, 0, "{err}");
        assert_eq!(out, once, "the repeats change nothing in the grid");
        for axis in ["after_tokens", "summarizer"] {
            let line = format!("grid axis {axis}:");
            assert_eq!(err.matches(&line).count(), 1, "{axis}: {err}");
        }
        assert!(err.contains("`1000` given more than once"), "{err}");
        assert!(err.contains("`terse` given more than once"), "{err}");
        let (_, _, plain) = sweep(&["--after-tokens", "1000,2000", "--show-grid"], dir.path());
        assert!(!plain.contains("more than once"), "{plain}");
    }

    /// Issue 39 item 8: a value the run folder's reader would refuse (over 1e15) is refused
    /// while planning, not after every replay.
    #[test]
    fn a_value_the_run_folder_cannot_hold_is_refused_before_any_replay() {
        refused(
            &["--after-tokens", "2000000000000000", "--show-grid"],
            &["after_tokens", "2000000000000000", "out of range", "1e15"],
        );
        refused(
            &[
                "--after-tokens",
                "40k..2000000000000000:1000000000000000",
                "--show-grid",
            ],
            &["after_tokens", "out of range"],
        );
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
            out.contains(
                "# 106 settings (104 compaction + 1 no-compaction baseline + 1 as recorded)"
            ),
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
            out.contains("# 4 settings (2 compaction + 1 no-compaction baseline + 1 as recorded)"),
            "{out}"
        );
    }
}

/// The fixed inputs: six committed sample transcripts of different lengths, plus the ADK
/// fixtures of the shared corpus when present (multi-session eval sets).
fn inputs() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut v: Vec<String> = [
        "01-support-3",
        "05-support-12",
        "08-coding-10",
        "11-support-23",
        "15-support-2",
        "32-coding-10",
    ]
    .iter()
    .map(|n| {
        root.join("transcripts")
            .join(format!("{n}.session.json"))
            .display()
            .to_string()
    })
    .collect();
    let adk =
        crate::common::corpus_dir("adk/adk-python/tests/integration/fixture/home_automation_agent");
    v.push(adk.display().to_string());
    v
}

/// `sweep` over the fixed inputs and grid into `out`, with `threads` rayon threads.
fn run_fixed(cwd: &Path, out: &Path, threads: &str, extra: &[&str]) -> (i32, String, String) {
    let grid = fixtures().join("grid.toml");
    let mut cmd = bin();
    cmd.current_dir(cwd)
        .env("RAYON_NUM_THREADS", threads)
        .arg("sweep")
        .args(inputs())
        .args([
            "--grid",
            grid.to_str().unwrap(),
            "--no-cache",
            "--out",
            out.to_str().unwrap(),
        ])
        .args(extra);
    let o = cmd.output().expect("runs");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).to_string(),
        String::from_utf8_lossy(&o.stderr).to_string(),
    )
}

const DATA_FILES: &[&str] = &[
    "runs.parquet",
    "runs.csv",
    "settings.parquet",
    "settings.csv",
    "settings.json",
    "grid.toml",
    "pricing.toml",
    "latency.toml",
    "timelines.json",
];

fn same_files(a: &Path, b: &Path) {
    for f in DATA_FILES {
        let x = std::fs::read(a.join(f)).unwrap_or_else(|e| panic!("{}: {e}", a.join(f).display()));
        let y = std::fs::read(b.join(f)).unwrap_or_else(|e| panic!("{}: {e}", b.join(f).display()));
        assert!(
            x == y,
            "{f} differs between {} and {}",
            a.display(),
            b.display()
        );
    }
    // run.json too, but for its `run` field (the folder's own name).
    let strip = |p: &Path| {
        let mut v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(p.join("run.json")).unwrap()).unwrap();
        v.as_object_mut().unwrap().remove("run");
        v
    };
    assert_eq!(strip(a), strip(b));
}

mod run_folder {
    use super::*;

    /// Issue 39 item 7: a LangChain summary over a history holding events the request never
    /// sent hid more than the request held (`detail_lost_max` 1.0018), and the run was
    /// refused after every replay. Each request hides at most its own history.
    #[test]
    fn langchains_detail_lost_stays_a_share() {
        let dir = tempfile::tempdir().unwrap();
        let t = crate::common::root().join("transcripts");
        let (code, _, err) = sweep(
            &[
                t.to_str().unwrap(),
                "--policy",
                "langchain",
                "--lc-trigger",
                "messages:3",
                "--lc-keep",
                "1",
                "--alternatives",
                "none",
                "--trigger",
                "tokens",
                "--after-tokens",
                "40k",
                "--keep-recent-events",
                "5",
                "--summarizer",
                "terse",
                "--no-cache",
                "--quiet",
                "--out",
                "run",
            ],
            dir.path(),
        );
        assert_eq!(code, 0, "{err}");
        let rows: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("run/settings.json")).unwrap(),
        )
        .unwrap();
        for row in rows.as_array().unwrap() {
            let lost = row["detail_lost_max"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&lost), "{}: {lost}", row["label"]);
        }
    }

    #[test]
    fn byte_identical_across_threads_and_runs() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            dir.path().join("t1"),
            dir.path().join("t2"),
            dir.path().join("t2again"),
        );
        for (out, threads) in [(&a, "1"), (&b, "2"), (&c, "2")] {
            let (code, _o, err) = run_fixed(dir.path(), out, threads, &["--quiet"]);
            assert_eq!(code, 0, "{err}");
        }
        same_files(&a, &b);
        same_files(&b, &c);
    }

    /// Issue 13: the report reads runs.parquet a row group at a time when it is there
    /// (runs.csv is left out of large runs) and runs.csv otherwise; both give the same report.
    #[test]
    fn the_report_reads_runs_parquet_and_runs_csv_alike() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        let (code, _o, err) = run_fixed(dir.path(), &out, "2", &["--quiet", "--runs-csv"]);
        assert_eq!(code, 0, "{err}");
        let files = ["report.md", "report.html", "latency_distribution.svg"];
        let written: Vec<Vec<u8>> = files
            .iter()
            .map(|f| std::fs::read(out.join(f)).unwrap())
            .collect();
        let check = |what: &str| {
            for (f, w) in files.iter().zip(&written) {
                assert!(
                    std::fs::read(out.join(f)).unwrap() == *w,
                    "{f} differs when reading {what}"
                );
            }
        };
        // From runs.parquet alone.
        let csv = std::fs::read(out.join("runs.csv")).unwrap();
        std::fs::remove_file(out.join("runs.csv")).unwrap();
        bin().arg("report").arg(&out).assert().success();
        check("runs.parquet");
        // From runs.csv alone.
        std::fs::write(out.join("runs.csv"), csv).unwrap();
        std::fs::remove_file(out.join("runs.parquet")).unwrap();
        bin().arg("report").arg(&out).assert().success();
        check("runs.csv");
    }

    #[test]
    fn merging_three_shards_equals_the_single_run() {
        let dir = tempfile::tempdir().unwrap();
        let single = dir.path().join("single");
        let (code, _o, err) = run_fixed(dir.path(), &single, "2", &["--quiet"]);
        assert_eq!(code, 0, "{err}");
        let mut parts = Vec::new();
        for k in 1..=3 {
            let p = dir.path().join(format!("part{k}"));
            let (code, _o, err) = run_fixed(
                dir.path(),
                &p,
                "1",
                &["--quiet", "--shard", &format!("{k}/3")],
            );
            assert_eq!(code, 0, "{err}");
            assert!(
                p.join("shard.json").exists() && !p.join("settings.csv").exists(),
                "a partial folder"
            );
            parts.push(p);
        }
        let merged = dir.path().join("merged");
        let o = bin()
            .current_dir(dir.path())
            .arg("merge")
            .args(&parts)
            .args(["--no-cache", "--quiet", "--out", merged.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        same_files(&single, &merged);
        // A missing shard is refused.
        let o = bin()
            .current_dir(dir.path())
            .arg("merge")
            .args(&parts[..2])
            .args(["--out", "x"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&o.stderr).contains("shard 3/3 is missing"));
    }

    #[test]
    fn contents_match_the_contract() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        let (code, stdout, err) = run_fixed(dir.path(), &out, "2", &[]);
        assert_eq!(code, 0, "{err}");
        let run: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
        let settings: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("settings.json")).unwrap()).unwrap();
        let settings = settings.as_array().unwrap();
        // 4 tokens + 2 invocations + 8 both, × 2 summarizers × 2 clients, + 1 baseline + 1 as
        // recorded; then the guide's alternatives the data calls for (docs/alternatives.md).
        let plain = settings
            .iter()
            .take_while(|s| s["alternative"] == "")
            .count();
        assert_eq!(plain, 58);
        assert!(settings[plain..].iter().all(|s| s["alternative"] != ""));
        assert_eq!(run["settings"], settings.len());
        assert_eq!(run["adk_semantics"], "google-adk 2.13.0");
        // Prices: their date and source (the LiteLLM pin) are stated where numbers are shown.
        assert_eq!(run["pricing_date"], "2026-11-20");
        assert!(
            run["pricing_source"]
                .as_str()
                .unwrap()
                .starts_with("LiteLLM 1.110.2 (PyPI litellm==1.110.2"),
            "{run}"
        );
        // No `--pricing`: the built-in table overrides nothing.
        assert!(
            !run["pricing_source"]
                .as_str()
                .unwrap()
                .contains("overrides"),
            "{run}"
        );
        let report = std::fs::read_to_string(out.join("report.md")).unwrap();
        assert!(
            report.contains("| pricing date | 2026-11-20: list prices as of that date (pricing.toml in this folder; source: LiteLLM 1.110.2"),
            "{report}"
        );
        // Models timed with the `default` latency figures are named, and only those.
        let lat = compaction_sim::cost::latency::LatencyTable::builtin();
        for m in run["latency_default_models"].as_array().unwrap() {
            assert_eq!(lat.family_of(m.as_str().unwrap()), None, "{m}");
        }
        let sessions = run["sessions"].as_u64().unwrap();
        assert!(sessions >= 6, "{run}");
        let counted: u64 = run["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["sessions"].as_u64().unwrap())
            .sum();
        assert!(counted >= sessions);
        // runs.csv: header + one line per (session, setting).
        let csv = std::fs::read_to_string(out.join("runs.csv")).unwrap();
        assert_eq!(
            csv.lines().count() as u64,
            1 + sessions * settings.len() as u64
        );
        let header = csv.lines().next().unwrap();
        for col in [
            "session_id",
            "source",
            "setting_id",
            "trigger_kind",
            "after_tokens",
            "detail_lost",
            "cost_usd",
            "facts_dropped",
            "thrash",
            "stuck_event",
            "stuck_call",
            "stuck_history_tokens",
        ] {
            assert!(header.split(',').any(|c| c == col), "runs.csv lacks {col}");
        }
        // ADK's pitfalls (docs/pitfalls.md), per setting: counts, 0 in this grid.
        for s in settings {
            for col in ["thrash", "thrash_sessions", "stuck_sessions"] {
                assert!(s[col].is_u64(), "settings.json lacks {col}: {s}");
            }
        }
        // The baseline is a setting with trigger_kind none and no summarizer.
        let base: Vec<_> = settings
            .iter()
            .filter(|s| s["trigger_kind"] == "none" && s["alternative"] == "")
            .collect();
        assert_eq!(base.len(), 1);
        assert!(base[0]["summarizer"].is_null());
        assert_eq!(base[0]["detail_lost_mean"], 0.0);
        // Exactly one recommended setting, ranked first, printed as the paste-ready line.
        let rec: Vec<_> = settings
            .iter()
            .filter(|s| s["recommended"] == true)
            .collect();
        assert_eq!(rec.len(), 1);
        assert_eq!(rec[0]["rank"], 1);
        let label = rec[0]["label"].as_str().unwrap();
        assert!(label.starts_with("compaction=Compaction("), "{label}");
        assert_eq!(
            stdout.lines().find(|l| l.starts_with("compaction=")),
            Some(label),
            "{stdout}"
        );
        assert_eq!(run["recommendation"]["label"], label);
        // Its cost is the lowest of all compaction settings.
        let cost = |s: &serde_json::Value| s["cost_usd_sum"].as_f64().unwrap();
        assert!(settings
            .iter()
            .filter(|s| s["trigger_kind"] != "none")
            .all(|s| cost(s) >= cost(rec[0])));
        // Pareto: exactly the settings no other one beats on cost and broken references, the
        // guide's alternatives among them, except a cap that stopped runs (never on it).
        let lost = |s: &serde_json::Value| s["references_broken_share_mean"].as_f64().unwrap();
        let failed = |s: &serde_json::Value| s["invocations_failed_sum"].as_f64().unwrap_or(0.0);
        let weighed: Vec<_> = settings
            .iter()
            .filter(|s| s["alternative"] == "" || failed(s) == 0.0)
            .collect();
        assert!(settings
            .iter()
            .all(|s| failed(s) == 0.0 || s["pareto"] == false));
        for p in &weighed {
            let beaten = weighed.iter().any(|q| {
                cost(q) <= cost(p) && lost(q) <= lost(p) && (cost(q) < cost(p) || lost(q) < lost(p))
            });
            assert_eq!(p["pareto"] == true, !beaten, "{p}");
        }
        // Timelines: at most 5 sessions, baseline and recommended series of equal length.
        let tl: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("timelines.json")).unwrap()).unwrap();
        let ts = tl["sessions"].as_array().unwrap();
        assert!(!ts.is_empty() && ts.len() <= 5);
        for t in ts {
            assert_eq!(
                t["baseline"].as_array().unwrap().len(),
                t["recommended"].as_array().unwrap().len()
            );
        }
        // The copies of what was used.
        let grid = std::fs::read_to_string(out.join("grid.toml")).unwrap();
        assert!(grid.contains("after_tokens = [6000, 12000]"), "{grid}");
        assert!(std::fs::read_to_string(out.join("pricing.toml"))
            .unwrap()
            .contains("pricing_date"));
        // No build folder left behind.
        assert!(std::fs::read_dir(dir.path()).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with('.')));
    }

    #[test]
    fn default_name_and_latest_link() {
        let dir = tempfile::tempdir().unwrap();
        let grid = fixtures().join("grid.toml");
        let o = bin()
            .current_dir(dir.path())
            .arg("sweep")
            .args(&inputs()[..2])
            .args(["--grid", grid.to_str().unwrap(), "--no-cache", "--quiet"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let runs: Vec<String> = std::fs::read_dir(dir.path().join("reports"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .filter(|n| n != "latest")
            .collect();
        assert_eq!(runs.len(), 1, "{runs:?}");
        let name = &runs[0];
        // YYYY-MM-DD-<8 hex>
        assert_eq!(name.len(), 19, "{name}");
        assert!(name[11..].chars().all(|c| c.is_ascii_hexdigit()), "{name}");
        let latest = dir.path().join("reports/latest");
        assert_eq!(
            std::fs::read_link(&latest).unwrap().to_string_lossy(),
            name.as_str()
        );
        assert!(latest.join("settings.csv").exists());
    }

    #[test]
    fn unmet_budget_says_so_and_names_the_closest() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        let (code, _o, err) = run_fixed(
            dir.path(),
            &out,
            "2",
            &["--budget-detail-lost", "0", "--budget-latency", "0"],
        );
        assert_eq!(code, 1, "{err}");
        let line = err.lines().last().unwrap();
        assert!(
            line.contains("--budget-detail-lost 0")
                && line.contains("no setting meets it")
                && line.contains("closest: compaction=Compaction("),
            "{err}"
        );
        // The data is still written; nothing is marked recommended.
        let run: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
        assert!(run["recommendation"].is_null());
        assert!(run["recommendation_note"]
            .as_str()
            .unwrap()
            .contains("no setting meets it"));
    }
}

/// Issue #14: a model with no latency family of its own is named in the run's assumptions.
#[test]
fn a_model_without_latency_family_is_named_in_run_json_and_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = bin()
        .current_dir(dir.path())
        .arg("sweep")
        .arg(crate::common::corpus_dir("claude_code_spotter").join("short.jsonl"))
        // Priced in the table, but no latency family matches it.
        .args([
            "--agent-model",
            "claude-fable-5",
            "--no-cache",
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(
        run["latency_default_models"],
        serde_json::json!(["claude-fable-5"])
    );
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report
            .contains("| latency | claude-fable-5: timed with the \\`default\\` planning figures"),
        "{report}"
    );
}

/// Failed `command:` calls are listed in run.json `summarizer_errors` and in the report, and
/// `--summarizer-timeout` bounds each call of a sweep (a hang is a failed call, not a stuck
/// run).
#[cfg(unix)]
#[test]
fn failed_summarizer_calls_are_listed_in_run_json_and_the_report() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let file = root.join("transcripts/05-support-12.session.json");
    let file = file.to_str().unwrap();
    let (code, _out, err) = sweep(
        &[
            file,
            "--summarizer",
            "command:sleep 5",
            "--trigger",
            "invocations",
            "--after-invocations",
            "3",
            "--overlap",
            "1",
            "--summarizer-timeout",
            "0.3",
            "--no-cache",
            "--quiet",
            "--out",
            "run",
        ],
        dir.path(),
    );
    assert_eq!(code, 0, "{err}");
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("run/run.json")).unwrap())
            .unwrap();
    let errors = run["summarizer_errors"].as_array().unwrap();
    assert!(!errors.is_empty(), "{run}");
    for e in errors {
        assert!(
            e["source"]
                .as_str()
                .unwrap()
                .ends_with("05-support-12.session.json"),
            "{e}"
        );
        assert!(e["setting_id"].is_u64(), "{e}");
        let m = e["message"].as_str().unwrap();
        assert!(
            m.starts_with("call ") && m.ends_with("` timed out after 0.3 s"),
            "{m}"
        );
    }
    assert!(err.contains("timed out after 0.3 s"), "{err}");
    let report = std::fs::read_to_string(dir.path().join("run/report.md")).unwrap();
    assert!(report.contains("## Failed summarizer calls"), "{report}");
}

/// `--sample N` replays N sessions drawn by a hash of (source, id): the same ones whatever
/// the order the inputs are given in, and run.json says how many were read.
#[test]
fn sample_draws_the_same_sessions_whatever_the_input_order() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let mut files: Vec<String> = std::fs::read_dir(root.join("transcripts"))
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .filter(|p| p.ends_with(".session.json"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 40);
    let drawn = |files: &[String], out: &str| {
        let mut args: Vec<&str> = files.iter().map(String::as_str).collect();
        args.extend([
            "--sample",
            "3",
            "--trigger",
            "tokens",
            "--after-tokens",
            "40000",
            "--keep-recent-events",
            "6",
            "--summarizer",
            "terse",
            "--no-cache",
            "--quiet",
            "--out",
            out,
        ]);
        let (code, _, err) = sweep(&args, dir.path());
        assert_eq!(code, 0, "{err}");
        let run: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(out).join("run.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(run["sampled_from"], serde_json::json!(40));
        assert_eq!(run["sessions"], serde_json::json!(3));
        let report = std::fs::read_to_string(dir.path().join(out).join("report.md")).unwrap();
        assert!(report.contains("a sample drawn with --sample from 40 sessions read"));
        run["session_facts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["source"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let a = drawn(&files, "a");
    files.reverse();
    let b = drawn(&files, "b");
    assert_eq!(a.len(), 3);
    assert_eq!(a, b);
}

/// The `as recorded` row (issue 37 item 2): each session replayed under the setting its
/// framework ran with, beside no compaction.
mod as_recorded {
    use super::*;
    use crate::common::{corpus_dir, root};
    use std::collections::HashMap;

    /// runs.csv as (source, setting_id) → column → value (sources hold no comma).
    fn runs(out: &Path) -> HashMap<(String, String), HashMap<String, String>> {
        let text = std::fs::read_to_string(out.join("runs.csv")).expect("runs.csv");
        let mut lines = text.lines();
        let head: Vec<&str> = lines.next().expect("header").split(',').collect();
        lines
            .map(|l| {
                let row: HashMap<String, String> = head
                    .iter()
                    .zip(l.split(','))
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
                ((row["source"].clone(), row["setting_id"].clone()), row)
            })
            .collect()
    }

    /// The setting id of the row whose `policy` column is `policy` (`""`: the baseline).
    fn setting_id(out: &Path, trigger: &str, policy: &str) -> String {
        let text = std::fs::read_to_string(out.join("settings.json")).expect("settings.json");
        let all: serde_json::Value = serde_json::from_str(&text).expect("json");
        let s = all
            .as_array()
            .expect("list")
            .iter()
            .find(|s| {
                s["trigger_kind"] == trigger
                    && s.get("policy").and_then(|p| p.as_str()).unwrap_or("") == policy
            })
            .unwrap_or_else(|| panic!("no {trigger}/{policy} row in {all:#}"));
        s["setting_id"].to_string()
    }

    /// What a replay gives, compared between two rows of one session.
    const FIGURES: &[&str] = &[
        "model_requests",
        "summarizer_calls",
        "prompt_tokens",
        "cost_usd",
        "detail_lost",
        "references_broken",
    ];

    fn same_replay(a: &HashMap<String, String>, b: &HashMap<String, String>, what: &str) {
        for k in FIGURES {
            assert_eq!(a[*k], b[*k], "{what}: {k} differs");
        }
    }

    /// The corpus's SWE-agent trajectories record `last_n_observations n: 5` and get as
    /// recorded = mask-observations window 5; a session that records no setting gets as
    /// recorded = no compaction, and the report says how many; the recommendation states its
    /// savings against both.
    #[test]
    fn swe_agent_runs_as_recorded_mask_window_5_and_a_silent_session_no_compaction() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        let adk = root().join("transcripts/01-support-3.session.json");
        let swe = corpus_dir("swe_agent");
        let (code, _o, err) = sweep(
            &[
                swe.to_str().unwrap(),
                adk.to_str().unwrap(),
                "--trigger",
                "tokens",
                "--after-tokens",
                "2k",
                "--keep-recent-events",
                "5",
                "--summarizer",
                "agent",
                "--alternatives",
                "none",
                "--policy",
                "mask-observations",
                "--mask-window",
                "5",
                "--quiet",
                "--out",
                out.to_str().unwrap(),
            ],
            dir.path(),
        );
        assert_eq!(code, 0, "{err}");
        let run: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
        let facts = run["session_facts"].as_array().expect("session_facts");
        let (base, mask, recorded) = (
            setting_id(&out, "none", ""),
            setting_id(&out, "policy", "mask-observations"),
            setting_id(&out, "policy", "as-recorded"),
        );
        let rows = runs(&out);
        let row = |src: &str, id: &str| &rows[&(src.to_string(), id.to_string())];
        let mut swe_recorded = 0;
        for f in facts {
            let src = f["source"].as_str().unwrap();
            if f["records_setting"] == true {
                assert_eq!(
                    f["as_recorded"],
                    "swe-agent last_n_observations n=5: mask-observations window=5",
                    "{f:#}"
                );
                same_replay(row(src, &recorded), row(src, &mask), src);
                swe_recorded += 1;
            } else {
                assert!(f["as_recorded"]
                    .as_str()
                    .unwrap()
                    .starts_with("no compaction ("));
                same_replay(row(src, &recorded), row(src, &base), src);
            }
        }
        assert!(
            swe_recorded >= 6,
            "{swe_recorded} SWE-agent runs record n=5"
        );
        let adk_fact = facts
            .iter()
            .find(|f| {
                f["source"]
                    .as_str()
                    .unwrap()
                    .ends_with("01-support-3.session.json")
            })
            .expect("the ADK session");
        assert_eq!(adk_fact["records_setting"], false);
        // masking changes something on the recorded runs, so the rows are not all one
        assert!(facts.iter().any(|f| {
            let src = f["source"].as_str().unwrap();
            f["records_setting"] == true
                && row(src, &recorded)["prompt_tokens"] != row(src, &base)["prompt_tokens"]
        }));
        let report = std::fs::read_to_string(out.join("report.md")).unwrap();
        assert!(report.contains(" against no compaction, "), "{report}");
        assert!(report.contains(" against as recorded; "), "{report}");
        assert!(report.contains("saved vs as recorded (USD)"), "{report}");
        let none = facts
            .iter()
            .filter(|f| f["records_setting"] == false)
            .count();
        assert!(
            report.contains(&format!(
                "{swe_recorded} of {} sessions record one; {none} ",
                facts.len()
            )),
            "{report}"
        );
        // the provider-scale fit per session, and the size basis named
        let header = std::fs::read_to_string(out.join("runs.csv")).unwrap();
        let header = header.lines().next().unwrap();
        for col in ["prompt_overhead", "prompt_scale", "prompt_fit_error_p50"] {
            assert!(header.split(',').any(|c| c == col), "runs.csv lacks {col}");
        }
        assert!(report.contains("| prompt sizes | recorded where the transcript records them; "));
        // a finding, never the line to paste
        let settings: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("settings.json")).unwrap())
                .unwrap();
        let row = settings
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["policy"] == "as-recorded")
            .unwrap();
        assert_eq!(row["recommended"], false, "{row:#}");
    }
}

/// runs' `prompt_overhead`, `prompt_scale`, `prompt_fit_error_p50` (issue 37 item 1): a
/// Claude Code session recording its prompt sizes gets its provider-scale fit on every row.
#[test]
fn a_session_recording_prompt_sizes_gets_its_fit_in_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let cc = crate::common::corpus_dir("claude_code_spotter/fa812bfe-b295-4cca-9c2f-fdf01028cb46");
    let (code, _o, err) = sweep(
        &[
            cc.to_str().unwrap(),
            "--alternatives",
            "none",
            "--trigger",
            "tokens",
            "--after-tokens",
            "100k",
            "--keep-recent-events",
            "5",
            "--summarizer",
            "agent",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|c| *c == name).unwrap();
    let (o, s, e) = (
        col("prompt_overhead"),
        col("prompt_scale"),
        col("prompt_fit_error_p50"),
    );
    let fitted: Vec<Vec<&str>> = lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|r| !r[s].is_empty())
        .collect();
    assert!(!fitted.is_empty(), "no row has a fit:\n{text}");
    for r in &fitted {
        let scale: f64 = r[s].parse().unwrap();
        let overhead: f64 = r[o].parse().unwrap();
        let error: f64 = r[e].parse().unwrap();
        // Anthropic counts ~1.1-1.2 o200k tokens, plus the system prompt and tools
        assert!((1.0..1.3).contains(&scale), "{r:?}");
        assert!(overhead > 5_000.0 && error < 5.0, "{r:?}");
    }
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("sessions record enough to fit recorded ≈ overhead + scale × counted"));
}
