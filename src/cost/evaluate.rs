//! One call that turns (session, setting) into a replay and its metrics: build the
//! summarizer, replay under the client mode, compute every column. `replay` and `sweep`
//! pass the engine call as a closure, so this module needs no engine entry point.

use super::client::ClientMode;
use super::compute::{
    attachment_tokens, compute_metrics, replay_measured, CostModel, MetricsSetting, ReplayLog,
};
use super::metrics::SessionMetrics;
use crate::detail::facts::event_facts;
use crate::detail::references::SessionReferences;
use crate::engine::summarizer::Policy;
use crate::engine::{Replay, Summarizer};
use crate::summarize::{
    build, Billed, BuildContext, BuildError, Built, EventLines, SummarizerSpec,
    DEFAULT_COMMAND_TIMEOUT,
};
use crate::tokens::sizes::SessionSizes;
use crate::tokens::Tokenizer;
use crate::transcript::Session;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// Per-session inputs of the cost layer, built once and shared by every setting.
#[derive(Debug, Clone)]
pub struct SessionCostInputs {
    /// ADK summarizer lines per event and their tokens (modelled summarizer input).
    pub lines: EventLines,
    /// Attachment tokens per event.
    pub attachments: Vec<u64>,
    pub tokenizer: Tokenizer,
    /// What every setting of the session would otherwise recompute.
    pub memo: SessionMemo,
}

/// Work shared by the settings of one session: a rule-based summary of one span is the same
/// text whatever setting compacted it, and the detail-lost check needs each event's facts on
/// every summary. Results only; a clone starts empty.
#[derive(Debug, Default)]
pub struct SessionMemo {
    facts: OnceLock<crate::detail::facts::EventFacts>,
    references: OnceLock<SessionReferences>,
    /// Summary token counts by the text's 128-bit hash.
    counted: Mutex<crate::tokens::cache::Key128Map<u64>>,
    /// `python:` summaries by (summarizer, span).
    spans: crate::summarize::python::SpanMemo,
    /// Each event's lines as `terse` writes them, measured on first use.
    terse: OnceLock<crate::summarize::TerseLines>,
    /// Each event's summarizer text as `echo` reads it, written on first use.
    echo: OnceLock<std::sync::Arc<[String]>>,
}

impl Clone for SessionMemo {
    fn clone(&self) -> Self {
        SessionMemo::default()
    }
}

impl SessionMemo {
    /// Each event's facts, found on first use.
    pub fn event_facts(&self, session: &Session) -> &crate::detail::facts::EventFacts {
        self.facts.get_or_init(|| event_facts(session))
    }

    /// The session's references (metrics.md "References"), found on first use.
    pub fn references(&self, session: &Session, lines: &EventLines) -> &SessionReferences {
        self.references.get_or_init(|| {
            SessionReferences::new(session, self.event_facts(session), &lines.shapes)
        })
    }

    /// The session's events as `terse` writes them, measured with `tokenizer` on first use
    /// (a session is counted with one tokenizer).
    pub fn terse_lines(
        &self,
        session: &Session,
        tokenizer: Tokenizer,
    ) -> &crate::summarize::TerseLines {
        self.terse.get_or_init(|| {
            let count = move |t: &str| crate::tokens::count_text(tokenizer, t) as u64;
            let count: &(dyn Fn(&str) -> u64 + Sync) = &count;
            crate::summarize::TerseLines::new(
                session,
                (tokenizer != Tokenizer::AdkChars).then_some(count),
            )
        })
    }

    /// Each event's summarizer text (what `echo` summaries are cut from), written once per
    /// session: building them for every replay was an allocation per event, and freeing
    /// them a long replay's cache misses.
    pub fn echo_texts(&self, session: &Session) -> std::sync::Arc<[String]> {
        self.echo
            .get_or_init(|| crate::summarize::echo_texts(session))
            .clone()
    }

    /// `count(text)`, once per distinct text.
    pub fn count(&self, text: &str, count: impl Fn(&str) -> u64) -> u64 {
        let key = xxhash_rust::xxh3::xxh3_128(text.as_bytes());
        let known = self
            .counted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .copied();
        if let Some(v) = known {
            return v;
        }
        let v = count(text);
        self.counted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, v);
        v
    }
}

impl SessionCostInputs {
    pub fn new(session: &Session, tokenizer: Tokenizer) -> Self {
        let count = |t: &str| crate::tokens::count_text(tokenizer, t) as u64;
        let lines = EventLines::new(session, &count);
        SessionCostInputs {
            lines,
            attachments: attachment_tokens(session, tokenizer),
            tokenizer,
            memo: SessionMemo::default(),
        }
    }
}

