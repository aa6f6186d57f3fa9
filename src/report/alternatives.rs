//! The report's "Other policies" and "Alternatives from the guide": other frameworks'
//! policies and the guide's alternatives to compaction, priced where the sweep replayed them,
//! pointed to where the run's sessions call for them.

use super::build::{money, opt, table_label};
use super::figures::{
    artifact_savings, attachment_hits, best_within_budgets, failed_under_cap, long_invocations,
    short_sessions, AttachmentHit, ATTACH_SHARE, LLM_CALLS_CAP, SHORT_DETAIL,
};
use super::{t, Block, Inline};
use crate::table::folder::{RunData, SessionRow, SettingRow};
use crate::table::format::{fmt_int as int, fmt_pct};

/// "Other policies": other frameworks' compaction policies replayed on the same sessions
/// (`--policy`, docs/policies.md), in one table with the recommended ADK setting and the
/// baseline, cheapest first. Nothing when the run has none.
pub(super) fn other_policies(d: &RunData, b: &mut Vec<Block>) {
    let policies: Vec<&SettingRow> = d
        .settings
        .iter()
        .filter(|s| s.is_policy() && !s.is_as_recorded())
        .collect();
    if policies.is_empty() {
        return;
    }
    let usd = money(d);
    b.push(Block::Heading(2, "Other policies".into()));
    b.push(Block::Para(t(
        "Other frameworks' compaction policies, replayed on the same sessions and priced the same way (caching, summarizer calls, broken references), beside the recommended ADK setting and no compaction. Their numbers are modelled: each policy is a rule read from its framework's source (docs/policies.md says what is left out). None is an ADK setting a manifest can take: a policy is a finding about what kind of compaction suits these sessions, never a line to paste, so none is recommended. Where ADK can come near one, the last column says how (a `python:` summarizer only changes the summary text, not what is kept).",
    )));
    let mut rows: Vec<&SettingRow> = policies.clone();
    rows.extend(d.recommended());
    rows.extend(d.baseline());
    rows.extend(d.as_recorded());
    rows.sort_by(|a, c| {
        a.cost_usd()
            .unwrap_or(f64::INFINITY)
            .total_cmp(&c.cost_usd().unwrap_or(f64::INFINITY))
            .then(a.setting_id.cmp(&c.setting_id))
    });
    let pct = |v: Option<f64>| v.map_or("n/a".to_string(), |x| format!("{:.1} %", x * 100.0));
    let num = |v: Option<f64>| v.map_or("n/a".to_string(), int);
    let table_rows = rows
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let (name, setting, adk) = if s.is_as_recorded() {
                (
                    "as recorded".to_string(),
                    "each session under the setting its framework ran with".to_string(),
                    "n/a: the status quo".to_string(),
                )
            } else if s.is_policy() {
                let setting = if s.summarizer.is_empty() {
                    s.policy_setting.clone()
                } else {
                    format!("{} summarizer={}", s.policy_setting, s.summarizer)
                };
                (
                    s.policy.clone(),
                    setting,
                    crate::policy::adk_expressible(&s.policy).to_string(),
                )
            } else if s.is_baseline() {
                (
                    "ADK: no compaction".to_string(),
                    "leave compaction out of the manifest".to_string(),
                    "yes".to_string(),
                )
            } else {
                (
                    "ADK: recommended".to_string(),
                    table_label(s),
                    "yes: paste it".to_string(),
                )
            };
            vec![
                t((i + 1).to_string()),
                t(name),
                vec![Inline::Code(setting)],
                t(s.cost_usd().map_or("n/a".to_string(), usd)),
                t(s.cost_saved_usd().map_or("n/a".to_string(), usd)),
                t(num(s.num(&["tokens_saved_net_sum"]))),
                t(num(s.summarizer_calls())),
                t(pct(s.broken_references())),
                t(num(s.critical_hidden())),
                t(adk),
            ]
        })
        .collect();
    b.push(Block::Table {
        head: vec![
            "rank by cost".into(),
            "policy".into(),
            "its setting".into(),
            "cost (USD, modelled for policies)".into(),
            "saved vs no compaction (USD)".into(),
            "tokens saved (net)".into(),
            "summarizer calls".into(),
            "broken references (mean share)".into(),
            "critical events hidden".into(),
            "an ADK setting?".into(),
        ],
        rows: table_rows,
        numeric: vec![
            true, false, false, true, true, true, true, true, true, false,
        ],
    });
    if let Some(words) = family_retention_words(d, &policies) {
        b.push(Block::Para(t(words)));
    }
}

