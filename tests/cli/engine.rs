//! Engine conformance with the ADK 2.13 oracle, settings validation, and the `check`,
//! `replay` and `conform` commands.

use std::path::{Path, PathBuf};

use predicates::prelude::*;
use proptest::prelude::*;
use serde_json::Value;

use compaction_sim::engine::summarizer::{Deterministic, Policy};
use compaction_sim::engine::{self, Config, Replay, UsageMode};
use compaction_sim::settings;
use compaction_sim::tokens::sizes::SessionSizes;
use compaction_sim::transcript::{adk, Session};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oracle")
}

use crate::common::{bin, root};

fn load(name: &str) -> Session {
    let p = fixtures().join("goldens").join(name);
    let text = std::fs::read_to_string(&p).expect("fixture readable");
    adk::read(&p.display().to_string(), &text)
        .expect("fixture parses")
        .remove(0)
}

fn run(s: &Session, cfg: &Config, policy: &str) -> Replay {
    let policy = Policy::parse(policy).expect("policy");
    let texts = compaction_sim::summarize::echo_texts(s);
    let sizes = SessionSizes::new(s, None);
    engine::replay(&sizes, cfg, &Deterministic::new(policy, vec![], texts))
}

// ------------------------------------------------------------------ conformance

#[test]
fn conform_agrees_with_every_golden() {
    bin()
        .args(["conform", "--strict"])
        .arg(fixtures().join("goldens"))
        .assert()
        .success()
        .stdout(predicate::str::contains("30/30 agree"));
}

#[test]
fn conform_agrees_with_new_seed_cases() {
    let dir = fixtures().join("seeds");
    let n = std::fs::read_dir(&dir)
        .expect("seed fixtures")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("_c"))
        .count();
    assert!(
        n >= 10,
        "expected a set of generated oracle cases, found {n}"
    );
    bin()
        .args(["conform", "--strict"])
        .arg(&dir)
        .assert()
        .success()
        .stdout(predicate::str::contains(format!("{n}/{n} agree")));
}

/// The oracle's own examples (shared/oracle/examples/) and goldens, where they lie: the
/// examples name their transcript from the oracle's folder (`examples/travel_8inv...`), so
/// conform also looks one folder up.
#[test]
fn conform_agrees_with_the_shared_oracle_sets_in_place() {
    let shared = root().join("../shared/oracle");
    assert!(
        shared.join("adk_oracle.py").is_file(),
        "the shared oracle is missing: expected it at {}",
        shared.display()
    );
    for (set, n) in [("examples", 6), ("goldens", 30)] {
        bin()
            .args(["conform", "--strict"])
            .arg(shared.join(set))
            .assert()
            .success()
            .stdout(predicate::str::contains(format!("{n}/{n} agree")));
    }
}

/// Hand-made transcripts with what the generator does not make (thoughts, id-less calls,
/// confirmations, intermediate long-running updates, quote markers, camelCase JSONL).
#[test]
fn conform_agrees_with_hand_made_edge_cases() {
    bin()
        .args(["conform", "--strict"])
        .arg(fixtures().join("edge"))
        .assert()
        .success()
        .stdout(predicate::str::contains("9/9 agree"));
}

/// Fuzz-triage classes the engine now reproduces (tests/fixtures/oracle/fuzz/README.md):
/// D1 content without a role, D2 text and call in one part, D6 inline_data / file_data /
/// code-execution parts (also as another agent sees them), D5 live transcriptions, D7
/// thought signatures, D8 tool sub-branches, D9 user messages on a workflow node path, S1
/// an invocation id recurring after another invocation.
#[test]
fn conform_agrees_with_fuzz_class_repros() {
    let cases = [
        ("D1", "r01_roleless_content_i1_o0.json"),
        ("D1", "h11_no_role_t100.json"),
        ("D1", "h11_no_role_t1r0.json"),
        ("D6", "r06_inline_data_gate_i1_o0_f2000.json"),
        ("D6", "h27_inline_data_t1r0.json"),
        ("D6", "h27_inline_data_b.json"),
        ("D7", "r07_thought_signature_i5_o0.json"),
        ("D7", "r08_thought_signature_gate_i1_o0_f2000.json"),
        ("D2", "r02_text_and_call_in_one_part_i5_o0.json"),
        ("D2", "h22_existing_compaction_textcall_s21.json"),
        ("D2", "h22_existing_compaction_textcall_t1r0.json"),
        ("D9", "r11_user_node_path_i5_o0.json"),
        ("D8", "r09_tool_sub_branch_i5_o0.json"),
        ("D8", "r16_tool_branches_i1_o0.json"),
        ("D8", "r16_tool_branches_t40r2.json"),
        ("D8", "r16_tool_branches_both.json"),
        ("S1", "h01_noncontig_inv_s21.json"),
        ("S1", "h01_noncontig_inv_t1r0.json"),
        ("D6", "r15_code_execution_parts_i5_o0.json"),
        ("D6", "r15_code_execution_parts_i1_o0_f50.json"),
        ("D6", "r15_code_execution_parts_t5r1.json"),
        ("D6", "r17_other_agent_blobs_i1_o0_f100.json"),
        ("D6", "r17_other_agent_blobs_t50r2.json"),
        ("D6", "r17_other_agent_blobs_agentb.json"),
        ("D5", "r05_transcriptions_i5_o0.json"),
        ("D5", "h26_transcriptions_t100.json"),
        ("D5", "h26_transcriptions_t1r0.json"),
        ("D5", "r18_transcriptions_multi_i1_o0.json"),
        ("D5", "r18_transcriptions_multi_t20r3.json"),
        ("D5", "r18_transcriptions_multi_agentb.json"),
    ];
    let out = bin()
        .args(["conform", "--strict"])
        .arg(fixtures().join("fuzz"))
        .output()
        .expect("run conform");
    let stdout = String::from_utf8_lossy(&out.stdout);
    for (class, case) in cases {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with("ok ") && l.ends_with(case)),
            "{class} case {case} does not agree:\n{stdout}"
        );
    }
    let n = cases.len();
    assert!(stdout.contains(&format!("{n}/{n} agree")), "{stdout}");
    assert!(out.status.success());
}

