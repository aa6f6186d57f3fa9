//! Recorded compactions beside the replay's: one row per recorded compaction, per-framework
//! aggregates, per-session prompt-size errors.

use serde::{Deserialize, Serialize};

use super::{Backtest, SessionReplay};
use crate::cost::latency::{LatencyParams, LatencyTable};
use crate::engine::Replay;
use crate::stats::{percentile_of, round3};
use crate::transcript::{CompactionKind, PolicyRule, RecordedCompaction, Session};

/// Requests a predicted compaction may be off by and still match.
pub const MATCH_REQUESTS: usize = 1;

/// One recorded compaction and the replay's nearest prediction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionRow {
    pub source: String,
    pub session_id: String,
    pub framework: String,
    /// `auto`, `manual` or `unknown`.
    pub trigger: String,
    /// `full` (the history summarized) or `micro` (Claude Code microcompaction: old tool
    /// results cleared). A micro row's tokens before / after are Claude Code's estimate of
    /// the old tool results it weighed and of those it left, recorded (`preTokens`,
    /// `preTokens − tokensSaved`) and predicted.
    #[serde(default)]
    pub kind: CompactionKind,
    /// The file starts with it (a resumed session): listed, never predicted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resumed: bool,
    /// Micro only: tool results cleared, as recorded (`compactedToolIds`) and predicted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_cleared: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_cleared: Option<u64>,
    /// The `as recorded` setting it was replayed under.
    pub rule: String,
    pub recorded_request: Option<usize>,
    /// `null` when none fired (and for manual compactions, which are never matched).
    pub predicted_request: Option<usize>,
    /// Automatic only: the prediction is within [`MATCH_REQUESTS`] of the record.
    pub matched: Option<bool>,
    pub recorded_tokens_before: Option<u64>,
    pub predicted_tokens_before: Option<u64>,
    pub recorded_tokens_after: Option<u64>,
    pub predicted_tokens_after: Option<u64>,
    /// The recorded summary's tokens (chars / 4 on the provider's scale).
    pub recorded_summary_tokens: Option<u64>,
    pub predicted_summary_tokens: Option<u64>,
    pub recorded_duration_s: Option<f64>,
    /// The summarizer call's modelled seconds: the session's recorded model (it summarizes
    /// itself) reading the predicted context and writing the predicted summary, at the
    /// built-in latency.toml's figures (`cost::latency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_duration_s: Option<f64>,
    /// When the rule does not explain the session: the threshold fitted from its automatic
    /// compactions, the setting it implies, and the prediction with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fitted_threshold: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fitted_setting: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_request_with_fit: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched_with_fit: Option<bool>,
    /// The prediction with the fitted threshold, as `predicted_*` are the rule's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_tokens_before_with_fit: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_tokens_after_with_fit: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_summary_tokens_with_fit: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_duration_s_with_fit: Option<f64>,
    /// What the recorded summary kept ([`super::kept`]; `null` without a summary text):
    /// references at risk at the cut, those its text does not hold, the `agent` estimate there.
    pub summary_refs_at_risk: Option<u64>,
    pub summary_refs_broken: Option<u64>,
    pub agent_estimate: Option<super::kept::AgentEstimate>,
    /// Tool calls after it repeating one made before it, and those the measure marked broken.
    pub refetches: Option<u64>,
    pub refetches_marked_broken: Option<u64>,
    /// The replay's event the rule's prediction was made before (not written): where the
    /// held-out refits (`backtest::holdout`) rebuild the context after it.
    #[serde(skip)]
    pub predicted_event: Option<u32>,
    /// Of the re-fetches, those returning what the call returned before the compaction
    /// ([`super::refetch`]): detail the agent had and obtained again; and of those, the ones
    /// the measure marked broken.
    #[serde(default)]
    pub refetches_same_result: Option<u64>,
    #[serde(default)]
    pub refetches_same_result_marked: Option<u64>,
    /// Tokens the same-result re-fetches (call and result) added to later prompts up to the
    /// next recorded compaction, on the provider's scale, and their USD at the session's
    /// prices (`null` when its model is not priced).
    #[serde(default)]
    pub refetch_tokens: Option<u64>,
    #[serde(default)]
    pub refetch_cost_usd: Option<f64>,
}

