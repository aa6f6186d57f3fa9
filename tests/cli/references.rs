//! References (metrics.md "References", issue #11): what a summary must keep for the agent's
//! later requests, measured on the summary texts or bounded for modelled summarizers.

use crate::common::*;
use compaction_sim::cost::client::ClientMode;
use compaction_sim::cost::{evaluate, CostModel, CostSetting, SessionCostInputs};
use compaction_sim::detail::references::Basis;
use compaction_sim::engine::{self, Config, Summarizer, UsageMode};
use compaction_sim::summarize::SummarizerSpec;
use compaction_sim::tokens::sizes::SessionSizes;
use compaction_sim::tokens::Tokenizer;
use compaction_sim::transcript::{Event, Format, Part, Role, Session};
use serde_json::Value;
use std::path::Path;

/// A `command:` summarizer printing every string and number of its stdin JSON (the span's
/// events and the seed summary), one per line.
const ECHO_PY: &str = r#"import json, sys
def walk(v, out):
    if isinstance(v, str): out.append(v)
    elif isinstance(v, bool) or v is None: pass
    elif isinstance(v, (int, float)): out.append(json.dumps(v))
    elif isinstance(v, list):
        for x in v: walk(x, out)
    elif isinstance(v, dict):
        for x in v.values(): walk(x, out)
out = []
walk(json.load(sys.stdin), out)
print("\n".join(out))
"#;

fn echo_script(dir: &Path) -> String {
    let p = dir.join("echo_all.py");
    std::fs::write(&p, ECHO_PY).unwrap();
    format!("command:python3 {}", p.display())
}

fn replay_metrics(file: &Path, summarizer: &str) -> Value {
    let out = bin()
        .arg("replay")
        .arg(file)
        .args([
            "--after-tokens",
            "20000",
            "--keep-recent-events",
            "5",
            "--json",
        ])
        .args(["--summarizer", summarizer])
        .output()
        .unwrap();
    let v = crate::common::json_stdout(&out, "replay");
    let v = if v.is_array() { v[0].clone() } else { v };
    v["metrics"].clone()
}

fn n(m: &Value, k: &str) -> f64 {
    m[k].as_f64()
        .unwrap_or_else(|| panic!("{k} missing in {m}"))
}

