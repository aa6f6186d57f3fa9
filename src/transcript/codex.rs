//! Codex CLI rollout reader (`~/.codex/sessions/**/rollout-*.jsonl`).
//!
//! Each line is `{timestamp, type, payload}`. The history the model saw is the
//! `response_item`s (user/assistant messages, reasoning, function calls and outputs);
//! `event_msg`s mostly echo them for the UI and are skipped, except:
//! - `token_count` marks one model request and carries its exact `last_token_usage`
//!   (OpenAI convention: `input_tokens` already includes `cached_input_tokens`;
//!   `output_tokens` includes reasoning). Codex writes it just before the request's
//!   response items, so it opens a model event that the following reasoning, function calls
//!   and assistant message fill. A repeated `token_count` with an unchanged running total is
//!   the same request reported twice and is skipped. Response items that arrive with no
//!   open request (an aborted stream) form a model request without recorded usage.
//! - `turn_aborted` flags the latest event `Interruption`; `exec_approval_request` /
//!   `apply_patch_approval_request` flag the requesting model event `Approval`.
//! - `compacted` (Codex's own compaction) is kept aside as a recorded compaction. Its summary
//!   is `message`, or, where that is empty (the remote compaction of
//!   `codex-rs/core/src/compact_remote.rs` writes `""`), the text of the last user message of
//!   its `replacement_history` (local compaction, `compact.rs` `build_compacted_history`,
//!   appends the summary as the last user message; a remote one's summary is an encrypted
//!   `compaction` item and stays unread). `replacement_history` replaces the history for the
//!   requests after it; the reader keeps the events as recorded (the replay compacts them).
//!   What Codex writes around it (0.117+, `compact.rs` `run_compact_task_inner`,
//!   `Session::recompute_token_usage`): the summarizing request's `token_count` (its usage,
//!   no response items: `record_into_history` keeps them in memory only), then a
//!   `token_count` whose `last_token_usage` is zero but for `total_tokens`, Codex's estimate
//!   of the context after (history and base instructions), then `compacted`. The first is no
//!   request of the conversation: its prompt is the compaction's `pre_tokens` (the history it
//!   summarized plus the compact prompt). The second is no request either: its
//!   `total_tokens` is the compaction's `tokens_after` when no request follows to record one.
//!   A compaction before a turn's first user message (pre-turn, `InitialContextInjection::
//!   DoNotInject`) is placed before that message, in the new turn.
//! - What Codex compacts by is the session's `recorded_policy`: `cli_version`, the model's
//!   `model_context_window` (on `token_count`) and `model_auto_compact_token_limit` where a
//!   record carries it (none of the corpus rollouts does).
//!
//! Invocations start at each run of consecutive user messages (the environment context and
//! the prompt that follow an answer or an abort). Context Codex injects itself
//! (`<environment_context>`, `<user_instructions>`) keeps the user role but is authored
//! `system`, not `user`. `turn_context.approval_policy` values are
//! kept in `Session::approval_policies`. A `function_call_output` whose `call_id` has no
//! earlier call is kept as a tool response without its call, as ADK keeps one (the loaders
//! warn; the corpus has none). Outputs saying "rejected by user" are
//! `Refusal`; non-zero exit codes and sandbox/execution failures are `ToolError`; user
//! messages get the shared word rules of `util::user_text_flags`.
//! Timestamps must not go backwards (the corpus rollouts never do).

use super::readutil::{self, Clock};
use super::util::{self, BadNumber};
use super::{
    Critical, Event, Format, Part, PolicyRule, RawPos, ReadError, RecordedCompaction,
    RecordedPolicy, Role, Session, Usage,
};
use serde_json::{Map, Value};
use std::collections::HashMap;

const AGENT: &str = "codex";
/// Author of context Codex itself injects (environment context, user instructions,
/// developer/system messages).
const HARNESS: &str = "system";

/// True when `text` looks like a Codex rollout: the first record is `{timestamp, type,
/// payload}` with a Codex record type.
pub fn sniff(text: &str) -> bool {
    const TYPES: [&str; 5] = [
        "session_meta",
        "response_item",
        "event_msg",
        "turn_context",
        "compacted",
    ];
    let Some(line) = text.lines().map(str::trim).find(|l| !l.is_empty()) else {
        return false;
    };
    if !line.starts_with('{') {
        return false;
    }
    if line.len() <= 1 << 20 {
        if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(line) {
            return m.contains_key("payload")
                && readutil::str_field(&m, "type").is_some_and(|t| TYPES.contains(&t));
        }
    }
    let head = line.get(..line.len().min(4096)).unwrap_or(line);
    head.contains("\"payload\"")
        && TYPES
            .iter()
            .any(|t| head.contains(&format!("\"type\":\"{t}\"")))
}

