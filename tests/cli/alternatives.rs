//! Issue 27: the guide's alternatives as counterfactual replays, driven through `sweep` on
//! hand-made sessions.

use crate::common::bin;
use std::collections::HashMap;
use std::path::Path;

/// One ADK event.
fn event(
    inv: &str,
    author: &str,
    role: &str,
    t: f64,
    part: serde_json::Value,
) -> serde_json::Value {
    serde_json::json!({
        "invocation_id": inv,
        "author": author,
        "timestamp": t,
        "content": {"role": role, "parts": [part]},
    })
}

/// A session whose first invocation makes `calls` model calls (tool calls, then a final
/// answer) and whose second makes one; `keep` cuts the first invocation before its
/// `keep+1`-th model call, as a hand-written counterfactual.
fn session(calls: usize, keep: Option<usize>) -> serde_json::Value {
    let mut t = 1_800_000_000.0;
    let mut tick = || {
        t += 7.0;
        t
    };
    let mut ev = vec![event(
        "inv-1",
        "user",
        "user",
        tick(),
        serde_json::json!({"text": "Reconcile the ledger in /srv/ledger/2026-q3.csv against INC-7741."}),
    )];
    for k in 1..=calls {
        if keep.is_some_and(|n| k > n) {
            break;
        }
        if k < calls {
            ev.push(event(
                "inv-1",
                "agent",
                "model",
                tick(),
                serde_json::json!({"function_call": {"id": format!("c{k}"), "name": "read_rows", "args": {"page": k}}}),
            ));
            ev.push(event(
                "inv-1",
                "agent",
                "user",
                tick(),
                serde_json::json!({"function_response": {"id": format!("c{k}"), "name": "read_rows", "response": {"rows": format!("{} row {k} of the ledger, amount {}", "x".repeat(400), 100 + k)}}}),
            ));
        } else {
            ev.push(event(
                "inv-1",
                "agent",
                "model",
                tick(),
                serde_json::json!({"text": "The ledger matches except row 3."}),
            ));
        }
    }
    ev.push(event(
        "inv-2",
        "user",
        "user",
        tick(),
        serde_json::json!({"text": "Thanks, and row 3?"}),
    ));
    ev.push(event(
        "inv-2",
        "agent",
        "model",
        tick(),
        serde_json::json!({"text": "Row 3 is a duplicate."}),
    ));
    serde_json::json!({"id": "ledger", "app_name": "a", "user_id": "u", "events": ev})
}

fn sweep(dir: &Path, input: &Path, extra: &[&str]) -> std::process::Output {
    let out = bin()
        .current_dir(dir)
        .arg("sweep")
        .arg(input)
        .args([
            "--out",
            dir.join("run").to_str().unwrap(),
            "--trigger",
            "invocations",
            "--after-invocations",
            "2",
            "--overlap",
            "0",
            "--summarizer",
            "terse",
            "--tokenizer",
            "o200k",
            "--no-cache",
            "-q",
        ])
        .args(extra)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "sweep failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// runs.csv rows keyed by setting id: column name → text.
fn runs(dir: &Path) -> HashMap<String, HashMap<String, String>> {
    let text = std::fs::read_to_string(dir.join("run/runs.csv")).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            let row: HashMap<String, String> = head
                .iter()
                .zip(l.split(','))
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect();
            (row["setting_id"].clone(), row)
        })
        .collect()
}

fn settings(dir: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join("run/settings.json")).unwrap();
    serde_json::from_str::<serde_json::Value>(&text)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn num(row: &HashMap<String, String>, col: &str) -> f64 {
    row.get(col)
        .unwrap_or_else(|| panic!("column {col}"))
        .parse()
        .unwrap_or_else(|_| panic!("{col} = {}", row[col]))
}