impl CompactionRow {
    /// A full compaction of the file not asked for by a person: what a rule is matched
    /// against (micro rows, manual ones and a resumed file's opening record are listed).
    pub fn is_automatic(&self) -> bool {
        self.kind == CompactionKind::Full && self.trigger != "manual" && !self.resumed
    }
}

/// Per framework.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FrameworkStats {
    pub sessions: u64,
    pub auto_recorded: u64,
    pub auto_matched: u64,
    /// Manual compactions: listed, applied where they happened in the `as recorded` replay.
    pub manual: u64,
    /// Microcompactions recorded, and those the rule predicts within one request.
    #[serde(default)]
    pub micro_recorded: u64,
    #[serde(default)]
    pub micro_matched: u64,
    /// Compactions a file starts with (resumed sessions): listed, never predicted.
    #[serde(default)]
    pub resumed: u64,
    /// Automatic compactions matched once the threshold is fitted where the rule missed.
    pub auto_matched_with_fit: u64,
    /// Median over matched automatic compactions of |predicted − recorded| / recorded tokens
    /// before, %.
    pub median_abs_delta_tokens_before_pct: Option<f64>,
    /// Median predicted / recorded tokens after a matched compaction.
    pub tokens_after_ratio: Option<f64>,
    /// Median predicted / recorded duration over the matched automatic compactions that
    /// record one (`null` when none does).
    pub duration_ratio: Option<f64>,
    /// These figures with every fitted figure they rest on refitted on all sessions given,
    /// and without the session each is scored on ([`super::holdout`]; `backtest --holdout`
    /// and `--json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_sample: Option<super::holdout::Figures>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_out: Option<super::holdout::Figures>,
    /// Over the compactions with a summary text ([`super::refetch`]): repeated tool calls,
    /// those returning the same result, those of them the measure marked broken, the tokens
    /// the same-result ones added to later prompts and their USD (sessions whose model is
    /// priced).
    #[serde(default)]
    pub refetches: u64,
    #[serde(default)]
    pub refetches_same_result: u64,
    #[serde(default)]
    pub refetches_same_result_marked: u64,
    #[serde(default)]
    pub refetch_tokens: u64,
    #[serde(default)]
    pub refetch_cost_usd: f64,
}

/// Per session: what it was replayed under, on what sizes, and how near the replay's prompt
/// sizes come to the recorded ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRow {
    pub source: String,
    pub session_id: String,
    pub framework: String,
    pub as_recorded: String,
    pub prompt_basis: String,
    pub prompt_overhead: Option<i64>,
    pub prompt_scale: Option<f64>,
    pub prompt_fit_error_p50: Option<f64>,
    pub recorded_compactions: usize,
    pub predicted_compactions: usize,
    /// Claude Code: the microcompactions the rule makes on the recorded context (recorded
    /// ones are among `recorded_compactions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_microcompactions: Option<usize>,
    /// Requests with a recorded size compared with the free-running replay's.
    pub requests_compared: usize,
    pub prompt_error_p50_pct: Option<f64>,
    pub prompt_error_p95_pct: Option<f64>,
    /// Prompt tokens summed over the requests as recorded replayed, and without compaction
    /// (what SWE-agent's `info.model_stats.tokens_sent` is compared with).
    pub prompt_tokens_total: u64,
    pub no_compaction_prompt_tokens_total: u64,
    /// SWE-agent `info.model_stats`: `tokens_sent` and `api_calls` as recorded, and
    /// `prompt_tokens_total / tokens_sent` (`null` when not recorded, or recorded as 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_tokens_sent: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_api_calls: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_sent_ratio: Option<f64>,
    /// What `tokens_sent_ratio`'s replayed side is counted on: litellm's `token_counter` for a
    /// SWE-agent 1.x run whose model litellm counts with tiktoken ([`super::litellm`],
    /// mechanism), else the run tokenizer (`backtest --holdout` fits the provider scale).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_sent_basis: Option<String>,
    /// SWE-agent 1.x, mechanism: the as-recorded requests counted as litellm counts them
    /// (`tokens_sent_ratio`'s numerator then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub litellm_prompt_tokens_total: Option<u64>,
}

