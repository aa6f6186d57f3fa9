//! OpenHands SDK v1 conversations: one folder is one session.
//!
//! The SDK (`openhands-sdk`, `openhands/sdk/conversation/`) persists a conversation as
//! `base_state.json` (the agent and its condenser, and `stats.service_to_metrics` with
//! per-call `token_usages` and `response_latencies`) beside `events/event-NNNNN-<id>.json`,
//! one event per file, `NNNNN` its position. [`is_conversation`] tells such a folder
//! (`event_service/` in a saved workspace) so the loaders take it whole instead of reading
//! each event file as a transcript of its own.
//!
//! - `MessageEvent` from the user opens an invocation; from the agent it is a model request.
//! - `ActionEvent`s are tool calls; those sharing one `llm_response_id` (parallel calls) are
//!   one model request, placed at the first. Usage is the `default` service's `token_usages`
//!   entry with that `response_id`: LiteLLM's `prompt_tokens` holds cache reads but not cache
//!   writes, so the prompt is `prompt_tokens + cache_write_tokens` (Anthropic's input).
//!   `response_latencies` of the same id give `Event::latency_s`.
//! - `ObservationEvent`s answer their `tool_call_id`: the text the model read (`output`
//!   between the bash `metadata.prefix`/`suffix`, an editor `error`, `content`, a finish
//!   `message`). A positive exit code or an editor error is `ToolError`;
//!   `UserRejectObservation` is `Refusal`; `AgentErrorEvent` (a call the SDK could not run)
//!   is a `ToolError` response to its call.
//! - `SystemPromptEvent` is fixed overhead, as in v0 (`openhands.rs` skips `system`); other
//!   bookkeeping events (state updates, pauses, condensation requests) are skipped.
//! - `Condensation` (`forgotten_event_ids`, `summary`, `summary_offset`) is a recorded
//!   compaction, not an event: automatic (the condenser fires by itself), `pre_tokens` the
//!   recorded prompt of the last request before it, starting at the event before it; later
//!   requests are marked `post_compaction_usage`. `agent.condenser` is the session's
//!   `recorded_policy`.

use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::Path;

use super::readutil::{self, Clock};
use super::{
    compact_json, util, Condenser, Critical, Event, Format, Part, PolicyRule, RawPos, ReadError,
    RecordedCompaction, RecordedPolicy, Role, Session, Usage,
};

const AGENT: &str = "openhands";
/// Author of user-role text the SDK injects (error notices without a call).
const HARNESS: &str = "system";

/// The conversation state file and the events folder beside it.
pub const BASE_STATE: &str = "base_state.json";
pub const EVENTS_DIR: &str = "events";

/// True when `dir` holds an SDK v1 conversation (`base_state.json` and `events/`).
pub fn is_conversation(dir: &Path) -> bool {
    dir.join(BASE_STATE).is_file() && dir.join(EVENTS_DIR).is_dir()
}

/// The folder of an SDK v1 conversation that lacks its `base_state.json`, when `dir` is one
/// (an `events/` of `event-NNNNN-*.json` files) or is its `events/`: its events alone are no
/// transcript (each would be sniffed as something else), so the folder is one bad input.
pub fn conversation_without_state(dir: &Path) -> Option<&Path> {
    let conv = if dir.file_name()? == EVENTS_DIR {
        dir.parent()?
    } else {
        dir
    };
    let events = conv.join(EVENTS_DIR);
    if conv.join(BASE_STATE).exists() || !events.is_dir() {
        return None;
    }
    let has_events = std::fs::read_dir(&events)
        .ok()?
        .flatten()
        .any(|e| e.file_name().to_str().and_then(event_index).is_some());
    has_events.then_some(conv)
}

/// The conversation folder a file belongs to, when it is one's `base_state.json` or one of
/// its `events/event-NNNNN-*.json`: such a file alone is no transcript.
pub fn conversation_of(file: &Path) -> Option<&Path> {
    let name = file.file_name()?.to_str()?;
    let parent = file.parent()?;
    let dir = if name == BASE_STATE {
        parent
    } else if event_index(name).is_some() && parent.file_name()? == EVENTS_DIR {
        parent.parent()?
    } else {
        return None;
    };
    is_conversation(dir).then_some(dir)
}

/// `NNNNN` of an event file name `event-NNNNN-<id>.json`.
pub fn event_index(name: &str) -> Option<usize> {
    let rest = name.strip_prefix("event-")?.strip_suffix(".json")?;
    let (n, _) = rest.split_once('-').unwrap_or((rest, ""));
    n.parse().ok()
}