/// What the policies' estimated broken references rest on (issue 45): a claude-code or
/// openhands policy's summaries, estimated for a modelled summarizer, take the retention
/// fitted on that family's recorded summaries; the others the pooled fit. `None` when no
/// policy row is estimated or the run's table has no retention.
fn family_retention_words(d: &RunData, policies: &[&SettingRow]) -> Option<String> {
    let estimated = |s: &&&SettingRow| s.references_basis == "estimated";
    let mut families: Vec<&'static str> = policies
        .iter()
        .filter(estimated)
        .filter_map(|s| crate::policy::summary_family_of(&s.policy))
        .collect();
    families.sort_unstable();
    families.dedup();
    if families.is_empty() {
        return None;
    }
    let r = super::frontier::run_retention(d)?;
    let each: Vec<String> = families
        .iter()
        .map(|f| format!("the {f} policy's on {}", r.for_family(Some(f)).rests_on()))
        .collect();
    Some(format!(
        "Broken references of a modelled summarizer's summaries are estimated with retention fitted on recorded summaries of the framework whose rule the policy replays: {}; the other policies' on the pooled fit of {}; an as-recorded replay of a Claude Code or OpenHands session takes that framework's fit (docs/validation.md, section Retention of what is used later).",
        each.join(", "),
        r.rests_on()
    ))
}

pub(super) fn alternatives(d: &RunData, b: &mut Vec<Block>) {
    b.push(Block::Heading(2, "Alternatives from the guide".into()));
    b.push(Block::Para(t(
        "Compaction is one answer to a long history; the platform guide lists others. Each is suggested below only where this run's data points to it.",
    )));
    priced_alternatives(d, b);
    b.push(Block::Heading(3, "Keep sessions short".into()));
    keep_sessions_short(d, b);
    b.push(Block::Heading(3, "Load large files as artifacts".into()));
    match attachment_hits(d) {
        None => b.push(Block::Para(t(
            "Not checked: the run's data records no attachment sizes per session.",
        ))),
        Some(hits) => as_artifacts(&hits, b),
    }
    b.push(Block::Heading(
        3,
        "Cap the growth with max_llm_calls".into(),
    ));
    match long_invocations(d) {
        None => b.push(Block::Para(t(
            "Not checked: the run's data records no model requests per invocation.",
        ))),
        Some(hits) => cap_llm_calls(&hits, b),
    }
}

/// `session <id>` (` (<source>)`) at the head of a list item.
fn session_item(id: &str, source: Option<&str>) -> Vec<Inline> {
    let mut item = vec![
        Inline::Text("session ".into()),
        Inline::Code(id.to_string()),
    ];
    if let Some(src) = source.filter(|s| !s.is_empty()) {
        item.push(Inline::Text(" (".into()));
        item.push(Inline::Code(src.to_string()));
        item.push(Inline::Text(")".into()));
    }
    item
}