/// Parse the whole file. `file` is the path as the user gave it, used in errors and
/// `Session::source`.
pub fn read(file: &str, text: &str) -> Result<Vec<Session>, ReadError> {
    let mut r = Rollout {
        file,
        session_id: None,
        model: None,
        approval_policies: Vec::new(),
        events: Vec::new(),
        compactions: Vec::new(),
        clock: Clock::new(0.0),
        tool_names: HashMap::new(),
        open_request: None,
        last_total: None,
        invocations: 0,
        in_user_block: false,
        after_compaction: false,
        pending_after: None,
        versions: Vec::new(),
        auto_compact_limit: None,
        context_window: None,
    };
    let mut any = false;
    for (line_no, line) in readutil::lines(file, text)? {
        let obj = readutil::parse_object_line(file, line_no, line)?;
        r.line(line_no, &obj)?;
        any = true;
    }
    if !any {
        return Err(ReadError::new(file, "", "empty file"));
    }
    if r.events.is_empty() {
        return Err(ReadError::new(
            file,
            "",
            "no messages or model requests in this rollout",
        ));
    }
    let stem = file.rsplit(['/', '\\']).next().unwrap_or(file);
    let stem = stem.strip_suffix(".jsonl").unwrap_or(stem);
    let recorded_policy = r.recorded_policy();
    let mut s = Session {
        id: r.session_id.unwrap_or_else(|| stem.to_string()),
        source: file.to_string(),
        format: Format::Codex,
        events: r.events,
        recorded_compactions: r.compactions,
        model: r.model,
        synthetic_timestamps: r.clock.synthetic,
        approval_policies: r.approval_policies,
        recorded_policy,
        ..Session::new("", "", Format::Codex, Vec::new())
    };
    s.index_recorded();
    Ok(vec![s])
}

struct Rollout<'a> {
    file: &'a str,
    session_id: Option<String>,
    model: Option<String>,
    approval_policies: Vec<String>,
    events: Vec<Event>,
    compactions: Vec<RecordedCompaction>,
    clock: Clock,
    tool_names: HashMap<String, String>,
    /// The model event that response items currently fill.
    open_request: Option<usize>,
    /// The previous `token_count`'s running total, to spot repeats.
    last_total: Option<Value>,
    invocations: usize,
    in_user_block: bool,
    after_compaction: bool,
    /// `total_tokens` of a zero-usage `token_count` not yet given to a compaction.
    pending_after: Option<u64>,
    /// `session_meta.cli_version`s, in order.
    versions: Vec<String>,
    auto_compact_limit: Option<u64>,
    context_window: Option<u64>,
}

impl<'a> Rollout<'a> {
    fn err(&self, line_no: usize, msg: impl Into<String>) -> ReadError {
        ReadError::new(self.file, format!("line {line_no}"), msg)
    }

    /// `model_auto_compact_token_limit`, when a record carries it (the config value Codex
    /// compacts at; recent versions write their config into the rollout).
    fn note_limit(&mut self, payload: &Map<String, Value>) {
        if let Some(n) = payload
            .get("model_auto_compact_token_limit")
            .and_then(Value::as_u64)
        {
            self.auto_compact_limit = Some(n);
        }
    }

    /// What the rollout records about Codex's own compaction: the limit, the model's context
    /// window (`token_count.info.model_context_window`) and the CLI versions; `None` when none
    /// of them is recorded.
    fn recorded_policy(&self) -> Option<RecordedPolicy> {
        if self.auto_compact_limit.is_none()
            && self.context_window.is_none()
            && self.versions.is_empty()
        {
            return None;
        }
        Some(RecordedPolicy {
            source: "codex rollout".to_string(),
            versions: self.versions.clone(),
            rule: PolicyRule::Codex {
                auto_compact_token_limit: self.auto_compact_limit,
                context_window: self.context_window,
            },
        })
    }

    fn invocation(&mut self) -> String {
        if self.invocations == 0 {
            self.invocations = 1;
        }
        format!("inv-{}", self.invocations)
    }