/// One event file as read: its `NNNNN`, its path (for errors) and its text.
pub struct EventFile {
    pub index: usize,
    pub file: String,
    pub text: String,
}

/// Read one conversation. `dir` names the folder (errors, `Session::source`); `events` may
/// come in any order (they are taken by index).
pub fn read(dir: &str, base_state: &str, mut events: Vec<EventFile>) -> Result<Session, ReadError> {
    let state_file = format!("{dir}/{BASE_STATE}");
    let state = util::parse_json(&state_file, base_state)?;
    let Some(state) = state.as_object() else {
        return Err(ReadError::new(
            &state_file,
            "$",
            format!("expected an object, found {}", readutil::kind(&state)),
        ));
    };
    let metrics = Metrics::of(&state_file, state)?;
    events.sort_by_key(|e| e.index);
    let mut b = Builder::new(metrics);
    for ef in &events {
        let v = util::parse_json(&ef.file, &ef.text)?;
        let Some(e) = v.as_object() else {
            return Err(ReadError::new(
                &ef.file,
                "$",
                format!("expected an event object, found {}", readutil::kind(&v)),
            ));
        };
        b.event(ef, e)?;
    }
    if b.events.is_empty() {
        return Err(ReadError::new(
            dir,
            "",
            "no messages, actions or observations",
        ));
    }
    let agent = state.get("agent");
    let model = agent
        .and_then(|a| a.pointer("/llm/model"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut notes = Vec::new();
    let recorded = match agent.and_then(|a| a.get("condenser")) {
        Some(c) => recorded_condenser(c, "agent.condenser").unwrap_or_else(|note| {
            notes.push(format!("{dir}/{BASE_STATE}: {note}"));
            None
        }),
        None => None,
    };
    let recorded_policy = recorded.map(|c| RecordedPolicy {
        source: "openhands base_state.json agent.condenser".to_string(),
        versions: Vec::new(),
        rule: PolicyRule::Openhands(c),
    });
    let id = readutil::str_field(state, "id")
        .map(str::to_string)
        .unwrap_or_else(|| dir.rsplit(['/', '\\']).next().unwrap_or(dir).to_string());
    let mut s = Session {
        recorded_compactions: b.compactions,
        model: model.or(b.model),
        synthetic_timestamps: b.clock.synthetic,
        recorded_policy,
        notes,
        ..Session::new(id, dir, Format::Openhands, b.events)
    };
    s.index_recorded();
    Ok(s)
}

/// The condenser `v` (at JSON path `at`) records, or what is wrong with it: a size field
/// (`max_size`, `keep_first`, `max_tokens`, `attention_window`, in it or a pipeline stage)
/// that is not a whole number from 0 to 2^53 (`-1`, `"abc"`). Such a condenser is not used:
/// reading it as the shipped default would replay a setting the run did not have.
pub fn recorded_condenser(v: &Value, at: &str) -> Result<Option<Condenser>, util::BadNumber> {
    if let Some(bad) = bad_condenser_field(v, at) {
        return Err(util::BadNumber(format!(
            "{bad}; the recorded condenser is not used (the session is replayed as recording no setting)"
        )));
    }
    Ok(condenser(v))
}

fn bad_condenser_field(v: &Value, at: &str) -> Option<String> {
    let m = v.as_object()?;
    for k in ["max_size", "keep_first", "max_tokens", "attention_window"] {
        match m.get(k) {
            None | Some(Value::Null) => {}
            Some(x) if x.as_u64().is_some_and(|n| n <= super::MAX_TOKENS) => {}
            Some(x) => {
                return Some(format!(
                    "{at}.{k}: {} is not a whole number from 0 to 2^53",
                    util::one_line(&x.to_string(), 40)
                ))
            }
        }
    }
    m.get("condensers")
        .and_then(Value::as_array)?
        .iter()
        .enumerate()
        .find_map(|(i, c)| bad_condenser_field(c, &format!("{at}.condensers[{i}]")))
}

/// A condenser object of the SDK (`kind`) or of v0's `condenser_config` (`type`); `None` for
/// `null` or a value that names no condenser.
pub fn condenser(v: &Value) -> Option<Condenser> {
    let m = v.as_object()?;
    let kind = readutil::str_field(m, "kind").or_else(|| readutil::str_field(m, "type"))?;
    let num = |k: &str| m.get(k).and_then(Value::as_u64);
    let stages = m
        .get("condensers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(condenser).collect())
        .unwrap_or_default();
    Some(Condenser {
        kind: kind.to_string(),
        max_size: num("max_size"),
        keep_first: num("keep_first"),
        max_tokens: num("max_tokens"),
        attention_window: num("attention_window"),
        model: m
            .get("llm")
            .or_else(|| m.get("llm_config"))
            .and_then(|l| l.get("model"))
            .and_then(Value::as_str)
            .map(str::to_string),
        stages,
    })
}

/// Per-call usage and latency of the agent's LLM (`stats.service_to_metrics.default`),
/// keyed by response id.
#[derive(Default)]
struct Metrics {
    usage: HashMap<String, Usage>,
    latency: HashMap<String, f64>,
}

impl Metrics {
    fn of(file: &str, state: &Map<String, Value>) -> Result<Metrics, ReadError> {
        let mut m = Metrics::default();
        let default = state
            .get("stats")
            .and_then(|s| s.pointer("/service_to_metrics/default"));
        let Some(default) = default else {
            return Ok(m);
        };
        let list = |k: &str| {
            default
                .get(k)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        };
        for (i, u) in list("token_usages").enumerate() {
            let Some(id) = u.get("response_id").and_then(Value::as_str) else {
                continue;
            };
            let path = format!("$.stats.service_to_metrics.default.token_usages[{i}]");
            let get = |k: &str| {
                readutil::tokens_field(Some(u), &path, k).map_err(|e| ReadError::new(file, "", e.0))
            };
            let write = get("cache_write_tokens")?;
            let usage = Usage {
                prompt_tokens: get("prompt_tokens")?.saturating_add(write),
                cached_read_tokens: get("cache_read_tokens")?,
                cache_write_tokens: write,
                output_tokens: get("completion_tokens")?,
            };
            m.usage.insert(id.to_string(), usage);
        }
        for x in list("response_latencies") {
            let (Some(id), Some(s)) = (
                x.get("response_id").and_then(Value::as_str),
                x.get("latency").and_then(Value::as_f64),
            ) else {
                continue;
            };
            if s.is_finite() && s >= 0.0 {
                m.latency.insert(id.to_string(), s);
            }
        }
        Ok(m)
    }
}

struct Builder {
    metrics: Metrics,
    events: Vec<Event>,
    compactions: Vec<RecordedCompaction>,
    clock: Clock,
    model: Option<String>,
    invocations: usize,
    /// Model event of each `llm_response_id`.
    by_response: HashMap<String, usize>,
    /// Session event of each source event id (merged actions share one).
    by_id: HashMap<String, usize>,
    /// Tool name of each call id.
    call_names: HashMap<String, String>,
    after_compaction: bool,
}

impl Builder {
    fn new(metrics: Metrics) -> Self {
        Builder {
            metrics,
            events: Vec::new(),
            compactions: Vec::new(),
            clock: Clock::new(0.0),
            model: None,
            invocations: 0,
            by_response: HashMap::new(),
            by_id: HashMap::new(),
            call_names: HashMap::new(),
            after_compaction: false,
        }
    }

    fn inv(&self) -> String {
        format!("inv-{}", self.invocations.max(1))
    }

    fn event(&mut self, ef: &EventFile, e: &Map<String, Value>) -> Result<(), ReadError> {
        let err = |field: &str, msg: String| ReadError::new(&ef.file, format!("${field}"), msg);
        let kind = readutil::str_field(e, "kind").unwrap_or("");
        let ts = match e.get("timestamp") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => match readutil::parse_timestamp(s) {
                Some(t) => Some(t),
                None => return Err(err(".timestamp", format!("{s:?} is not an ISO 8601 time"))),
            },
            Some(other) => {
                return Err(err(
                    ".timestamp",
                    format!("is {}, expected a string", readutil::kind(other)),
                ))
            }
        };
        let source = readutil::str_field(e, "source");
        let id = readutil::str_field(e, "id").map(str::to_string);
        if kind == "Condensation" {
            self.condensation(ef.index, e, ts);
            return Ok(());
        }
        if !matches!(
            kind,
            "MessageEvent"
                | "ActionEvent"
                | "ObservationEvent"
                | "UserRejectObservation"
                | "AgentErrorEvent"
        ) {
            // SystemPromptEvent (fixed overhead) and bookkeeping.
            return Ok(());
        }
        let t = self
            .clock
            .next(ts)
            .map_err(|m| err(".timestamp", m.to_string()))?;
        let idx = match kind {
            "MessageEvent" if source == Some("user") => self.user_message(e, t),
            "MessageEvent" | "ActionEvent" => self.agent_step(e, t),
            _ => self.observation(kind, e, t),
        };
        if let (Some(id), Some(idx)) = (id, idx) {
            self.by_id.insert(id, idx);
        }
        Ok(())
    }

    fn user_message(&mut self, e: &Map<String, Value>, t: f64) -> Option<usize> {
        self.invocations += 1;
        let content = e.get("llm_message").and_then(|m| m.get("content"));
        let mut ev = Event::new("user", Role::User, self.inv(), t);
        ev.id = readutil::str_field(e, "id").map(str::to_string);
        let (text, parts) = message_parts(content);
        ev.critical = util::user_text_flags(&text);
        ev.parts = parts;
        self.events.push(ev);
        Some(self.events.len() - 1)
    }

    /// An agent message or action: a model request (one per `llm_response_id`), plus the
    /// action's tool call.
    fn agent_step(&mut self, e: &Map<String, Value>, t: f64) -> Option<usize> {
        let response = readutil::str_field(e, "llm_response_id").map(str::to_string);
        let idx = match response.as_ref().and_then(|r| self.by_response.get(r)) {
            Some(&i) => i,
            None => self.open_request(e, response, t),
        };
        let call_id = readutil::str_field(e, "tool_call_id").map(str::to_string);
        if let (Some(id), Some(ev)) = (call_id, self.events.get_mut(idx)) {
            let name = readutil::str_field(e, "tool_name")
                .unwrap_or("")
                .to_string();
            let args = match e
                .get("tool_call")
                .and_then(|c| c.pointer("/function/arguments"))
            {
                Some(Value::String(s)) => serde_json::from_str(s)
                    .map(|v| compact_json(&v))
                    .unwrap_or_else(|_| Value::String(s.clone())),
                Some(other) => compact_json(other),
                None => e.get("action").map_or(Value::Null, compact_json),
            };
            self.call_names.insert(id.clone(), name.clone());
            ev.parts.push(Part::ToolCall {
                id: Some(id),
                name,
                args,
            });
        }
        Some(idx)
    }

    /// A new model event for `response`, with its recorded usage, latency and the text the
    /// model wrote (reasoning, thought, message).
    fn open_request(&mut self, e: &Map<String, Value>, response: Option<String>, t: f64) -> usize {
        let mut ev = Event::new(AGENT, Role::Model, self.inv(), t);
        ev.model_request = true;
        ev.post_compaction_usage = self.after_compaction;
        ev.id = response
            .clone()
            .or_else(|| readutil::str_field(e, "id").map(str::to_string));
        if let Some(r) = &response {
            ev.usage = self.metrics.usage.get(r).copied();
            ev.latency_s = self.metrics.latency.get(r).copied();
        }
        if let Some(r) = readutil::str_field(e, "reasoning_content").filter(|s| !s.is_empty()) {
            ev.parts.push(Part::Thought {
                text: r.to_string(),
            });
        }
        let (text, _) = message_parts(e.get("thought"));
        let text = if text.is_empty() {
            message_parts(e.get("llm_message").and_then(|m| m.get("content"))).0
        } else {
            text
        };
        if !text.is_empty() {
            ev.parts.push(Part::Text { text });
        }
        self.events.push(ev);
        let idx = self.events.len() - 1;
        if let Some(r) = response {
            self.by_response.insert(r, idx);
        }
        idx
    }

    fn observation(&mut self, kind: &str, e: &Map<String, Value>, t: f64) -> Option<usize> {
        let obs = e.get("observation").and_then(Value::as_object);
        let (text, mut critical) = match (kind, obs) {
            ("AgentErrorEvent", _) => (
                readutil::str_field(e, "error").unwrap_or("").to_string(),
                vec![Critical::ToolError],
            ),
            ("UserRejectObservation", _) => (
                readutil::str_field(e, "rejection_reason")
                    .unwrap_or("")
                    .to_string(),
                vec![Critical::Refusal],
            ),
            (_, Some(o)) => observation_text(o),
            (_, None) => (String::new(), Vec::new()),
        };
        let call = readutil::str_field(e, "tool_call_id").map(str::to_string);
        let mut ev = Event::new(AGENT, Role::Tool, self.inv(), t);
        ev.id = readutil::str_field(e, "id").map(str::to_string);
        match call {
            Some(id) => {
                let name = self.call_names.get(&id).cloned().unwrap_or_else(|| {
                    readutil::str_field(e, "tool_name")
                        .unwrap_or("")
                        .to_string()
                });
                ev.parts.push(Part::ToolResponse {
                    id: Some(id),
                    name,
                    response: serde_json::json!({ "content": text }),
                });
            }
            None if text.is_empty() => return None,
            None => {
                // Sent back to the model as a user-role notice, as v0 does.
                ev.author = HARNESS.to_string();
                ev.role = Role::User;
                ev.parts.push(Part::Text { text });
            }
        }
        critical.dedup();
        ev.critical = critical;
        self.events.push(ev);
        Some(self.events.len() - 1)
    }

    /// The condenser's record: kept aside (the replay uses the raw history).
    fn condensation(&mut self, index: usize, e: &Map<String, Value>, ts: Option<f64>) {
        let at = self.events.len();
        let mut c = RecordedCompaction::new(at, "openhands condensation");
        c.trigger = Some("auto".to_string());
        c.summary = readutil::str_field(e, "summary").unwrap_or("").to_string();
        c.summary_offset = e
            .get("summary_offset")
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok());
        c.forgotten_ids = e
            .get("forgotten_event_ids")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let mut forgotten: Vec<usize> = c
            .forgotten_ids
            .iter()
            .filter_map(|id| self.by_id.get(id).copied())
            .collect();
        forgotten.sort_unstable();
        forgotten.dedup();
        c.forgotten = ranges(&forgotten);
        c.pre_tokens = self
            .events
            .iter()
            .rev()
            .find_map(|e| e.usage)
            .map(|u| u.prompt_tokens);
        c.start_timestamp = self.events.last().map(|e| e.timestamp);
        c.end_timestamp = ts;
        c.boundary_raw = Some(RawPos::Index(index));
        self.compactions.push(c);
        self.after_compaction = true;
    }
}

/// Sorted indices as half-open runs.
fn ranges(sorted: &[usize]) -> Vec<std::ops::Range<usize>> {
    let mut out: Vec<std::ops::Range<usize>> = Vec::new();
    for &i in sorted {
        match out.last_mut() {
            Some(r) if r.end == i => r.end = i + 1,
            _ => out.push(i..i + 1),
        }
    }
    out
}

/// A message content (a string, or a list of `{type: text|image, ...}`) as one text and its
/// parts (texts, then image attachments).
fn message_parts(content: Option<&Value>) -> (String, Vec<Part>) {
    let mut texts = Vec::new();
    let mut parts = Vec::new();
    match content {
        Some(Value::String(s)) => texts.push(s.clone()),
        Some(Value::Array(items)) => {
            for it in items {
                if let Some(t) = it.get("text").and_then(Value::as_str) {
                    texts.push(t.to_string());
                }
                for u in it
                    .get("image_urls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(u) = u.as_str() {
                        parts.push(Part::Attachment {
                            name: u.chars().take(200).collect(),
                            mime_type: None,
                            text: None,
                            size_bytes: None,
                        });
                    }
                }
            }
        }
        _ => {}
    }
    let text = texts.join("\n");
    if !text.is_empty() {
        parts.insert(0, Part::Text { text: text.clone() });
    }
    (text, parts)
}

