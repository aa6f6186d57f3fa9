//! The guide's alternatives to compaction as counterfactual sessions (docs/alternatives.md):
//! each transforms the recorded session before the unchanged ADK replay, and its metrics are
//! then rebased on the recorded session's no-compaction baseline, so "saved" always means
//! saved against what really ran.

use crate::cost::metrics::SessionMetrics;
use crate::settings::Alternative;
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

/// How a session is split (docs/alternatives.md "Split").
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SplitRule {
    /// At every lossless split point.
    Lossless,
    /// Where the person was away longer than this many seconds.
    Idle(f64),
}

impl SplitRule {
    /// The rule of a split alternative (`None` for another alternative).
    pub fn of(a: &Alternative) -> Option<SplitRule> {
        match a {
            Alternative::SplitLossless => Some(SplitRule::Lossless),
            Alternative::SplitIdle { seconds, .. } => Some(SplitRule::Idle(*seconds as f64)),
            _ => None,
        }
    }
}

/// The `alternative` text of a split: `split:lossless` or `split:idle=30m`.
pub fn parse_split(a: &str) -> Option<SplitRule> {
    SplitRule::of(&Alternative::parse(a)?)
}

/// `90s`, `30m`, `2h` as seconds (whole, above 0).
pub fn parse_duration(s: &str) -> Option<f64> {
    crate::settings::setting::duration_seconds(s).map(|n| n as f64)
}

/// Where each invocation after the first starts (event index).
fn invocation_starts(session: &Session) -> Vec<u32> {
    let ev = &session.events;
    (1..ev.len())
        .filter(|&i| ev[i].invocation_id != ev[i - 1].invocation_id)
        .map(|i| i as u32)
        .collect()
}

/// The invocation boundaries (event index of the first event after the cut) where `rule`
/// cuts. A boundary is lossless when no reference at or after it uses a fact first held
/// before it (`supports`: (referencing event, first holder, latest holder)), and no tool
/// call before it (a confirmation request included: it is a function call) is answered at or
/// after it.
pub fn split_points(
    session: &Session,
    supports: impl Iterator<Item = (u32, u32, u32)>,
    rule: SplitRule,
) -> Vec<u32> {
    let starts = invocation_starts(session);
    match rule {
        SplitRule::Idle(gap) => starts
            .into_iter()
            .filter(|&b| {
                let ev = &session.events;
                ev[b as usize].timestamp - ev[b as usize - 1].timestamp > gap
            })
            .collect(),
        SplitRule::Lossless => {
            let n = session.events.len();
            // blocked[b] > 0: boundary b is crossed by a reference or an open call.
            let mut delta = vec![0i64; n + 2];
            let mut block = |from: u32, to: u32| {
                // every b with from < b <= to
                if from < to {
                    delta[from as usize + 1] += 1;
                    delta[to as usize + 1] -= 1;
                }
            };
            for (e, first, _) in supports {
                if first != u32::MAX {
                    block(first, e);
                }
            }
            let mut calls: HashMap<&str, u32> = HashMap::new();
            for (i, e) in session.events.iter().enumerate() {
                for p in &e.parts {
                    match p {
                        crate::transcript::Part::ToolCall { id: Some(id), .. } => {
                            calls.insert(id.as_str(), i as u32);
                        }
                        crate::transcript::Part::ToolResponse { id: Some(id), .. } => {
                            if let Some(&c) = calls.get(id.as_str()) {
                                block(c, i as u32);
                            }
                        }
                        _ => {}
                    }
                }
            }
            let mut blocked = vec![0i64; n + 1];
            let mut run = 0;
            for b in 0..=n {
                run += delta[b];
                blocked[b] = run;
            }
            starts
                .into_iter()
                .filter(|&b| blocked[b as usize] == 0)
                .collect()
        }
    }
}

/// The parts of `session` cut before each of `points` (ascending), each with the recorded
/// indices of its events; each part is replayed as a session of its own (a new session id
/// in ADK: nothing of the earlier parts is in its history).
pub fn split_at(session: &Session, points: &[u32]) -> Vec<Variant> {
    let mut bounds = vec![0u32];
    bounds.extend_from_slice(points);
    bounds.push(session.events.len() as u32);
    bounds
        .windows(2)
        .filter(|w| w[0] < w[1])
        .map(|w| Variant {
            session: with_events(
                session,
                session.events[w[0] as usize..w[1] as usize].to_vec(),
            ),
            kept: (w[0]..w[1]).collect(),
            failed_invocations: Vec::new(),
        })
        .collect()
}

