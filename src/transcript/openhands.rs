//! OpenHands event-stream reader: a JSON array of events (`tests/runtime/trajs/*.json`),
//! JSONL rows with a `history` list (evaluation `output.jsonl`, legacy resolver output),
//! or JSONL with one event per line.
//!
//! - Agent actions that call a tool (`run`, `read`, `edit`, `think`, `finish`, ...) carry
//!   `tool_call_metadata` with the LLM response: actions sharing one `model_response.id`
//!   (parallel calls) merge into one model event; its usage is OpenAI-convention (litellm
//!   already folds Anthropic cache reads and writes into `prompt_tokens`). An agent
//!   `message` without metadata is a model request without recorded usage.
//! - Measured per-request latency comes from the row's `metrics.response_latencies`,
//!   matched by response id, into `Event::latency_s`. A latency whose response produced no
//!   action (a malformed tool call answered by an `error` observation) has no event.
//! - Observations answer the call named by their `tool_call_id` (or by `cause`); an
//!   observation naming a call that never came is kept as a tool response without its call
//!   (as ADK keeps one; the loaders warn). The legacy resolver format
//!   has no ids or sources: each observation answers the oldest unanswered action, the
//!   first `message` is the user's, and calls get ids `call-N`.
//! - The `system` action (the system prompt) is fixed overhead, not history, and is
//!   skipped; a `recall` observation becomes the user-role workspace context it injects
//!   (authored `system`, like error notices sent back without a call id);
//!   state changes and `null` observations are skipped.
//! - Critical flags: `confirmation_state`/`is_confirmed` = `confirmed` → `Confirmation`,
//!   `rejected` → `Refusal`; `error` observations and positive exit codes → `ToolError`
//!   (-1 means the command was still running when its timeout returned control);
//!   `user_rejected` observations → `Refusal`; user messages get the shared word rules
//!   of `util::user_text_flags`.
//! - A `condensation` action (the condenser forgetting events) and the `condense`
//!   observation carrying its summary go to `Session::recorded_compactions`; later model
//!   requests are marked `post_compaction_usage`. The corpus runs never condensed. A row's
//!   `metadata.condenser_config` is the session's `recorded_policy`. SDK v1 conversation
//!   folders are read by `openhands_v1`.
//! - Timestamps (no offset: taken as UTC) must not go backwards; sessions without any
//!   (legacy rows) get synthetic ones.

use super::readutil::{self, Clock};
use super::{
    compact_json, Critical, Event, Format, Part, PolicyRule, RawPos, ReadError, RecordedCompaction,
    RecordedPolicy, Role, Session, Usage,
};
use super::{pyjson, util};
use serde_json::{Map, Value};
use std::collections::HashMap;

const AGENT: &str = "openhands";
/// Author of user-role text the runtime injects (workspace context, error notices).
const HARNESS: &str = "system";

/// True when `text` looks like OpenHands events: a JSON array whose first element is an
/// event, or JSONL whose first line is an event or a row with an event `history`.
pub fn sniff(text: &str) -> bool {
    let t = text.trim_start();
    if let Some(rest) = t.strip_prefix('[') {
        // Parse only the first element.
        let first = serde_json::Deserializer::from_str(rest)
            .into_iter::<Value>()
            .next();
        return matches!(first, Some(Ok(Value::Object(ref m))) if is_event(m));
    }
    let Some(line) = t.lines().next() else {
        return false;
    };
    if line.len() > 8 << 20 {
        return false;
    }
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(m)) => is_row(&m) || is_event(&m),
        Ok(_) | Err(_) => false,
    }
}

fn is_event(m: &Map<String, Value>) -> bool {
    (m.contains_key("action") || m.contains_key("observation"))
        && !m.contains_key("payload")
        && !m.contains_key("role")
        && !m.contains_key("response")
}

fn is_row(m: &Map<String, Value>) -> bool {
    !m.contains_key("trajectory")
        && matches!(m.get("history"), Some(Value::Array(h))
            if h.first().and_then(Value::as_object).is_some_and(is_event))
}