/// A disagreement is reported with the case, the field path and both values, and exit 1.
#[test]
fn conform_reports_the_first_differing_field() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let src = fixtures().join("goldens");
    std::fs::copy(
        src.join("t02.session.json"),
        tmp.path().join("t02.session.json"),
    )
    .expect("copy");
    let mut case: Value = serde_json::from_str(
        &std::fs::read_to_string(src.join("t02_c1_sliding.json")).expect("read"),
    )
    .expect("json");
    let orig = case["compactions"][1]["summary_chars"]
        .as_u64()
        .expect("summary_chars");
    case["compactions"][1]["summary_chars"] = Value::from(orig + 1);
    std::fs::write(
        tmp.path().join("bad.json"),
        serde_json::to_string(&case).expect("ser"),
    )
    .expect("write");
    bin()
        .arg("conform")
        .arg(tmp.path().join("bad.json"))
        .assert()
        .code(1)
        .stdout(predicate::str::contains("FAIL"))
        .stdout(predicate::str::contains("compactions[1].summary_chars"))
        .stdout(predicate::str::contains(format!(
            "oracle {} engine {}",
            orig + 1,
            orig
        )))
        .stdout(predicate::str::contains("0/1 agree"));
}

// ------------------------------------------------------------------ properties

fn cfg(token: Option<(u64, u64)>, sliding: Option<(u64, u64)>, usage: UsageMode) -> Config {
    Config {
        token,
        sliding,
        usage,
        pre_request: true,
    }
}

/// A setting that never fires equals the baseline, request by request.
#[test]
fn never_firing_setting_is_the_baseline() {
    for name in ["t00.session.json", "t06.session.json", "t07.session.json"] {
        let s = load(name);
        let r = run(
            &s,
            &cfg(
                Some((u64::MAX / 4, 3)),
                Some((10_000, 1)),
                UsageMode::Adjust,
            ),
            "fixed:400",
        );
        assert!(r.compactions.is_empty(), "{name}: fired");
        assert!(!r.requests.is_empty());
        for q in &r.requests {
            assert_eq!(
                q.adk_chars, q.adk_chars_uncompacted,
                "{name} event {}",
                q.event_index
            );
            assert_eq!(q.history_tokens, q.baseline_history_tokens);
            assert_eq!(q.prompt_tokens, q.baseline_prompt_tokens);
            assert_eq!(q.hidden_tokens, 0);
        }
    }
}

