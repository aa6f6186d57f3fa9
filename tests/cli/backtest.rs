//! `backtest`: recorded compactions beside the `as recorded` replay (issue 37).

use crate::common::{bin, corpus_dir, json_stdout};

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