/// A compaction the replay made: its request, the context before and after, the summary.
#[derive(Debug, Clone, Copy)]
pub struct Predicted {
    pub request: usize,
    /// The event the request is made before.
    pub event: u32,
    pub before: u64,
    pub after: u64,
    pub summary: u64,
}

/// The replay's compactions, in order, by request. `anchored`: the replay ran on the recorded
/// context ([`super::anchored`]) with this fitted overhead; the context before is then the
/// request's own, and the one after is what the framework rebuilds (overhead and summary).
pub fn predicted(replay: &Replay, anchored: Option<i64>) -> Vec<Predicted> {
    replay
        .compactions
        .iter()
        .filter_map(|c| {
            // the first request it reaches: before its event (pre-request, policies), or the
            // next invocation's first (ADK's post-invocation compaction)
            let q = match c.before_event_index {
                Some(k) => replay.requests.partition_point(|r| r.event_index < k),
                None => replay
                    .requests
                    .partition_point(|r| r.invocation_index <= c.invocation_index),
            };
            let r = replay.requests.get(q)?;
            let (before, after) = match anchored {
                Some(o) => (
                    r.baseline_prompt_tokens,
                    (o + c.summary_tokens as i64).max(0) as u64,
                ),
                // after an invocation: the last prompt the invocation sent
                None if c.before_event_index.is_none() => (
                    q.checked_sub(1)
                        .and_then(|p| replay.requests.get(p))
                        .map_or(r.baseline_prompt_tokens, |p| p.prompt_tokens),
                    r.prompt_tokens,
                ),
                None => (
                    r.measured_prompt_tokens.unwrap_or(r.baseline_prompt_tokens),
                    r.prompt_tokens,
                ),
            };
            Some(Predicted {
                request: q,
                event: r.event_index,
                before,
                after,
                summary: c.summary_tokens,
            })
        })
        .collect()
}

/// The overhead [`predicted`] reads for a token-threshold rule (0 without a fit).
fn anchored_overhead(run: &SessionReplay) -> Option<i64> {
    run.policy
        .threshold()
        .map(|_| run.sized.fit.map_or(0, |f| f.overhead))
}

/// Claude Code's context after a compaction: the fitted overhead and the summary
/// ([`predicted`]) plus the files it re-attaches (`policy::claude_code::reattached`, on the
/// provider's scale). Other rules rebuild nothing beyond the summary.
fn reattach(
    session: &Session,
    run: &SessionReplay,
    replay: &Replay,
    mut preds: Vec<Predicted>,
) -> Vec<Predicted> {
    if !matches!(run.policy, super::AsRecorded::ClaudeCode { .. }) {
        return preds;
    }
    for p in &mut preds {
        let Some(r) = replay.requests.get(p.request) else {
            continue;
        };
        let files = crate::policy::claude_code::reattached(
            session,
            &run.sized.sizes,
            r.event_index as usize,
        );
        p.after += files.iter().map(|f| f.1).sum::<u64>();
    }
    preds
}

/// For each recorded request index, the nearest unused prediction (in record order).
pub fn pair(recorded: &[Option<usize>], predicted: &[Predicted]) -> Vec<Option<Predicted>> {
    let mut used = vec![false; predicted.len()];
    recorded
        .iter()
        .map(|r| {
            let r = (*r)?;
            let best = (0..predicted.len())
                .filter(|&i| !used[i])
                .min_by_key(|&i| predicted[i].request.abs_diff(r))?;
            used[best] = true;
            Some(predicted[best])
        })
        .collect()
}