fn check_bounds(r: &Replay) -> Result<(), TestCaseError> {
    for q in &r.requests {
        let carried: u64 = r
            .carried(q)
            .iter()
            .filter_map(|o| r.compaction(*o))
            .map(|c| c.summary_chars)
            .sum();
        prop_assert!(
            q.adk_chars <= q.adk_chars_uncompacted + carried,
            "request at event {}: {} > {} + {}",
            q.event_index,
            q.adk_chars,
            q.adk_chars_uncompacted,
            carried
        );
        prop_assert!(q.history_tokens <= q.baseline_history_tokens + q.summary_tokens);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

    /// A compacted prompt never exceeds the baseline plus the summaries it carries, and replays
    /// are deterministic across runs and threads.
    #[test]
    fn compacted_prompt_bounded_and_deterministic(
        which in 0usize..4,
        t in 200u64..6000,
        keep in 0u64..8,
        inv in 1u64..5,
        ov in 0u64..3,
        kind in 0usize..3,
        summary in 10u64..3000,
    ) {
        let names = ["t01.session.json", "t02.session.json", "t06.session.json", "travel_8inv.session.json"];
        let s = load(names[which]);
        let c = match kind {
            0 => cfg(Some((t, keep)), None, UsageMode::Adjust),
            1 => cfg(None, Some((inv, ov)), UsageMode::Strip),
            _ => cfg(Some((t, keep)), Some((inv, ov)), UsageMode::Adjust),
        };
        let policy = format!("fixed:{summary}");
        let a = run(&s, &c, &policy);
        check_bounds(&a)?;
        let b = run(&s, &c, &policy);
        prop_assert_eq!(&a, &b);
        let threaded = std::thread::scope(|sc| {
            let h: Vec<_> = (0..2).map(|_| sc.spawn(|| run(&s, &c, &policy))).collect();
            h.into_iter().map(|h| h.join().expect("thread")).collect::<Vec<_>>()
        });
        for x in &threaded {
            prop_assert_eq!(&a, x);
        }
    }
}

// ------------------------------------------------------------------ settings

/// The oracle's `--validate` table: every ADK outcome maps to the same accept/refuse decision
/// and the same field at fault, in the manifest's words.
#[test]
fn validation_matches_the_oracle_table() {
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("goldens/validation.json"))
            .expect("validation.json"),
    )
    .expect("json");
    fn map(k: &str) -> &str {
        match k {
            "token_threshold" => "after_tokens",
            "event_retention_size" => "keep_recent_events",
            "compaction_interval" => "after_invocations",
            "overlap_size" => "overlap",
            other => other,
        }
    }
    let cases = v["validation"].as_array().expect("cases");
    assert_eq!(cases.len(), 14);
    for case in cases {
        let args: Vec<String> = case["config"]
            .as_object()
            .expect("config")
            .iter()
            .map(|(k, x)| format!("{}={}", map(k), x))
            .collect();
        let spec = format!("Compaction({})", args.join(", "));
        let got = settings::parse(&spec).expect("parses").validate();
        let valid = case["valid"].as_bool().expect("valid");
        assert_eq!(got.is_ok(), valid, "{spec}: {got:?}");
        if let Err(r) = got {
            let err = &case["errors"][0];
            let msg = err["msg"].as_str().expect("msg");
            match err["loc"]
                .as_array()
                .and_then(|l| l.first())
                .and_then(Value::as_str)
            {
                Some(field) => assert_eq!(r.field, map(field), "{spec}"),
                None if msg.contains("token_threshold and event_retention_size") => {
                    assert_eq!(r.message, settings::HALF_TOKENS, "{spec}");
                    assert!(
                        case["config"].get("token_threshold").is_some()
                            == (r.field == "after_tokens")
                    );
                }
                None if msg.contains("compaction_interval and overlap_size") => {
                    assert_eq!(r.message, settings::HALF_INVOCATIONS, "{spec}");
                    assert!(
                        case["config"].get("compaction_interval").is_some()
                            == (r.field == "after_invocations")
                    );
                }
                None => assert_eq!(r.message, settings::NO_TRIGGER, "{spec}"),
            }
        }
    }
}

#[test]
fn check_accepts_and_normalises() {
    bin()
        .args(["check", "Compaction(after_tokens=80000, keep_recent_events=20, summarizer=\".summarizers.terse\")"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "ok: Compaction(after_tokens=80_000, keep_recent_events=20, summarizer=\".summarizers.terse\")",
        ))
        .stdout(predicate::str::contains("token_threshold=80000, event_retention_size=20"));
}

#[test]
fn check_refuses_half_a_pair_in_the_guides_words() {
    bin()
        .args(["check", "Compaction(after_tokens=80_000)"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("refused: after_tokens:"))
        .stdout(predicate::str::contains(
            "`after_tokens` and `keep_recent_events` go together: the first says when to compact, the second how much of the recent conversation to leave alone. Set both, or neither.",
        ));
    bin()
        .args(["check", "Compaction()"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("no trigger"));
    bin()
        .args(["check", "Compaction(80000, 20)"])
        .assert()
        .code(2);
}

#[test]
fn check_reads_manifests_and_refuses_workflows() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let agent = tmp.path().join("agent.py");
    std::fs::write(
        &agent,
        "from agentkit_core.manifest import AgentManifest, Compaction\n\nMANIFEST = AgentManifest(\n    name=\"bot\",\n    compaction=Compaction(after_invocations=20, overlap=2),  # turns\n)\n",
    )
    .expect("write");
    bin()
        .args(["check", "--manifest"])
        .arg(&agent)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "Compaction(after_invocations=20, overlap=2)",
        ));
    let wf = tmp.path().join("wf.py");
    std::fs::write(&wf, "MANIFEST = WorkflowManifest(\n  graph=g,\n  compaction=Compaction(after_tokens=1000, keep_recent_events=2),\n)\n")
        .expect("write");
    bin()
        .args(["check", "--manifest"])
        .arg(&wf)
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "A WorkflowManifest has no compaction field",
        ));
}