/// The cost side of a setting.
#[derive(Debug, Clone)]
pub struct CostSetting<'a> {
    pub summarizer: &'a SummarizerSpec,
    /// `--model`, else the session's recorded model.
    pub agent_model: Option<&'a str>,
    pub client: ClientMode,
    /// Time limit of a `command:` or `python:` call (a `live:` client has its own, set when
    /// it was started).
    pub command_timeout: Duration,
    /// 1-based calls of a deterministic summarizer that fail (the oracle's failures).
    pub fail_calls: Vec<u32>,
    /// The `artifacts` alternative: each attachment priced once (see
    /// [`super::compute::MetricsSetting::attachments_once`]).
    pub attachments_once: bool,
    /// The summarizer family a modelled summary is estimated with
    /// ([`super::compute::MetricsSetting::summary_family`]).
    pub summary_family: Option<&'a str>,
}

impl<'a> CostSetting<'a> {
    pub fn new(
        summarizer: &'a SummarizerSpec,
        agent_model: Option<&'a str>,
        client: ClientMode,
    ) -> Self {
        CostSetting {
            summarizer,
            agent_model,
            client,
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
            fail_calls: Vec::new(),
            attachments_once: false,
            summary_family: None,
        }
    }
}

/// A replay with its metrics.
#[derive(Debug, Clone)]
pub struct Evaluation {
    pub replay: Replay,
    pub log: ReplayLog,
    pub metrics: SessionMetrics,
    /// One line per failed `command:`, `python:` or `live:` call (they count as failed
    /// summarizer calls).
    pub summarizer_errors: Vec<String>,
}

/// Replay `session` under `setting` (engine call in `run`) and compute its metrics. Errors:
/// a `command:` program that does not exist.
pub fn evaluate(
    session: &Session,
    sizes: &SessionSizes,
    inputs: &SessionCostInputs,
    model: &CostModel,
    setting: &CostSetting<'_>,
    run: &dyn Fn(&dyn Summarizer) -> Replay,
) -> Result<Evaluation, BuildError> {
    with_summarizer(session, inputs, model, setting, |summarizer| {
        evaluate_with(session, sizes, inputs, model, setting, run, summarizer)
    })
}