/// The replay's request index of the first request at or after event `at_event`.
fn recorded_request(replay: &Replay, at_event: usize) -> Option<usize> {
    let q = replay
        .requests
        .partition_point(|r| (r.event_index as usize) < at_event);
    (q < replay.requests.len()).then_some(q)
}

fn trigger(c: &RecordedCompaction, session: &Session) -> &'static str {
    match c.trigger.as_deref() {
        Some("auto") => "auto",
        Some("manual") => "manual",
        // an OpenHands condenser starts every condensation itself
        _ if session.format == crate::transcript::Format::Openhands => "auto",
        _ => "unknown",
    }
}

/// The record's side of a row.
fn recorded_row(
    session: &Session,
    run: &SessionReplay,
    free: &Replay,
    c: &RecordedCompaction,
) -> CompactionRow {
    let q = recorded_request(free, c.at_event);
    // as recorded (after a compaction the replay's arrays hold the fit instead)
    let rec_at = |q: usize| {
        let r = free.requests.get(q)?;
        session.events[r.event_index as usize]
            .usage
            .map(|u| u.prompt_tokens)
            .filter(|&p| p > 0)
    };
    let before = c
        .pre_tokens
        .or_else(|| q.and_then(|q| q.checked_sub(1)).and_then(rec_at));
    let after = if c.is_micro() {
        c.pre_tokens
            .zip(c.tokens_saved)
            .map(|(p, s)| p.saturating_sub(s))
    } else {
        q.and_then(rec_at)
    };
    let scale = run.sized.fit.map_or(1.0, |f| f.scale);
    let summary = (!c.summary.is_empty())
        .then(|| (c.summary.chars().count() as f64 / 4.0 * scale).round() as u64);
    let duration = c.duration_s().map(round3);
    CompactionRow {
        source: session.source.clone(),
        session_id: session.id.clone(),
        framework: session.format.name().to_string(),
        trigger: trigger(c, session).to_string(),
        kind: c.kind,
        resumed: c.resumed,
        recorded_cleared: c.is_micro().then_some(c.cleared_ids.len() as u64),
        predicted_cleared: None,
        rule: run.policy.label(),
        recorded_request: q,
        predicted_request: None,
        matched: None,
        recorded_tokens_before: before,
        predicted_tokens_before: None,
        recorded_tokens_after: after,
        predicted_tokens_after: None,
        recorded_summary_tokens: summary,
        predicted_summary_tokens: None,
        recorded_duration_s: duration,
        predicted_duration_s: None,
        fitted_threshold: None,
        fitted_setting: None,
        predicted_request_with_fit: None,
        matched_with_fit: None,
        predicted_tokens_before_with_fit: None,
        predicted_tokens_after_with_fit: None,
        predicted_summary_tokens_with_fit: None,
        predicted_duration_s_with_fit: None,
        summary_refs_at_risk: None,
        summary_refs_broken: None,
        agent_estimate: None,
        refetches: None,
        refetches_marked_broken: None,
        predicted_event: None,
        refetches_same_result: None,
        refetches_same_result_marked: None,
        refetch_tokens: None,
        refetch_cost_usd: None,
    }
}

/// Fill a row's real-summary measure.
fn kept(row: &mut CompactionRow, k: Option<super::kept::Kept>) {
    let Some(k) = k else { return };
    row.summary_refs_at_risk = Some(k.refs_at_risk);
    row.summary_refs_broken = Some(k.refs_broken);
    row.agent_estimate = Some(k.agent_estimate);
    row.refetches = Some(k.refetches);
    row.refetches_marked_broken = Some(k.refetches_marked_broken);
    row.refetches_same_result = Some(k.refetch.same_result);
    row.refetches_same_result_marked = Some(k.refetches_same_result_marked);
    row.refetch_tokens = Some(k.refetch.tokens);
    row.refetch_cost_usd = k.refetch.cost_usd;
}