/// Parse the whole file. `file` is the path as the user gave it, used in errors and
/// `Session::source`.
pub fn read(file: &str, text: &str) -> Result<Vec<Session>, ReadError> {
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        return Err(ReadError::new(file, "", "empty file"));
    }
    let stem = file.rsplit(['/', '\\']).next().unwrap_or(file);
    let stem = stem
        .strip_suffix(".jsonl")
        .or_else(|| stem.strip_suffix(".json"))
        .unwrap_or(stem);
    if trimmed.starts_with('[') {
        let v: Value = util::parse_json(file, text)?;
        let Value::Array(events) = v else {
            return Err(ReadError::new(file, "$", "expected an array of events"));
        };
        let s = build(file, "$", &events, None)?;
        return Ok(vec![s.finish(stem.to_string(), file.to_string())]);
    }
    let mut sessions = Vec::new();
    let mut loose: Vec<Value> = Vec::new();
    for (line_no, line) in readutil::lines(file, text)? {
        let obj = readutil::parse_object_line(file, line_no, line)?;
        if obj.contains_key("history") {
            let Some(Value::Array(history)) = obj.get("history") else {
                return Err(ReadError::new(
                    file,
                    format!("line {line_no}, $.history"),
                    "expected an array of events",
                ));
            };
            let id = row_id(&obj).unwrap_or_else(|| format!("line-{line_no}"));
            let mut s = build(
                file,
                &format!("line {line_no}, $.history"),
                history,
                obj.get("metrics"),
            )?;
            if s.model.is_none() {
                s.model = obj
                    .get("metadata")
                    .and_then(|m| m.get("llm_config"))
                    .and_then(|c| c.get("model"))
                    .and_then(Value::as_str)
                    .map(str::to_string);
            }
            let source = format!("{file}#{id}");
            let mut session = s.finish(id, source);
            let at = format!("line {line_no} metadata.condenser_config");
            let recorded = match obj.get("metadata").and_then(|m| m.get("condenser_config")) {
                Some(c) => super::openhands_v1::recorded_condenser(c, &at).unwrap_or_else(|note| {
                    session.notes.push(format!("{file}: {note}"));
                    None
                }),
                None => None,
            };
            session.recorded_policy = recorded.map(|c| RecordedPolicy {
                source: "openhands metadata.condenser_config".to_string(),
                versions: Vec::new(),
                rule: PolicyRule::Openhands(c),
            });
            sessions.push(session);
        } else if is_event(&obj) {
            loose.push(Value::Object(obj));
        } else {
            return Err(ReadError::new(
                file,
                format!("line {line_no}"),
                "expected an OpenHands event (with \"action\" or \"observation\") or a row with \"history\"",
            ));
        }
    }
    if !loose.is_empty() {
        if !sessions.is_empty() {
            return Err(ReadError::new(
                file,
                "",
                "mixes rows with a history and loose events",
            ));
        }
        let s = build(file, "$", &loose, None)?;
        sessions.push(s.finish(stem.to_string(), file.to_string()));
    }
    if sessions.is_empty() {
        return Err(ReadError::new(file, "", "no OpenHands events"));
    }
    Ok(sessions)
}

/// A string or number as text (ids are either).
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn row_id(row: &Map<String, Value>) -> Option<String> {
    row.get("instance_id").and_then(scalar).or_else(|| {
        row.get("issue")
            .and_then(|i| i.get("number"))
            .and_then(scalar)
    })
}

struct Built {
    events: Vec<Event>,
    compactions: Vec<RecordedCompaction>,
    model: Option<String>,
    synthetic: bool,
}

impl Built {
    fn finish(self, id: String, source: String) -> Session {
        let mut s = Session {
            recorded_compactions: self.compactions,
            model: self.model,
            synthetic_timestamps: self.synthetic,
            ..Session::new(id, source, Format::Openhands, self.events)
        };
        s.index_recorded();
        s
    }
}

/// Longest recorded response latency accepted, seconds (a day).
const MAX_LATENCY_S: f64 = 86_400.0;

/// Measured latency of each response id (`metrics.response_latencies`). `base` is the JSON
/// path of the event list, for errors.
fn latencies<'m>(
    file: &str,
    base: &str,
    metrics: Option<&'m Value>,
) -> Result<HashMap<&'m str, f64>, ReadError> {
    let mut latency: HashMap<&str, f64> = HashMap::new();
    let recorded = metrics
        .and_then(|m| m.get("response_latencies"))
        .and_then(Value::as_array);
    for (k, x) in recorded.into_iter().flatten().enumerate() {
        let (Some(id), Some(v)) = (
            x.get("response_id").and_then(Value::as_str),
            x.get("latency"),
        ) else {
            continue;
        };
        // Seconds: finite, not negative, under a day (a measured call, not a typo).
        match pyjson::as_f64(v) {
            Some(s) if s.is_finite() && (0.0..=MAX_LATENCY_S).contains(&s) => {
                latency.insert(id, s);
            }
            _ if v.is_null() => {}
            _ => {
                return Err(ReadError::new(
                    file,
                    // `metrics` sits beside the row's `history` (the path `base` names).
                    format!(
                        "{}.metrics.response_latencies[{k}].latency",
                        base.strip_suffix(".history").unwrap_or(base)
                    ),
                    format!(
                        "expected seconds from 0 to {MAX_LATENCY_S}, found {}",
                        match v {
                            Value::Number(n) => n.to_string(),
                            other => util::kind(other).to_string(),
                        }
                    ),
                ));
            }
        }
    }
    Ok(latency)
}