/// `max_llm_calls=3` on an invocation of 5 model calls: the capped replay is exactly the
/// session cut by hand before call 4 (same prompts, same dollars), saves what calls 4 and 5
/// cost against the recorded session, and counts 1 failed run.
#[test]
fn a_cap_of_3_on_5_calls_saves_two_calls_and_fails_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let (full, cut) = (dir.path().join("full"), dir.path().join("cut"));
    for (d, s) in [(&full, session(5, None)), (&cut, session(5, Some(3)))] {
        std::fs::create_dir_all(d.join("in")).unwrap();
        std::fs::write(d.join("in/ledger.session.json"), s.to_string()).unwrap();
    }
    sweep(
        &full,
        &full.join("in"),
        &["--max-llm-calls", "3", "--combine"],
    );
    sweep(&cut, &cut.join("in"), &["--alternatives", "none"]);
    let set = settings(&full);
    let cap = set
        .iter()
        .find(|s| s["alternative"] == "max_llm_calls=3")
        .expect("a max_llm_calls=3 row in settings.json");
    assert_eq!(cap["trigger_kind"], "none");
    assert!(cap["label"]
        .as_str()
        .unwrap()
        .contains("RunConfig(max_llm_calls=3)"));
    assert_eq!(cap["invocations_failed_sum"], 1);
    assert_eq!(cap["recommended"], false);
    let plain: Vec<&serde_json::Value> = set.iter().filter(|s| s["alternative"] == "").collect();
    assert!(plain.iter().all(|s| s["invocations_failed_sum"] == 0));
    // Compaction settings keep their ids: the alternative comes after them.
    assert_eq!(cap["setting_id"].as_u64().unwrap() as usize, plain.len());

    let full_rows = runs(&full);
    let cut_rows = runs(&cut);
    let capped = &full_rows[&cap["setting_id"].as_u64().unwrap().to_string()];
    let recorded = &full_rows["0"];
    let by_hand = &cut_rows["0"];
    assert_eq!(num(recorded, "model_requests"), 6.0);
    assert_eq!(
        num(capped, "model_requests"),
        4.0,
        "calls 4 and 5 are not made"
    );
    assert_eq!(num(capped, "invocations_failed"), 1.0);
    for col in ["model_requests", "prompt_tokens", "cost_usd"] {
        assert_eq!(num(capped, col), num(by_hand, col), "{col}");
    }
    // Saved is against the recorded session, not the capped one.
    assert_eq!(
        num(capped, "baseline_prompt_tokens"),
        num(recorded, "prompt_tokens")
    );
    let saved = num(recorded, "prompt_tokens") - num(by_hand, "prompt_tokens");
    assert!(saved > 0.0);
    assert_eq!(num(capped, "tokens_saved_gross"), saved);
    let usd = num(recorded, "cost_usd") - num(by_hand, "cost_usd");
    assert!((num(capped, "cost_saved_usd") - usd).abs() < 1e-6);

    // Combined with the compaction setting (--combine): the capped session replayed under it
    // is the hand-cut session under it, and saved is still against the recorded baseline.
    let combo = set
        .iter()
        .find(|s| s["alternative"] == "max_llm_calls=3" && s["trigger_kind"] == "invocations")
        .expect("a max_llm_calls=3 + Compaction row");
    assert!(combo["label"].as_str().unwrap().starts_with(
        "run_config=RunConfig(max_llm_calls=3) + compaction=Compaction(after_invocations=2"
    ));
    let combo = &full_rows[&combo["setting_id"].as_u64().unwrap().to_string()];
    let by_hand_compacted = &cut_rows["1"];
    for col in [
        "model_requests",
        "prompt_tokens",
        "summarizer_calls",
        "cost_usd",
    ] {
        assert_eq!(num(combo, col), num(by_hand_compacted, col), "{col}");
    }
    assert_eq!(
        num(combo, "baseline_prompt_tokens"),
        num(recorded, "prompt_tokens")
    );
    assert_eq!(num(combo, "invocations_failed"), 1.0);

    // The report prices it beside the recommended setting and lists the failed session.
    let report = std::fs::read_to_string(full.join("run/report.md")).unwrap();
    assert!(
        report.contains("| alternative | cost (USD, all sessions)"),
        "{report}"
    );
    assert!(report.contains("RunConfig(max\\_llm\\_calls=3)"));
    assert!(report.contains("session `ledger`: 1 failed invocation"));
}

/// By default (`--alternatives all`) caps are replayed only where some invocation exceeds
/// them; `--alternatives none` replays none, and its settings are the plain grid's.
#[test]
fn default_caps_follow_the_data_and_none_turns_them_off() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("in")).unwrap();
    std::fs::write(
        dir.path().join("in/ledger.session.json"),
        session(12, None).to_string(),
    )
    .unwrap();
    sweep(dir.path(), &dir.path().join("in"), &[]);
    let alts: Vec<String> = settings(dir.path())
        .iter()
        .filter_map(|s| {
            s["alternative"]
                .as_str()
                .filter(|a| !a.is_empty())
                .map(str::to_string)
        })
        .collect();
    // The one cap an invocation exceeds, no artifacts (no attachment), the default splits.
    assert_eq!(
        alts,
        ["max_llm_calls=10", "split:lossless", "split:idle=30m"]
    );
    let grid = std::fs::read_to_string(dir.path().join("run/grid.toml")).unwrap();
    assert!(grid.contains("max_llm_calls = [10]"), "{grid}");
    assert!(
        grid.contains("split = [\"lossless\", \"idle=30m\"]"),
        "{grid}"
    );
    assert!(!grid.contains("artifacts"), "{grid}");
    let d2 = tempfile::tempdir().unwrap();
    sweep(
        d2.path(),
        &dir.path().join("in"),
        &["--alternatives", "none"],
    );
    assert!(settings(d2.path()).iter().all(|s| s["alternative"] == ""));
    assert_eq!(settings(dir.path()).len(), settings(d2.path()).len() + 3);
}