/// Fill a row's prediction; `latency`: the summarizing model's.
fn predict(row: &mut CompactionRow, p: Option<Predicted>, latency: &LatencyParams) {
    let Some(p) = p else {
        row.matched = Some(false);
        return;
    };
    row.predicted_request = Some(p.request);
    row.predicted_event = Some(p.event);
    row.matched = Some(within_match(row.recorded_request, &p));
    row.predicted_tokens_before = Some(p.before);
    row.predicted_tokens_after = Some(p.after);
    row.predicted_summary_tokens = Some(p.summary);
    row.predicted_duration_s = Some(duration(&p, latency));
}

/// Whether prediction `p` lands within [`MATCH_REQUESTS`] of the recorded request.
fn within_match(recorded: Option<usize>, p: &Predicted) -> bool {
    recorded.is_some_and(|r| r.abs_diff(p.request) <= MATCH_REQUESTS)
}

/// A prediction's summarizer call, in modelled seconds.
fn duration(p: &Predicted, latency: &LatencyParams) -> f64 {
    round3(latency.seconds(p.before, p.summary))
}

/// Add one session's rows.
pub fn add_session(out: &mut Backtest, session: &Session, run: &SessionReplay) {
    let free = &run.replay;
    let mut rows: Vec<CompactionRow> = session
        .recorded_compactions
        .iter()
        .map(|c| recorded_row(session, run, free, c))
        .collect();
    if let Some(measure) = super::kept::SessionKept::new(session) {
        for (i, row) in rows.iter_mut().enumerate() {
            kept(row, measure.at(&run.sized.sizes, i));
        }
    }
    let autos: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].is_automatic())
        .collect();
    let targets: Vec<Option<usize>> = autos.iter().map(|&i| rows[i].recorded_request).collect();
    let by_rule = super::threshold_replay(session, run, run.policy.threshold());
    let anchored = anchored_overhead(run);
    let latency = LatencyTable::builtin().for_model(session.model.as_deref().unwrap_or(""));
    let preds = reattach(session, run, &by_rule, predicted(&by_rule, anchored));
    for (&i, p) in autos.iter().zip(pair(&targets, &preds)) {
        predict(&mut rows[i], p, &latency);
    }
    if autos.iter().any(|&i| rows[i].matched != Some(true)) {
        fit_threshold(session, run, &mut rows, &autos, &targets, &latency);
    }
    let micro = super::micro::predicted(session, run);
    if let Some(preds) = &micro {
        predict_micro(&mut rows, preds);
    }
    let mut row = session_row(session, run, free);
    row.predicted_microcompactions = micro.map(|m| m.len());
    out.sessions.push(row);
    out.compactions.extend(rows);
}

/// The micro rows beside the rule's microcompactions (nearest within [`MATCH_REQUESTS`]).
fn predict_micro(rows: &mut [CompactionRow], preds: &[Predicted]) {
    let micro: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].kind == CompactionKind::Micro)
        .collect();
    let targets: Vec<Option<usize>> = micro.iter().map(|&i| rows[i].recorded_request).collect();
    for (&i, p) in micro.iter().zip(pair(&targets, preds)) {
        let row = &mut rows[i];
        row.matched = Some(p.is_some_and(|p| within_match(row.recorded_request, &p)));
        row.predicted_request = p.map(|p| p.request);
        row.predicted_tokens_before = p.map(|p| p.before);
        row.predicted_tokens_after = p.map(|p| p.after);
        // [`super::micro::predicted`] carries the count cleared in `summary`
        row.predicted_cleared = p.map(|p| p.summary);
    }
}