/// Builds one session from its event list. `base` is the JSON path of the list, for errors.
fn build(
    file: &str,
    base: &str,
    list: &[Value],
    metrics: Option<&Value>,
) -> Result<Built, ReadError> {
    let mut b = Stream {
        file,
        base,
        latency: latencies(file, base, metrics)?,
        events: Vec::new(),
        clock: Clock::new(0.0),
        model: None,
        call_names: HashMap::new(),
        call_of_action: HashMap::new(),
        by_response: HashMap::new(),
        unanswered: Vec::new(),
        invocations: 0,
        compactions: Vec::new(),
        after_compaction: false,
    };
    for (i, raw) in list.iter().enumerate() {
        b.event(i, raw)?;
    }
    if b.events.is_empty() {
        return Err(ReadError::new(
            file,
            base,
            "no messages, actions or observations",
        ));
    }
    Ok(Built {
        events: b.events,
        compactions: b.compactions,
        model: b.model,
        synthetic: b.clock.synthetic,
    })
}

/// The reader's state while it walks one event list.
struct Stream<'a> {
    file: &'a str,
    base: &'a str,
    latency: HashMap<&'a str, f64>,
    events: Vec<Event>,
    clock: Clock,
    model: Option<String>,
    /// tool_call_id → function name.
    call_names: HashMap<String, String>,
    /// action event id → tool_call_id.
    call_of_action: HashMap<i64, String>,
    /// response id → event index.
    by_response: HashMap<String, usize>,
    /// Legacy pairing: calls not yet answered, oldest first.
    unanswered: Vec<String>,
    invocations: usize,
    compactions: Vec<RecordedCompaction>,
    after_compaction: bool,
}

/// An argument of an event: under `args`, or at the top level for legacy events.
fn arg<'v>(e: &'v Map<String, Value>, k: &str) -> Option<&'v Value> {
    e.get("args")
        .and_then(Value::as_object)
        .and_then(|a| a.get(k))
        .or_else(|| e.get(k))
}

