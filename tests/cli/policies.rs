//! Issue 28: other frameworks' compaction policies (`--policy`, docs/policies.md) replayed
//! beside the ADK settings, through the binary.

use crate::common::{bin, read_text, root};
use std::path::Path;

/// Every family, with thresholds low enough that the repository's small transcripts reach
/// them (the shipped defaults do not fire on sessions this short).
const LOW: &[&str] = &[
    "--policy",
    "all",
    "--clear-trigger",
    "5k,20k",
    "--clear-keep",
    "1,3",
    "--pct",
    "5",
    // 5 % of a 1,000,000-token auto-compact window, where the price table's window put it
    // before `--cc-window`: 5 % of the 200,000 default (9,000) fires on nearly every request
    // and meets a detail-lost share above 1 that main has too (`--pct 1` on a 1M window)
    "--cc-window",
    "1M",
    "--codex-pct",
    "5",
    "--openhands-max-size",
    "20",
    "--lc-trigger",
    "tokens:5k",
    "--gemini-threshold",
    "0.03",
    "--ts-n",
    "2",
    "--ts-m",
    "1",
    "--hybrid-n",
    "2",
    "--hybrid-m",
    "1",
    "--anthropic-trigger",
    "50k",
    "--summarizer",
    "terse",
    "-q",
];

fn sweep(out: &Path, extra: &[&str], threads: &str) {
    let o = bin()
        .env("RAYON_NUM_THREADS", threads)
        .arg("sweep")
        .arg(root().join("transcripts"))
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn settings(dir: &Path) -> Vec<serde_json::Value> {
    serde_json::from_str(&read_text(&dir.join("settings.json"))).unwrap()
}

/// Each family gets rows beside the ADK settings, with its `policy` column; the policies are
/// ranked with them in "Other policies" but never recommended; the same bytes whatever the
/// thread count; the run's grid.toml gives the same settings again.
#[test]
fn every_policy_runs_beside_the_adk_settings() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    sweep(&a, LOW, "1");
    sweep(&b, LOW, "3");
    for f in ["settings.csv", "runs.csv", "report.md"] {
        assert_eq!(
            read_text(&a.join(f)).replace("# Compaction report: a", ""),
            read_text(&b.join(f)).replace("# Compaction report: b", ""),
            "{f} depends on the thread count"
        );
    }
    // the `as recorded` row is a policy row too, but no `--policy` family
    let rows: Vec<_> = settings(&a)
        .into_iter()
        .filter(|r| r["policy"] != "as-recorded")
        .collect();
    let families: std::collections::BTreeSet<&str> =
        rows.iter().filter_map(|r| r["policy"].as_str()).collect();
    assert_eq!(families.len(), 10, "{families:?}");
    let policy_rows: Vec<&serde_json::Value> =
        rows.iter().filter(|r| r["policy"].is_string()).collect();
    // clear-tool-results: 2 triggers x 2 keeps
    assert_eq!(
        policy_rows
            .iter()
            .filter(|r| r["policy"] == "clear-tool-results")
            .count(),
        4
    );
    for r in &policy_rows {
        assert_eq!(r["trigger_kind"], "policy");
        assert_eq!(r["recommended"], false);
        assert!(r["label"].as_str().unwrap().contains("not an ADK setting"));
    }
    // clearing tool results hides detail with no summary: measured, not estimated
    let clear = policy_rows
        .iter()
        .find(|r| r["policy_setting"] == "trigger=5000 keep=1 clear_at_least=0")
        .unwrap();
    assert!(clear["tokens_saved_net_sum"].as_f64().unwrap() > 0.0);
    assert_eq!(clear["summarizer_calls_sum"].as_f64().unwrap(), 0.0);
    assert_eq!(clear["references_broken_basis"], "measured");
    // the summarizing policies fire and call the summarizer
    for fam in [
        "claude-code",
        "codex",
        "openhands",
        "langchain",
        "gemini-cli",
        "turn-summary",
        "hybrid",
        "anthropic-compaction",
    ] {
        let r = policy_rows.iter().find(|r| r["policy"] == fam).unwrap();
        assert!(r["summarizer_calls_sum"].as_f64().unwrap() > 0.0, "{fam}");
    }
    let reco = rows.iter().find(|r| r["recommended"] == true).unwrap();
    assert!(reco.get("policy").is_none());
    let md = read_text(&a.join("report.md"));
    let sec = md.split("## Other policies").nth(1).expect("section");
    let sec = sec.split("\n## ").next().unwrap();
    assert!(sec.contains("ADK: recommended") && sec.contains("ADK: no compaction"));
    for fam in &families {
        assert!(sec.contains(&format!("| {fam} |")), "{fam} missing");
    }
    // grid.toml lists the policy axes: the same settings again from it
    let c = dir.path().join("c");
    let grid = a.join("grid.toml");
    assert!(read_text(&grid).contains("clear_trigger = [5000, 20000]"));
    assert!(read_text(&grid).contains("cc_window = [1000000]"));
    let cc = policy_rows
        .iter()
        .find(|r| r["policy"] == "claude-code")
        .unwrap();
    assert_eq!(cc["policy_setting"], "pct=5 window=1000000");
    sweep(&c, &["--grid", grid.to_str().unwrap(), "-q"], "2");
    assert_eq!(
        read_text(&a.join("settings.csv")),
        read_text(&c.join("settings.csv"))
    );
}