/// Build the summarizer `evaluate` replays `setting` with (memoized token counts and spans,
/// the billed model's context window) and hand it to `f`: one place for that context, which
/// the scale benchmark's engine-only cases share.
pub fn with_summarizer<R>(
    session: &Session,
    inputs: &SessionCostInputs,
    model: &CostModel,
    setting: &CostSetting<'_>,
    f: impl FnOnce(&Built<'_>) -> R,
) -> Result<R, BuildError> {
    let tok = inputs.tokenizer;
    let count = move |t: &str| {
        inputs
            .memo
            .count(t, |t| crate::tokens::count_text(tok, t) as u64)
    };
    let summarizer = build(
        setting.summarizer,
        BuildContext {
            session,
            lines: &inputs.lines,
            length: model.latency.length,
            count: &count,
            tokenizer: tok,
            timeout: setting.command_timeout,
            fail_calls: setting.fail_calls.clone(),
            context_window: match setting.summarizer.billed_model(setting.agent_model) {
                Billed::Model(name) => model.context_window(name),
                Billed::Free => None,
            },
            spans: Some(&inputs.memo.spans),
            terse: matches!(setting.summarizer, SummarizerSpec::Terse)
                .then(|| inputs.memo.terse_lines(session, tok)),
            echo: matches!(
                setting.summarizer,
                SummarizerSpec::Deterministic(Policy::Echo(_))
            )
            .then(|| inputs.memo.echo_texts(session)),
        },
    )?;
    Ok(f(&summarizer))
}

fn evaluate_with(
    session: &Session,
    sizes: &SessionSizes,
    inputs: &SessionCostInputs,
    model: &CostModel,
    setting: &CostSetting<'_>,
    run: &dyn Fn(&dyn Summarizer) -> Replay,
    summarizer: &Built<'_>,
) -> Evaluation {
    let ms = MetricsSetting {
        agent_model: setting.agent_model,
        summarizer: setting.summarizer,
        client: setting.client,
        attachment_tokens: &inputs.attachments,
        event_facts: setting
            .summarizer
            .writes_real_text()
            .then(|| inputs.memo.event_facts(session)),
        references: Some(inputs.memo.references(session, &inputs.lines)),
        attachments_once: setting.attachments_once,
        summary_family: setting.summary_family,
    };
    let (replay, log) = replay_measured(
        summarizer,
        &|| summarizer.measured(),
        &|call| summarizer.measured_seconds(call),
        model,
        &ms,
        run,
    );
    let metrics = compute_metrics(session, sizes, &replay, model, &ms, &log);
    // A streams replay may run the same call more than once; report each failure once.
    let mut summarizer_errors = summarizer.errors();
    summarizer_errors.sort();
    summarizer_errors.dedup();
    Evaluation {
        replay,
        log,
        metrics,
        summarizer_errors,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_memo_counts_each_text_once() {
        let memo = SessionMemo::default();
        let calls = std::cell::Cell::new(0);
        let count = |t: &str| {
            calls.set(calls.get() + 1);
            t.len() as u64
        };
        assert_eq!(memo.count("alpha", count), 5);
        assert_eq!(memo.count("alpha", count), 5);
        assert_eq!(memo.count("beta!", count), 5);
        assert_eq!(calls.get(), 2);
        // a clone is a fresh memo, not shared state
        let fresh = memo.clone();
        assert_eq!(fresh.count("alpha", count), 5);
        assert_eq!(calls.get(), 3);
    }
    use crate::engine::{CallResult, Phase, SummarizeRequest, SummarizerCall, Trigger};
    use crate::transcript::{Event, Format, Part, Role};

    fn session() -> Session {
        let mut a = Event::new("user", Role::User, "i0", 1.0);
        a.parts.push(Part::Text {
            text: "Call me at 555-0199 about INC-42".into(),
        });
        let mut b = Event::new("agent", Role::Model, "i0", 2.0);
        b.parts.push(Part::ToolCall {
            id: None,
            name: "lookup".into(),
            args: serde_json::json!({"ticket": "INC-42"}),
        });
        Session::new("s", "mem", Format::Canonical, vec![a, b])
    }

    /// One post-invocation call over both events, recorded as the engine would.
    fn fake_run(s: &dyn Summarizer) -> Replay {
        let req = SummarizeRequest {
            call: 1,
            phase: Phase::PostInvocation,
            trigger: Trigger::SlidingWindow,
            events: 0..2,
            skip: &[],
            seed: None,
            prompt_chars: 0,
            history_chars: 0,
            fired_at_s: 0.0,
            next_turn_at_s: None,
        };
        let (result, out) = match s.summarize(&req) {
            crate::engine::Outcome::Summary(x) => (CallResult::Summary, x.tokens),
            crate::engine::Outcome::Empty { .. } => (CallResult::Empty, 0),
            crate::engine::Outcome::Failed { .. } => (CallResult::Failed, 0),
        };
        Replay {
            calls: vec![SummarizerCall {
                call: 1,
                phase: Phase::PostInvocation,
                trigger: Trigger::SlidingWindow,
                invocation_index: 0,
                before_event_index: None,
                result,
                summarizer_prompt_chars: 0,
                summarizer_history_chars: 0,
                input_tokens: 0,
                output_tokens: out,
                summary_chars: 0,
                raw_events: 0..2,
                compaction: None,
            }],
            ..Default::default()
        }
    }

    #[test]
    fn terse_end_to_end_keeps_text_and_counts_facts() {
        // Facts: "555" and "0199" (numbers: `-` is not a number separator) and "INC-42" (id;
        // also in the tool args). The terse summary is "user: Call me at 555-0199 about
        // INC-42": it keeps all 3, so none is dropped.
        let s = session();
        let sizes = SessionSizes::new(&s, None);
        let inputs = SessionCostInputs::new(&s, Tokenizer::AdkChars);
        let spec = SummarizerSpec::Terse;
        let e = evaluate(
            &s,
            &sizes,
            &inputs,
            &CostModel::default(),
            &CostSetting::new(&spec, None, ClientMode::Waits),
            &fake_run,
        )
        .unwrap();
        assert_eq!(
            e.log.texts.get(&1).map(|t| t.to_string()).as_deref(),
            Some("user: Call me at 555-0199 about INC-42")
        );
        assert_eq!(e.metrics.facts_dropped, Some(0.0));
        // adk-chars counts floor(38 chars / 4) = 9 output tokens.
        assert_eq!(e.metrics.summarizer_output_tokens, 9);
        assert!(e.summarizer_errors.is_empty());
    }

    #[test]
    fn missing_command_is_an_error_before_replaying() {
        let s = session();
        let sizes = SessionSizes::new(&s, None);
        let inputs = SessionCostInputs::new(&s, Tokenizer::AdkChars);
        let spec = SummarizerSpec::parse("command:/no/such/prog").unwrap();
        let e = evaluate(
            &s,
            &sizes,
            &inputs,
            &CostModel::default(),
            &CostSetting::new(&spec, None, ClientMode::Waits),
            &fake_run,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("/no/such/prog` not found"), "{e}");
    }
}