/// References a split breaks: made in a part, to a fact every holder of which lies in an
/// earlier part (the part's own replay does not see them at all: nothing in its history
/// holds the fact). 0 at lossless points, by construction.
pub fn references_cut(supports: impl Iterator<Item = (u32, u32, u32)>, points: &[u32]) -> u64 {
    let part_start = |e: u32| {
        let k = points.partition_point(|&p| p <= e);
        if k == 0 {
            0
        } else {
            points[k - 1]
        }
    };
    supports
        .filter(|&(e, first, latest)| first != u32::MAX && latest < part_start(e))
        .count() as u64
}

/// The metrics of a session's parts, as one session's row: counts, tokens, dollars and
/// second sums add up; maxima are the largest part's; per-session percentiles are the
/// largest part's (an upper bound); shares are recomputed from the sums, `detail_lost`
/// weighted by each part's no-compaction prompt tokens.
pub fn sum_parts(parts: &[SessionMetrics]) -> SessionMetrics {
    let mut m = SessionMetrics {
        cost_complete: true,
        ..Default::default()
    };
    let (mut lost_w, mut w) = (0.0, 0.0);
    let (mut dropped_w, mut dw) = (0.0, 0.0);
    for p in parts {
        macro_rules! add {
            ($($f:ident),*) => { $( m.$f += p.$f; )* };
        }
        add!(
            model_requests,
            summarizer_calls,
            summaries_discarded,
            summarizer_input_tokens,
            summarizer_output_tokens,
            prompt_tokens,
            baseline_prompt_tokens,
            tokens_saved_gross,
            tokens_saved_net,
            cost_usd,
            baseline_cost_usd,
            cost_saved_usd,
            end_of_run_latency_s,
            pre_request_latency_s,
            prefill_time_saved_s,
            critical_hidden,
            seams,
            summarizer_context_overflows,
            summarizer_cost_usd,
            cache_read_tokens,
            baseline_cache_read_tokens,
            requests_over_tier,
            baseline_requests_over_tier,
            attachment_prompt_tokens,
            references,
            references_at_risk,
            references_broken,
            references_broken_low,
            references_broken_high,
            invocations_failed,
            thrash
        );
        // A split session sticks where its first stuck part does (that part's event index).
        if m.stuck_event.is_none() && p.stuck_event.is_some() {
            m.stuck_event = p.stuck_event;
            m.stuck_call = p.stuck_call.clone();
            m.stuck_history_tokens = p.stuck_history_tokens;
        }
        macro_rules! max {
            ($($f:ident),*) => { $( m.$f = m.$f.max(p.$f); )* };
        }
        max!(
            end_of_run_latency_p50_s,
            end_of_run_latency_p95_s,
            end_of_run_latency_max_s,
            pre_request_latency_p50_s,
            pre_request_latency_p95_s,
            pre_request_latency_max_s
        );
        m.cost_complete &= p.cost_complete;
        m.references_broken_basis = super::super::detail::references::Basis::combine(
            m.references_broken_basis,
            p.references_broken_basis,
        );
        let pw = p.baseline_prompt_tokens as f64;
        lost_w += p.detail_lost * pw;
        w += pw;
        if let Some(f) = p.facts_dropped {
            dropped_w += f * pw;
            dw += pw;
        }
    }
    m.detail_lost = if w > 0.0 { lost_w / w } else { 0.0 };
    m.facts_dropped = (dw > 0.0).then(|| dropped_w / dw);
    m.attachment_share = if m.prompt_tokens == 0 {
        0.0
    } else {
        m.attachment_prompt_tokens as f64 / m.prompt_tokens as f64
    };
    m.references_broken_share = if m.references == 0 {
        0.0
    } else {
        m.references_broken / m.references as f64
    };
    m
}

/// Count `cut` references a split broke into `m` (measured: nothing in the part holds them).
pub fn add_cut_references(m: &mut SessionMetrics, cut: u64) {
    if cut == 0 {
        return;
    }
    m.references += cut;
    m.references_at_risk += cut;
    m.references_broken += cut as f64;
    m.references_broken_low += cut;
    m.references_broken_high += cut;
    m.references_broken_share = m.references_broken / m.references as f64;
    if m.references_broken_basis == crate::detail::references::Basis::None {
        m.references_broken_basis = crate::detail::references::Basis::Measured;
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
        recorded_policy: session.recorded_policy.clone(),
        notes: Vec::new(),
        timing_adjusted_s: session.timing_adjusted_s,
    }
}