    fn line(&mut self, line_no: usize, obj: &Map<String, Value>) -> Result<(), ReadError> {
        let kind = match obj.get("type") {
            Some(Value::String(s)) => s.as_str(),
            Some(other) => {
                return Err(self.err(
                    line_no,
                    format!("\"type\" is {}, expected a string", readutil::kind(other)),
                ))
            }
            None => return Err(self.err(line_no, "record has no \"type\"")),
        };
        let payload = match obj.get("payload") {
            Some(Value::Object(p)) => p,
            Some(other) => {
                return Err(self.err(
                    line_no,
                    format!(
                        "\"payload\" is {}, expected an object",
                        readutil::kind(other)
                    ),
                ))
            }
            None => return Err(self.err(line_no, "record has no \"payload\"")),
        };
        let ts = match obj.get("timestamp") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => match readutil::parse_timestamp(s) {
                Some(t) => Some(t),
                None => return Err(self.err(line_no, format!("timestamp {s:?} is not RFC 3339"))),
            },
            Some(other) => {
                return Err(self.err(
                    line_no,
                    format!("timestamp is {}, expected a string", readutil::kind(other)),
                ))
            }
        };
        let t = self
            .clock
            .next(ts)
            .map_err(|m| self.err(line_no, m.to_string()))?;
        match kind {
            "session_meta" => {
                if self.session_id.is_none() {
                    self.session_id = readutil::str_field(payload, "id").map(str::to_string);
                }
                if let Some(v) = readutil::str_field(payload, "cli_version") {
                    if !self.versions.iter().any(|x| x == v) {
                        self.versions.push(v.to_string());
                    }
                }
                self.note_limit(payload);
            }
            "turn_context" => {
                self.note_limit(payload);
                if self.model.is_none() {
                    self.model = readutil::str_field(payload, "model").map(str::to_string);
                }
                if let Some(p) = readutil::str_field(payload, "approval_policy") {
                    if !self.approval_policies.iter().any(|x| x == p) {
                        self.approval_policies.push(p.to_string());
                    }
                }
            }
            "response_item" => self.response_item(line_no, payload, t)?,
            "event_msg" => self.event_msg(line_no, payload, t)?,
            "compacted" => self.compacted(line_no, payload, ts),
            _ => {}
        }
        Ok(())
    }

    /// A `compacted` record (module doc): the summarizing request before it is taken out of
    /// the conversation's requests.
    fn compacted(&mut self, line_no: usize, payload: &Map<String, Value>, ts: Option<f64>) {
        let pre_tokens = self.take_summarizing_request();
        let mut c = RecordedCompaction::new(self.events.len(), "codex compacted");
        c.end_timestamp = ts;
        c.summary = match readutil::str_field(payload, "message") {
            Some(m) if !m.is_empty() => m.to_string(),
            _ => replacement_summary(payload.get("replacement_history")),
        };
        c.pre_tokens = pre_tokens;
        c.tokens_after = self.pending_after.take();
        c.boundary_raw = Some(RawPos::Line(line_no));
        self.compactions.push(c);
        self.after_compaction = true;
        self.open_request = None;
    }

    /// The compaction's own model request: the open request, last in the events, with usage
    /// and nothing in it. Removed; its prompt tokens returned.
    fn take_summarizing_request(&mut self) -> Option<u64> {
        let i = self.open_request?;
        let e = self.events.last()?;
        if i + 1 != self.events.len() || !e.model_request || !e.parts.is_empty() {
            return None;
        }
        let prompt = e.usage?.prompt_tokens;
        self.events.pop();
        self.open_request = None;
        Some(prompt)
    }

    /// A `token_count` with zero usage but `total_tokens` (module doc): Codex's estimate of
    /// the context after a compaction, for the compaction it precedes (or, written after it,
    /// the one just recorded).
    fn size_after(&mut self, total_tokens: u64) {
        let last_is_compaction = self.after_compaction
            && self
                .compactions
                .last()
                .is_some_and(|c| c.at_event == self.events.len() && c.tokens_after.is_none());
        match self.compactions.last_mut() {
            Some(c) if last_is_compaction => c.tokens_after = Some(total_tokens),
            _ => self.pending_after = Some(total_tokens),
        }
    }

    /// The model event response items go into, opening one without usage if needed.
    fn request(&mut self, t: f64) -> usize {
        if let Some(i) = self.open_request {
            if i < self.events.len() {
                return i;
            }
        }
        self.in_user_block = false;
        let inv = self.invocation();
        let mut ev = Event::new(AGENT, Role::Model, inv, t);
        ev.model_request = true;
        ev.model.clone_from(&self.model);
        ev.post_compaction_usage = self.after_compaction;
        self.events.push(ev);
        let i = self.events.len() - 1;
        self.open_request = Some(i);
        i
    }

    fn push_to_request(&mut self, t: f64, parts: Vec<Part>) {
        let i = self.request(t);
        if let Some(ev) = self.events.get_mut(i) {
            ev.parts.extend(parts);
        }
    }

    fn response_item(
        &mut self,
        line_no: usize,
        p: &Map<String, Value>,
        t: f64,
    ) -> Result<(), ReadError> {
        match readutil::str_field(p, "type").unwrap_or("") {
            "message" => self.message(line_no, p, t)?,
            "reasoning" => {
                let mut texts: Vec<String> = Vec::new();
                for key in ["summary", "content"] {
                    if let Some(Value::Array(items)) = p.get(key) {
                        texts.extend(
                            items
                                .iter()
                                .filter_map(|x| x.get("text").and_then(Value::as_str))
                                .map(str::to_string),
                        );
                    }
                }
                let parts = texts
                    .into_iter()
                    .map(|text| Part::Thought { text })
                    .collect();
                self.push_to_request(t, parts);
            }
            kind @ ("function_call" | "custom_tool_call" | "local_shell_call") => {
                self.tool_call(line_no, kind, p, t)?
            }
            kind @ ("function_call_output"
            | "custom_tool_call_output"
            | "local_shell_call_output") => self.tool_output(line_no, kind, p, t)?,
            _ => {}
        }
        Ok(())
    }

    /// A `message` item: the assistant's goes into the open request; a user, system or
    /// developer message is an event of its own (a run of user messages is one invocation).
    fn message(&mut self, line_no: usize, p: &Map<String, Value>, t: f64) -> Result<(), ReadError> {
        let role = readutil::str_field(p, "role").unwrap_or("");
        let parts = message_parts(p.get("content"));
        match role {
            "assistant" => self.push_to_request(t, parts),
            "user" | "system" | "developer" => {
                self.open_request = None;
                if role == "user" && !self.in_user_block {
                    self.invocations += 1;
                    self.in_user_block = true;
                }
                let inv = self.invocation();
                let injected = parts.iter().all(|p| match p {
                    Part::Text { text } => {
                        let t = text.trim_start();
                        t.starts_with("<environment_context>")
                            || t.starts_with("<user_instructions>")
                    }
                    _ => false,
                });
                let (author, role) = match role {
                    "user" if !injected => ("user", Role::User),
                    // Context Codex itself sends in the user's turn: not a person's words.
                    "user" => (HARNESS, Role::User),
                    _ => (HARNESS, Role::System),
                };
                let mut ev = Event::new(author, role, inv, t);
                if author == "user" {
                    for p in &parts {
                        if let Part::Text { text } = p {
                            for c in util::user_text_flags(text) {
                                util::flag(&mut ev, c);
                            }
                        }
                    }
                }
                ev.parts = parts;
                self.events.push(ev);
            }
            other => return Err(self.err(line_no, format!("message has unknown role {other:?}"))),
        }
        Ok(())
    }

    fn tool_call(
        &mut self,
        line_no: usize,
        kind: &str,
        p: &Map<String, Value>,
        t: f64,
    ) -> Result<(), ReadError> {
        let Some(id) = readutil::str_field(p, "call_id").or_else(|| readutil::str_field(p, "id"))
        else {
            return Err(self.err(line_no, format!("{kind} has no \"call_id\"")));
        };
        let name = match kind {
            "local_shell_call" => "local_shell".to_string(),
            _ => readutil::str_field(p, "name").unwrap_or("").to_string(),
        };
        let args = match (p.get("arguments"), p.get("input"), p.get("action")) {
            // Arguments are a JSON string; keep the parsed object when it parses.
            (Some(Value::String(s)), _, _) => {
                serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
            }
            (Some(v), _, _) => v.clone(),
            (None, Some(v), _) | (None, None, Some(v)) => v.clone(),
            (None, None, None) => Value::Object(Map::new()),
        };
        self.tool_names.insert(id.to_string(), name.clone());
        self.push_to_request(
            t,
            vec![Part::ToolCall {
                id: Some(id.to_string()),
                name,
                args,
            }],
        );
        Ok(())
    }

    fn tool_output(
        &mut self,
        line_no: usize,
        kind: &str,
        p: &Map<String, Value>,
        t: f64,
    ) -> Result<(), ReadError> {
        let Some(id) = readutil::str_field(p, "call_id") else {
            return Err(self.err(line_no, format!("{kind} has no \"call_id\"")));
        };
        // Without an earlier call (ADK reads that; the loaders warn), no name.
        let name = self.tool_names.get(id).cloned().unwrap_or_default();
        let output = match p.get("output") {
            Some(Value::String(s)) => s.clone(),
            None | Some(Value::Null) => String::new(),
            Some(v) => v.to_string(),
        };
        let critical = output_flags(&output);
        self.open_request = None;
        self.in_user_block = false;
        let inv = self.invocation();
        let mut ev = Event::new(AGENT, Role::Tool, inv, t);
        ev.parts.push(Part::ToolResponse {
            id: Some(id.to_string()),
            name,
            response: serde_json::json!({ "output": output }),
        });
        ev.critical = critical;
        self.events.push(ev);
        Ok(())
    }

    fn event_msg(
        &mut self,
        line_no: usize,
        p: &Map<String, Value>,
        t: f64,
    ) -> Result<(), ReadError> {
        match readutil::str_field(p, "type").unwrap_or("") {
            "token_count" => {
                let Some(info) = p.get("info").filter(|i| !i.is_null()) else {
                    // Rate-limit-only updates carry no request.
                    return Ok(());
                };
                if let Some(w) = info.get("model_context_window").and_then(Value::as_u64) {
                    self.context_window = Some(w);
                }
                if let Some(after) = zero_usage_total(info.get("last_token_usage")) {
                    self.size_after(after);
                    return Ok(());
                }
                let total = info.get("total_token_usage").cloned();
                if total.is_some() && total == self.last_total {
                    return Ok(());
                }
                let last = match info.get("last_token_usage") {
                    Some(v) if v.is_object() => v.clone(),
                    Some(v) if !v.is_null() => {
                        return Err(self.err(
                            line_no,
                            format!(
                                "last_token_usage is {}, expected an object",
                                readutil::kind(v)
                            ),
                        ))
                    }
                    // Older rollouts: the request's usage is the growth of the running total.
                    _ => diff_usage(total.as_ref(), self.last_total.as_ref())
                        .map_err(|m| self.err(line_no, m.0))?,
                };
                self.last_total = total;
                let get = |k: &str| {
                    readutil::tokens_field(Some(&last), "payload.info.last_token_usage", k)
                        .map_err(|m| self.err(line_no, m.0))
                };
                let usage = Usage {
                    prompt_tokens: get("input_tokens")?,
                    cached_read_tokens: get("cached_input_tokens")?,
                    cache_write_tokens: 0,
                    output_tokens: get("output_tokens")?,
                };
                self.open_request = None;
                let i = self.request(t);
                if let Some(ev) = self.events.get_mut(i) {
                    ev.usage = Some(usage);
                }
            }
            "turn_aborted" => {
                if let Some(ev) = self.events.last_mut() {
                    if !ev.critical.contains(&Critical::Interruption) {
                        ev.critical.push(Critical::Interruption);
                    }
                }
                // The request stays open: Codex can write the aborted response's items
                // (reasoning, the call and its "aborted" output) after the abort notice.
            }
            "exec_approval_request" | "apply_patch_approval_request" => {
                if let Some(ev) = self.events.iter_mut().rev().find(|e| e.model_request) {
                    if !ev.critical.contains(&Critical::Approval) {
                        ev.critical.push(Critical::Approval);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// `last_token_usage.total_tokens` of a `token_count` that reports no input and no output (the
/// context size Codex estimates after a compaction); `None` for any other.
fn zero_usage_total(last: Option<&Value>) -> Option<u64> {
    let last = last?.as_object()?;
    let zero = |k: &str| last.get(k).and_then(Value::as_u64) == Some(0);
    (zero("input_tokens") && zero("output_tokens"))
        .then(|| last.get("total_tokens").and_then(Value::as_u64))
        .flatten()
        .filter(|&t| t > 0)
}

/// The summary a `compacted` record's `replacement_history` holds: the text of its last user
/// message (local compaction appends the summary last; empty when none, e.g. a remote
/// compaction's encrypted `compaction` item).
fn replacement_summary(history: Option<&Value>) -> String {
    let Some(Value::Array(items)) = history else {
        return String::new();
    };
    items
        .iter()
        .rev()
        .filter(|i| {
            i.get("type").and_then(Value::as_str) == Some("message")
                && i.get("role").and_then(Value::as_str) == Some("user")
        })
        .find_map(|i| {
            let text: Vec<String> = message_parts(i.get("content"))
                .into_iter()
                .filter_map(|p| match p {
                    Part::Text { text } => Some(text),
                    _ => None,
                })
                .collect();
            (!text.is_empty()).then(|| text.join("\n"))
        })
        .unwrap_or_default()
}

/// Text and image parts of a message's `content` list.
fn message_parts(content: Option<&Value>) -> Vec<Part> {
    let mut parts = Vec::new();
    match content {
        Some(Value::String(s)) => parts.push(Part::Text { text: s.clone() }),
        Some(Value::Array(items)) => {
            for it in items {
                match it.get("type").and_then(Value::as_str) {
                    Some("input_text" | "output_text" | "text") => parts.push(Part::Text {
                        text: it
                            .get("text")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                    }),
                    Some("input_image") => {
                        let url = it.get("image_url").and_then(Value::as_str).unwrap_or("");
                        let (mime_type, size_bytes) = match url
                            .strip_prefix("data:")
                            .and_then(|r| r.split_once(";base64,"))
                        {
                            Some((mime, data)) => (
                                Some(mime.to_string()),
                                Some(readutil::base64_decoded_len(data)),
                            ),
                            None => (None, None),
                        };
                        parts.push(Part::Attachment {
                            name: "image".to_string(),
                            mime_type,
                            text: None,
                            size_bytes,
                        });
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
    parts
}

/// Critical flags of a function output: user rejections, failed commands.
fn output_flags(output: &str) -> Vec<Critical> {
    let lower_head: String = output.chars().take(200).collect::<String>().to_lowercase();
    if lower_head.contains("rejected by user") {
        return vec![Critical::Refusal];
    }
    if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(output) {
        let code = o
            .get("metadata")
            .and_then(|m| m.get("exit_code"))
            .and_then(Value::as_i64);
        return if code.is_some_and(|c| c != 0) {
            vec![Critical::ToolError]
        } else {
            Vec::new()
        };
    }
    if lower_head.starts_with("failed in sandbox") || lower_head.starts_with("execution error") {
        return vec![Critical::ToolError];
    }
    Vec::new()
}

/// `now - before` for the usage counters, for rollouts without `last_token_usage`. Err: a
/// counter that is not a token count (the earlier total was checked when it was `now`).
fn diff_usage(now: Option<&Value>, before: Option<&Value>) -> Result<Value, BadNumber> {
    let mut out = Map::new();
    for key in [
        "input_tokens",
        "cached_input_tokens",
        "output_tokens",
        "reasoning_output_tokens",
    ] {
        let a = readutil::tokens_field(now, "payload.info.total_token_usage", key)?;
        let b = readutil::tokens_field(before, "payload.info.total_token_usage", key)?;
        out.insert(key.to_string(), Value::from(a.saturating_sub(b)));
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::readutil::testutil::{
        assert_counts_match_stats, count_flag, count_parts, num, read_corpus, usage_checks,
    };
    use std::collections::BTreeSet;

    #[test]
    fn corpus_counts_match_stats_json() {
        let compared = assert_counts_match_stats(
            "agentcmd_cli_sessions/codex",
            |_| true,
            read,
            |st, s| {
                let requests = s.events.iter().filter(|e| e.model_request).count() as u64;
                let invocations: BTreeSet<&str> =
                    s.events.iter().map(|e| e.invocation_id.as_str()).collect();
                // stats.json's "assistant turns" are assistant text messages.
                let answers = s
                    .events
                    .iter()
                    .filter(|e| {
                        e.model_request && e.parts.iter().any(|p| matches!(p, Part::Text { .. }))
                    })
                    .count() as u64;
                let sum_output = s
                    .events
                    .iter()
                    .filter_map(|e| e.usage)
                    .map(|u| u.output_tokens);
                let mut want_policies: Vec<&str> = st
                    .get("approval_policies")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let mut got_policies: Vec<&str> =
                    s.approval_policies.iter().map(String::as_str).collect();
                want_policies.sort_unstable();
                got_policies.sort_unstable();
                let mut checks = vec![
                    ("model requests", requests, num(st, "usage_records")),
                    ("answers", answers, num(st, "assistant_turns")),
                    (
                        "tool calls",
                        count_parts(s, |p| matches!(p, Part::ToolCall { .. })),
                        num(st, "tool_calls"),
                    ),
                    (
                        "tool results",
                        count_parts(s, |p| matches!(p, Part::ToolResponse { .. })),
                        num(st, "tool_results"),
                    ),
                    (
                        "invocations",
                        invocations.len() as u64,
                        num(st, "user_turns"),
                    ),
                    ("sum output", sum_output.sum(), num(st, "sum_output_tokens")),
                    (
                        "interrupts",
                        count_flag(s, Critical::Interruption),
                        num(st, "interrupts"),
                    ),
                    (
                        "refusals",
                        count_flag(s, Critical::Refusal),
                        num(st, "rejections_or_refusals"),
                    ),
                    (
                        "approvals/confirmations",
                        count_flag(s, Critical::Approval) + count_flag(s, Critical::Confirmation),
                        num(st, "approvals_or_confirmations"),
                    ),
                    (
                        "approval policies differ (1 = yes)",
                        u64::from(got_policies != want_policies),
                        0,
                    ),
                ];
                checks.extend(usage_checks(s, st));
                checks
            },
        );
        assert_eq!(compared, 5);
    }

    /// Lines 5–10 of this rollout: turn_context, reasoning, token_count, then the reasoning
    /// and function call of that same request, then its output.
    #[test]
    fn token_count_attaches_to_the_request_it_precedes() {
        let rel = "agentcmd_cli_sessions/codex/full/rollout-2025-09-24T20-12-23-01997ea4-a70d-7da3-8c20-c736db82a7c5.jsonl";
        let s = read(rel, &read_corpus(rel)).expect("reads");
        let s = &s[0];
        assert_eq!(s.id, "01997ea4-a70d-7da3-8c20-c736db82a7c5");
        assert_eq!(s.model.as_deref(), Some("gpt-5-codex"));
        let first = s
            .events
            .iter()
            .find(|e| e.model_request)
            .expect("a request");
        let want = Usage {
            prompt_tokens: 3587,
            cached_read_tokens: 2560,
            cache_write_tokens: 0,
            output_tokens: 229,
        };
        assert_eq!(first.usage, Some(want));
        assert!(
            matches!(&first.parts[0], Part::Thought { text } if text == "**Analyzing dashboard query necessity**")
        );
        assert!(
            matches!(&first.parts[1], Part::ToolCall { id: Some(id), name, .. } if id == "call_WmlLLopV6YokTw8Y639cqY5h" && name == "shell")
        );
        // Arguments are parsed from their JSON string.
        assert!(
            matches!(&first.parts[1], Part::ToolCall { args, .. } if args.get("command").is_some())
        );
        let idx = s
            .events
            .iter()
            .position(|e| std::ptr::eq(e, first))
            .unwrap_or(0);
        let next = &s.events[idx + 1];
        assert_eq!(next.role, Role::Tool);
        assert!(
            matches!(&next.parts[0], Part::ToolResponse { id: Some(id), .. } if id == "call_WmlLLopV6YokTw8Y639cqY5h")
        );
        // That command failed (bash syntax error, exit code 1 in its metadata).
        assert_eq!(next.critical, [Critical::ToolError]);
        // The environment context and the prompt open invocation 1 together.
        assert_eq!(s.events[0].invocation_id, "inv-1");
        assert_eq!(s.events[1].invocation_id, "inv-1");
        // The environment context is Codex's, the IDE context + request the person's.
        assert_eq!(
            (s.events[0].author.as_str(), s.events[1].author.as_str()),
            ("system", "user")
        );
    }

    #[test]
    fn bad_input_is_one_line_naming_the_line() {
        let meta =
            r#"{"timestamp":"2025-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x"}}"#;
        let orphan = r#"{"timestamp":"2025-01-01T00:00:01Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"hi"}}"#;
        // An output without its call is kept, and counted.
        let s = &read("r.jsonl", &format!("{meta}\n{orphan}\n")).expect("orphan is read")[0];
        assert_eq!(util::orphan_responses(&s.events), 1);
        let early = meta.replace("2025-01-01T00:00:00Z", "2025-01-01T00:00:02Z");
        let user = r#"{"timestamp":"2025-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}"#;
        let e = read("r.jsonl", &format!("{early}\n{user}\n")).expect_err("out of order");
        assert_eq!(e.location, "line 2");
        let e = read("r.jsonl", &format!("{meta}\n{{\"timestamp\":1}}\n")).expect_err("no type");
        assert_eq!(e.location, "line 2");
        assert!(read("r.jsonl", "\n\n").is_err());
        assert!(read("r.jsonl", meta).is_err(), "no messages at all");
    }

    #[test]
    fn sniff_tells_codex_from_neighbours() {
        let rel = "agentcmd_cli_sessions/codex/full/rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl";
        assert!(sniff(&read_corpus(rel)));
        assert!(!sniff(&read_corpus("claude_code_spotter/short.jsonl")));
        assert!(!sniff(&read_corpus(
            "openhands/tests/unit/resolver/mock_output/output.jsonl"
        )));
        assert!(!sniff("{\"type\":\"response_item\"}"));
    }

    #[test]
    fn codex_records_its_limit_window_and_versions() {
        let line = |kind: &str, payload: serde_json::Value| {
            serde_json::json!({"timestamp": "2025-01-01T00:00:00Z", "type": kind, "payload": payload}).to_string()
        };
        let text = [
            line("session_meta", serde_json::json!({"id": "s", "cli_version": "0.50.0"})),
            line("turn_context", serde_json::json!({"model": "gpt-5", "model_auto_compact_token_limit": 200_000})),
            line("response_item", serde_json::json!({"type": "message", "role": "user", "content": "go"})),
            line("event_msg", serde_json::json!({"type": "token_count", "info": {
                "last_token_usage": {"input_tokens": 9, "output_tokens": 1}, "model_context_window": 400_000}})),
            line("response_item", serde_json::json!({"type": "message", "role": "assistant", "content": "ok"})),
            line("compacted", serde_json::json!({"message": "sum"})),
            line("event_msg", serde_json::json!({"type": "token_count", "info": {
                "last_token_usage": {"input_tokens": 5, "output_tokens": 1}}})),
        ]
        .join("\n");
        let s = &read("r.jsonl", &text).expect("reads")[0];
        let p = s.recorded_policy.as_ref().expect("recorded");
        assert_eq!(p.versions, ["0.50.0"]);
        assert_eq!(
            p.rule,
            PolicyRule::Codex {
                auto_compact_token_limit: Some(200_000),
                context_window: Some(400_000)
            }
        );
        let c = &s.recorded_compactions[0];
        assert_eq!(
            (c.request, c.tokens_after, c.boundary_raw),
            (Some(1), Some(5), Some(RawPos::Line(6)))
        );
    }

    #[test]
    fn codex_compaction_is_kept_aside() {
        let line = |t: u32, kind: &str, payload: serde_json::Value| {
            serde_json::json!({"timestamp": format!("2025-01-01T00:00:{t:02}Z"), "type": kind, "payload": payload}).to_string()
        };
        let tc = |n: u64| {
            serde_json::json!({"type": "token_count", "info": {
            "total_token_usage": {"input_tokens": n, "output_tokens": 1},
            "last_token_usage": {"input_tokens": n, "cached_input_tokens": n / 2, "output_tokens": 1}}})
        };
        let text = [
            line(0, "response_item", serde_json::json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]})),
            line(1, "event_msg", tc(100)),
            line(1, "response_item", serde_json::json!({"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"ls\"]}", "call_id": "c1"})),
            line(2, "response_item", serde_json::json!({"type": "function_call_output", "call_id": "c1", "output": "patch rejected by user"})),
            line(3, "compacted", serde_json::json!({"message": "user asked to fix it; ls was rejected"})),
            line(4, "event_msg", tc(40)),
            line(4, "response_item", serde_json::json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]})),
        ]
        .join("\n");
        let s = read("r.jsonl", &text).expect("reads");
        let s = &s[0];
        assert_eq!(s.recorded_compactions.len(), 1);
        assert_eq!(s.recorded_compactions[0].at_event, 3);
        assert!(s.recorded_compactions[0].summary.contains("rejected"));
        let reqs: Vec<(u64, bool)> = s
            .events
            .iter()
            .filter(|e| e.model_request)
            .map(|e| {
                (
                    e.usage.map_or(0, |u| u.prompt_tokens),
                    e.post_compaction_usage,
                )
            })
            .collect();
        assert_eq!(reqs, [(100, false), (40, true)]);
        assert_eq!(s.events[2].critical, [Critical::Refusal]);
    }

    /// One rollout line of a hand-made fixture (shapes of Codex 0.117+'s sources, module doc).
    fn rl(kind: &str, payload: serde_json::Value) -> String {
        serde_json::json!({"timestamp": "2026-01-01T00:00:00Z", "type": kind, "payload": payload})
            .to_string()
    }

    fn tc(input: u64, output: u64, total: u64) -> String {
        rl(
            "event_msg",
            serde_json::json!({"type": "token_count", "info": {
                "total_token_usage": {"input_tokens": total, "output_tokens": 0, "total_tokens": total},
                "last_token_usage": {"input_tokens": input, "cached_input_tokens": 0,
                    "output_tokens": output, "reasoning_output_tokens": 0,
                    "total_tokens": input + output}}}),
        )
    }

    /// Codex's `recompute_token_usage` after a compaction: zero usage but `total_tokens`,
    /// the running total unchanged.
    fn tc_after(estimate: u64, total: u64) -> String {
        rl(
            "event_msg",
            serde_json::json!({"type": "token_count", "info": {
                "total_token_usage": {"input_tokens": total, "output_tokens": 0, "total_tokens": total},
                "last_token_usage": {"input_tokens": 0, "cached_input_tokens": 0,
                    "output_tokens": 0, "reasoning_output_tokens": 0, "total_tokens": estimate}}}),
        )
    }

    fn msg(role: &str, text: &str) -> String {
        let kind = if role == "assistant" {
            "output_text"
        } else {
            "input_text"
        };
        rl(
            "response_item",
            serde_json::json!({"type": "message", "role": role, "content": [{"type": kind, "text": text}]}),
        )
    }

    fn prompts(s: &Session) -> Vec<u64> {
        s.events
            .iter()
            .filter(|e| e.model_request)
            .map(|e| e.usage.map_or(0, |u| u.prompt_tokens))
            .collect()
    }

    /// Issue 43: a 0.117+ local compaction. The summarizing request's `token_count` is no
    /// request of the conversation (its prompt is the compaction's `pre_tokens`), the
    /// zero-usage `token_count` is no request either (its `total_tokens` is the size after
    /// where no request follows), and an empty `message` gives way to the summary the
    /// `replacement_history` ends with.
    #[test]
    fn codex_compacted_with_replacement_history_and_zero_usage_token_count() {
        let head = [
            rl(
                "session_meta",
                serde_json::json!({"id": "s", "cli_version": "0.117.0"}),
            ),
            msg("user", "fix it"),
            tc(1_000, 50, 1_050),
            msg("assistant", "looking"),
            tc(1_500, 300, 2_850),
            tc_after(400, 2_850),
            rl(
                "compacted",
                serde_json::json!({"message": "", "replacement_history": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "SUMMARY: fixing it"}]}]}),
            ),
        ];
        let s = &read("r.jsonl", &head.join("\n")).expect("reads")[0];
        assert_eq!(prompts(s), [1_000]);
        let c = &s.recorded_compactions[0];
        assert_eq!(c.summary, "SUMMARY: fixing it");
        assert_eq!(
            (c.pre_tokens, c.request, c.tokens_after),
            (Some(1_500), None, Some(400))
        );
        // a request after it records the size after itself
        let mut more = head.to_vec();
        more.extend([tc(450, 20, 3_320), msg("assistant", "done")]);
        let s = &read("r.jsonl", &more.join("\n")).expect("reads")[0];
        assert_eq!(prompts(s), [1_000, 450]);
        let c = &s.recorded_compactions[0];
        assert_eq!((c.request, c.tokens_after), (Some(1), Some(450)));
        assert!(s.events[c.at_event..].iter().any(|e| e.model_request));
    }

    /// Issue 43: a remote compaction (`compact_remote.rs`): `message` empty, the summary an
    /// encrypted `compaction` item; no summarizing request precedes it, so the conversation's
    /// last request stays one.
    #[test]
    fn codex_remote_compaction_keeps_the_last_request() {
        let text = [
            msg("user", "go"),
            tc(800, 10, 810),
            msg("assistant", "ok"),
            tc_after(90, 810),
            rl(
                "compacted",
                serde_json::json!({"message": "", "replacement_history": [
                {"type": "compaction", "encrypted_content": "gAAAA"}]}),
            ),
        ]
        .join("\n");
        let s = &read("r.jsonl", &text).expect("reads")[0];
        assert_eq!(prompts(s), [800]);
        let c = &s.recorded_compactions[0];
        assert_eq!(
            (c.summary.as_str(), c.pre_tokens, c.tokens_after),
            ("", None, Some(90))
        );
    }

    /// Issue 43: a compaction before a turn's first user message (pre-turn, Codex checks the
    /// last response's total before the turn starts) sits before that message, in the new
    /// turn, and the turn's first request is the one after it.
    #[test]
    fn codex_pre_turn_compaction_sits_before_the_turns_first_user_message() {
        let text = [
            msg("user", "first task"),
            tc(100, 5, 105),
            msg("assistant", "done"),
            tc(120, 30, 255),
            tc_after(60, 255),
            rl(
                "compacted",
                serde_json::json!({"message": "sum of the first task"}),
            ),
            rl("turn_context", serde_json::json!({"model": "gpt-5"})),
            msg("user", "<environment_context>cwd</environment_context>"),
            msg("user", "second task"),
            tc(70, 5, 330),
            msg("assistant", "on it"),
        ]
        .join("\n");
        let s = &read("r.jsonl", &text).expect("reads")[0];
        assert_eq!(prompts(s), [100, 70]);
        let c = &s.recorded_compactions[0];
        let first = &s.events[c.at_event];
        assert!(
            !first.model_request && first.role != Role::Model,
            "{first:?}"
        );
        assert_ne!(first.invocation_id, s.events[0].invocation_id);
        assert_eq!(
            (c.request, c.pre_tokens, c.tokens_after, c.summary.as_str()),
            (Some(1), Some(120), Some(70), "sum of the first task")
        );
    }
}