fn keep_sessions_short(d: &RunData, b: &mut Vec<Block>) {
    let short = short_sessions(d);
    if short.sessions.is_empty() {
        b.push(Block::Para(t(format!(
            "No session points to it: under the recommended setting none loses more than {} of its history or hides a critical event.",
            fmt_pct(SHORT_DETAIL)
        ))));
        return;
    }
    b.push(Block::Para(t(format!(
        "{} of {} sessions lose more than {} of their history to summaries, or hide approvals, refusals or tool errors, even under the recommended setting. Starting a new session when the task changes is free and lossless.{}",
        short.sessions.len(),
        short.of,
        fmt_pct(SHORT_DETAIL),
        if short.sessions.len() > 10 { " The 10 that lose most:" } else { "" }
    ))));
    b.push(Block::List(
        short
            .sessions
            .iter()
            .take(10)
            .map(|r| {
                let mut item = session_item(&r.session_id, Some(&r.source));
                item.push(Inline::Text(format!(
                    ": {} model requests, {} of history read only through summaries, critical events hidden: {}",
                    opt(r.figures.model_requests, int),
                    opt(r.figures.detail_lost, fmt_pct),
                    opt(r.figures.critical_hidden, int)
                )));
                item
            })
            .collect(),
    ));
}

fn as_artifacts(hits: &[AttachmentHit], b: &mut Vec<Block>) {
    if hits.is_empty() {
        b.push(Block::Para(t(format!(
            "No session points to it: attached files are under {} of every session's prompt tokens.",
            fmt_pct(ATTACH_SHARE)
        ))));
        return;
    }
    b.push(Block::Para(t(
        "A file the user's message names is sent with every request while its name is in the conversation. In these sessions that re-sending is a large share of the prompt; a tool that reads the file with load_artifact puts only what it returns into the prompt.",
    )));
    b.push(Block::List(
        hits.iter()
            .map(|h| {
                let mut item = session_item(&h.session_id, None);
                item.push(Inline::Text(format!(
                    ": {} attachment tokens sent with {} requests, {} of its prompt tokens",
                    int(h.tokens),
                    int(h.requests),
                    fmt_pct(h.share)
                )));
                item
            })
            .collect(),
    ));
}

fn cap_llm_calls(hits: &[(String, f64)], b: &mut Vec<Block>) {
    if hits.is_empty() {
        b.push(Block::Para(t(format!(
            "No session points to it: no invocation made more than {} model calls.",
            int(LLM_CALLS_CAP)
        ))));
        return;
    }
    b.push(Block::Para(t(format!(
        "An agent looping on tool results is usually what grew the history. In these sessions one invocation made more than {} model calls; RunConfig(max_llm_calls={}) would cap each run there.",
        int(LLM_CALLS_CAP),
        int(LLM_CALLS_CAP)
    ))));
    b.push(Block::List(
        hits.iter()
            .map(|(id, m)| {
                let mut item = session_item(id, None);
                item.push(Inline::Text(format!(
                    ": up to {} model calls in one invocation",
                    int(*m)
                )));
                item
            })
            .collect(),
    ));
}

/// The alternatives the sweep replayed, priced like compaction settings: the recommended
/// setting first, then each alternative, against the recorded sessions with no compaction.
fn priced_alternatives(d: &RunData, b: &mut Vec<Block>) {
    b.push(Block::Para(t(
        "Summarize deliberately, as a tool: not priced, since no transcript records where a person would have called such a tool; to weigh the summarizer class you would write, replay it with --summarizer python:REF (docs/summarizers.md).",
    )));
    if d.alternatives.is_empty() {
        b.push(Block::Para(t(
            "No alternative was replayed in this run (sweep --alternatives none, or no session where one applies): the sections below only point to the sessions where one might help.",
        )));
        return;
    }
    b.push(alternatives_table(d));
    b.push(Block::Para(t(
        "Each alternative is a counterfactual replay of the same sessions through the same ADK 2.13.0 engine and prices (docs/alternatives.md): saved is against the recorded sessions with no compaction. A capped run is not free: every invocation counted as failed raised LlmCallsLimitExceededError in ADK and returned no final answer. The rows above are replayed with no compaction (the last, when the run combined them, with its compaction setting); alternatives are not candidates for the recommendation, which stays a compaction setting and names an alternative that beats it. A split session's broken references count the references an earlier part alone held (0 at lossless split points); each new session's first request starts with nothing cached, which can make a split cost more than the tokens it saves suggest.",
    )));
    if let Some(a) = d.alternatives.iter().find(|a| a.alternative == "artifacts") {
        b.push(artifacts_words(a));
    }
    // Which invocations fail, per session, for the tightest cap.
    if let Some((tight, hit)) = failed_under_cap(d).filter(|(_, hit)| !hit.is_empty()) {
        failed_runs(tight, &hit, b);
    }
}

