//! Cost, pricing, latency and calibration: the `calibrate` command end to end, and the
//! metrics of metrics.md on small hand-made sessions (each expected number worked out in the
//! comments).

use assert_cmd::Command;
use predicates::prelude::*;

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/cost/{name}", env!("CARGO_MANIFEST_DIR"))
}

use crate::common::corpus_dir as corpus;

mod calibrate {
    use super::*;

    #[test]
    fn fits_summary_length_to_claude_code_compactions() {
        // The corpus has 5 Claude Code compact summaries of 12.2k-16.2k chars (about 3.0k-4.0k
        // tokens) written at 142k-170k preTokens, so the median ratio lies near 0.02 (between
        // 3.0k/170k = 0.018 and 4.0k/142k = 0.028) and the cap is about 4k tokens.
        let dir = corpus("claude_code_spotter");
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

/// The cost layer driving the real engine (`engine::replay`) through `cost::evaluate`.
mod with_engine {
    use compaction_sim::cost::client::ClientMode;
    use compaction_sim::cost::{evaluate, CostModel, CostSetting, SessionCostInputs};
    use compaction_sim::engine::{self, CallResult, Config, Summarizer, UsageMode};
    use compaction_sim::summarize::SummarizerSpec;
    use compaction_sim::tokens::sizes::SessionSizes;
    use compaction_sim::tokens::Tokenizer;
    use compaction_sim::transcript::{Event, Format, Part, Role, Session};

    fn text(author: &str, inv: &str, t: f64, s: &str) -> Event {
        let role = if author == "user" {
            Role::User
        } else {
            Role::Model
        };
        let mut e = Event::new(author, role, inv, t);
        e.parts.push(Part::Text { text: s.into() });
        e.model_request = role == Role::Model;
        e
    }

    fn session(events: Vec<Event>) -> Session {
        Session {
            id: "s".into(),
            source: "mem".into(),
            format: Format::Canonical,
            events,
            recorded_compactions: vec![],
            model: Some("claude-sonnet-4-5".into()),
            synthetic_timestamps: false,
            approval_policies: vec![],
            recorded_policy: None,
            notes: vec![],
            timing_adjusted_s: None,
        }
    }

    /// Sliding window every invocation, no overlap.
    fn every_turn() -> Config {
        Config {
            token: None,
            sliding: Some((1, 0)),
            usage: UsageMode::default(),
            pre_request: true,
        }
    }

    #[test]
    fn terse_on_a_span_without_text_compacts_nothing_and_stays_armed() {
        // Invocation 0 is a tool call and its response (no text part anywhere); invocation 1
        // says something. After invocation 0 terse has nothing to keep: the call returns
        // nothing, no compaction. After invocation 1 both invocations are still "new", so the
        // window covers events 0..=3 and terse writes "user: order 4521 please" + "agent: done".
        let mut call = Event::new("agent", Role::Model, "i0", 1.0);
        call.model_request = true;
        call.parts.push(Part::ToolCall {
            id: Some("c1".into()),
            name: "look".into(),
            args: serde_json::json!({"q": 1}),
        });
        let mut resp = Event::new("user", Role::User, "i0", 2.0);
        resp.parts.push(Part::ToolResponse {
            id: Some("c1".into()),
            name: "look".into(),
            response: serde_json::json!({"r": 2}),
        });
        let s = session(vec![
            call,
            resp,
            text("user", "i1", 3.0, "order 4521 please"),
            text("agent", "i1", 4.0, "done"),
        ]);
        let sizes = SessionSizes::new(&s, None);
        let inputs = SessionCostInputs::new(&s, Tokenizer::AdkChars);
        let spec = SummarizerSpec::Terse;
        let cfg = every_turn();
        let run = |summ: &dyn Summarizer| engine::replay(&sizes, &cfg, summ);
        let e = evaluate(
            &s,
            &sizes,
            &inputs,
            &CostModel::default(),
            &CostSetting::new(&spec, None, ClientMode::Waits),
            &run,
        )
        .unwrap();
        let results: Vec<CallResult> = e.replay.calls.iter().map(|c| c.result).collect();
        assert_eq!(results, vec![CallResult::Empty, CallResult::Summary]);
        assert_eq!(e.replay.compactions.len(), 1);
        assert_eq!(e.replay.compactions[0].start_timestamp, 1.0);
        assert_eq!(
            e.log.texts.get(&2).map(|t| t.to_string()).as_deref(),
            Some("user: order 4521 please\nagent: done")
        );
        assert_eq!(e.metrics.summarizer_calls, 2);
        assert_eq!(e.metrics.summarizer_cost_usd, 0.0);
        // Facts of events 0..=3: "4521" only (1-digit numbers do not count); it is kept.
        assert_eq!(e.metrics.facts_dropped, Some(0.0));
    }

    #[test]
    fn streams_discards_a_summary_the_next_turn_overtakes_and_re_evaluates() {
        // Modelled summaries on Sonnet 4.x take at least 1.5 s + 64 tokens / 65 tok/s ~ 2.5 s.
        // Invocation 0 ends at 11 s and the next turn starts at 12 s: in `streams` the
        // summary is still being written and is discarded; after invocation 1 (ends at 21 s,
        // next turn at 100 s) both invocations are still new, so the window covers them and
        // that summary lands. In `waits` the first summary lands; after invocation 1 ADK's
        // worth-compacting gate skips the tiny new span (smaller than the summary).
        let s = session(vec![
            text("user", "i0", 10.0, "first question"),
            text("agent", "i0", 11.0, "first answer"),
            text("user", "i1", 12.0, "second question"),
            text("agent", "i1", 21.0, "second answer"),
            text("user", "i2", 100.0, "third question"),
            text("agent", "i2", 101.0, "third answer"),
        ]);
        let sizes = SessionSizes::new(&s, None);
        let inputs = SessionCostInputs::new(&s, Tokenizer::AdkChars);
        let spec = SummarizerSpec::Agent;
        let cfg = every_turn();
        let run = |summ: &dyn Summarizer| engine::replay(&sizes, &cfg, summ);
        let model = CostModel::default();
        let streams = CostSetting::new(&spec, Some("claude-sonnet-4-5"), ClientMode::Streams);
        let e = evaluate(&s, &sizes, &inputs, &model, &streams, &run).unwrap();
        assert_eq!(e.log.discarded.keys().copied().collect::<Vec<_>>(), vec![1]);
        assert_eq!(e.replay.calls[0].result, CallResult::Failed);
        assert_eq!(e.replay.calls[0].invocation_index, 0);
        assert_eq!(e.replay.calls[1].result, CallResult::Summary);
        assert_eq!(e.replay.compactions[0].start_timestamp, 10.0);
        assert_eq!(e.metrics.summaries_discarded, 1);
        // The discarded call's output is paid: output tokens = the landed summaries' + its own.
        let landed: u64 = e.replay.calls.iter().map(|c| c.output_tokens).sum();
        assert_eq!(
            e.metrics.summarizer_output_tokens,
            landed + e.log.discarded[&1].tokens
        );

        let waits = CostSetting::new(&spec, Some("claude-sonnet-4-5"), ClientMode::Waits);
        let w = evaluate(&s, &sizes, &inputs, &model, &waits, &run).unwrap();
        assert_eq!(w.metrics.summaries_discarded, 0);
        assert_eq!(w.replay.calls.len(), 1);
        assert_eq!(w.replay.calls[0].result, CallResult::Summary);
        assert_eq!(w.replay.compactions[0].end_timestamp, 11.0);
        assert!(
            w.metrics.end_of_run_latency_max_s > 2.4,
            "{}",
            w.metrics.end_of_run_latency_max_s
        );
    }

    #[test]
    fn metrics_block_snapshot() {
        // The block `replay` prints under its timeline, for the waits run of the test above.
        let s = session(vec![
            text("user", "i0", 10.0, "first question"),
            text("agent", "i0", 11.0, "first answer"),
            text("user", "i1", 12.0, "second question"),
            text("agent", "i1", 21.0, "second answer"),
            text("user", "i2", 100.0, "third question"),
            text("agent", "i2", 101.0, "third answer"),
        ]);
        let sizes = SessionSizes::new(&s, None);
        let inputs = SessionCostInputs::new(&s, Tokenizer::AdkChars);
        let spec = SummarizerSpec::Agent;
        let cfg = every_turn();
        let run = |summ: &dyn Summarizer| engine::replay(&sizes, &cfg, summ);
        let model = CostModel::default();
        let st = CostSetting::new(&spec, Some("claude-sonnet-4-5"), ClientMode::Waits);
        let e = evaluate(&s, &sizes, &inputs, &model, &st, &run).unwrap();
        let ms = compaction_sim::cost::MetricsSetting {
            agent_model: st.agent_model,
            summarizer: &spec,
            client: st.client,
            attachment_tokens: &inputs.attachments,
            event_facts: None,
            references: None,
            attachments_once: false,
            summary_family: None,
        };
        insta::assert_snapshot!(compaction_sim::cost::render_metrics(
            &e.metrics, &model, &ms
        ));
    }

    #[cfg(unix)]
    #[test]
    fn a_failing_command_is_a_failed_call_with_a_one_line_error() {
        let s = session(vec![
            text("user", "i0", 1.0, "hello"),
            text("agent", "i0", 2.0, "hi"),
            text("user", "i1", 3.0, "bye"),
            text("agent", "i1", 4.0, "ok"),
        ]);
        let sizes = SessionSizes::new(&s, None);
        let inputs = SessionCostInputs::new(&s, Tokenizer::AdkChars);
        let spec = SummarizerSpec::parse("command:false").unwrap();
        let cfg = every_turn();
        let run = |summ: &dyn Summarizer| engine::replay(&sizes, &cfg, summ);
        let e = evaluate(
            &s,
            &sizes,
            &inputs,
            &CostModel::default(),
            &CostSetting::new(&spec, None, ClientMode::Waits),
            &run,
        )
        .unwrap();
        assert!(e
            .replay
            .calls
            .iter()
            .all(|c| c.result == CallResult::Failed));
        assert!(e.replay.compactions.is_empty());
        assert!(!e.summarizer_errors.is_empty());
        assert!(e
            .summarizer_errors
            .iter()
            .all(|l| l.contains("exited with status 1") && !l.contains('\n')));
        assert_eq!(e.metrics.prompt_tokens, e.metrics.baseline_prompt_tokens);
    }
}

/// `replay` prints the metrics of metrics.md under its timeline, and `--json` carries them.
mod replay_metrics {
    use super::*;
    use serde_json::Value;

    fn travel() -> String {
        format!(
            "{}/tests/fixtures/oracle/goldens/travel_8inv.session.json",
            env!("CARGO_MANIFEST_DIR")
        )
    }

    fn replay_json(extra: &[&str]) -> Value {
        let out = Command::cargo_bin("compaction-sim")
            .unwrap()
            .arg("replay")
            .arg(travel())
            .args(["--after-invocations", "2", "--overlap", "1", "--json"])
            .args(extra)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    #[test]
    fn table_ends_with_the_metrics_block_and_its_assumptions() {
        Command::cargo_bin("compaction-sim")
            .unwrap()
            .arg("replay")
            .arg(travel())
            .args([
                "--after-invocations",
                "2",
                "--overlap",
                "1",
                "--summarizer",
                "terse",
            ])
            .assert()
            .success()
            .stdout(predicate::str::contains("metrics (agent model"))
            .stdout(predicate::str::contains("USD"))
            .stdout(predicate::str::contains("detail lost"))
            // terse really writes text, so facts dropped is a number, not n/a.
            .stdout(predicate::str::contains("facts dropped            n/a").not());
    }

    #[test]
    fn json_metrics_agree_with_the_engine_totals() {
        let v = replay_json(&[]);
        let m = &v["metrics"];
        // Sliding window every 2 invocations over 8 invocations fires 4 times (the oracle's
        // example: after invocations 2, 4, 6 and 8).
        assert_eq!(m["summarizer_calls"], v["totals"]["summarizer_calls"]);
        assert_eq!(m["summarizer_calls"].as_u64(), Some(4));
        let base = m["baseline_prompt_tokens"].as_i64().unwrap();
        let prompt = m["prompt_tokens"].as_i64().unwrap();
        assert_eq!(m["tokens_saved_gross"].as_i64(), Some(base - prompt));
        let net = m["tokens_saved_gross"].as_i64().unwrap()
            - m["summarizer_input_tokens"].as_i64().unwrap()
            - m["summarizer_output_tokens"].as_i64().unwrap();
        assert_eq!(m["tokens_saved_net"].as_i64(), Some(net));
        let d = m["detail_lost"].as_f64().unwrap();
        assert!(d > 0.0 && d < 1.0, "detail_lost {d}");
    }

    #[test]
    fn an_empty_summarizer_is_called_but_saves_nothing() {
        let m = &replay_json(&["--summarizer", "none"])["metrics"];
        assert!(m["summarizer_calls"].as_u64().unwrap() > 0);
        assert_eq!(m["tokens_saved_gross"].as_i64(), Some(0));
        assert_eq!(m["detail_lost"].as_f64(), Some(0.0));
    }

    #[test]
    fn prompt_caching_lowers_the_baseline_cost() {
        let with = replay_json(&[])["metrics"]["baseline_cost_usd"]
            .as_f64()
            .unwrap();
        let without = replay_json(&["--no-cache"])["metrics"]["baseline_cost_usd"]
            .as_f64()
            .unwrap();
        assert!(with < without, "cached {with} vs uncached {without}");
    }

    #[test]
    fn a_setting_that_never_fires_costs_exactly_the_baseline() {
        // Threshold far above any prompt: no compaction, so every request is the baseline's and
        // the saving must be zero to the cent (recorded usage in t05; multi-agent in t06).
        for name in ["travel_8inv", "t05", "t06"] {
            let file = format!(
                "{}/tests/fixtures/oracle/goldens/{name}.session.json",
                env!("CARGO_MANIFEST_DIR")
            );
            let out = Command::cargo_bin("compaction-sim")
                .unwrap()
                .arg("replay")
                .arg(&file)
                .args([
                    "--after-tokens",
                    "100000000",
                    "--keep-recent-events",
                    "0",
                    "--json",
                ])
                .output()
                .unwrap();
            let v = crate::common::json_stdout(&out, name);
            let m = &v["metrics"];
            assert_eq!(m["summarizer_calls"].as_u64(), Some(0), "{name}");
            assert_eq!(m["cost_usd"], m["baseline_cost_usd"], "{name}");
            assert_eq!(m["cost_saved_usd"].as_f64(), Some(0.0), "{name}");
        }
    }
}

/// Issue #14: prices derived from LiteLLM's pinned file, the LiteLLM reader, the corpus costed.
mod pricing {
    use crate::common::{bin, corpus_dir, read_text, root};
    use predicates::prelude::*;

    const PINNED: &str = "litellm-1.110.2-kept.json";

    #[test]
    fn pricing_import_reproduces_the_shipped_table_from_the_pinned_file() {
        let fixture = super::fixture(PINNED);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("pricing.toml");
        let filtered = dir.path().join("kept.json");
        bin()
            .args(["pricing", "import", &fixture, "--out"])
            .arg(&out)
            .arg("--write-filtered")
            .arg(&filtered)
            .assert()
            .success()
            .stderr(predicate::str::contains(
                "models (LiteLLM 1.110.2, 2026-11-20)",
            ));
        assert!(
            read_text(&out) == read_text(&root().join("src/data/pricing.toml")),
            "src/data/pricing.toml differs from what `pricing import` makes of {PINNED}"
        );
        // The fixture is the import's own filtered copy, small enough to keep in the repo.
        assert_eq!(
            read_text(&filtered),
            read_text(std::path::Path::new(&fixture))
        );
        assert!(std::fs::metadata(&fixture).unwrap().len() < 400_000);
    }

    #[test]
    fn pricing_import_bad_overlay_is_a_one_line_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let overlay = dir.path().join("overlay.toml");
        std::fs::write(
            &overlay,
            "litellm_version = \"1\"\nfile_date = \"d\"\nkeep_providers = [\"openai\"]\n\
             [models.\"no-such-model\"]\ninput = 1.0\n",
        )
        .unwrap();
        bin()
            .args(["pricing", "import", &super::fixture(PINNED), "--overlay"])
            .arg(&overlay)
            .assert()
            .code(2)
            .stdout("")
            .stderr(predicate::str::contains(format!(
                "{}: models.\"no-such-model\": not a kept entry of",
                overlay.display()
            )));
    }

    /// Every Claude Code session of the corpus (claude-opus-4-6, which the old table lacked)
    /// is costed completely at the dated prices.
    #[test]
    fn claude_code_corpus_sessions_are_costed_completely() {
        let dir = corpus_dir("claude_code_spotter");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        files.sort();
        assert!(files.len() >= 5, "{files:?}");
        for f in files {
            let out = bin()
                .arg("replay")
                .arg(&f)
                .args(["--after-tokens", "60000", "--keep-recent-events", "10"])
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{}: {}",
                f.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                text.contains("prices of 2026-11-20"),
                "{}: {text}",
                f.display()
            );
            assert!(!text.contains("INCOMPLETE"), "{}: {text}", f.display());
            let cost = text
                .lines()
                .find(|l| l.trim_start().starts_with("cost "))
                .unwrap_or_else(|| panic!("{}: no cost line", f.display()));
            assert!(
                !cost.contains("baseline $0.0000"),
                "{}: {cost}",
                f.display()
            );
            assert!(
                text.contains("price source             LiteLLM 1.110.2"),
                "{text}"
            );
        }
    }

    #[test]
    fn one_hour_cache_writes_are_priced_at_the_one_hour_rate() {
        // short.jsonl: one claude-opus-4-6 request of 25,353 prompt tokens, all written to
        // the cache with the 1-hour lifetime (ephemeral_1h_input_tokens), 13 output tokens.
        // Baseline: 25,353 * $10/M (1-hour writes, 2x the $5 input) + 13 * $25/M
        // = $0.25353 + $0.000325 = $0.253855. At the 5-minute rate it would be
        // 25,353 * $6.25/M + $0.000325 = $0.1588.
        let out = bin()
            .arg("replay")
            .arg(corpus_dir("claude_code_spotter").join("short.jsonl"))
            .args(["--after-tokens", "6000", "--keep-recent-events", "2"])
            .assert()
            .success();
        let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
        assert!(text.contains("baseline $0.2539;"), "{text}");
    }

    #[test]
    fn a_litellm_file_with_bad_entries_warns_and_still_runs() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("model_prices_and_context_window.json");
        std::fs::write(
            &p,
            r#"{
              "sample_spec": {"mode": "one of: chat"},
              "claude-opus-4-6": {"litellm_provider": "anthropic", "mode": "chat",
                "input_cost_per_token": 1e-05, "output_cost_per_token": 5e-05},
              "broken-model": {"litellm_provider": "openai", "mode": "chat",
                "input_cost_per_token": "free"},
              "text-embedding-3-small": {"litellm_provider": "openai", "mode": "embedding",
                "input_cost_per_token": 2e-08}
            }"#,
        )
        .unwrap();
        // Doubled input price over the built-in entry; its 1-hour write price (still $10/M
        // from the built-in entry: the file does not give one) and its output price apply:
        // the same $0.2539 baseline as above with 13 output tokens at $50/M instead of $25/M:
        // $0.25353 + $0.00065 = $0.25418.
        let out = bin()
            .arg("replay")
            .arg(corpus_dir("claude_code_spotter").join("short.jsonl"))
            .args([
                "--after-tokens",
                "6000",
                "--keep-recent-events",
                "2",
                "--pricing",
            ])
            .arg(&p)
            .assert()
            .success()
            .stderr(predicate::str::contains(format!(
                "warning: {}: $[\"broken-model\"].input_cost_per_token: expected a number >= 0 \
                 (USD per token); entry `broken-model` skipped",
                p.display()
            )));
        let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
        assert!(text.contains("baseline $0.2542;"), "{text}");
        assert!(text.contains("overrides: LiteLLM file"), "{text}");
    }
}