/// A policy axis without its policy, an unknown policy and an out-of-range value are each
/// refused in one line naming the flag.
#[test]
fn bad_policy_flags_are_refused_in_one_line() {
    for (args, must) in [
        (vec!["--clear-keep", "3"], "clear_keep"),
        (vec!["--policy", "summarize-harder"], "policy"),
        (vec!["--policy", "claude-code", "--pct", "150"], "pct"),
        (
            vec!["--policy", "claude-code", "--cc-window", "0"],
            "cc_window",
        ),
        (
            vec!["--policy", "codex", "--cc-window", "150k"],
            "cc_window",
        ),
        (
            vec!["--policy", "langchain", "--lc-trigger", "lots"],
            "lc_trigger",
        ),
        (
            vec!["--policy", "openhands", "--openhands-keep-first", "200"],
            "openhands_keep_first",
        ),
        (vec!["--policy", "turn-summary", "--ts-n", "0"], "ts_n"),
        (vec!["--hybrid-window", "5"], "hybrid_window"),
        (
            vec![
                "--policy",
                "anthropic-compaction",
                "--anthropic-trigger",
                "40k",
            ],
            "anthropic_trigger",
        ),
        (vec!["--anthropic-trigger", "150k"], "anthropic_trigger"),
        (
            vec!["--policy", "gemini-cli", "--gemini-profile", "turbo"],
            "gemini_profile",
        ),
        (vec!["--policy", "langchain", "--lc-trim", "0"], "lc_trim"),
        (
            vec!["--policy", "openhands", "--openhands-max-tokens", "lots"],
            "openhands_max_tokens",
        ),
        (
            vec!["--policy", "gemini-cli", "--codex-retain", "20k"],
            "codex_retain",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let o = bin()
            .arg("sweep")
            .arg(root().join("transcripts"))
            .arg("--out")
            .arg(dir.path().join("run"))
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(must), "{args:?}: {err}");
    }
}