/// What the model read of an observation, and its flags: bash output between the
/// metadata's prefix and suffix (exit code > 0: `ToolError`), an editor's error (also
/// `ToolError`) or output, a think/task note's `content`, a finish `message`.
fn observation_text(o: &Map<String, Value>) -> (String, Vec<Critical>) {
    let mut critical = Vec::new();
    let meta = o.get("metadata").and_then(Value::as_object);
    if meta
        .and_then(|m| m.get("exit_code"))
        .and_then(Value::as_i64)
        .is_some_and(|c| c > 0)
    {
        critical.push(Critical::ToolError);
    }
    if let Some(err) = readutil::str_field(o, "error").filter(|s| !s.is_empty()) {
        critical.push(Critical::ToolError);
        return (err.to_string(), critical);
    }
    if let Some(out) = readutil::str_field(o, "output") {
        let part = |k: &str| meta.and_then(|m| readutil::str_field(m, k)).unwrap_or("");
        return (
            format!("{}{out}{}", part("prefix"), part("suffix")),
            critical,
        );
    }
    let text = match o.get("content") {
        Some(c @ (Value::String(_) | Value::Array(_))) => message_parts(Some(c)).0,
        _ => readutil::str_field(o, "message").unwrap_or("").to_string(),
    };
    (text, critical)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_file_names_give_their_index() {
        assert_eq!(event_index("event-00082-67ee5c20-ce3f.json"), Some(82));
        assert_eq!(event_index("event-7.json"), Some(7));
        assert_eq!(event_index("base_state.json"), None);
        assert_eq!(event_index("event-x-1.json"), None);
    }

    #[test]
    fn forgotten_indices_become_runs() {
        assert_eq!(ranges(&[1, 2, 3, 7, 9, 10]), vec![1..4, 7..8, 9..11]);
        assert!(ranges(&[]).is_empty());
    }
}