mod retention {
    use crate::common::*;

    /// The built-in retention (src/data/latency.toml `[retention]`) is what `calibrate` fits
    /// from the references at risk at the corpus' recorded summaries (Claude Code and
    /// OpenHands): same summaries, models, per-kind counts and rates, pooled and per family.
    #[test]
    fn builtin_retention_is_reproducible_from_calibrate_output() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("fit.toml");
        let o = bin()
            .args(["calibrate"])
            .arg(corpus().join("claude_code_spotter"))
            .arg(corpus().join("real_compactions"))
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            stdout.contains("fact retention: references at risk at 32 summaries (claude-code 17, openhands 15), written by"),
            "{stdout}"
        );
        let mut fitted = compaction_sim::cost::latency::LatencyTable::builtin();
        fitted.retention = None;
        fitted
            .apply_file("fit.toml", &std::fs::read_to_string(&out).unwrap())
            .unwrap();
        let fitted = fitted.retention.expect("calibrate wrote [retention]");
        let builtin = compaction_sim::cost::latency::LatencyTable::builtin()
            .retention
            .expect("built-in retention");
        assert_eq!(fitted.summaries, builtin.summaries);
        assert_eq!(fitted.models, builtin.models);
        assert_eq!(fitted.kinds, builtin.kinds);
        assert_eq!(fitted.families, builtin.families);
        assert!(fitted.summaries > 0);
    }

    /// Issue 45: the `agent` estimate (at-risk references x (1 - pooled retention of the
    /// references at risk)) lands within 0.85-1.15x of the references the corpus' real
    /// summaries broke, fitted on all of them and fitted leaving each session out.
    #[test]
    fn agent_estimate_is_within_15_percent_of_real_summaries_in_sample_and_leaving_each_session_out(
    ) {
        let l = compaction_sim::transcript::load_paths(
            &[
                corpus().join("claude_code_spotter").display().to_string(),
                corpus().join("real_compactions").display().to_string(),
            ],
            None,
        );
        assert!(
            !l.sessions.is_empty(),
            "corpus missing at {}",
            corpus().display()
        );
        let samples: Vec<_> = l
            .sessions
            .iter()
            .flat_map(compaction_sim::cost::calibrate::retention_samples)
            .collect();
        assert_eq!(
            samples.len(),
            32,
            "recorded summaries with references at risk"
        );
        let c = compaction_sim::cost::calibrate::check_retention(&samples);
        let real = c.real as f64;
        for (what, est) in [
            ("in sample", c.in_sample),
            ("leave one session out", c.leave_one_session_out),
        ] {
            let ratio = est / real;
            assert!(
                (0.85..=1.15).contains(&ratio),
                "{what}: {est:.1} / {real} = {ratio:.3}"
            );
        }
    }
}