impl Stream<'_> {
    fn err(&self, i: usize, field: &str, msg: String) -> ReadError {
        ReadError::new(self.file, format!("{}[{i}]{field}", self.base), msg)
    }

    fn inv(&self) -> String {
        format!("inv-{}", self.invocations.max(1))
    }

    fn tick(&mut self, i: usize, ts: Option<f64>) -> Result<f64, ReadError> {
        let r = self.clock.next(ts);
        r.map_err(|m| self.err(i, ".timestamp", m.to_string()))
    }

    fn event(&mut self, i: usize, raw: &Value) -> Result<(), ReadError> {
        let Some(e) = raw.as_object() else {
            return Err(self.err(
                i,
                "",
                format!("expected an event object, found {}", readutil::kind(raw)),
            ));
        };
        let ts = match e.get("timestamp") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => match readutil::parse_timestamp(s) {
                Some(t) => Some(t),
                None => {
                    return Err(self.err(i, ".timestamp", format!("{s:?} is not an ISO 8601 time")))
                }
            },
            Some(other) => {
                return Err(self.err(
                    i,
                    ".timestamp",
                    format!("is {}, expected a string", readutil::kind(other)),
                ))
            }
        };
        if let Some(action) = e.get("action") {
            let Some(action) = action.as_str() else {
                return Err(self.err(
                    i,
                    ".action",
                    format!("is {}, expected a string", readutil::kind(action)),
                ));
            };
            self.action(i, e, action, ts)
        } else if let Some(obs) = e.get("observation") {
            self.observation(i, e, obs.as_str().unwrap_or(""), ts)
        } else {
            Err(self.err(
                i,
                "",
                "event has neither \"action\" nor \"observation\"".to_string(),
            ))
        }
    }

    fn action(
        &mut self,
        i: usize,
        e: &Map<String, Value>,
        action: &str,
        ts: Option<f64>,
    ) -> Result<(), ReadError> {
        let source = readutil::str_field(e, "source");
        let legacy_user = source.is_none() && self.events.is_empty();
        match action {
            "system" | "recall" | "change_agent_state" | "null" | "condensation_request" => {}
            "condensation" => {
                // The condenser's own record: kept aside, the replay uses the raw history.
                let mut c = RecordedCompaction::new(self.events.len(), "openhands condensation");
                c.summary = arg(e, "summary")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                c.forgotten_ids = arg(e, "forgotten_event_ids")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(scalar).collect())
                    .unwrap_or_default();
                c.summary_offset = arg(e, "summary_offset")
                    .and_then(Value::as_u64)
                    .and_then(|n| usize::try_from(n).ok());
                c.end_timestamp = ts;
                c.boundary_raw = Some(RawPos::Index(i));
                self.compactions.push(c);
                self.after_compaction = true;
            }
            "message" if source == Some("user") || legacy_user => {
                let t = self.tick(i, ts)?;
                self.user_message(e, t);
            }
            _ if source == Some("user") || source == Some("environment") => {}
            _ => {
                let t = self.tick(i, ts)?;
                self.agent_action(i, e, action, t)?;
            }
        }
        Ok(())
    }

    fn user_message(&mut self, e: &Map<String, Value>, t: f64) {
        self.invocations += 1;
        let text = arg(e, "content")
            .and_then(Value::as_str)
            .or_else(|| readutil::str_field(e, "message"));
        let mut ev = Event::new("user", Role::User, self.inv(), t);
        ev.id = e.get("id").and_then(scalar);
        ev.critical = util::user_text_flags(text.unwrap_or(""));
        ev.parts.push(Part::Text {
            text: text.unwrap_or("").to_string(),
        });
        if let Some(Value::Array(urls)) = arg(e, "image_urls") {
            for u in urls.iter().filter_map(Value::as_str) {
                ev.parts.push(Part::Attachment {
                    name: u.chars().take(200).collect(),
                    mime_type: None,
                    text: None,
                    size_bytes: None,
                });
            }
        }
        self.events.push(ev);
    }

    /// An agent action: one model request per LLM response (parallel calls merge), plus the
    /// action's tool call and its confirmation flag.
    fn agent_action(
        &mut self,
        i: usize,
        e: &Map<String, Value>,
        action: &str,
        t: f64,
    ) -> Result<(), ReadError> {
        let metadata = e.get("tool_call_metadata").filter(|m| m.is_object());
        let response = metadata
            .and_then(|m| m.get("model_response"))
            .filter(|r| r.is_object());
        let response_id = response
            .and_then(|r| r.get("id"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let existing = response_id
            .as_ref()
            .and_then(|r| self.by_response.get(r).copied());
        let idx = match existing {
            Some(idx) => idx,
            None => self.model_event(i, e, action, response, response_id, t)?,
        };
        let call = (action != "message").then(|| tool_call(i, e, action, metadata, response));
        let Some(ev) = self.events.get_mut(idx) else {
            return Ok(());
        };
        if let Some((call_id, name, args)) = call {
            ev.parts.push(Part::ToolCall {
                id: Some(call_id.clone()),
                name: name.clone(),
                args,
            });
            self.call_names.insert(call_id.clone(), name);
            if let Some(id) = e.get("id").and_then(Value::as_i64) {
                self.call_of_action.insert(id, call_id.clone());
            }
            self.unanswered.push(call_id);
        }
        let confirmation = arg(e, "confirmation_state")
            .or_else(|| arg(e, "is_confirmed"))
            .and_then(Value::as_str);
        let flag = match confirmation {
            Some("confirmed") => Some(Critical::Confirmation),
            Some("rejected") => Some(Critical::Refusal),
            _ => None,
        };
        if let Some(f) = flag {
            if !ev.critical.contains(&f) {
                ev.critical.push(f);
            }
        }
        Ok(())
    }

    /// A new model event for an LLM response: its model, usage, latency and the text the
    /// model wrote (the response's content, else the action's thought, else a message's).
    fn model_event(
        &mut self,
        i: usize,
        e: &Map<String, Value>,
        action: &str,
        response: Option<&Value>,
        response_id: Option<String>,
        t: f64,
    ) -> Result<usize, ReadError> {
        let mut ev = Event::new(AGENT, Role::Model, self.inv(), t);
        ev.model_request = true;
        ev.post_compaction_usage = self.after_compaction;
        ev.id = response_id.clone().or_else(|| e.get("id").and_then(scalar));
        let mname = response
            .and_then(|r| r.get("model"))
            .and_then(Value::as_str)
            .map(str::to_string);
        if self.model.is_none() {
            self.model.clone_from(&mname);
        }
        ev.model = mname;
        ev.usage = match response
            .and_then(|r| r.get("usage"))
            .filter(|u| u.is_object())
        {
            Some(u) => Some(
                usage_of(u).map_err(|m| self.err(i, ".tool_call_metadata.model_response", m.0))?,
            ),
            None => None,
        };
        ev.latency_s = response_id
            .as_deref()
            .and_then(|r| self.latency.get(r).copied());
        let text = response
            .and_then(|r| r.pointer("/choices/0/message/content"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .or_else(|| {
                arg(e, "thought")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
            })
            .or_else(|| {
                if action == "message" {
                    arg(e, "content")
                        .and_then(Value::as_str)
                        .or_else(|| readutil::str_field(e, "message"))
                } else {
                    None
                }
            });
        if let Some(text) = text {
            ev.parts.push(Part::Text {
                text: text.to_string(),
            });
        }
        self.events.push(ev);
        let idx = self.events.len() - 1;
        if let Some(r) = response_id {
            self.by_response.insert(r, idx);
        }
        Ok(idx)
    }

    fn observation(
        &mut self,
        i: usize,
        e: &Map<String, Value>,
        obs: &str,
        ts: Option<f64>,
    ) -> Result<(), ReadError> {
        if matches!(obs, "null" | "agent_state_changed" | "") {
            return Ok(());
        }
        if obs == "condense" {
            // The summary shown to the model in place of forgotten events: ground truth for
            // the latest recorded condensation, not history.
            let text = readutil::str_field(e, "content").unwrap_or("");
            match self.compactions.last_mut() {
                Some(c) if c.summary.is_empty() => {
                    c.summary = text.to_string();
                    c.summary_raw = Some(RawPos::Index(i));
                }
                _ => {}
            }
            return Ok(());
        }
        let source = readutil::str_field(e, "source");
        let content = readutil::str_field(e, "content")
            .or_else(|| readutil::str_field(e, "message"))
            .unwrap_or("");
        let call = self.answered_call(i, e, obs, source)?;
        let t = self.tick(i, ts)?;
        let mut critical = Vec::new();
        if obs == "error" {
            critical.push(Critical::ToolError);
        } else if obs == "user_rejected" {
            critical.push(Critical::Refusal);
        } else if exit_code(e).is_some_and(|c| c > 0) {
            critical.push(Critical::ToolError);
        }
        let mut ev = match call {
            Some(id) => {
                self.unanswered.retain(|u| u != &id);
                let name = self
                    .call_names
                    .get(&id)
                    .cloned()
                    .unwrap_or_else(|| obs.to_string());
                let mut ev = Event::new(AGENT, Role::Tool, self.inv(), t);
                ev.parts.push(Part::ToolResponse {
                    id: Some(id),
                    name,
                    response: serde_json::json!({ "content": content }),
                });
                ev.critical = critical;
                ev
            }
            None if obs == "recall" => {
                let text = recall_text(content, e.get("extras"));
                let mut ev = Event::new(HARNESS, Role::User, self.inv(), t);
                ev.parts.push(Part::Text { text });
                ev
            }
            None if obs == "error" || !content.is_empty() => {
                // OpenHands sends these back to the model as user-role messages.
                let mut ev = Event::new(HARNESS, Role::User, self.inv(), t);
                ev.parts.push(Part::Text {
                    text: content.to_string(),
                });
                ev.critical = critical;
                ev
            }
            None => return Ok(()),
        };
        ev.id = e.get("id").and_then(scalar);
        self.events.push(ev);
        Ok(())
    }

    /// The call an observation answers: the one it names, the action that caused it, or
    /// (legacy rows, no ids) the oldest unanswered one.
    fn answered_call(
        &self,
        i: usize,
        e: &Map<String, Value>,
        obs: &str,
        source: Option<&str>,
    ) -> Result<Option<String>, ReadError> {
        let named = e
            .get("tool_call_metadata")
            .and_then(|m| m.get("tool_call_id"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let by_cause = e
            .get("cause")
            .and_then(Value::as_i64)
            .and_then(|c| self.call_of_action.get(&c).cloned());
        Ok(match (named, by_cause) {
            // A call that never came (ADK reads such responses; the loaders warn):
            // kept under the observation's own name.
            (Some(id), _) => Some(id),
            (None, Some(id)) => Some(id),
            (None, None) if source.is_none() && obs != "recall" && obs != "error" => {
                match self.unanswered.first() {
                    Some(id) => Some(id.clone()),
                    None => {
                        return Err(self.err(
                            i,
                            "",
                            format!("{obs:?} observation with no action before it"),
                        ))
                    }
                }
            }
            (None, None) => None,
        })
    }
}

/// An action's tool call: (call id, function name, arguments). Arguments come from the LLM
/// response's matching tool call, else from the action's own fields.
fn tool_call(
    i: usize,
    e: &Map<String, Value>,
    action: &str,
    metadata: Option<&Value>,
    response: Option<&Value>,
) -> (String, String, Value) {
    let (call_id, name) = match metadata {
        Some(m) => (
            m.get("tool_call_id")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| format!("call-{i}")),
            m.get("function_name")
                .and_then(Value::as_str)
                .unwrap_or(action)
                .to_string(),
        ),
        None => (format!("call-{i}"), action.to_string()),
    };
    let args = e.get("args").and_then(Value::as_object);
    let call_args = response
        .and_then(|r| r.pointer("/choices/0/message/tool_calls"))
        .and_then(Value::as_array)
        .and_then(|calls| {
            calls
                .iter()
                .find(|c| c.get("id").and_then(Value::as_str) == Some(call_id.as_str()))
        })
        .and_then(|c| c.pointer("/function/arguments"))
        .map(|a| match a {
            Value::String(s) => serde_json::from_str(s)
                .map(|v| compact_json(&v))
                .unwrap_or_else(|_| Value::String(s.clone())),
            other => compact_json(other),
        })
        .unwrap_or_else(|| legacy_args(args, e));
    (call_id, name, call_args)
}

/// Usage in OpenAI convention: `prompt_tokens` already includes cached tokens. Err names
/// the bad field by its path under the response (`usage.prompt_tokens: ...`).
fn usage_of(u: &Value) -> Result<Usage, util::BadNumber> {
    let get = |k: &str| readutil::tokens_field(Some(u), "usage", k);
    let details = u.get("prompt_tokens_details");
    let cached =
        match readutil::tokens_field(details, "usage.prompt_tokens_details", "cached_tokens")? {
            0 => get("cache_read_input_tokens")?,
            n => n,
        };
    Ok(Usage {
        prompt_tokens: get("prompt_tokens")?,
        cached_read_tokens: cached,
        cache_write_tokens: get("cache_creation_input_tokens")?,
        output_tokens: get("completion_tokens")?,
    })
}

/// A legacy action's arguments: its fields minus bookkeeping.
fn legacy_args(args: Option<&Map<String, Value>>, e: &Map<String, Value>) -> Value {
    const SKIP: [&str; 9] = [
        "action",
        "thought",
        "confirmation_state",
        "is_confirmed",
        "action_risk",
        "keep_prompt",
        "security_risk",
        "id",
        "timestamp",
    ];
    let src = args.unwrap_or(e);
    let m: Map<String, Value> = src
        .iter()
        .filter(|(k, _)| !SKIP.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Value::Object(m)
}

fn exit_code(e: &Map<String, Value>) -> Option<i64> {
    e.get("extras")
        .and_then(|x| {
            x.pointer("/metadata/exit_code")
                .or_else(|| x.get("exit_code"))
        })
        .or_else(|| e.get("exit_code"))
        .and_then(Value::as_i64)
}

/// What a recall observation puts in front of the model: its content plus the workspace
/// instructions and microagent knowledge it carries.
fn recall_text(content: &str, extras: Option<&Value>) -> String {
    let mut out = vec![content.to_string()];
    if let Some(x) = extras {
        for k in ["repo_instructions", "additional_agent_instructions"] {
            if let Some(s) = x.get(k).and_then(Value::as_str).filter(|s| !s.is_empty()) {
                out.push(s.to_string());
            }
        }
        if let Some(Value::Array(items)) = x.get("microagent_knowledge") {
            out.extend(
                items
                    .iter()
                    .filter_map(|m| m.get("content").and_then(Value::as_str))
                    .map(str::to_string),
            );
        }
    }
    out.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::readutil::testutil::{
        assert_counts_match_stats, count_flag, count_parts, num, read_corpus, usage_checks,
    };
    use std::collections::BTreeSet;

    /// Events of one kind in the raw history, counted straight from the JSON.
    fn raw_count(rel: &str, id: &str, f: impl Fn(&Value) -> bool) -> u64 {
        let text = read_corpus(rel);
        let history: Vec<Value> = if text.trim_start().starts_with('[') {
            serde_json::from_str(&text).unwrap_or_default()
        } else {
            text.lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .find(|r| row_id(r.as_object().expect("row")).as_deref() == Some(id))
                .and_then(|r| r.get("history").and_then(Value::as_array).cloned())
                .unwrap_or_default()
        };
        history.iter().filter(|e| f(e)).count() as u64
    }

    #[test]
    fn corpus_counts_match_stats_json() {
        let compared = assert_counts_match_stats(
            "openhands",
            |_| true,
            read,
            |st, s| {
                let (rel, frag) = s.source.split_once('#').unwrap_or((s.source.as_str(), ""));
                // stats.json does not count the `think` tool as a tool call, and counts an
                // `error` observation (a malformed call answered without a call id) as a tool
                // result; here `think` is a call and such errors are user-role messages.
                let thinks = raw_count(rel, frag, |e| {
                    e.get("action").and_then(Value::as_str) == Some("think")
                });
                let loose_errors = raw_count(rel, frag, |e| {
                    e.get("observation").and_then(Value::as_str) == Some("error")
                        && e.get("tool_call_metadata").is_none()
                });
                let invocations: BTreeSet<&str> = s
                    .events
                    .iter()
                    .filter(|e| e.role == Role::User && e.author == "user")
                    .map(|e| e.invocation_id.as_str())
                    .collect();
                // stats.json rounds latencies to 3 decimals; one response per run has no action.
                let latencies: Vec<f64> = s.events.iter().filter_map(|e| e.latency_s).collect();
                let latency_ok = st.get("response_latency_s").is_none_or(|lat| {
                    let max = latencies.iter().copied().fold(0.0, f64::max);
                    let want_max = lat.get("max").and_then(Value::as_f64).unwrap_or(-1.0);
                    (max - want_max).abs() <= 5e-4 && latencies.len() as u64 + 1 >= num(lat, "n")
                });
                let mut checks = vec![
                    (
                        "model requests",
                        s.events.iter().filter(|e| e.model_request).count() as u64,
                        num(st, "assistant_turns"),
                    ),
                    (
                        "tool calls",
                        count_parts(s, |p| matches!(p, Part::ToolCall { .. })),
                        num(st, "tool_calls") + thinks,
                    ),
                    (
                        "tool results",
                        count_parts(s, |p| matches!(p, Part::ToolResponse { .. })),
                        num(st, "tool_results") - loose_errors,
                    ),
                    (
                        "invocations",
                        invocations.len() as u64,
                        num(st, "user_turns"),
                    ),
                    (
                        "confirmations",
                        count_flag(s, Critical::Confirmation),
                        num(st, "approvals_or_confirmations"),
                    ),
                    (
                        "synthetic timestamps",
                        u64::from(s.synthetic_timestamps),
                        u64::from(num(st, "timestamps") == 0),
                    ),
                    ("latencies differ (1 = yes)", u64::from(!latency_ok), 0),
                ];
                checks.extend(usage_checks(s, st));
                checks
            },
        );
        assert_eq!(compared, 9);
    }

    #[test]
    fn negative_or_nan_latency_is_refused_with_its_path() {
        let rel = "openhands/evaluation/benchmarks/multi_swe_bench/examples/output.jsonl";
        let text = read_corpus(rel);
        let at = text
            .find("\"latency\": ")
            .or_else(|| text.find("\"latency\":"));
        let at = at.expect("the file records latencies");
        let start = at + text[at..].find(':').unwrap_or(0) + 1;
        let end = start + text[start..].find([',', '}']).expect("a value");
        for bad in [" -1.5", " NaN", " 1e309"] {
            let t = format!("{}{bad}{}", &text[..start], &text[end..]);
            let e = crate::transcript::detect::read_as(Format::Openhands, rel, &t).expect_err(bad);
            assert!(
                e.location.ends_with("].latency")
                    && e.location.contains("$.metrics.response_latencies["),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn latency_and_usage_of_one_request() {
        let rel = "openhands/evaluation/benchmarks/multi_swe_bench/examples/output.jsonl";
        let sessions = read(rel, &read_corpus(rel)).expect("reads");
        assert_eq!(sessions.len(), 3);
        let s = &sessions[0];
        assert_eq!(s.id, "ponylang__ponyc-4595");
        assert_eq!(s.source, format!("{rel}#ponylang__ponyc-4595"));
        let first = s
            .events
            .iter()
            .find(|e| e.model_request)
            .expect("a request");
        // Event 5 of the first row: usage 5920 prompt / 128 completion, latency 3.0569… s.
        assert_eq!(
            first.usage,
            Some(Usage {
                prompt_tokens: 5920,
                cached_read_tokens: 0,
                cache_write_tokens: 0,
                output_tokens: 128
            })
        );
        assert!(first
            .latency_s
            .is_some_and(|l| (l - 3.056_951_999_664_306_6).abs() < 1e-9));
        assert!(
            matches!(&first.parts[1], Part::ToolCall { name, args, .. } if name == "execute_bash" && args.get("command").is_some())
        );
        assert_eq!(first.critical, [Critical::Confirmation]);
        // The system prompt is overhead, not history: the first event is the user's task.
        assert_eq!(s.events[0].role, Role::User);
        assert!(
            matches!(&s.events[0].parts[0], Part::Text { text } if text.starts_with("<uploaded_files>"))
        );
    }

    #[test]
    fn anthropic_usage_through_litellm_keeps_its_prompt_total() {
        let rel = "openhands/tests/runtime/trajs/basic.json";
        let s = read(rel, &read_corpus(rel)).expect("reads");
        let u: Vec<Usage> = s[0].events.iter().filter_map(|e| e.usage).collect();
        // prompt_tokens 4646 = 6 input + 1158 cache write + 3482 cache read (litellm sums them).
        assert_eq!(
            u[1],
            Usage {
                prompt_tokens: 4646,
                cached_read_tokens: 3482,
                cache_write_tokens: 1158,
                output_tokens: 177
            }
        );
    }

    #[test]
    fn legacy_rows_pair_in_order_and_get_synthetic_times() {
        let rel = "openhands/tests/unit/resolver/mock_output/output.jsonl";
        let sessions = read(rel, &read_corpus(rel)).expect("reads");
        let s = sessions
            .iter()
            .find(|s| s.id == "5")
            .expect("row for issue 5");
        assert!(s.synthetic_timestamps);
        let ts: Vec<f64> = s.events.iter().map(|e| e.timestamp).collect();
        assert!(ts.windows(2).all(|w| w[0] < w[1]));
        // Each observation answers the action just before it.
        for (i, e) in s.events.iter().enumerate() {
            if let Some(Part::ToolResponse { id, .. }) = e.parts.first() {
                let prev = &s.events[i - 1];
                assert!(
                    prev.parts
                        .iter()
                        .any(|p| matches!(p, Part::ToolCall { id: cid, .. } if cid == id)),
                    "event {i}"
                );
            }
        }
    }

    #[test]
    fn bad_input_names_the_json_path() {
        let ok = r#"[{"id":0,"timestamp":"2025-01-01T00:00:00","source":"user","action":"message","args":{"content":"hi"}},"#;
        let orphan = r#"{"id":1,"timestamp":"2025-01-01T00:00:01","source":"agent","observation":"run","content":"x","tool_call_metadata":{"tool_call_id":"t9"}}]"#;
        // An observation answering a call that never came is kept, and counted.
        let s = &read("t.json", &format!("{ok}{orphan}")).expect("orphan is read")[0];
        assert!(
            matches!(&s.events[1].parts[0], Part::ToolResponse { id: Some(i), name, .. } if i == "t9" && name == "run")
        );
        assert_eq!(util::orphan_responses(&s.events), 1);
        let late = r#"{"id":1,"timestamp":"2024-01-01T00:00:01","source":"user","action":"message","args":{"content":"again"}}]"#;
        let e = read("t.json", &format!("{ok}{late}")).expect_err("out of order");
        assert_eq!(e.location, "$[1].timestamp");
        let e = read("t.json", &format!("{ok}42]")).expect_err("not an object");
        assert_eq!(e.location, "$[1]");
        let e = read("t.json", "[{\"id\":0,").expect_err("malformed");
        assert!(
            e.to_string()
                .starts_with("t.json: truncated at line 1 column 9"),
            "{e}"
        );
        let e = read("o.jsonl", "{\"history\":[{\"action\":\"message\",\"content\":\"hi\"},{\"observation\":\"run\",\"content\":\"x\"}]}\n")
            .expect_err("legacy observation with nothing to answer");
        assert_eq!(e.location, "line 1, $.history[1]");
        assert!(read("t.json", "").is_err());
    }

    #[test]
    fn sniff_tells_openhands_from_neighbours() {
        for rel in [
            "openhands/tests/runtime/trajs/basic.json",
            "openhands/evaluation/benchmarks/multi_swe_bench/examples/output.jsonl",
            "openhands/tests/unit/resolver/mock_output/output.jsonl",
        ] {
            assert!(sniff(&read_corpus(rel)), "{rel}");
        }
        assert!(!sniff(&read_corpus("claude_code_spotter/short.jsonl")));
        let codex = "agentcmd_cli_sessions/codex/full/rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl";
        assert!(!sniff(&read_corpus(codex)));
        assert!(!sniff("[{\"role\":\"user\",\"content\":\"hi\"}]"));
    }

    #[test]
    fn condensation_is_kept_aside_and_marks_later_requests() {
        let ev = |v: serde_json::Value| v.to_string();
        let call = |id: u64, t: &str, call: &str, resp: &str| {
            ev(
                serde_json::json!({"id": id, "timestamp": t, "source": "agent", "action": "run",
                "args": {"command": "ls"},
                "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": call,
                    "model_response": {"id": resp, "usage": {"prompt_tokens": 100 * id, "completion_tokens": 1}}}}),
            )
        };
        let text = format!(
            "[{},{},{},{},{}]",
            ev(
                serde_json::json!({"id": 0, "timestamp": "2025-01-01T00:00:00", "source": "user", "action": "message", "args": {"content": "go"}})
            ),
            call(1, "2025-01-01T00:00:01", "c1", "r1"),
            ev(
                serde_json::json!({"id": 2, "timestamp": "2025-01-01T00:00:02", "source": "agent", "action": "condensation",
                "args": {"forgotten_events_start_id": 1, "forgotten_events_end_id": 1}})
            ),
            ev(
                serde_json::json!({"id": 3, "timestamp": "2025-01-01T00:00:03", "source": "environment", "observation": "condense", "content": "ran ls once"})
            ),
            call(4, "2025-01-01T00:00:04", "c4", "r4"),
        );
        let s = read("c.json", &text).expect("reads");
        let c = &s[0].recorded_compactions;
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].at_event, c[0].summary.as_str()), (2, "ran ls once"));
        let marks: Vec<bool> = s[0]
            .events
            .iter()
            .filter(|e| e.model_request)
            .map(|e| e.post_compaction_usage)
            .collect();
        assert_eq!(marks, [false, true]);
        // An unanswered call is fine; the summary is not an event.
        assert_eq!(s[0].events.len(), 3);
        assert_eq!(
            (
                c[0].request,
                c[0].tokens_after,
                c[0].boundary_raw,
                c[0].summary_raw
            ),
            (
                Some(1),
                Some(400),
                Some(RawPos::Index(2)),
                Some(RawPos::Index(3))
            )
        );
    }

    /// A row's `metadata.condenser_config` is what the run condensed with (v0 names it by
    /// `type`; a pipeline lists its stages).
    #[test]
    fn condenser_config_is_the_rows_recorded_policy() {
        let row = serde_json::json!({"instance_id": "i1",
            "metadata": {"condenser_config": {"type": "pipeline", "condensers": [
                {"type": "observation_masking", "attention_window": 5},
                {"type": "llm", "max_size": 40, "keep_first": 2, "llm_config": {"model": "m"}}]}},
            "history": [{"id": 0, "source": "user", "action": "message", "args": {"content": "go"}}]});
        let s = read("o.jsonl", &row.to_string()).expect("reads");
        let Some(RecordedPolicy {
            rule: PolicyRule::Openhands(c),
            ..
        }) = &s[0].recorded_policy
        else {
            panic!("{:?}", s[0].recorded_policy);
        };
        assert_eq!(c.kind, "pipeline");
        assert_eq!(
            c.stages
                .iter()
                .map(|x| (
                    x.kind.as_str(),
                    x.attention_window,
                    x.max_size,
                    x.keep_first,
                    x.model.as_deref()
                ))
                .collect::<Vec<_>>(),
            [
                ("observation_masking", Some(5), None, None, None),
                ("llm", None, Some(40), Some(2), Some("m"))
            ]
        );
    }
}