/// Issue 38: on SWE-agent trajectories (synthetic, `synth --swe-agent-turns`) `turn-summary`
/// (N 21, M 10) first fires before request 31, when 31 turns exist, then every 21 requests;
/// the hybrid (N 43, M 10) first before request 53. One summarizer call per firing.
#[test]
fn turn_summary_and_hybrid_fire_at_n_plus_m_turns_of_swe_agent_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (trajs, out) = (dir.path().join("trajs"), dir.path().join("run"));
    let o = bin()
        .args([
            "synth",
            "--swe-agent-turns",
            "31,32,52,53,54",
            "--turn-tokens",
            "200",
        ])
        .arg("--out")
        .arg(&trajs)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = bin()
        .arg("sweep")
        .arg(&trajs)
        .args(["--policy", "turn-summary,hybrid", "--summarizer", "terse"])
        .args([
            "--trigger",
            "tokens",
            "--after-tokens",
            "10M",
            "--keep-recent-events",
            "5",
        ])
        .args([
            "--alternatives",
            "none",
            "--agent-model",
            "gemini-2.5-flash",
            "-q",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = read_text(&out.join("runs.csv"));
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    let (src, pol, calls, saved) = (
        col("source"),
        col("policy"),
        col("summarizer_calls"),
        col("tokens_saved_net"),
    );
    let mut got: Vec<(String, String, String)> = Vec::new();
    for l in lines {
        let row: Vec<&str> = l.split(',').collect();
        if row[pol] != "turn-summary" && row[pol] != "hybrid" {
            continue;
        }
        let turns = row[src]
            .rsplit('-')
            .next()
            .unwrap()
            .trim_end_matches(".traj");
        got.push((row[pol].into(), turns.into(), row[calls].into()));
        if row[pol] == "hybrid" {
            // masking saves from request 11 on, whether or not the summary fired
            assert!(row[saved].parse::<f64>().unwrap() > 0.0, "{l}");
        }
    }
    got.sort();
    let want = |fam: &str, calls: [u32; 5]| -> Vec<(String, String, String)> {
        ["31", "32", "52", "53", "54"]
            .iter()
            .zip(calls)
            .map(|(t, c)| (fam.to_string(), t.to_string(), c.to_string()))
            .collect()
    };
    let mut expect = want("hybrid", [0, 0, 0, 0, 1]);
    expect.extend(want("turn-summary", [0, 1, 1, 2, 2]));
    assert_eq!(got, expect);
}

/// Issue 38 item 1: the new axes (`--codex-retain`, `--gemini-profile`, `--lc-trim`,
/// `--openhands-max-tokens`, `--anthropic-trigger`) give one setting per value, the run's
/// grid.toml lists them and gives the same settings again, and a summarizer that reads
/// less of what it replaces breaks more references while `detail_lost` stays a share.
#[test]
fn new_policy_axes_round_trip_through_grid_toml() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let args = [
        "--policy",
        "codex,openhands,langchain,gemini-cli,anthropic-compaction",
        "--codex-pct",
        "5",
        "--codex-retain",
        "20k,64k",
        "--openhands-max-tokens",
        "none,5k",
        "--lc-trigger",
        "tokens:5k",
        "--lc-trim",
        "500,none",
        "--gemini-profile",
        "default,generalist",
        "--anthropic-trigger",
        "50k",
        "--summarizer",
        "terse",
        // one ADK setting and no alternatives: the policy axes are what this test is about
        "--trigger",
        "tokens",
        "--after-tokens",
        "100k",
        "--keep-recent-events",
        "5",
        "--alternatives",
        "none",
        "-q",
    ];
    sweep(&a, &args, "2");
    let rows: Vec<_> = settings(&a)
        .into_iter()
        .filter(|r| r["policy"].is_string() && r["policy"] != "as-recorded")
        .collect();
    let setting = |fam: &str, s: &str| {
        rows.iter()
            .find(|r| r["policy"] == fam && r["policy_setting"] == s)
            .unwrap_or_else(|| panic!("{fam} {s} missing"))
    };
    setting("codex", "limit_pct=5 retain=20000");
    setting("codex", "limit_pct=5 retain=64000");
    setting("openhands", "max_size=240 keep_first=2");
    let oh = setting("openhands", "max_size=240 keep_first=2 max_tokens=5000");
    assert!(oh["summarizer_calls_sum"].as_f64().unwrap() > 0.0);
    setting("gemini-cli", "threshold=0.5");
    setting(
        "gemini-cli",
        "profile=generalist max_tokens=150000 retained_tokens=65000",
    );
    setting("anthropic-compaction", "trigger=50000");
    let trimmed = setting("langchain", "trigger=tokens:5000 keep=messages:20 trim=500");
    let whole = setting(
        "langchain",
        "trigger=tokens:5000 keep=messages:20 trim=none",
    );
    // what the summarizer never read is missing from its summaries: more references break
    let num = |r: &serde_json::Value, k: &str| r[k].as_f64().unwrap();
    assert!(
        num(trimmed, "references_broken_sum") > num(whole, "references_broken_sum"),
        "{} {}",
        trimmed["references_broken_sum"],
        whole["references_broken_sum"]
    );
    assert!(
        num(trimmed, "summarizer_output_tokens_sum") < num(whole, "summarizer_output_tokens_sum")
    );
    for r in &rows {
        let d = r["detail_lost_max"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&d), "{}: {d}", r["policy_setting"]);
    }
    let grid = read_text(&a.join("grid.toml"));
    for line in [
        "codex_retain = [20000, 64000]",
        "openhands_max_tokens = [\"none\", \"5000\"]",
        "lc_trim = [\"500\", \"none\"]",
        "gemini_profile = [\"default\", \"generalist\"]",
        "anthropic_trigger = [50000]",
    ] {
        assert!(grid.contains(line), "{line} missing from\n{grid}");
    }
    sweep(
        &b,
        &[
            "--grid",
            a.join("grid.toml").to_str().unwrap(),
            "--alternatives",
            "none",
            "-q",
        ],
        "1",
    );
    assert_eq!(
        read_text(&a.join("settings.csv")),
        read_text(&b.join("settings.csv"))
    );
}

