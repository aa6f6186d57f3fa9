//! Cost, pricing, latency and calibration: the `calibrate` command end to end, and the
//! metrics of metrics.md on small hand-made sessions (each expected number worked out in the
//! comments).

use assert_cmd::Command;
use predicates::prelude::*;

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/cost/{name}", env!("CARGO_MANIFEST_DIR"))
}

mod calibrate {
    use super::*;

    #[test]
    fn fits_exact_latencies_and_writes_a_latency_file() {
        // The fixture's latencies are exactly 0.5 s + input/5,000 + output/50 over 6 calls, so
        // the fit must give ttft 0.5 s, prefill 5,000 tok/s, decode 50 tok/s, R2 1.
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("lat.toml");
        Command::cargo_bin("compaction-sim")
            .unwrap()
            .args(["calibrate", &fixture("openhands_latency.jsonl"), "--out"])
            .arg(&out)
            .assert()
            .success()
            .stdout(predicate::str::contains("test-model").and(predicate::str::contains("1.000")));
        let text = std::fs::read_to_string(&out).unwrap();
        let file: compaction_sim::cost::latency::LatencyFile = toml::from_str(&text).unwrap();
        let e = &file.models["test-model"];
        assert!((e.ttft_s - 0.5).abs() < 1e-3, "{text}");
        assert!((e.prefill_tokens_per_s - 5000.0).abs() < 1.0, "{text}");
        assert!((e.decode_tokens_per_s - 50.0).abs() < 0.01, "{text}");
        assert_eq!(e.samples, Some(6));
        // The written file is a valid `--latency FILE`.
        let mut t = compaction_sim::cost::latency::LatencyTable::builtin();
        t.apply_file("lat.toml", &text).unwrap();
        assert!((t.for_model("openai/test-model").ttft_s - 0.5).abs() < 1e-3);
    }

    #[test]
    fn missing_path_is_a_one_line_error() {
        Command::cargo_bin("compaction-sim")
            .unwrap()
            .args(["calibrate", "/no/such/transcripts"])
            .assert()
            .code(2)
            .stderr(
                predicate::str::contains("/no/such/transcripts")
                    .and(predicate::str::contains("no such file or folder")),
            );
    }

    #[test]
    fn nothing_timed_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("empty.json");
        std::fs::write(&f, "{}").unwrap();
        Command::cargo_bin("compaction-sim")
            .unwrap()
            .arg("calibrate")
            .arg(&f)
            .arg("--out")
            .arg(dir.path().join("x.toml"))
            .assert()
            .code(2)
            .stderr(predicate::str::contains("no timed model requests"));
        assert!(!dir.path().join("x.toml").exists());
    }
}