/// Make the recorded usage of a counterfactual's model requests say what they would have
/// sent: the recorded prompt of a kept request counted every earlier recorded event, so it is
/// reduced by the tokens (`tokens[i]`: recorded event i's, in the run's tokenizer, as the
/// engine counts what a compaction removes) of the recorded events before it that the
/// counterfactual drops. Without this, a request after a cut would still be priced at its
/// recorded size.
pub fn drop_removed_from_usage(v: &mut Variant, tokens: &[u32]) {
    let tok = |i: usize| tokens.get(i).copied().unwrap_or(0) as u64;
    let mut kept_before = 0u64;
    let mut all_before = 0u64;
    let mut next = 0usize;
    for (j, &i) in v.kept.iter().enumerate() {
        let i = i as usize;
        while next < i {
            all_before += tok(next);
            next += 1;
        }
        let removed = all_before - kept_before.min(all_before);
        if let Some(u) = v.session.events[j].usage.as_mut() {
            u.prompt_tokens = u.prompt_tokens.saturating_sub(removed);
            u.cached_read_tokens = u.cached_read_tokens.min(u.prompt_tokens);
        }
        kept_before += tok(i);
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
        Session::new("s", "mem", Format::Canonical, events)
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

    /// Two unrelated tasks of two turns each: task A about a config path, task B about an
    /// incident id; each second turn uses its task's fact. `extra` adds text to task B's last
    /// answer; `open_call` leaves a tool call of A's last turn answered in B's first.
    fn two_tasks(extra: &str, open_call: bool) -> Session {
        use crate::transcript::Part;
        let mut t = 1_800_000_000.0;
        let mut ev = Vec::new();
        let mut push = |inv: &str, role: Role, text: &str, ev: &mut Vec<Event>| {
            t += 10.0;
            let mut e = Event::new(
                if role == Role::User { "user" } else { "agent" },
                role,
                inv,
                t,
            );
            e.parts.push(Part::Text { text: text.into() });
            e.model_request = role == Role::Model;
            ev.push(e);
        };
        push(
            "a1",
            Role::User,
            "Please open /srv/app/config.yaml and check it.",
            &mut ev,
        );
        push(
            "a1",
            Role::Model,
            "I opened /srv/app/config.yaml: it is fine.",
            &mut ev,
        );
        push("a2", Role::User, "Then back it up.", &mut ev);
        push(
            "a2",
            Role::Model,
            "Backed up /srv/app/config.yaml to the archive.",
            &mut ev,
        );
        if open_call {
            let mut c = Event::new("agent", Role::Model, "a2", 1_800_000_100.0);
            c.model_request = true;
            c.parts.push(Part::ToolCall {
                id: Some("k1".into()),
                name: "adk_request_confirmation".into(),
                args: serde_json::json!({}),
            });
            ev.push(c);
        }
        push(
            "b1",
            Role::User,
            "New question: what is incident INC-7741?",
            &mut ev,
        );
        if open_call {
            let mut r = Event::new("user", Role::User, "b1", 1_800_000_150.0);
            r.parts.push(Part::ToolResponse {
                id: Some("k1".into()),
                name: "adk_request_confirmation".into(),
                response: serde_json::json!({"confirmed": true}),
            });
            ev.insert(ev.len() - 1, r);
        }
        push("b1", Role::Model, "INC-7741 is a login outage.", &mut ev);
        push("b2", Role::User, "Who owns it?", &mut ev);
        push(
            "b2",
            Role::Model,
            &format!("The on-call team owns INC-7741.{extra}"),
            &mut ev,
        );
        session(ev)
    }

    fn lossless(s: &Session) -> Vec<u32> {
        let inputs =
            crate::cost::evaluate::SessionCostInputs::new(s, crate::tokens::Tokenizer::AdkChars);
        let refs = inputs.memo.references(s, &inputs.lines);
        split_points(s, refs.supports(), SplitRule::Lossless)
    }

    #[test]
    fn two_unrelated_tasks_have_one_lossless_split_point_at_their_boundary() {
        let s = two_tasks("", false);
        let b = s
            .events
            .iter()
            .position(|e| e.invocation_id == "b1")
            .unwrap() as u32;
        assert_eq!(lossless(&s), vec![b]);
        let parts = split_at(&s, &[b]);
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].session.events.len() as u32, b);
        assert_eq!(parts[1].kept[0], b);
        // A later turn that reuses task A's path removes the point.
        let s = two_tasks(" Its notes are in /srv/app/config.yaml too.", false);
        assert_eq!(lossless(&s), Vec::<u32>::new());
        let inputs =
            crate::cost::evaluate::SessionCostInputs::new(&s, crate::tokens::Tokenizer::AdkChars);
        let refs = inputs.memo.references(&s, &inputs.lines);
        // Cut there anyway (as an idle split would), the reference is broken.
        assert_eq!(references_cut(refs.supports(), &[b]), 1);
        assert_eq!(references_cut(refs.supports(), &[]), 0);
        // A confirmation asked in task A and answered in task B's first turn crosses it.
        let s = two_tasks("", true);
        assert_eq!(lossless(&s), Vec::<u32>::new());
    }

    #[test]
    fn idle_splits_follow_the_pauses_and_durations_parse() {
        assert_eq!(parse_duration("30m"), Some(1800.0));
        assert_eq!(parse_duration("2h"), Some(7200.0));
        assert_eq!(parse_duration("90s"), Some(90.0));
        for bad in ["", "m", "0m", "30", "30d", "-5m"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
        assert_eq!(parse_split("split:lossless"), Some(SplitRule::Lossless));
        assert_eq!(parse_split("split:idle=1h"), Some(SplitRule::Idle(3600.0)));
        let mut s = two_tasks("", false);
        let b = s
            .events
            .iter()
            .position(|e| e.invocation_id == "b1")
            .unwrap();
        for e in &mut s.events[b..] {
            e.timestamp += 4000.0;
        }
        let none = std::iter::empty();
        assert_eq!(
            split_points(&s, none, SplitRule::Idle(3600.0)),
            vec![b as u32]
        );
        let none = std::iter::empty();
        assert_eq!(
            split_points(&s, none, SplitRule::Idle(5000.0)),
            Vec::<u32>::new()
        );
    }

    #[test]
    fn a_kept_request_no_longer_pays_for_the_events_dropped_before_it() {
        let mut t = 0.0;
        let mut ev = turn("i0", 3, &mut t);
        ev.extend(turn("i1", 1, &mut t));
        for e in ev.iter_mut().filter(|e| e.model_request) {
            e.usage = Some(crate::transcript::Usage {
                prompt_tokens: 1000,
                cached_read_tokens: 990,
                cache_write_tokens: 0,
                output_tokens: 5,
            });
        }
        let s = session(ev);
        // Every event counts 10 tokens; a cap of 1 drops i0's calls 2 and 3 and their tool
        // results (4 events): i1's request (recorded 1000) now reads 40 tokens less.
        let tokens = vec![10u32; s.events.len()];
        let mut v = cap_llm_calls(&s, 1);
        drop_removed_from_usage(&mut v, &tokens);
        let prompts: Vec<u64> = v
            .session
            .events
            .iter()
            .filter_map(|e| e.usage.map(|u| u.prompt_tokens))
            .collect();
        assert_eq!(prompts, vec![1000, 960]);
        // A split's second part reads nothing of the first.
        let b = s
            .events
            .iter()
            .position(|e| e.invocation_id == "i1")
            .unwrap();
        let mut parts = split_at(&s, &[b as u32]);
        drop_removed_from_usage(&mut parts[1], &tokens);
        let u = parts[1]
            .session
            .events
            .iter()
            .find_map(|e| e.usage)
            .unwrap();
        assert_eq!(u.prompt_tokens, 1000 - 10 * b as u64);
        assert_eq!(u.cached_read_tokens, u.prompt_tokens);
    }

    #[test]
    fn parts_add_up_and_shares_are_recomputed() {
        let a = SessionMetrics {
            prompt_tokens: 100,
            baseline_prompt_tokens: 100,
            cost_usd: 1.0,
            references: 4,
            references_broken: 1.0,
            cost_complete: true,
            ..Default::default()
        };
        let b = SessionMetrics {
            prompt_tokens: 300,
            baseline_prompt_tokens: 300,
            cost_usd: 2.0,
            references: 4,
            references_broken: 0.0,
            detail_lost: 0.5,
            cost_complete: true,
            ..Default::default()
        };
        let m = sum_parts(&[a, b]);
        assert_eq!(m.prompt_tokens, 400);
        assert!((m.cost_usd - 3.0).abs() < 1e-12);
        assert!((m.references_broken_share - 0.125).abs() < 1e-12);
        assert!((m.detail_lost - 0.375).abs() < 1e-12);
        let mut m = m;
        add_cut_references(&mut m, 2);
        assert_eq!(m.references, 10);
        assert!((m.references_broken_share - 0.3).abs() < 1e-12);
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