/// Issue 45: a claude-code or openhands policy's summaries, written by a modelled summarizer,
/// are estimated with the retention of that family's recorded summaries; any other policy's
/// with the pooled fit; the report says which summaries each rests on. Under a table whose
/// pooled rates are 0 and whose claude-code rates are 1, claude-code's estimate is its low
/// bound (only what the summarizer cannot see is broken) and codex's its high bound.
#[test]
fn a_claude_code_policy_s_summaries_are_estimated_with_the_claude_code_fit() {
    let dir = tempfile::tempdir().unwrap();
    let kinds = |rate: f64| {
        ["url", "email", "quoted", "path", "id", "number"]
            .iter()
            .map(|k| {
                format!(
                    "[retention.KINDS.{k}]\nsummaries = 9\nat_risk = 10\nkept = {}\nrate = {rate}\n",
                    (rate * 10.0) as u64
                )
            })
            .collect::<String>()
    };
    let table = format!(
        "[retention]\nsource = \"test\"\nsummaries = 18\nmodels = [\"m\"]\n{}\n\
         [retention.families.claude-code]\nsummaries = 9\nmodels = [\"m\"]\n{}",
        kinds(0.0).replace("KINDS", "kinds"),
        kinds(1.0).replace("KINDS", "families.claude-code.kinds")
    );
    let latency = dir.path().join("latency.toml");
    std::fs::write(&latency, table).unwrap();
    let out = dir.path().join("run");
    sweep(
        &out,
        &[
            "--policy",
            "claude-code,codex",
            "--pct",
            "5",
            "--cc-window",
            "1M",
            "--codex-pct",
            "5",
            "--summarizer",
            "agent",
            "--alternatives",
            "none",
            "--latency",
            latency.to_str().unwrap(),
            "-q",
        ],
        "2",
    );
    let rows = settings(&out);
    let row = |fam: &str| rows.iter().find(|r| r["policy"] == fam).unwrap();
    let f = |r: &serde_json::Value, c: &str| r[c].as_f64().unwrap_or_else(|| panic!("{c}"));
    for (fam, bound) in [
        ("claude-code", "references_broken_low_sum"),
        ("codex", "references_broken_high_sum"),
    ] {
        let r = row(fam);
        assert_eq!(r["references_broken_basis"], "estimated", "{fam}");
        assert!(
            f(r, "references_broken_low_sum") < f(r, "references_broken_high_sum"),
            "{fam}: the bounds differ, so the fit decides"
        );
        assert_eq!(f(r, "references_broken_sum"), f(r, bound), "{fam}");
    }
    let md = read_text(&out.join("report.md"));
    let sec = md.split("## Other policies").nth(1).expect("section");
    assert!(
        sec.contains("the claude-code policy's on 9 claude-code summaries; the other policies' on the pooled fit of 18 summaries (claude-code 9)"),
        "{sec}"
    );
}