/// The recommended setting, each alternative alone, and the best combination, priced.
fn alternatives_table(d: &RunData) -> Block {
    let m = money(d);
    let base_cost = d.baseline().and_then(|x| x.cost_usd());
    let row = |name: String, x: &SettingRow| {
        let saved = match (base_cost, x.cost_usd()) {
            (Some(bc), Some(c)) => m(bc - c),
            _ => "n/a".into(),
        };
        vec![
            t(name),
            t(opt(x.cost_usd(), m)),
            t(saved),
            t(opt(x.broken_references(), fmt_pct)),
            t(opt(x.critical_hidden(), int)),
            t(opt(x.num(&["invocations_failed_sum"]), int)),
        ]
    };
    let mut rows = Vec::new();
    if let Some(r) = d.recommended() {
        rows.push(row(format!("recommended: {}", r.label), r));
    }
    for a in d.alternatives.iter().filter(|a| a.is_baseline()) {
        rows.push(row(a.label.clone(), a));
    }
    // The best combination (alternative + compaction), when the run replayed them: the
    // cheapest within the budgets with no failed run.
    let combos = d.alternatives.iter().filter(|a| !a.is_baseline()).count();
    if combos > 0 {
        match best_within_budgets(d, d.alternatives.iter().filter(|a| !a.is_baseline())) {
            Some(c) => rows.push(row(format!("best combination: {}", c.label), c)),
            None => {
                let mut none = vec![t(format!(
                    "best combination: none of the {combos} combinations meets the budgets without a failed run"
                ))];
                none.resize(6, t(""));
                rows.push(none);
            }
        }
    }
    Block::Table {
        head: vec![
            "alternative".into(),
            "cost (USD, all sessions)".into(),
            "saved vs none (USD)".into(),
            "broken references (mean share per session)".into(),
            "critical hidden (events)".into(),
            "failed runs (invocations)".into(),
        ],
        rows,
        numeric: vec![false, true, true, true, true, true],
    }
}

fn artifacts_words(a: &SettingRow) -> Block {
    let mut line = String::from(
        "Files loaded once as artifacts: each attached file is priced in the first request after the message that names it only, not in every request while the message is in the history; a later reference to a fact only the file held is not counted as broken (facts are found per event, not per file).",
    );
    if let Some((tk, usd)) = artifact_savings(a) {
        line.push_str(&format!(
            " It removes {} of the prompt tokens and {} of the dollars.",
            fmt_pct(tk),
            fmt_pct(usd)
        ));
        if usd < tk / 2.0 {
            line.push_str(" The saving in dollars is small because prompt caching already bills a file re-sent in a cached prefix at the cached-input rate.");
        }
    }
    Block::Para(t(line))
}

fn failed_runs(tight: &SettingRow, hit: &[(&SessionRow, f64)], b: &mut Vec<Block>) {
    b.push(Block::Para(t(format!(
        "Under {} these sessions' runs would have failed{}:",
        tight.alternative,
        if hit.len() > 10 {
            " (the 10 with most failures)"
        } else {
            ""
        }
    ))));
    b.push(Block::List(
        hit.iter()
            .take(10)
            .map(|(r, n)| {
                let mut item = session_item(&r.session_id, None);
                item.push(Inline::Text(format!(
                    ": {} failed invocation{}",
                    int(*n),
                    if *n == 1.0 { "" } else { "s" }
                )));
                item
            })
            .collect(),
    ));
}
