//! Cost, pricing, latency and calibration: the `calibrate` command end to end, and the
//! metrics of metrics.md on small hand-made sessions (each expected number worked out in the
//! comments).

use assert_cmd::Command;
use predicates::prelude::*;

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/cost/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn corpus(sub: &str) -> Option<std::path::PathBuf> {
    let primary =
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus")).join(sub);
    let fallback = std::path::Path::new("/work/shared/corpus").join(sub);
    [primary, fallback].into_iter().find(|p| p.exists())
}

mod calibrate {
    use super::*;

    #[test]
    fn fits_summary_length_to_claude_code_compactions() {
        // The corpus has 5 Claude Code compact summaries of 12.2k-16.2k chars (about 3.0k-4.0k
        // tokens) written at 142k-170k preTokens, so the median ratio lies near 0.02 (between
        // 3.0k/170k = 0.018 and 4.0k/142k = 0.028) and the cap is about 4k tokens.
        let Some(dir) = corpus("claude_code_spotter") else {
            return;
        };
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("lat.toml");
        Command::cargo_bin("compaction-sim")
            .unwrap()
            .arg("calibrate")
            .arg(&dir)
            .arg("--out")
            .arg(&out)
            .assert()
            .success()
            .stdout(predicate::str::contains(
                "summary length: 5 recorded summaries",
            ));
        let file: compaction_sim::cost::latency::LatencyFile =
            toml::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        let l = file.summary_length.expect("length model written");
        assert!(l.ratio > 0.015 && l.ratio < 0.03, "{l:?}");
        assert!(l.cap_tokens > 3000 && l.cap_tokens < 5000, "{l:?}");
        // Every fitted model has positive rates and an R2 no larger than 1.
        for (name, e) in &file.models {
            assert!(
                e.prefill_tokens_per_s > 0.0 && e.decode_tokens_per_s > 0.0 && e.ttft_s >= 0.0,
                "{name}"
            );
            assert!(e.r2.unwrap() <= 1.0, "{name}");
        }
    }

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