/// Where the rule missed: the threshold the automatic compactions imply (the smallest context
/// one fired at), the setting it means, and the match with it.
fn fit_threshold(
    session: &Session,
    run: &SessionReplay,
    rows: &mut [CompactionRow],
    autos: &[usize],
    targets: &[Option<usize>],
    latency: &LatencyParams,
) {
    let Some(t) = autos
        .iter()
        .filter_map(|&i| rows[i].recorded_tokens_before)
        .min()
    else {
        return;
    };
    let threshold = t / 1_000 * 1_000;
    let Some((fitted, implied)) = run.policy.fitted(threshold) else {
        return;
    };
    let with_fit = super::threshold_replay(session, run, fitted.threshold());
    let preds = reattach(
        session,
        run,
        &with_fit,
        predicted(&with_fit, anchored_overhead(run)),
    );
    for (&i, p) in autos.iter().zip(pair(targets, &preds)) {
        let row = &mut rows[i];
        row.fitted_threshold = Some(threshold);
        row.fitted_setting = Some(implied.clone());
        row.predicted_request_with_fit = p.map(|p| p.request);
        row.matched_with_fit = Some(p.is_some_and(|p| within_match(row.recorded_request, &p)));
        row.predicted_tokens_before_with_fit = p.map(|p| p.before);
        row.predicted_tokens_after_with_fit = p.map(|p| p.after);
        row.predicted_summary_tokens_with_fit = p.map(|p| p.summary);
        row.predicted_duration_s_with_fit = p.map(|p| duration(&p, latency));
    }
}

fn session_row(session: &Session, run: &SessionReplay, free: &Replay) -> SessionRow {
    let mut errs: Vec<f64> = free
        .requests
        .iter()
        .filter_map(|r| {
            let ev = &session.events[r.event_index as usize];
            let rec = ev.usage.map(|u| u.prompt_tokens).filter(|&x| x > 0)?;
            Some((r.prompt_tokens as f64 - rec as f64).abs() / rec as f64 * 100.0)
        })
        .collect();
    errs.sort_by(f64::total_cmp);
    let fit = run.sized.fit;
    let prompt_tokens_total: u64 = free.requests.iter().map(|r| r.prompt_tokens).sum();
    let stats = match session.recorded_policy.as_ref().map(|p| &p.rule) {
        Some(PolicyRule::SweAgent { model_stats, .. }) => *model_stats,
        _ => None,
    };
    let sent = stats.map(|s| s.tokens_sent);
    let (litellm, basis) = match sent {
        Some(t) if t > 0 => tokens_sent_basis(session, run),
        _ => (None, None),
    };
    let counted = litellm.unwrap_or(prompt_tokens_total);
    SessionRow {
        source: session.source.clone(),
        session_id: session.id.clone(),
        framework: session.format.name().to_string(),
        as_recorded: run.policy.label(),
        prompt_basis: run.sized.basis().to_string(),
        prompt_overhead: fit.map(|f| f.overhead),
        prompt_scale: fit.map(|f| round3(f.scale)),
        prompt_fit_error_p50: fit.map(|f| round3(f.p50_abs_error_pct)),
        recorded_compactions: session.recorded_compactions.len(),
        predicted_compactions: free.compactions.len(),
        predicted_microcompactions: None,
        requests_compared: errs.len(),
        prompt_error_p50_pct: (!errs.is_empty()).then(|| round3(percentile_of(&errs, 0.5))),
        prompt_error_p95_pct: (!errs.is_empty()).then(|| round3(percentile_of(&errs, 0.95))),
        prompt_tokens_total,
        no_compaction_prompt_tokens_total: free
            .requests
            .iter()
            .map(|r| r.baseline_prompt_tokens)
            .sum(),
        recorded_tokens_sent: sent,
        recorded_api_calls: stats.map(|s| s.api_calls),
        tokens_sent_ratio: sent
            .filter(|&t| t > 0)
            .map(|t| round3(counted as f64 / t as f64)),
        tokens_sent_basis: basis,
        litellm_prompt_tokens_total: litellm,
    }
}