/// One Claude Code session line of a hand-made transcript (the shapes `cli.js` writes).
fn cc_line(session: &str, cwd: &str, n: usize, kind: &str, message: serde_json::Value) -> String {
    let mut v = serde_json::json!({
        "type": kind,
        "uuid": format!("{session}-{n}"),
        "sessionId": session,
        "version": "2.1.39",
        "cwd": cwd,
        "timestamp": format!("2026-01-01T00:00:{n:02}Z"),
        "message": message,
    });
    if kind == "assistant" {
        v["requestId"] = format!("{session}-r{n}").into();
    }
    v.to_string()
}

/// A Claude Code session in `cwd`: a prompt and a response, then (when `read` holds a
/// settings file's path and text) a `Read` of it and its numbered result, then a response.
fn cc_file(session: &str, cwd: &str, read: Option<(&str, &str)>) -> String {
    let usage = |p: u64| serde_json::json!({ "input_tokens": p, "output_tokens": 20 });
    let answer = |n: usize, p: u64, content: serde_json::Value| {
        let m = serde_json::json!({
            "id": format!("{session}-m{n}"), "model": "claude-opus-4-5-20251101",
            "role": "assistant", "content": content, "usage": usage(p),
        });
        cc_line(session, cwd, n, "assistant", m)
    };
    let mut lines = vec![
        cc_line(
            session,
            cwd,
            0,
            "user",
            serde_json::json!({"role": "user", "content": "go"}),
        ),
        answer(
            1,
            1_000,
            serde_json::json!([{"type": "text", "text": "ok"}]),
        ),
    ];
    if let Some((path, text)) = read {
        let call = serde_json::json!([{"type": "tool_use", "id": "t1", "name": "Read",
            "input": {"file_path": path}}]);
        lines.push(answer(2, 1_100, call));
        let numbered: String = text
            .lines()
            .enumerate()
            .map(|(i, l)| format!("{:>6}→{l}\n", i + 1))
            .collect();
        let result = serde_json::json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": numbered}]});
        lines.push(cc_line(session, cwd, 3, "user", result));
    }
    lines.push(answer(
        4,
        1_300,
        serde_json::json!([{"type": "text", "text": "done"}]),
    ));
    lines.join("\n") + "\n"
}

/// A settings file one session read applies to the sessions of the same home in other
/// files, which the sweep's first pass listed before it read it: each is read again with
/// those settings (`refresh_shared`, a file once however many of its sessions it holds), so
/// their as-recorded rule carries the file's CLAUDE_AUTOCOMPACT_PCT_OVERRIDE; a session of
/// another home does not.
#[test]
fn a_settings_file_read_in_one_file_applies_to_its_homes_sessions_in_others() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    let settings = "{\n  \"env\": {\n    \"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE\": \"50\"\n  }\n}";
    let read = Some(("/Users/pat/.claude/settings.json", settings));
    let files = [
        ("a.jsonl", cc_file("a", "/Users/pat/work", read)),
        ("b1.jsonl", cc_file("b1", "/Users/pat/other", None)),
        ("b2.jsonl", cc_file("b2", "/Users/pat/more", None)),
        ("c.jsonl", cc_file("c", "/Users/sam/work", None)),
    ];
    for (name, text) in &files {
        std::fs::write(input.join(name), text).unwrap();
    }
    let out = dir.path().join("run");
    let o = bin()
        .arg("sweep")
        .arg(&input)
        .args(["--out"])
        .arg(&out)
        .args(["--quiet", "--no-cache", "--alternatives", "none"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run: serde_json::Value = serde_json::from_str(&read_text(&out.join("run.json"))).unwrap();
    let label = |id: &str| {
        run["session_facts"]
            .as_array()
            .expect("session_facts")
            .iter()
            .find(|s| s["session_id"] == id)
            .unwrap_or_else(|| panic!("no session {id}: {run:#}"))["as_recorded"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let lowered = "lowered by CLAUDE_AUTOCOMPACT_PCT_OVERRIDE";
    for id in ["a", "b1", "b2"] {
        assert!(label(id).contains(lowered), "{id}: {}", label(id));
    }
    assert!(!label("c").contains(lowered), "{}", label("c"));
}
