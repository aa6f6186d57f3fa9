//! The guide's alternatives to compaction as counterfactual sessions (docs/alternatives.md):
//! each transforms the recorded session before the unchanged ADK replay, and its metrics are
//! then rebased on the recorded session's no-compaction baseline, so "saved" always means
//! saved against what really ran.

use crate::cost::metrics::SessionMetrics;
use crate::transcript::Session;
use std::collections::HashMap;

/// A counterfactual session and where its events came from.
#[derive(Debug, Clone)]
pub struct Variant {
    pub session: Session,
    /// For each event of `session`, its index among the recorded session's events (to reuse
    /// the recorded token counts).
    pub kept: Vec<u32>,
    /// Invocation ids that would have failed, in the session's order.
    pub failed_invocations: Vec<String>,
}

/// The session as `RunConfig(max_llm_calls=n)` would have run it. ADK 2.13.0 counts model
/// calls per invocation and raises `LlmCallsLimitExceededError` before call n+1
/// (google/adk/agents/invocation_context.py, `increment_and_enforce_llm_calls_limit`): the
/// first n model responses and the tool results that followed them stay, everything of that
/// invocation from its (n+1)-th model request on is never produced, and the invocation fails.
/// Later invocations are replayed as recorded (the person's next message is kept as sent).
pub fn cap_llm_calls(session: &Session, n: u64) -> Variant {
    let mut calls: HashMap<&str, u64> = HashMap::new();
    let mut stopped: Vec<&str> = Vec::new();
    let mut events = Vec::with_capacity(session.events.len());
    let mut kept = Vec::with_capacity(session.events.len());
    for (i, e) in session.events.iter().enumerate() {
        let inv = e.invocation_id.as_str();
        if stopped.contains(&inv) {
            continue;
        }
        if e.model_request {
            let c = calls.entry(inv).or_default();
            *c += 1;
            if *c > n {
                stopped.push(inv);
                continue;
            }
        }
        events.push(e.clone());
        kept.push(i as u32);
    }
    Variant {
        session: with_events(session, events),
        kept,
        failed_invocations: stopped.into_iter().map(str::to_string).collect(),
    }
}

/// `session` with other events (its recorded compactions, which no replay reads, dropped).
fn with_events(session: &Session, events: Vec<crate::transcript::Event>) -> Session {
    Session {
        id: session.id.clone(),
        source: session.source.clone(),
        format: session.format,
        events,
        recorded_compactions: Vec::new(),
        model: session.model.clone(),
        synthetic_timestamps: session.synthetic_timestamps,
        approval_policies: session.approval_policies.clone(),
    }
}

/// Measure a counterfactual's metrics against the recorded session's no-compaction
/// `baseline` (the counterfactual's own "baseline" columns would hide what it saved):
/// the baseline columns become the recorded ones and every "saved" column is recomputed.
/// `prefill_seconds` turns tokens into the agent model's prefill time.
pub fn rebase(
    m: &mut SessionMetrics,
    baseline: &SessionMetrics,
    prefill_seconds: impl Fn(f64) -> f64,
) {
    m.baseline_prompt_tokens = baseline.baseline_prompt_tokens;
    m.baseline_cost_usd = baseline.baseline_cost_usd;
    m.baseline_cache_read_tokens = baseline.baseline_cache_read_tokens;
    m.baseline_requests_over_tier = baseline.baseline_requests_over_tier;
    m.tokens_saved_gross = m.baseline_prompt_tokens as i64 - m.prompt_tokens as i64;
    m.tokens_saved_net =
        m.tokens_saved_gross - m.summarizer_input_tokens as i64 - m.summarizer_output_tokens as i64;
    m.cost_saved_usd = m.baseline_cost_usd - m.cost_usd;
    m.prefill_time_saved_s = prefill_seconds(m.tokens_saved_gross as f64);
    m.cost_complete &= baseline.cost_complete;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::{Event, Format, Role};

    fn session(events: Vec<Event>) -> Session {
        Session {
            id: "s".into(),
            source: "mem".into(),
            format: Format::Canonical,
            events,
            recorded_compactions: vec![],
            model: None,
            synthetic_timestamps: false,
            approval_policies: vec![],
        }
    }

    fn turn(inv: &str, calls: usize, t: &mut f64) -> Vec<Event> {
        let mut v = vec![Event::new("user", Role::User, inv, *t)];
        for _ in 0..calls {
            *t += 1.0;
            let mut m = Event::new("agent", Role::Model, inv, *t);
            m.model_request = true;
            v.push(m);
            *t += 1.0;
            v.push(Event::new("tool", Role::Tool, inv, *t));
        }
        *t += 1.0;
        v
    }

    #[test]
    fn a_cap_stops_the_invocation_before_call_n_plus_one() {
        let mut t = 0.0;
        let mut ev = turn("i0", 5, &mut t);
        ev.extend(turn("i1", 2, &mut t));
        let s = session(ev);
        let v = cap_llm_calls(&s, 3);
        let calls = |s: &Session, inv: &str| {
            s.events
                .iter()
                .filter(|e| e.model_request && e.invocation_id == inv)
                .count()
        };
        assert_eq!(calls(&v.session, "i0"), 3);
        assert_eq!(calls(&v.session, "i1"), 2);
        assert_eq!(v.failed_invocations, vec!["i0".to_string()]);
        // The third call's tool result stays (the tool ran); the 4th and 5th calls and their
        // tool results go: 4 of the 16 events.
        assert_eq!(v.session.events.len(), s.events.len() - 4);
        assert_eq!(v.kept.len(), v.session.events.len());
        assert_eq!(v.kept[6], 6, "the 3rd call's tool result");
        assert_eq!(v.kept[7], 11, "i1 starts at recorded event 11");
        // A cap no invocation reaches changes nothing and fails nothing.
        let v = cap_llm_calls(&s, 5);
        assert_eq!(v.session.events.len(), s.events.len());
        assert!(v.failed_invocations.is_empty());
    }

    #[test]
    fn rebase_measures_saved_against_the_recorded_baseline() {
        let base = SessionMetrics {
            baseline_prompt_tokens: 1000,
            baseline_cost_usd: 2.0,
            cost_complete: true,
            ..Default::default()
        };
        let mut m = SessionMetrics {
            prompt_tokens: 600,
            baseline_prompt_tokens: 600,
            cost_usd: 1.5,
            baseline_cost_usd: 1.5,
            summarizer_input_tokens: 10,
            cost_complete: true,
            ..Default::default()
        };
        rebase(&mut m, &base, |t| t / 100.0);
        assert_eq!(m.baseline_prompt_tokens, 1000);
        assert_eq!(m.tokens_saved_gross, 400);
        assert_eq!(m.tokens_saved_net, 390);
        assert!((m.cost_saved_usd - 0.5).abs() < 1e-12);
        assert!((m.prefill_time_saved_s - 4.0).abs() < 1e-12);
    }
}