/// A SWE-agent run's `tokens_sent` comparison: litellm's count of the as-recorded replay for a
/// 1.x run (it records `replay_config`) whose tokenizer this tool has, with its basis; else
/// none and the basis of the run-tokenizer total.
fn tokens_sent_basis(session: &Session, run: &SessionReplay) -> (Option<u64>, Option<String>) {
    let one_x = crate::transcript::swe_agent::recorded_line(session) == Some("1.x");
    if !one_x {
        return (
            None,
            Some("run tokenizer (0.x: the provider's usage; scale fitted) - fitted".to_string()),
        );
    }
    match super::litellm::tokens_sent(session, &run.policy) {
        Ok(c) => (Some(c.prompt_tokens_total), Some(c.basis)),
        Err(hf) => (
            None,
            Some(format!(
                "run tokenizer (litellm counts this model on {hf}, not in this tool; scale \
                 fitted) - fitted"
            )),
        ),
    }
}

/// The median of `v` to 3 decimals, as the backtest's figures are written.
pub(super) fn median3(v: &mut [f64]) -> Option<f64> {
    crate::stats::median(v).map(round3)
}

/// A framework's matched automatic compactions: |Δ tokens before| %, tokens-after ratios and
/// duration ratios, each a list the medians are taken of.
#[derive(Default)]
struct MatchedDeltas {
    before_pct: Vec<f64>,
    after_ratio: Vec<f64>,
    duration_ratio: Vec<f64>,
}

/// The per-framework aggregates, from the rows.
pub fn summarize_frameworks(out: &mut Backtest) {
    for s in &out.sessions {
        out.frameworks
            .entry(s.framework.clone())
            .or_default()
            .sessions += 1;
    }
    let mut deltas: std::collections::BTreeMap<String, MatchedDeltas> = Default::default();
    for r in &out.compactions {
        let f = out.frameworks.entry(r.framework.clone()).or_default();
        if r.kind == CompactionKind::Micro {
            f.micro_recorded += 1;
            f.micro_matched += u64::from(r.matched == Some(true));
            continue;
        }
        if r.resumed {
            f.resumed += 1;
            continue;
        }
        f.refetches += r.refetches.unwrap_or(0);
        f.refetches_same_result += r.refetches_same_result.unwrap_or(0);
        f.refetches_same_result_marked += r.refetches_same_result_marked.unwrap_or(0);
        f.refetch_tokens += r.refetch_tokens.unwrap_or(0);
        f.refetch_cost_usd += r.refetch_cost_usd.unwrap_or(0.0);
        if r.trigger == "manual" {
            f.manual += 1;
            continue;
        }
        f.auto_recorded += 1;
        f.auto_matched_with_fit += u64::from(r.matched_with_fit.unwrap_or(r.matched == Some(true)));
        if r.matched != Some(true) {
            continue;
        }
        f.auto_matched += 1;
        let d = deltas.entry(r.framework.clone()).or_default();
        if let (Some(p), Some(rec)) = (r.predicted_tokens_before, r.recorded_tokens_before) {
            d.before_pct
                .push((p as f64 - rec as f64).abs() / rec.max(1) as f64 * 100.0);
        }
        if let (Some(p), Some(rec)) = (r.predicted_tokens_after, r.recorded_tokens_after) {
            d.after_ratio.push(p as f64 / rec.max(1) as f64);
        }
        if let (Some(p), Some(rec)) = (r.predicted_duration_s, r.recorded_duration_s) {
            if rec > 0.0 {
                d.duration_ratio.push(p / rec);
            }
        }
    }
    for (name, mut d) in deltas {
        let f = out.frameworks.entry(name).or_default();
        f.median_abs_delta_tokens_before_pct = median3(&mut d.before_pct);
        f.tokens_after_ratio = median3(&mut d.after_ratio);
        f.duration_ratio = median3(&mut d.duration_ratio);
    }
    for f in out.frameworks.values_mut() {
        f.refetch_cost_usd = (f.refetch_cost_usd * 1e6).round() / 1e6;
    }
}