#[test]
fn an_echo_command_breaks_no_reference_and_x_breaks_every_one_at_risk() {
    // A recorded Claude Code coding session (a sub-agent run), compacted at 20k tokens.
    let file = corpus_dir("claude_code_spotter").join("subagent.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let echo = replay_metrics(&file, &echo_script(dir.path()));
    assert!(n(&echo, "references_at_risk") > 0.0, "{echo}");
    assert_eq!(n(&echo, "references_broken"), 0.0, "{echo}");
    assert_eq!(echo["references_broken_basis"], "measured");
    let x = replay_metrics(&file, "command:echo x");
    assert!(n(&x, "references_at_risk") > 0.0, "{x}");
    assert_eq!(
        n(&x, "references_broken"),
        n(&x, "references_at_risk"),
        "{x}"
    );
    assert_eq!(n(&x, "references_broken_low"), n(&x, "references_broken"));
    let share = n(&x, "references_broken") / n(&x, "references");
    assert!(
        (n(&x, "references_broken_share") - share).abs() < 1e-9,
        "{x}"
    );
    // A modelled summarizer: estimated, within its bounds.
    let agent = replay_metrics(&file, "agent");
    assert_eq!(agent["references_broken_basis"], "estimated");
    let (lo, est, hi) = (
        n(&agent, "references_broken_low"),
        n(&agent, "references_broken"),
        n(&agent, "references_broken_high"),
    );
    assert!(lo <= est && est <= hi && hi > 0.0, "{agent}");
    assert_eq!(hi, n(&agent, "references_at_risk"));
}

fn event(author: &str, role: Role, inv: &str, t: f64, part: Part) -> Event {
    let mut e = Event::new(author, role, inv, t);
    e.model_request = role == Role::Model;
    e.parts.push(part);
    e
}

/// Invocation 0: the user asks, the agent lists files, the tool result names
/// `src/app/config.rs` after `pad` chars of other output, the agent answers without naming it.
/// Invocation 1: the user says go on, the agent edits that path.
fn path_session(pad: usize) -> Session {
    let listing = format!("{} src/app/config.rs", "x".repeat(pad));
    let events = vec![
        event(
            "user",
            Role::User,
            "i0",
            1.0,
            Part::Text {
                text: "the loader crashes; find its config".into(),
            },
        ),
        event(
            "agent",
            Role::Model,
            "i0",
            2.0,
            Part::ToolCall {
                id: Some("c1".into()),
                name: "ls".into(),
                args: serde_json::json!({"dir": "."}),
            },
        ),
        event(
            "agent",
            Role::User,
            "i0",
            3.0,
            Part::ToolResponse {
                id: Some("c1".into()),
                name: "ls".into(),
                response: serde_json::json!({ "out": listing }),
            },
        ),
        event(
            "agent",
            Role::Model,
            "i0",
            4.0,
            Part::Text {
                text: "Found the config file.".into(),
            },
        ),
        event(
            "user",
            Role::User,
            "i1",
            5.0,
            Part::Text {
                text: "go on, fix it".into(),
            },
        ),
        event(
            "agent",
            Role::Model,
            "i1",
            6.0,
            Part::ToolCall {
                id: Some("c2".into()),
                name: "edit".into(),
                args: serde_json::json!({"path": "src/app/config.rs", "line": 7}),
            },
        ),
    ];
    Session {
        id: "path".into(),
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

/// References of the session under a sliding window after every invocation.
fn refs_under(s: &Session, summarizer: &str) -> compaction_sim::cost::metrics::SessionMetrics {
    refs_of_family(s, summarizer, None)
}

/// [`refs_under`] with the summaries estimated as `family`'s (a claude-code or openhands
/// policy's, issue 45).
fn refs_of_family(
    s: &Session,
    summarizer: &str,
    family: Option<&str>,
) -> compaction_sim::cost::metrics::SessionMetrics {
    let sizes = SessionSizes::new(s, None);
    let inputs = SessionCostInputs::new(s, Tokenizer::AdkChars);
    let spec = SummarizerSpec::parse(summarizer).unwrap();
    let cfg = Config {
        token: None,
        sliding: Some((1, 0)),
        usage: UsageMode::default(),
        pre_request: true,
    };
    let run = |summ: &dyn Summarizer| engine::replay(&sizes, &cfg, summ);
    let mut st = CostSetting::new(&spec, Some("claude-sonnet-4-5"), ClientMode::Waits);
    st.summary_family = family;
    let e = evaluate(s, &sizes, &inputs, &CostModel::default(), &st, &run).unwrap();
    assert!(
        !e.replay.compactions.is_empty(),
        "{summarizer}: nothing compacted"
    );
    e.metrics
}

#[test]
fn a_path_read_only_in_a_tool_result_and_edited_after_compaction() {
    let s = path_session(10);
    // The edit's path is the one reference (`.` and the single digit 7 are no facts).
    let terse = refs_under(&s, "terse");
    assert_eq!(terse.references, 1);
    assert_eq!(terse.references_at_risk, 1);
    // terse keeps `author: text` only: the tool result's path is gone.
    assert_eq!(terse.references_broken, 1.0);
    assert_eq!(terse.references_broken_share, 1.0);
    assert_eq!(terse.references_broken_basis, Basis::Measured);

    let dir = tempfile::tempdir().unwrap();
    let echo = refs_under(&s, &echo_script(dir.path()));
    assert_eq!((echo.references_at_risk, echo.references_broken), (1, 0.0));

    // The agent's own model: at risk, not broken for certain (ADK's summarizer sees the path).
    let agent = refs_under(&s, "agent");
    assert_eq!(agent.references_at_risk, 1);
    assert_eq!(agent.references_broken_basis, Basis::Estimated);
    assert_eq!(
        (agent.references_broken_low, agent.references_broken_high),
        (0, 1)
    );
    assert!(agent.references_broken > 0.0 && agent.references_broken < 1.0);

    // The same path 2,500 chars into the tool result: beyond LlmEventSummarizer's 2,000-char
    // cut, so broken whatever the model writes.
    let far = refs_under(&path_session(2500), "agent");
    assert_eq!(
        (far.references_broken_low, far.references_broken_high),
        (1, 1)
    );
    assert_eq!(far.references_broken, 1.0);
}

/// Issue 45: a claude-code or openhands policy's summaries are estimated with the built-in fit
/// of that family's recorded summaries, any other's with the pooled fit; the metrics block
/// says which summaries the estimate rests on.
#[test]
fn a_policy_family_s_summaries_are_estimated_with_that_family_s_retention() {
    use compaction_sim::detail::facts::FactKind;
    let table = compaction_sim::cost::latency::LatencyTable::builtin();
    let pooled = table.retention.expect("a built-in retention");
    let s = path_session(10);
    // one path reference at risk, seen by the summarizer: broken 1 − the path rate
    let broken = |family: Option<&str>| refs_of_family(&s, "agent", family).references_broken;
    let want = |family: Option<&str>| 1.0 - pooled.for_family(family).rate(FactKind::Path).unwrap();
    for family in [None, Some("claude-code"), Some("openhands")] {
        assert!((broken(family) - want(family)).abs() < 1e-9, "{family:?}");
    }
    let fam = |f: &str| pooled.families[f].kinds["path"].rate.unwrap();
    assert!((want(Some("openhands")) - (1.0 - fam("openhands"))).abs() < 1e-12);
    assert_ne!(broken(Some("openhands")), broken(None));
    assert_ne!(broken(Some("claude-code")), broken(Some("openhands")));
    // the metrics block names the summaries
    let m = refs_of_family(&s, "agent", Some("openhands"));
    let spec = SummarizerSpec::Agent;
    let block = |family: Option<&str>| {
        let ms = compaction_sim::cost::MetricsSetting {
            agent_model: Some("claude-sonnet-4-5"),
            summarizer: &spec,
            client: ClientMode::Waits,
            attachment_tokens: &[],
            event_facts: None,
            references: None,
            attachments_once: false,
            summary_family: family,
        };
        compaction_sim::cost::render_metrics(&m, &CostModel::default(), &ms)
    };
    let n = pooled.families["openhands"].summaries;
    assert!(
        block(Some("openhands"))
            .contains(&format!("at risk at {n} openhands summaries (the pooled")),
        "{}",
        block(Some("openhands"))
    );
    assert!(block(None).contains(&format!("at risk at {} summaries (", pooled.summaries)));
}

/// The report's summarizer comparison shows each summarizer's basis, and for an estimate its
/// bounds; with a measured and an estimated summarizer it says the bases differ, and the
/// frontier and no-budget tables show broken references beside history read through summaries.
#[test]
fn the_report_compares_summarizers_with_basis_and_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = bin()
        .arg("sweep")
        .args([
            "transcripts/02-coding-10.session.json",
            "transcripts/06-coding-31.session.json",
        ])
        .args(["--trigger", "invocations", "--after-invocations", "2,5"])
        .args([
            "--overlap",
            "0",
            "--summarizer",
            "agent,terse",
            "--no-cache",
        ])
        .args(["--out", out.to_str().unwrap()])
        .current_dir(root())
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = read_text(&out.join("report.md"));
    let section = md
        .split("## Per summarizer")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("a summarizer section");
    assert!(section.contains("rest on different bases"), "{section}");
    // issue 45: and what the estimate's retention rests on (the built-in table's summaries)
    assert!(
        section.contains("use retention fitted on 32 summaries (claude-code 17, openhands 15)"),
        "{section}"
    );
    let row = |name: &str| {
        section
            .lines()
            .find(|l| l.starts_with(&format!("| {name} |")))
            .unwrap_or_else(|| panic!("no {name} row in {section}"))
            .to_string()
    };
    let agent = row("agent");
    assert!(agent.contains("| estimated |"), "{agent}");
    // broken / at risk / references [low–high], with low <= broken <= high = at risk.
    let cell = agent
        .split(" | ")
        .find(|c| c.contains('[') && c.contains('–'))
        .unwrap_or_else(|| panic!("no bounds in {agent}"));
    let nums: Vec<f64> = cell
        .split(|c: char| !(c.is_ascii_digit() || c == ','))
        .filter(|x| !x.is_empty())
        .map(|x| x.replace(',', "").parse().unwrap())
        .collect();
    let [broken, risk, refs, low, high] = nums[..] else {
        panic!("{cell}: {nums:?}")
    };
    assert!(refs > 0.0 && risk > 0.0, "{cell}");
    assert!(low <= broken && broken <= high && high == risk, "{cell}");
    let terse = row("terse");
    assert!(terse.contains("| measured |"), "{terse}");
    assert!(
        !terse.contains('['),
        "a measured row has no bounds: {terse}"
    );
    let frontier = md.split("## The frontier").nth(1).unwrap();
    let head = frontier.lines().find(|l| l.starts_with("| \\#")).unwrap();
    assert!(
        head.contains("broken references") && head.contains("history read only through summaries"),
        "{head}"
    );
    assert!(!head.contains("| detail lost |"), "{head}");
}
