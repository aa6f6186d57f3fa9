//! `backtest`: recorded compactions beside the `as recorded` replay (issue 37).

use crate::common::{bin, corpus_dir, json_stdout, read_text};

/// The corpus's automatic Claude Code compactions are matched at the recorded request (within
/// one) by their CLI version's rule, tokens before within 5 %; manual ones are listed only;
/// the 15 OpenHands condensations at the recorded event by the recorded condenser.
#[test]
fn recorded_compactions_match_their_frameworks_rule() {
    let out = bin()
        .arg("backtest")
        .arg(corpus_dir("claude_code_spotter"))
        .arg(corpus_dir("real_compactions"))
        .arg("--json")
        .output()
        .unwrap();
    let doc = json_stdout(&out, "backtest --json");
    let rows = doc["compactions"].as_array().expect("compactions");
    let auto: Vec<_> = rows
        .iter()
        .filter(|r| r["trigger"] == "auto" && r["framework"] == "claude-code")
        .collect();
    assert_eq!(auto.len(), 10, "{rows:#?}");
    for r in &auto {
        assert_eq!(r["matched"], true, "{r:#}");
        let rec = r["recorded_tokens_before"].as_f64().unwrap();
        let got = r["predicted_tokens_before"].as_f64().unwrap();
        assert!((got - rec).abs() / rec < 0.05, "{r:#}");
    }
    let manual = rows.iter().filter(|r| r["trigger"] == "manual").count();
    assert_eq!(manual, 7);
    assert!(rows
        .iter()
        .filter(|r| r["trigger"] == "manual")
        .all(|r| r["predicted_request"].is_null() && r["matched"].is_null()));
    let cc = &doc["frameworks"]["claude-code"];
    assert_eq!(cc["auto_recorded"], 10);
    assert_eq!(cc["auto_matched"], 10);
    let oh = &doc["frameworks"]["openhands"];
    assert_eq!(
        (&oh["auto_recorded"], &oh["auto_matched"]),
        (&15.into(), &15.into())
    );
    assert!(rows
        .iter()
        .filter(|r| r["framework"] == "openhands")
        .all(|r| r["predicted_request"] == r["recorded_request"]));
    for key in [
        "source",
        "session_id",
        "framework",
        "trigger",
        "recorded_request",
        "predicted_request",
        "recorded_tokens_before",
        "predicted_tokens_before",
        "recorded_tokens_after",
        "predicted_tokens_after",
    ] {
        assert!(rows[0].get(key).is_some(), "{key} missing: {:#}", rows[0]);
    }
}

/// Issue 37's "`sweep --policy claude-code` fires where `backtest` says": on the corpus's Claude
/// Code sessions whose recorded compactions are all automatic, the sweep's `claude-code` row
/// (default 200,000 auto-compact window, each session's recorded CLI version) makes as many
/// compactions as were recorded (runs.csv `summarizer_calls`, one call per compaction), and the
/// same replay through the library (`policy::replay_spec`, what the sweep calls; runs.csv has
/// no per-request column) fires within one request of each one `backtest --json` predicts.
/// Sessions with a manual compaction are left out: there the user compacted first (or turned
/// auto-compact off), and the sweep's policy, auto-compact on, is a what-if.
#[test]
fn sweep_claude_code_fires_where_backtest_predicts() {
    use compaction_sim::engine::summarizer::{Deterministic, Policy};
    use compaction_sim::policy::{replay_spec, Ctx, PolicySpec};
    use compaction_sim::tokens::sizes::SessionSizes;
    use compaction_sim::tokens::{count_sessions, CacheOpts, Tokenizer};
    use std::collections::BTreeMap;

    let dirs = [
        corpus_dir("claude_code_spotter"),
        corpus_dir("real_compactions").join("claude_code"),
    ];
    let paths: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    let out = bin()
        .arg("backtest")
        .args(&paths)
        .arg("--json")
        .output()
        .unwrap();
    let doc = json_stdout(&out, "backtest --json");
    // per session: the predicted requests of its automatic compactions (None: has a manual one)
    let mut want: BTreeMap<(String, String), Option<Vec<u64>>> = BTreeMap::new();
    for r in doc["compactions"].as_array().expect("compactions") {
        let key = (
            r["source"].as_str().unwrap().to_string(),
            r["session_id"].as_str().unwrap().to_string(),
        );
        let entry = want.entry(key).or_insert_with(|| Some(Vec::new()));
        match (r["trigger"].as_str(), r["predicted_request"].as_u64()) {
            (Some("auto"), Some(p)) => {
                if let Some(v) = entry {
                    v.push(p)
                }
            }
            (Some("auto"), None) => panic!("backtest predicted none: {r:#}"),
            _ => *entry = None,
        }
    }
    let want: BTreeMap<_, Vec<u64>> = want
        .into_iter()
        .filter_map(|(k, v)| Some((k, v?)))
        .collect();
    assert_eq!(want.values().map(Vec::len).sum::<usize>(), 10, "{want:?}");

    // the sweep: one row per session for claude-code at its defaults
    let dir = tempfile::tempdir().unwrap();
    let o = bin()
        .arg("sweep")
        .args(&paths)
        .args(["--trigger", "tokens", "--after-tokens", "100k"])
        .args(["--keep-recent-events", "5", "--summarizer", "terse"])
        .args(["--policy", "claude-code", "-q", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let runs = read_text(&dir.path().join("runs.csv"));
    let mut lines = runs.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (sid, src, kind, calls, setting) = (
        col("session_id"),
        col("source"),
        col("trigger_kind"),
        col("summarizer_calls"),
        col("policy_setting"),
    );
    let mut swept: BTreeMap<(String, String), u64> = BTreeMap::new();
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        if f[kind] == "policy" {
            assert_eq!(f[setting], "pct=default window=200000");
            swept.insert((f[src].into(), f[sid].into()), f[calls].parse().unwrap());
        }
    }

    // the same replay through the library, per request
    let mut sessions = compaction_sim::transcript::load_paths(&paths, None).sessions;
    sessions.sort_by(|a, b| (&a.source, &a.id).cmp(&(&b.source, &b.id)));
    let counts = count_sessions(&sessions, Tokenizer::O200k, &CacheOpts::disabled()).unwrap();
    let spec = PolicySpec::ClaudeCode {
        pct: None,
        window: 200_000,
    };
    let summ = Deterministic::new(Policy::Fixed(16_000), Vec::new(), Vec::<String>::new());
    for (s, c) in sessions.iter().zip(&counts) {
        let key = (s.source.clone(), s.id.clone());
        let Some(predicted) = want.get(&key) else {
            continue;
        };
        let sizes = SessionSizes::new(s, Some(c.as_slice()));
        let ctx = Ctx {
            sizes: &sizes,
            session: s,
            window: Some(1_000_000),
        };
        let r = replay_spec(&spec, &ctx, &summ);
        let fired: Vec<u64> = r
            .compactions
            .iter()
            .filter_map(|c| c.before_event_index)
            .map(|k| r.requests.partition_point(|q| q.event_index < k) as u64)
            .collect();
        assert_eq!(
            fired.len(),
            predicted.len(),
            "{key:?}: {fired:?} vs {predicted:?}"
        );
        for (f, p) in fired.iter().zip(predicted) {
            assert!(f.abs_diff(*p) <= 1, "{key:?}: {fired:?} vs {predicted:?}");
        }
        assert_eq!(swept.get(&key), Some(&(predicted.len() as u64)), "{key:?}");
    }
}