/// `terse` under a token trigger writes each summary as `model: ` + the previous one + the new
/// lines; the simulator keeps and counts what each adds instead of the whole text.
mod rolling_terse {
    use super::*;
    use compaction_sim::summarize::push_terse_lines;
    use compaction_sim::tokens::splice::Spliced;
    use compaction_sim::tokens::{count_text, Tokenizer};
    use compaction_sim::transcript::load_paths;

    /// Every corpus session's text lines, chained one event at a time as a token trigger
    /// chains them: counting by segments gives what counting the whole text gives, for both
    /// tiktoken encodings. Chains restart past 16 KB so the whole counts stay linear.
    #[test]
    fn counts_by_what_each_summary_added_agree_with_whole_texts_over_the_corpus() {
        let l = load_paths(&[crate::common::corpus().display().to_string()], None);
        assert!(l.sessions.len() > 400, "{} sessions", l.sessions.len());
        for tok in [Tokenizer::O200k, Tokenizer::Cl100k] {
            let count = move |t: &str| count_text(tok, t) as u64;
            let mut chains = 0;
            let check = |text: &str, s: &Option<Spliced>| {
                if let Some(s) = s {
                    assert_eq!(s.total, count(text), "{tok}: {text:?}");
                }
            };
            for session in &l.sessions {
                let (mut text, mut spliced) = (String::new(), None::<Spliced>);
                for e in &session.events {
                    let mut said = String::new();
                    push_terse_lines(e, &mut said);
                    if said.is_empty() {
                        continue;
                    }
                    let new = said[1..].to_string();
                    spliced = Some(match &spliced {
                        None => {
                            text = new;
                            Spliced::of(&text, &count)
                        }
                        Some(s) => {
                            let tail = format!("\n{new}");
                            let next = s.compose(s.ends(&text), "model: ", &tail, &count);
                            text = format!("model: {text}{tail}");
                            next
                        }
                    });
                    if text.len() > 16_384 {
                        check(&text, &spliced);
                        chains += 1;
                        spliced = None;
                    }
                }
                check(&text, &spliced);
                chains += usize::from(spliced.is_some());
            }
            assert!(chains > 400, "{tok}: {chains} chains compared");
        }
    }