/// Bad values get one line naming the flag.
#[test]
fn bad_alternative_flags_name_the_flag() {
    for (args, want) in [
        (vec!["--alternatives", "sometimes"], "--alternatives"),
        (vec!["--split", "idle=5d"], "split"),
        (vec!["--split", "sometimes"], "split"),
        (
            vec!["--alternatives", "cap", "--split", "lossless"],
            "--split",
        ),
        (vec!["--max-llm-calls", "0"], "max_llm_calls"),
        (vec!["--max-llm-calls", "ten"], "max_llm_calls"),
        (
            vec!["--alternatives", "none", "--max-llm-calls", "5"],
            "--max-llm-calls",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = bin()
            .current_dir(dir.path())
            .arg("sweep")
            .args(&args)
            .arg("--show-grid")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// A file named once and re-sent with 10 requests is sent once under `artifacts`: the
/// attachment tokens priced fall from 10 × the file to 1 × the file, and the tokens saved
/// against the recorded session are the other 9.
#[test]
fn a_file_resent_with_10_requests_is_sent_once_as_an_artifact() {
    let dir = tempfile::tempdir().unwrap();
    let csv: String = (0..120)
        .map(|i| {
            format!(
                "2026-11-{:02},invoice {i},{}.{:02},ORD-{}\n",
                i % 28 + 1,
                100 + i * 7,
                i % 100,
                50_000 + i * 13
            )
        })
        .collect();
    let data = {
        // base64 without a crate: the standard alphabet, padded.
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let b = csv.as_bytes();
        let mut out = String::new();
        for c in b.chunks(3) {
            let n = (c[0] as u32) << 16
                | (*c.get(1).unwrap_or(&0) as u32) << 8
                | *c.get(2).unwrap_or(&0) as u32;
            for k in 0..4 {
                if k <= c.len() {
                    out.push(A[(n >> (18 - 6 * k) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    };
    let mut t = 1_800_000_000.0;
    let mut tick = || {
        t += 5.0;
        t
    };
    let mut ev = vec![serde_json::json!({
        "invocation_id": "inv-1",
        "author": "user",
        "timestamp": tick(),
        "content": {"role": "user", "parts": [
            {"text": "Please check statement-9.csv for duplicates."},
            {"inline_data": {"display_name": "statement-9.csv", "mime_type": "text/csv", "data": data}},
        ]},
    })];
    for k in 1..=10 {
        if k < 10 {
            ev.push(event("inv-1", "agent", "model", tick(), serde_json::json!({"function_call": {"id": format!("c{k}"), "name": "lookup", "args": {"row": k}}})));
            ev.push(event("inv-1", "agent", "user", tick(), serde_json::json!({"function_response": {"id": format!("c{k}"), "name": "lookup", "response": {"ok": k}}})));
        } else {
            ev.push(event(
                "inv-1",
                "agent",
                "model",
                tick(),
                serde_json::json!({"text": "No duplicates."}),
            ));
        }
    }
    let doc = serde_json::json!({"id": "statement", "app_name": "a", "user_id": "u", "events": ev});
    std::fs::create_dir_all(dir.path().join("in")).unwrap();
    std::fs::write(
        dir.path().join("in/statement.session.json"),
        doc.to_string(),
    )
    .unwrap();
    sweep(
        dir.path(),
        &dir.path().join("in"),
        &["--alternatives", "artifacts"],
    );
    let set = settings(dir.path());
    let art = set
        .iter()
        .find(|s| s["alternative"] == "artifacts")
        .expect("an artifacts row (the session has an attachment)");
    assert!(set.iter().all(|s| !s["alternative"]
        .as_str()
        .unwrap()
        .starts_with("max_llm_calls")));
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("run/run.json")).unwrap())
            .unwrap();
    let file = run["session_facts"][0]["attachment_tokens"]
        .as_f64()
        .unwrap();
    assert!(file > 500.0, "{file}");
    let rows = runs(dir.path());
    let recorded = &rows["0"];
    let once = &rows[&art["setting_id"].as_u64().unwrap().to_string()];
    assert_eq!(num(recorded, "model_requests"), 10.0);
    assert_eq!(num(recorded, "attachment_prompt_tokens"), 10.0 * file);
    assert_eq!(num(once, "model_requests"), 10.0);
    assert_eq!(num(once, "attachment_prompt_tokens"), file, "sent once");
    assert_eq!(num(once, "tokens_saved_gross"), 9.0 * file);
    assert_eq!(
        num(once, "prompt_tokens"),
        num(recorded, "prompt_tokens") - 9.0 * file
    );
    assert_eq!(
        num(once, "baseline_prompt_tokens"),
        num(recorded, "prompt_tokens")
    );
    assert!(num(once, "cost_saved_usd") > 0.0);
    assert!(num(once, "cache_read_tokens") <= num(recorded, "cache_read_tokens"));
    assert_eq!(num(once, "invocations_failed"), 0.0);
}

/// Two unrelated tasks, two turns each (task A about a path, task B about an incident id; a
/// pause of 2 hours between them). `reuse` makes B's last answer name A's path.
fn two_tasks(reuse: bool) -> (serde_json::Value, serde_json::Value, serde_json::Value) {
    let mut t = 1_800_000_000.0;
    let mut turn = |inv: &str, ask: &str, answer: &str, pause: f64| {
        t += pause;
        let q = event(inv, "user", "user", t, serde_json::json!({"text": ask}));
        t += 9.0;
        let a = event(
            inv,
            "agent",
            "model",
            t,
            serde_json::json!({"text": answer}),
        );
        vec![q, a]
    };
    let mut a = turn(
        "a1",
        "Please open /srv/app/config.yaml and check it.",
        "I opened /srv/app/config.yaml: it is fine.",
        10.0,
    );
    a.extend(turn(
        "a2",
        "Then back it up.",
        "Backed up /srv/app/config.yaml to the archive.",
        30.0,
    ));
    let mut b = turn(
        "b1",
        "New question: what is incident INC-7741?",
        "INC-7741 is a login outage.",
        7200.0,
    );
    let last = if reuse {
        "The on-call team owns INC-7741; its notes are in /srv/app/config.yaml too."
    } else {
        "The on-call team owns INC-7741."
    };
    b.extend(turn("b2", "Who owns it?", last, 30.0));
    let doc = |id: &str, ev: Vec<serde_json::Value>| serde_json::json!({"id": id, "app_name": "a", "user_id": "u", "events": ev});
    let mut all = a.clone();
    all.extend(b.clone());
    (doc("both", all), doc("a", a), doc("b", b))
}

/// Splitting two unrelated tasks at their one lossless point costs exactly what the two
/// halves cost as sessions of their own, and breaks nothing; an idle split of 1 hour cuts
/// there too. When task B reuses A's path the point is gone (the lossless split is the
/// recorded session), and the idle split, which cuts anyway, breaks that reference.
#[test]
fn a_lossless_split_costs_what_the_two_halves_cost_alone() {
    for reuse in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let (both, a, b) = two_tasks(reuse);
        let mut halves = Vec::new();
        for (name, doc) in [("a", a), ("b", b)] {
            let d = dir.path().join(name);
            std::fs::create_dir_all(d.join("in")).unwrap();
            std::fs::write(d.join("in/s.session.json"), doc.to_string()).unwrap();
            sweep(&d, &d.join("in"), &["--alternatives", "none"]);
            halves.push(runs(&d)["0"].clone());
        }
        let d = dir.path().join("both");
        std::fs::create_dir_all(d.join("in")).unwrap();
        std::fs::write(d.join("in/s.session.json"), both.to_string()).unwrap();
        sweep(
            &d,
            &d.join("in"),
            &["--alternatives", "split", "--split", "lossless,idle=1h"],
        );
        let set = settings(&d);
        let id = |a: &str| {
            set.iter()
                .find(|s| s["alternative"] == a)
                .unwrap_or_else(|| panic!("{a} row"))["setting_id"]
                .as_u64()
                .unwrap()
                .to_string()
        };
        let rows = runs(&d);
        let recorded = &rows["0"];
        let lossless = &rows[&id("split:lossless")];
        let idle = &rows[&id("split:idle=1h")];
        let halves_sum = |c: &str| num(&halves[0], c) + num(&halves[1], c);
        if !reuse {
            for col in ["model_requests", "prompt_tokens"] {
                assert_eq!(num(lossless, col), halves_sum(col), "{col}");
                assert_eq!(num(idle, col), halves_sum(col), "{col}");
            }
            assert!((num(lossless, "cost_usd") - halves_sum("cost_usd")).abs() < 1e-6);
            assert!(num(lossless, "prompt_tokens") < num(recorded, "prompt_tokens"));
            assert_eq!(num(lossless, "references_broken"), 0.0);
            assert_eq!(
                num(lossless, "baseline_prompt_tokens"),
                num(recorded, "prompt_tokens")
            );
            assert_eq!(
                num(lossless, "tokens_saved_gross"),
                num(recorded, "prompt_tokens") - halves_sum("prompt_tokens")
            );
        } else {
            for col in ["model_requests", "prompt_tokens", "cost_usd"] {
                assert_eq!(num(lossless, col), num(recorded, col), "{col}");
            }
            assert_eq!(num(idle, "prompt_tokens"), halves_sum("prompt_tokens"));
            assert!(num(idle, "references_broken") >= 1.0, "{idle:?}");
            assert!(num(idle, "references_broken_share") > 0.0);
        }
    }
}

/// When a lossless split beats every compaction setting within the budgets (two unrelated
/// tasks, the first with a long message), the report's recommendation names it with the
/// action to take, the recommendation itself stays a compaction setting, and the
/// cost-vs-detail chart draws the alternatives with their own marker and labels.
#[test]
fn a_winning_lossless_split_is_named_beside_the_recommendation() {
    let dir = tempfile::tempdir().unwrap();
    let long: String = (0..3000).map(|i| format!("word{i} ")).collect();
    let mut t = 1_800_000_000.0;
    let mut ev = Vec::new();
    let mut turn = |inv: &str, ask: &str, answer: &str, pause: f64| {
        t += pause;
        ev.push(event(
            inv,
            "user",
            "user",
            t,
            serde_json::json!({"text": ask}),
        ));
        t += 9.0;
        ev.push(event(
            inv,
            "agent",
            "model",
            t,
            serde_json::json!({"text": answer}),
        ));
    };
    turn(
        "a1",
        &format!("Please open /srv/app/config.yaml and check it. {long}"),
        "I opened /srv/app/config.yaml: it is fine.",
        10.0,
    );
    turn(
        "a2",
        "Then back it up.",
        "Backed up /srv/app/config.yaml to the archive.",
        30.0,
    );
    turn(
        "b1",
        "New question: what is incident INC-7741?",
        "INC-7741 is a login outage.",
        60.0,
    );
    turn(
        "b2",
        "Who owns it?",
        "The on-call team owns INC-7741.",
        30.0,
    );
    turn("b3", "And when?", "INC-7741 started at noon.", 30.0);
    let doc = serde_json::json!({"id": "two", "app_name": "a", "user_id": "u", "events": ev});
    std::fs::create_dir_all(dir.path().join("in")).unwrap();
    std::fs::write(dir.path().join("in/s.session.json"), doc.to_string()).unwrap();
    sweep(
        dir.path(),
        &dir.path().join("in"),
        &["--alternatives", "split"],
    );
    let set = settings(dir.path());
    let reco = set
        .iter()
        .find(|s| s["recommended"] == true)
        .expect("a recommendation");
    assert_eq!(reco["alternative"], "");
    let split = set
        .iter()
        .find(|s| s["alternative"] == "split:lossless")
        .unwrap();
    assert!(split["cost_usd_sum"].as_f64().unwrap() < reco["cost_usd_sum"].as_f64().unwrap());
    let report = std::fs::read_to_string(dir.path().join("run/report.md")).unwrap();
    assert!(
        report.contains("One of the guide's alternatives beats every compaction setting within the budgets: a new session at every lossless split point"),
        "{report}"
    );
    assert!(report.contains("To deploy it: start a new session"));
    // It wins, so it is on the frontier: in settings.json, as a frontier row of the report
    // marked as an alternative, and on the explorer's page (never its pick).
    assert_eq!(split["pareto"], true, "{split}");
    let row = report
        .lines()
        .find(|l| l.starts_with("| F") && l.contains("lossless split point"))
        .unwrap_or_else(|| panic!("a frontier row for the split: {report}"));
    assert!(row.contains("alternative"), "{row}");
    assert!(!row.contains("baseline"), "{row}");
    assert!(report.contains("Rows marked alternative are the guide's alternatives"));
    let html = std::fs::read_to_string(dir.path().join("run/report.html")).unwrap();
    assert!(
        html.contains("\"split:lossless\""),
        "the alternative in the explorer's data"
    );
    let svg = std::fs::read_to_string(dir.path().join("run/cost_vs_detail.svg")).unwrap();
    assert!(svg.contains("split:lossless"), "the alternative's label");
    assert!(
        svg.contains("the guide&apos;s alternatives\n</text>"),
        "the alternatives' legend"
    );
}