// ------------------------------------------------------------------ replay

/// `replay --json` reproduces the oracle's own output for the same case.
#[test]
fn replay_json_uses_the_oracle_fields() {
    let dir = fixtures().join("goldens");
    let out = bin()
        .arg("replay")
        .arg(dir.join("travel_8inv.session.json"))
        .args([
            "--after-tokens",
            "700",
            "--keep-recent-events",
            "2",
            "--summarizer",
            "fixed:400",
        ])
        .args(["--tokenizer", "adk-chars", "--json"])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).expect("json");
    let want: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("travel_8inv_token_t700_r2.json")).expect("read"),
    )
    .expect("json");
    let fields = [
        "phase",
        "trigger",
        "invocation_index",
        "start_timestamp",
        "end_timestamp",
        "raw_events_in_range",
        "summarizer_prompt_chars",
        "summary_chars",
        "summary_json_chars",
        "retained",
    ];
    let (g, w) = (
        got["compactions"].as_array().expect("g"),
        want["compactions"].as_array().expect("w"),
    );
    assert_eq!(g.len(), w.len());
    for (a, b) in g.iter().zip(w) {
        for f in fields {
            assert_eq!(a[f], b[f], "{f}");
        }
    }
    for (a, b) in got["invocations"]
        .as_array()
        .expect("a")
        .iter()
        .zip(want["invocations"].as_array().expect("b"))
    {
        assert_eq!(
            a["next_request_history"]["adk_chars"],
            b["next_request_history"]["adk_chars"]
        );
        for (x, y) in a["model_calls"]
            .as_array()
            .expect("x")
            .iter()
            .zip(b["model_calls"].as_array().expect("y"))
        {
            assert_eq!(x["measured_prompt_tokens"], y["measured_prompt_tokens"]);
            assert_eq!(
                x["request_contents"]["adk_chars"],
                y["request_contents"]["adk_chars"]
            );
        }
    }
    assert_eq!(
        got["totals"]["summarizer_prompt_chars"],
        want["totals"]["summarizer_prompt_chars"]
    );
}

#[test]
fn replay_prints_a_timeline_and_refuses_half_pairs() {
    let f = fixtures().join("goldens/travel_8inv.session.json");
    bin()
        .arg("replay")
        .arg(&f)
        .args([
            "--after-invocations",
            "2",
            "--overlap",
            "1",
            "--summarizer",
            "fixed:400",
            "--tokenizer",
            "adk-chars",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "after invocation 1: #1 post_invocation sliding_window over events 0-7",
        ))
        .stdout(predicate::str::contains("15 model requests"));
    bin()
        .arg("replay")
        .arg(&f)
        .args(["--after-invocations", "2"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "`after_invocations` and `overlap` go together",
        ));
    bin()
        .arg("replay")
        .arg(fixtures().join("goldens/missing.json"))
        .args(["--after-invocations", "2", "--overlap", "0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("missing.json"));
}

/// Replay throughput on the longest fixtures (not a pass/fail test; run with
/// `cargo test --release --test cli -- --ignored replay_throughput --nocapture`).
/// Event-steps = events x model requests of each replay.
#[test]
#[ignore]
fn replay_throughput() {
    // process CPU seconds (utime + stime), so a loaded machine does not skew the figure
    fn cpu() -> f64 {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        let f: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        let ticks: f64 = f.get(11..13).map_or(0.0, |x| {
            x.iter().filter_map(|v| v.parse::<f64>().ok()).sum()
        });
        ticks / 100.0
    }
    let mut total_steps = 0u64;
    let start = std::time::Instant::now();
    let cpu0 = cpu();
    for name in ["t03.session.json", "t05.session.json", "t00.session.json"] {
        let s = load(name);
        let sizes = SessionSizes::new(&s, None);
        let requests = s.events.iter().filter(|e| e.model_request).count() as u64;
        let summ = Deterministic::new(Policy::Fixed(400), vec![], vec![]);
        for t in (2000..40_000).step_by(500) {
            for keep in [0u64, 2, 5, 10] {
                let c = cfg(Some((t, keep)), Some((3, 1)), UsageMode::Adjust);
                let r = engine::replay(&sizes, &c, &summ);
                assert!(!r.requests.is_empty());
                total_steps += s.events.len() as u64 * requests;
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let cpu_s = cpu() - cpu0;
    println!(
        "{total_steps} event-steps in {secs:.3} s wall, {cpu_s:.2} s CPU: {:.1} M event-steps per CPU-second",
        total_steps as f64 / cpu_s.max(1e-9) / 1e6
    );
}