    /// A replay where nearly every summary is seeded by the previous one, in a debug build:
    /// each summary's token count by segments is compared with the whole text's, and the
    /// facts and references found by what each text added with a search of whole texts (the
    /// binary panics on a difference). The tool payloads terse leaves out make both lose facts.
    #[test]
    fn a_rolling_terse_replay_agrees_with_whole_texts() {
        let tmp = tempfile::tempdir().unwrap();
        Command::cargo_bin("compaction-sim")
            .unwrap()
            .args(["synth", "--invocations", "300", "--tool-rounds", "--out"])
            .arg(tmp.path().join("s"))
            .assert()
            .success();
        let file = tmp.path().join("s/long-300-tools.session.json");
        let out = Command::cargo_bin("compaction-sim")
            .unwrap()
            .arg("replay")
            .arg(&file)
            .args(["--summarizer", "terse", "--after-tokens", "3000"])
            .args(["--keep-recent-events", "4", "--json"])
            .output()
            .unwrap();
        let v = crate::common::json_stdout(&out, "replay");
        let comps = v["compactions"].as_array().unwrap();
        let seeded = comps
            .iter()
            .filter(|c| c["seeded_with_previous_summary"] == true)
            .count();
        assert!(
            seeded >= 50 && seeded + 1 >= comps.len(),
            "{seeded} of {}",
            comps.len()
        );
        // each summary holds the previous one: tokens grow
        let tokens: Vec<u64> = comps
            .iter()
            .map(|c| c["summary_tokens"].as_u64().unwrap())
            .collect();
        assert!(tokens.windows(2).all(|w| w[1] > w[0]), "{tokens:?}");
        let m = &v["metrics"];
        let dropped = m["facts_dropped"].as_f64().unwrap();
        assert!(dropped > 0.0 && dropped < 1.0, "{m}");
        assert!(m["references_broken"].as_f64().unwrap() > 0.0, "{m}");
        assert_eq!(m["references_broken_basis"], "measured", "{m}");
    }
}
