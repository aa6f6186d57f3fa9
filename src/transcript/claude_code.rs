//! Claude Code JSONL reader (`~/.claude/projects/*/<session>.jsonl`, `subagents/agent-*.jsonl`).
//!
//! What the file holds versus what the model saw:
//! - One model request (one API response) is one `requestId` (else one `message.id`: a
//!   third-party endpoint can repeat a message id across requests), but Claude Code writes each
//!   content block on its own `assistant` line, and tool results of parallel calls can land
//!   between those lines. All lines of one id merge into one model event, placed where its
//!   first line was. Usage repeats on every line; input and cache fields agree, the
//!   streamed `output_tokens` grows, so the largest is kept.
//! - Usage is normalised to "prompt includes cached": Anthropic counts cache reads and
//!   writes outside `input_tokens`, so prompt = input + cache_read + cache_creation.
//! - `tool_result` blocks arrive in `user` lines; they answer the open invocation and do not
//!   start a new one. A result whose `tool_use_id` has no earlier call in the same session is
//!   kept as a tool response without its call, as ADK keeps one (the loaders warn; none of the 25 corpus files has one: compactions keep the raw history in the
//!   file, so results never outlive their calls). Calls left without a result (the session
//!   ended or was interrupted) are kept.
//! - Each sidechain is its own session: a `subagents/agent-*.jsonl` file is one session, and
//!   `isSidechain` lines inside a main file are split off by `agentId` (or by their
//!   `parentUuid` chain when older versions wrote no `agentId`), with `#agent-ID` appended
//!   to `Session::source`. `progress` lines (hook output, streamed bash output, subagent
//!   echoes) are UI only and skipped: the subagent's own file holds its messages.
//! - Recorded compactions (`system` `compact_boundary` with `compactMetadata {trigger,
//!   preTokens}`, and the `isCompactSummary` user message holding the summary) go to
//!   `Session::recorded_compactions`, not to events: the replay uses the raw history (the
//!   summary is never a user message of it), and every model request after a compaction is
//!   marked `post_compaction_usage`. Each keeps what an `as recorded` replay needs to start
//!   over there: the first event after it, the summary, the lines of both records, everything
//!   before it as forgotten, the boundary line's `version`, and its start: the last event
//!   before the boundary, or a `/compact` echo written after the summary but stamped before
//!   the boundary (a manual compaction began when the command was typed).
//!   A file that starts with a boundary (a resumed session) marks it `resumed` and puts its
//!   summary first among the events: the history it summarized is not in the file.
//! - Microcompactions (`system` `microcompact_boundary`, [`super::claude_code_micro`]) are
//!   recorded compactions of kind micro naming the events of the results they cleared; the
//!   requests after one are marked `post_compaction_usage` too.
//! - `attachment` records (file mentions, reminders, hook output, ...; only Anthropic's own
//!   users' files hold them, see [`super::claude_code_attach`]) are user-role events
//!   authored [`HARNESS`], one attachment part each, except those between a compaction's
//!   boundary and the next response (what it re-attached: like its summary, not events).
//! - One session over several files ([`read_joined`], `transcript::join`): read as one
//!   stream, a line already read (same `uuid`) counted once.
//! - Every line records the CLI `version`: the versions, in order, are the session's
//!   `recorded_policy` (Claude Code's auto-compact, whose rule is the version's).
//! - Invocations start at human prompts. Like the corpus SOURCE.md counts, these exclude
//!   tool results, `isMeta` lines, slash-command echoes (`<command-name>`,
//!   `<local-command-stdout>`), background `<task-notification>`s and interrupt markers;
//!   those join the current invocation (or the first one, when they precede any prompt),
//!   keep the user role the API saw, and are authored [`HARNESS`] rather than `user`.
//! - Critical flags: "The user doesn't want to proceed…" results → `Refusal`; other
//!   `is_error` results → `ToolError`; "[Request interrupted by user…]" → `Interruption`;
//!   human prompts also get the shared word rules of `util::user_text_flags`.
//! - Timestamps: lines are stamped when their producer made them but appended in causal
//!   (`parentUuid`) order. With parallel tool calls, a tool's result is stamped while the
//!   rest of the same response is still streaming, so it can be earlier than the
//!   response's last line before it (45 such steps in 10 of the 25 corpus files, the
//!   largest 5.3 s). Compaction records are not events and are not checked: the `/compact`
//!   echo lines written after a boundary carry the earlier time the command was typed.
//!   Steps back of up to [`TIMESTAMP_TOLERANCE_S`], about as long as a long response
//!   streams, are clamped to the latest time. Larger ones (a resumed or queued step, up to
//!   an hour) are read in file order too, clamped the same way, and the session is marked
//!   (`timing_adjusted_s`, said once); beyond an hour they are bad input (`readutil::Clock`).

use super::readutil::{self, Clock};
use super::util;
use super::{
    compact_json, Critical, Event, Format, Part, PolicyRule, RawPos, ReadError, RecordedCompaction,
    RecordedPolicy, Role, Session, Usage,
};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

/// The `(id, name)` of each tool call an assistant line makes.
type ToolCalls = Vec<(String, String)>;

/// How far back (seconds) a line's timestamp may step before it is an error; see module doc.
pub const TIMESTAMP_TOLERANCE_S: f64 = 120.0;

const REJECTION_PREFIX: &str = "The user doesn't want to proceed with this tool use";
const INTERRUPT_PREFIX: &str = "[Request interrupted by user";
/// Author of user-role text that Claude Code itself injected (skills, hook reminders,
/// slash-command echoes, background-task notices): not a person's words.
pub const HARNESS: &str = "system";

/// Claude Code's model name on messages it wrote itself (API errors, "No response
/// requested."): no request reached the API, so they are not model requests.
const SYNTHETIC_MODEL: &str = "<synthetic>";

/// True when `text` (the file's content) looks like Claude Code JSONL: one of the first
/// records is a Claude Code record type carrying a session or message uuid.
pub fn sniff(text: &str) -> bool {
    const TYPES: [&str; 9] = [
        "user",
        "attachment",
        "assistant",
        "system",
        "summary",
        "progress",
        "file-history-snapshot",
        "queue-operation",
        "result",
    ];
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(5)
    {
        if !line.starts_with('{') {
            return false;
        }
        if line.len() <= 8 << 20 {
            if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(line) {
                let t = readutil::str_field(&m, "type").unwrap_or("");
                if m.contains_key("payload") {
                    return false;
                }
                if TYPES.contains(&t)
                    && ["sessionId", "uuid", "leafUuid", "messageId"]
                        .iter()
                        .any(|k| m.contains_key(*k))
                {
                    return true;
                }
                continue;
            }
        }
        // A truncated or huge first line: fall back to a substring check on its start. The
        // uuid keys are Claude Code's own (Gemini CLI also has `sessionId` and `type`).
        let head = line.get(..line.len().min(4096)).unwrap_or(line);
        if head.contains("\"sessionId\"")
            && (head.contains("\"uuid\"") || head.contains("\"parentUuid\""))
            && !head.contains("\"payload\"")
        {
            return true;
        }
    }
    false
}

/// Parse the whole file. `file` is the path as the user gave it, used in errors and
/// `Session::source`.
pub fn read(file: &str, text: &str) -> Result<Vec<Session>, ReadError> {
    read_joined(&[(file, text)])
}

/// Read the files of one session (`(file, text)`, oldest first) as one stream: a line
/// repeated from an earlier file (a resumed session's new file copies the lines before it,
/// compactions included) counts once, by its `uuid`. The sessions' `source` names the first
/// file, then `#+` and the others (`a.jsonl#+b.jsonl`); errors name the file they are in.
pub fn read_joined(parts: &[(&str, &str)]) -> Result<Vec<Session>, ReadError> {
    let Some(&(first, _)) = parts.first() else {
        return Err(ReadError::new("", "", "no Claude Code file to read"));
    };
    let mut label = first.to_string();
    for (i, (file, _)) in parts.iter().enumerate().skip(1) {
        label.push_str(if i == 1 { "#+" } else { "+" });
        label.push_str(file);
    }
    let mut reader = Reader {
        file: first,
        label,
        groups: Vec::new(),
        group_by_key: HashMap::new(),
        last_side: None,
        group_of_uuid: HashMap::new(),
        seen_uuids: HashSet::new(),
    };
    for &(file, text) in parts {
        reader.file = file;
        for (line_no, line) in readutil::lines(file, text)? {
            let obj = readutil::parse_object_line(file, line_no, line)?;
            reader.line(line_no, &obj)?;
        }
    }
    reader.file = first;
    reader.finish()
}

#[derive(Clone, PartialEq, Eq, Hash)]
enum Key {
    Main,
    /// A sidechain: its `agentId`, or `sidechain-LINE` for the line that started it.
    Side(String),
}

struct Group {
    key: Key,
    session_id: Option<String>,
    events: Vec<Event>,
    /// Model event per request: `requestId`, else `message.id` ([`request_key`]).
    by_request: HashMap<String, usize>,
    tool_names: HashMap<String, String>,
    /// The event holding each tool result, by `tool_use_id` (what a microcompaction's
    /// `compactedToolIds` name).
    result_event: HashMap<String, usize>,
    compactions: Vec<RecordedCompaction>,
    /// Index into `compactions` of a boundary still waiting for its summary message.
    pending_summary: Option<usize>,
    after_compaction: bool,
    /// Between a boundary and the next assistant line: user lines here are the compaction's
    /// own echo (`/compact` command, its output), whose times can date its start.
    echo_window: bool,
    /// Between a boundary and the next response or human prompt: `attachment` records here
    /// are what the compaction re-attached.
    reattaching: bool,
    /// Claude Code `version`s of the group's lines, in order of first appearance.
    versions: Vec<String>,
    invocations: usize,
    invocation_has_prompt: bool,
    clock: Clock,
    model: Option<String>,
    /// The first recorded working directory (`cwd`).
    cwd: Option<String>,
}

impl Group {
    fn new(key: Key) -> Self {
        Group {
            key,
            session_id: None,
            events: Vec::new(),
            by_request: HashMap::new(),
            tool_names: HashMap::new(),
            result_event: HashMap::new(),
            compactions: Vec::new(),
            pending_summary: None,
            after_compaction: false,
            echo_window: false,
            reattaching: false,
            versions: Vec::new(),
            invocations: 0,
            invocation_has_prompt: false,
            clock: Clock::file_ordered(TIMESTAMP_TOLERANCE_S),
            model: None,
            cwd: None,
        }
    }

    fn agent_name(&self) -> String {
        match &self.key {
            Key::Main => "claude".to_string(),
            Key::Side(id) => format!("agent-{id}"),
        }
    }

    fn current_invocation(&mut self) -> String {
        if self.invocations == 0 {
            self.invocations = 1;
        }
        format!("inv-{}", self.invocations)
    }

    /// A human prompt opens a new invocation, unless the current one has none yet (lines
    /// that came before the first prompt belong to the prompt's invocation).
    fn prompt_invocation(&mut self) -> String {
        if self.invocations == 0 || self.invocation_has_prompt {
            self.invocations += 1;
        }
        self.invocation_has_prompt = true;
        format!("inv-{}", self.invocations)
    }

    /// The model event of `message_id`, opened at `t` on its first line (see module doc).
    fn request_event(
        &mut self,
        key: String,
        message_id: String,
        model: Option<String>,
        t: f64,
    ) -> usize {
        let synthetic = model.as_deref() == Some(SYNTHETIC_MODEL);
        if self.model.is_none() && !synthetic {
            self.model.clone_from(&model);
        }
        if let Some(&i) = self.by_request.get(&key) {
            return i;
        }
        let inv = self.current_invocation();
        let mut ev = Event::new(self.agent_name(), Role::Model, inv, t);
        ev.id = Some(message_id);
        ev.model_request = !synthetic;
        ev.model = model.filter(|_| !synthetic);
        ev.post_compaction_usage = self.after_compaction && !synthetic;
        self.events.push(ev);
        let i = self.events.len() - 1;
        self.by_request.insert(key, i);
        i
    }

    /// A user-role event from a line's parts: a person's prompt opens an invocation and is
    /// authored `user`; tool results are the agent's; anything else Claude Code wrote.
    fn user_event(&mut self, read: UserParts, is_meta: bool, t: f64) -> Event {
        let UserParts {
            parts,
            mut critical,
            has_result,
            texts,
        } = read;
        let prompt = !is_meta && !has_result && texts.iter().any(|t| is_human_text(t));
        let inv = if prompt {
            self.prompt_invocation()
        } else {
            self.current_invocation()
        };
        let interrupt = critical.contains(&Critical::Interruption);
        let author = if has_result {
            self.agent_name()
        } else if prompt || interrupt {
            "user".to_string()
        } else {
            // isMeta text, command echoes, task notices: Claude Code wrote them, no person.
            HARNESS.to_string()
        };
        if prompt {
            // A person's words: the word rules every reader applies (see `util`).
            for text in &texts {
                for c in util::user_text_flags(text) {
                    push_unique(&mut critical, c);
                }
            }
        }
        let mut ev = Event::new(author, Role::User, inv, t);
        ev.parts = parts;
        ev.critical = critical;
        ev
    }

    /// The `isCompactSummary` user record: the summary of the boundary before it (or, with
    /// no boundary recorded, a compaction of its own). Not an event: the raw history stays.
    fn compact_summary(&mut self, line_no: usize, blocks: &[Value], ts: Option<f64>) {
        let summary = blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n");
        let pending = self.pending_summary.take();
        let i = match pending.filter(|&i| i < self.compactions.len()) {
            Some(i) => i,
            None => {
                let at = self.events.len();
                let mut c = RecordedCompaction::new(at, "claude-code isCompactSummary");
                c.end_timestamp = ts;
                c.resumed = at == 0;
                c.forgotten = std::iter::once(0..at).collect();
                self.compactions.push(c);
                self.echo_window = true;
                self.reattaching = true;
                self.compactions.len() - 1
            }
        };
        let resumed = self.compactions.get(i).is_some_and(|c| c.resumed);
        if resumed {
            // what the model saw first: the summary of the history the file does not hold
            let t = self.clock.next(ts).unwrap_or(0.0);
            let inv = self.current_invocation();
            let mut ev = Event::new(HARNESS, Role::User, inv, t);
            ev.parts.push(Part::Text {
                text: summary.clone(),
            });
            self.events.push(ev);
        }
        if let Some(c) = self.compactions.get_mut(i) {
            c.summary = summary;
            c.summary_raw = Some(RawPos::Line(line_no));
        }
        self.after_compaction |= !resumed;
    }

    /// A `microcompact_boundary`: old tool results cleared from here on (no summary). The
    /// requests after it went out with the results cleared, so they are post-compaction.
    fn microcompaction(
        &mut self,
        m: super::claude_code_micro::Micro,
        line_no: usize,
        ts: Option<f64>,
    ) {
        let at = self.events.len();
        let mut c = RecordedCompaction::new(at, "claude-code microcompact_boundary");
        c.kind = super::CompactionKind::Micro;
        c.trigger = m.trigger;
        c.pre_tokens = m.pre_tokens;
        c.tokens_saved = m.tokens_saved;
        c.end_timestamp = ts;
        c.start_timestamp = self.events.last().map(|e| e.timestamp);
        c.boundary_raw = Some(RawPos::Line(line_no));
        c.version = m.version;
        let mut cleared: Vec<usize> = m
            .tool_ids
            .iter()
            .filter_map(|id| self.result_event.get(id).copied())
            .collect();
        cleared.sort_unstable();
        cleared.dedup();
        c.cleared = cleared;
        c.cleared_ids = m.tool_ids;
        self.compactions.push(c);
        self.after_compaction = true;
    }

    /// A user line right after a boundary stamped before it is the `/compact` command that
    /// started a manual compaction: the compaction began then, not at the last event.
    fn compaction_echo(&mut self, ts: Option<f64>) {
        if !self.echo_window {
            return;
        }
        let Some(c) = self.compactions.last_mut() else {
            return;
        };
        if let (Some(t), Some(end)) = (ts, c.end_timestamp) {
            if t < end && c.start_timestamp.is_none_or(|s| t > s) {
                c.start_timestamp = Some(t);
            }
        }
    }

    fn note_version(&mut self, obj: &Map<String, Value>) {
        if let Some(v) = readutil::str_field(obj, "version") {
            if !self.versions.iter().any(|x| x == v) {
                self.versions.push(v.to_string());
            }
        }
    }

    /// What the group records about Claude Code's own compaction: the CLI versions (the
    /// files record no setting; the auto-compact rule is the version's).
    fn recorded_policy(&self) -> Option<RecordedPolicy> {
        (!self.versions.is_empty()).then(|| RecordedPolicy {
            source: "claude-code version".to_string(),
            versions: self.versions.clone(),
            rule: PolicyRule::ClaudeCodeAuto {
                settings: super::ClaudeCodeSettings {
                    cwd: self.cwd.clone(),
                    ..Default::default()
                },
            },
        })
    }
}

/// What one user line holds (see `Reader::user_parts`).
#[derive(Default)]
struct UserParts {
    parts: Vec<Part>,
    critical: Vec<Critical>,
    has_result: bool,
    texts: Vec<String>,
}

impl UserParts {
    /// A `tool_result` block: its text (flagged by how it starts) and attachments.
    fn tool_result(&mut self, id: &str, name: String, b: &Value) {
        let (text, attachments) = result_content(b.get("content"));
        if text.starts_with(REJECTION_PREFIX) {
            push_unique(&mut self.critical, Critical::Refusal);
        } else if text.starts_with(INTERRUPT_PREFIX) {
            push_unique(&mut self.critical, Critical::Interruption);
        } else if b.get("is_error").and_then(Value::as_bool).unwrap_or(false) {
            push_unique(&mut self.critical, Critical::ToolError);
        }
        self.parts.push(Part::ToolResponse {
            id: Some(id.to_string()),
            name,
            response: serde_json::json!({ "content": text }),
        });
        self.parts.extend(attachments);
    }
}

struct Reader<'a> {
    /// The file being read (errors name it).
    file: &'a str,
    /// The sessions' `source`: the file, or the files joined ([`read_joined`]).
    label: String,
    groups: Vec<Group>,
    group_by_key: HashMap<Key, usize>,
    /// The sidechain the latest sidechain line went to.
    last_side: Option<usize>,
    group_of_uuid: HashMap<String, usize>,
    seen_uuids: HashSet<String>,
}

impl<'a> Reader<'a> {
    fn err(&self, line_no: usize, msg: impl Into<String>) -> ReadError {
        ReadError::new(self.file, format!("line {line_no}"), msg)
    }

    fn group_index(&mut self, key: Key) -> usize {
        if let Some(&i) = self.group_by_key.get(&key) {
            return i;
        }
        self.groups.push(Group::new(key.clone()));
        self.group_by_key.insert(key, self.groups.len() - 1);
        self.groups.len() - 1
    }

    /// Which session a record belongs to (see module doc on sidechains).
    fn assign(&mut self, line_no: usize, obj: &Map<String, Value>) -> usize {
        let sidechain = obj
            .get("isSidechain")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let idx = if !sidechain {
            self.group_index(Key::Main)
        } else if let Some(agent) = readutil::str_field(obj, "agentId") {
            self.group_index(Key::Side(agent.to_string()))
        } else {
            let parent = readutil::str_field(obj, "parentUuid");
            match parent.and_then(|p| self.group_of_uuid.get(p).copied()) {
                Some(i) => i,
                None => match (parent, self.last_side) {
                    (Some(_), Some(i)) => i,
                    _ => self.group_index(Key::Side(format!("sidechain-{line_no}"))),
                },
            }
        };
        if sidechain {
            self.last_side = Some(idx);
        }
        if let Some(u) = readutil::str_field(obj, "uuid") {
            self.group_of_uuid.insert(u.to_string(), idx);
        }
        idx
    }

    fn line(&mut self, line_no: usize, obj: &Map<String, Value>) -> Result<(), ReadError> {
        let Some(kind) = obj.get("type") else {
            return Err(self.err(line_no, "record has no \"type\""));
        };
        let Some(kind) = kind.as_str() else {
            return Err(self.err(
                line_no,
                format!("\"type\" is {}, expected a string", readutil::kind(kind)),
            ));
        };
        if !matches!(kind, "user" | "assistant" | "system" | "attachment") {
            // summary (session titles), progress, file-history-snapshot, queue-operation and
            // future record types are not part of what the model saw.
            return Ok(());
        }
        if let Some(u) = readutil::str_field(obj, "uuid") {
            // Resumed sessions can repeat a line verbatim; count it once.
            if !self.seen_uuids.insert(u.to_string()) {
                return Ok(());
            }
        }
        let recorded_ts = match obj.get("timestamp") {
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
        let g = self.assign(line_no, obj);
        if let Some(group) = self.groups.get_mut(g) {
            if group.session_id.is_none() {
                group.session_id = readutil::str_field(obj, "sessionId").map(str::to_string);
            }
            if group.cwd.is_none() {
                group.cwd = readutil::str_field(obj, "cwd").map(str::to_string);
            }
            group.note_version(obj);
        }
        match kind {
            "assistant" => self.assistant(line_no, g, obj, recorded_ts),
            "user" => self.user(line_no, g, obj, recorded_ts),
            "attachment" => self.attachment(line_no, g, obj, recorded_ts),
            _ => self.system(line_no, g, obj, recorded_ts),
        }
    }

    fn tick(&mut self, line_no: usize, g: usize, ts: Option<f64>) -> Result<f64, ReadError> {
        let res = match self.groups.get_mut(g) {
            Some(group) => group.clock.next(ts).map_err(|e| e.to_string()),
            None => Err("internal: unknown session group".to_string()),
        };
        res.map_err(|m| self.err(line_no, m))
    }

    fn assistant(
        &mut self,
        line_no: usize,
        g: usize,
        obj: &Map<String, Value>,
        ts: Option<f64>,
    ) -> Result<(), ReadError> {
        let Some(Value::Object(msg)) = obj.get("message") else {
            return Err(self.err(line_no, "assistant record has no \"message\" object"));
        };
        let blocks = content_blocks(msg.get("content")).map_err(|k| {
            self.err(
                line_no,
                format!("message.content is {k}, expected an array or a string"),
            )
        })?;
        let message_id = readutil::str_field(msg, "id")
            .or_else(|| readutil::str_field(obj, "uuid"))
            .map(str::to_string)
            .unwrap_or_else(|| format!("line-{line_no}"));
        let key = request_key(obj, &message_id);
        let model = readutil::str_field(msg, "model").map(str::to_string);
        let t = self.tick(line_no, g, ts)?;
        let (parts, calls) = self.assistant_parts(line_no, &blocks)?;
        let (usage, write_1h) = self.assistant_usage(line_no, msg)?;
        let Some(group) = self.groups.get_mut(g) else {
            return Ok(());
        };
        group.echo_window = false;
        group.reattaching = false;
        for (id, name) in calls {
            group.tool_names.insert(id, name);
        }
        let idx = group.request_event(key, message_id, model, t);
        if let Some(ev) = group.events.get_mut(idx) {
            ev.parts.extend(parts);
            if let Some(u) = usage {
                let output = ev.usage.map_or(u.output_tokens, |old| {
                    old.output_tokens.max(u.output_tokens)
                });
                ev.usage = Some(Usage {
                    output_tokens: output,
                    ..u
                });
            }
            if let Some(w) = write_1h {
                ev.cache_write_1h_tokens = w;
            }
        }
        Ok(())
    }

    /// An assistant line's content blocks as parts, with the (id, name) of each tool call.
    fn assistant_parts(
        &self,
        line_no: usize,
        blocks: &[Value],
    ) -> Result<(Vec<Part>, ToolCalls), ReadError> {
        let mut parts = Vec::new();
        let mut calls = Vec::new();
        for (i, b) in blocks.iter().enumerate() {
            let Some(bt) = b.get("type").and_then(Value::as_str) else {
                return Err(self.err(line_no, format!("message.content[{i}] has no \"type\"")));
            };
            match bt {
                "text" => parts.push(Part::Text {
                    text: str_of(b, "text"),
                }),
                "thinking" => parts.push(Part::Thought {
                    text: str_of(b, "thinking"),
                }),
                "tool_use" | "server_tool_use" => {
                    let Some(id) = b.get("id").and_then(Value::as_str) else {
                        return Err(self.err(
                            line_no,
                            format!("message.content[{i}] tool_use has no \"id\""),
                        ));
                    };
                    let name = str_of(b, "name");
                    calls.push((id.to_string(), name.clone()));
                    parts.push(Part::ToolCall {
                        id: Some(id.to_string()),
                        name,
                        args: b
                            .get("input")
                            .map_or(Value::Object(Map::new()), compact_json),
                    });
                }
                // redacted_thinking carries no readable text; other block types are new.
                _ => {}
            }
        }
        Ok((parts, calls))
    }

    /// A message's usage, normalised (see module doc), and of its cache writes the ones with
    /// the 1-hour lifetime (priced at the 1-hour rate).
    fn assistant_usage(
        &self,
        line_no: usize,
        msg: &Map<String, Value>,
    ) -> Result<(Option<Usage>, Option<u64>), ReadError> {
        let Some(u) = msg.get("usage").filter(|u| u.is_object()) else {
            return Ok((None, None));
        };
        let get = |k: &str| {
            readutil::tokens_field(Some(u), "message.usage", k).map_err(|m| self.err(line_no, m.0))
        };
        let input = get("input_tokens")?;
        let read = get("cache_read_input_tokens")?;
        let write = get("cache_creation_input_tokens")?;
        let usage = Usage {
            prompt_tokens: input.saturating_add(read).saturating_add(write),
            cached_read_tokens: read,
            cache_write_tokens: write,
            output_tokens: get("output_tokens")?,
        };
        let write_1h = readutil::tokens_field(
            u.get("cache_creation"),
            "message.usage.cache_creation",
            "ephemeral_1h_input_tokens",
        )
        .map_err(|m| self.err(line_no, m.0))?;
        Ok((Some(usage), Some(write_1h)))
    }

    fn user(
        &mut self,
        line_no: usize,
        g: usize,
        obj: &Map<String, Value>,
        ts: Option<f64>,
    ) -> Result<(), ReadError> {
        let Some(Value::Object(msg)) = obj.get("message") else {
            return Err(self.err(line_no, "user record has no \"message\" object"));
        };
        let blocks = content_blocks(msg.get("content")).map_err(|k| {
            self.err(
                line_no,
                format!("message.content is {k}, expected an array or a string"),
            )
        })?;
        if obj
            .get("isCompactSummary")
            .and_then(Value::as_bool)
            .unwrap_or(false)
        {
            if let Some(group) = self.groups.get_mut(g) {
                group.compact_summary(line_no, &blocks, ts);
            }
            return Ok(());
        }
        let is_meta = obj.get("isMeta").and_then(Value::as_bool).unwrap_or(false);
        let read = self.user_parts(line_no, g, &blocks)?;
        if read.parts.is_empty() {
            return Ok(());
        }
        let t = self.tick(line_no, g, ts)?;
        let Some(group) = self.groups.get_mut(g) else {
            return Ok(());
        };
        group.compaction_echo(ts);
        let mut ev = group.user_event(read, is_meta, t);
        group.reattaching &= ev.author != "user";
        ev.id = readutil::str_field(obj, "uuid").map(str::to_string);
        let at = group.events.len();
        for p in &ev.parts {
            if let Part::ToolResponse { id: Some(id), .. } = p {
                group.result_event.insert(id.clone(), at);
            }
        }
        group.events.push(ev);
        Ok(())
    }

    /// A user line's content blocks as parts, with the flags their text raises.
    fn user_parts(
        &self,
        line_no: usize,
        g: usize,
        blocks: &[Value],
    ) -> Result<UserParts, ReadError> {
        let mut read = UserParts::default();
        for (i, b) in blocks.iter().enumerate() {
            let Some(bt) = b.get("type").and_then(Value::as_str) else {
                return Err(self.err(line_no, format!("message.content[{i}] has no \"type\"")));
            };
            match bt {
                "text" => {
                    let text = str_of(b, "text");
                    if text.starts_with(INTERRUPT_PREFIX) {
                        push_unique(&mut read.critical, Critical::Interruption);
                    }
                    read.texts.push(text.clone());
                    read.parts.push(Part::Text { text });
                }
                "image" | "document" => read.parts.push(attachment(b, bt)),
                "tool_result" => {
                    read.has_result = true;
                    let Some(id) = b.get("tool_use_id").and_then(Value::as_str) else {
                        return Err(self.err(
                            line_no,
                            format!("message.content[{i}] tool_result has no \"tool_use_id\""),
                        ));
                    };
                    // Without an earlier call (ADK reads that; the loaders warn), no name.
                    let name = self
                        .groups
                        .get(g)
                        .and_then(|gr| gr.tool_names.get(id))
                        .cloned()
                        .unwrap_or_default();
                    read.tool_result(id, name, b);
                }
                _ => {}
            }
        }
        Ok(read)
    }

    /// An `attachment` record ([`super::claude_code_attach`]): a user-role event Claude Code
    /// wrote, in the current invocation. Those between a boundary and the next response (or
    /// human prompt) are what the compaction re-attached: like its summary, not events of the
    /// raw history.
    fn attachment(
        &mut self,
        line_no: usize,
        g: usize,
        obj: &Map<String, Value>,
        ts: Option<f64>,
    ) -> Result<(), ReadError> {
        let part =
            super::claude_code_attach::read(obj).map_err(|m| self.err(line_no, m.to_string()))?;
        if self.groups.get(g).is_none_or(|group| group.reattaching) {
            return Ok(());
        }
        let t = self.tick(line_no, g, ts)?;
        let Some(group) = self.groups.get_mut(g) else {
            return Ok(());
        };
        let inv = group.current_invocation();
        let mut ev = Event::new(HARNESS, Role::User, inv, t);
        ev.id = readutil::str_field(obj, "uuid").map(str::to_string);
        ev.parts.push(part);
        group.events.push(ev);
        Ok(())
    }

    fn system(
        &mut self,
        line_no: usize,
        g: usize,
        obj: &Map<String, Value>,
        ts: Option<f64>,
    ) -> Result<(), ReadError> {
        match readutil::str_field(obj, "subtype") {
            Some("compact_boundary") => {}
            Some("microcompact_boundary") => {
                let micro = super::claude_code_micro::read(obj)
                    .map_err(|m| self.err(line_no, m.to_string()))?;
                if let Some(group) = self.groups.get_mut(g) {
                    group.microcompaction(micro, line_no, ts);
                }
                return Ok(());
            }
            // turn_duration, stop_hook_summary, local_command, api_error: UI bookkeeping.
            _ => return Ok(()),
        }
        let meta = obj.get("compactMetadata");
        let count = |key: &str, read: fn(&Value) -> Result<u64, util::BadNumber>| match meta
            .and_then(|m| m.get(key))
        {
            None | Some(Value::Null) => Ok(None),
            Some(v) => read(v)
                .map(Some)
                .map_err(|m| self.err(line_no, format!("compactMetadata.{key}: {m}"))),
        };
        let pre_tokens = count("preTokens", util::token_count)?;
        let duration_ms = count("durationMs", util::duration_ms)?;
        let Some(group) = self.groups.get_mut(g) else {
            return Ok(());
        };
        let at = group.events.len();
        let mut c = RecordedCompaction::new(at, "claude-code compact_boundary");
        c.trigger = meta
            .and_then(|m| m.get("trigger"))
            .and_then(Value::as_str)
            .map(str::to_string);
        c.pre_tokens = pre_tokens;
        c.duration_ms = duration_ms;
        c.end_timestamp = ts;
        // At the latest it began after the last event before it (a `/compact` echo written
        // after the summary can move this later, see `Group::compaction_echo`).
        c.start_timestamp = group.events.last().map(|e| e.timestamp);
        c.boundary_raw = Some(RawPos::Line(line_no));
        c.forgotten = std::iter::once(0..at).collect();
        c.version = readutil::str_field(obj, "version").map(str::to_string);
        // Nothing before it in the file: a resumed session whose history is elsewhere; the
        // requests after it are on the history the file holds (its summary, then its events).
        c.resumed = at == 0;
        group.after_compaction |= !c.resumed;
        group.compactions.push(c);
        group.pending_summary = Some(group.compactions.len() - 1);
        group.echo_window = true;
        group.reattaching = true;
        Ok(())
    }

    fn finish(self) -> Result<Vec<Session>, ReadError> {
        let stem = file_stem(self.file);
        let groups: Vec<Group> = self
            .groups
            .into_iter()
            .filter(|g| !g.events.is_empty())
            .collect();
        if groups.is_empty() {
            return Err(ReadError::new(
                self.file,
                "",
                "no user or assistant messages: not a Claude Code session",
            ));
        }
        let single = groups.len() == 1;
        let mut out = Vec::with_capacity(groups.len());
        for g in groups {
            let base = g.session_id.clone().unwrap_or_else(|| stem.clone());
            let (id, source) = match &g.key {
                Key::Main => (base, self.label.clone()),
                Key::Side(agent) => {
                    let id = format!("{base}/agent-{agent}");
                    let source = if single {
                        self.label.clone()
                    } else {
                        format!("{}#agent-{agent}", self.label)
                    };
                    (id, source)
                }
            };
            let recorded_policy = g.recorded_policy();
            let mut s = Session {
                recorded_compactions: g.compactions,
                model: g.model,
                synthetic_timestamps: g.clock.synthetic,
                recorded_policy,
                ..Session::new(id, source, Format::ClaudeCode, g.events)
            };
            s.index_recorded();
            super::claude_code_settings::observe(&mut s);
            g.clock.mark_adjusted(&mut s);
            out.push(s);
        }
        Ok(out)
    }
}

/// Every result of Claude Code's `Read` tool in `events`, in order: (event index, the path it
/// read, the result as recorded). What the settings a session read and the files Claude Code
/// re-attaches after a compaction are both read from.
pub fn read_results(events: &[Event]) -> Vec<(usize, &str, &Value)> {
    let mut paths: HashMap<&str, &str> = HashMap::new();
    let mut out = Vec::new();
    for (k, e) in events.iter().enumerate() {
        for p in &e.parts {
            match p {
                Part::ToolCall {
                    id: Some(id),
                    name,
                    args,
                } if name == "Read" => {
                    if let Some(path) = args.get("file_path").and_then(Value::as_str) {
                        paths.insert(id.as_str(), path);
                    }
                }
                Part::ToolResponse {
                    id: Some(id),
                    response,
                    ..
                } => {
                    if let Some(&path) = paths.get(id.as_str()) {
                        out.push((k, path, response));
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// The request an assistant line belongs to: its `requestId` (one API call), else its
/// `message.id`. Claude Code writes each content block of a response on its own line; the
/// lines of one call share the `requestId`, while a third-party endpoint behind the CLI can
/// give every response the same `message.id` (or a new one per block).
fn request_key(obj: &Map<String, Value>, message_id: &str) -> String {
    match readutil::str_field(obj, "requestId").filter(|r| !r.is_empty()) {
        Some(r) => format!("req:{r}"),
        None => format!("msg:{message_id}"),
    }
}

/// A message's content as blocks: a string becomes one text block.
fn content_blocks(content: Option<&Value>) -> Result<Cow<'_, [Value]>, &'static str> {
    match content {
        Some(Value::Array(a)) => Ok(Cow::Borrowed(a.as_slice())),
        Some(Value::String(s)) => Ok(Cow::Owned(vec![
            serde_json::json!({"type": "text", "text": s}),
        ])),
        None | Some(Value::Null) => Ok(Cow::Owned(Vec::new())),
        Some(other) => Err(readutil::kind(other)),
    }
}

fn str_of(b: &Value, key: &str) -> String {
    b.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

fn push_unique(v: &mut Vec<Critical>, c: Critical) {
    if !v.contains(&c) {
        v.push(c);
    }
}

/// Slash-command echoes, local command output, background-task notices, hook reminders and
/// interrupt markers are not something a person typed as a turn.
fn is_human_text(text: &str) -> bool {
    let t = text.trim_start();
    !t.is_empty()
        && ![
            "<command-name>",
            "<command-message>",
            "<local-command-stdout>",
            "<local-command-stderr>",
            "<local-command-caveat>",
            "Caveat: The messages below were generated by the user while running local commands",
            "<task-notification>",
            "<system-reminder>",
            "<bash-stdout>",
            "<bash-stderr>",
            INTERRUPT_PREFIX,
        ]
        .iter()
        .any(|p| t.starts_with(p))
}

/// A `tool_result` content (string, or a list of text/image blocks) as one text plus
/// attachments.
fn result_content(content: Option<&Value>) -> (String, Vec<Part>) {
    match content {
        Some(Value::String(s)) => (s.clone(), Vec::new()),
        Some(Value::Array(items)) => {
            let mut texts = Vec::new();
            let mut attachments = Vec::new();
            for it in items {
                match it.get("type").and_then(Value::as_str) {
                    Some("text") => texts.push(str_of(it, "text")),
                    Some(kind @ ("image" | "document")) => attachments.push(attachment(it, kind)),
                    _ => {}
                }
            }
            (texts.join("\n"), attachments)
        }
        None | Some(Value::Null) => (String::new(), Vec::new()),
        Some(other) => (other.to_string(), Vec::new()),
    }
}

/// An image or document block as an attachment: its text when it carries text, else its size.
fn attachment(b: &Value, kind: &str) -> Part {
    let source = b.get("source");
    let mime_type = source
        .and_then(|s| s.get("media_type"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let data = source.and_then(|s| s.get("data")).and_then(Value::as_str);
    let is_text = source.and_then(|s| s.get("type")).and_then(Value::as_str) == Some("text");
    let name = b
        .get("title")
        .and_then(Value::as_str)
        .unwrap_or(kind)
        .to_string();
    match data {
        Some(d) if is_text => Part::Attachment {
            name,
            mime_type,
            text: Some(d.to_string()),
            size_bytes: Some(d.len() as u64),
        },
        Some(d) => Part::Attachment {
            name,
            mime_type,
            text: None,
            size_bytes: Some(readutil::base64_decoded_len(d)),
        },
        None => Part::Attachment {
            name,
            mime_type,
            text: None,
            size_bytes: None,
        },
    }
}

fn file_stem(file: &str) -> String {
    let name = file.rsplit(['/', '\\']).next().unwrap_or(file);
    name.strip_suffix(".jsonl")
        .or_else(|| name.strip_suffix(".json"))
        .unwrap_or(name)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::readutil::testutil::{
        assert_counts_match_stats, count_flag, count_parts, num, read_corpus, usage_checks,
    };
    use std::collections::BTreeSet;

    /// Interrupts and rejections stats.json attributes to a file by text search, but which
    /// are text inside a tool result (8463… reads other transcripts with `Read`), not events.
    fn text_search_false_positives(session: &str) -> (u64, u64) {
        if session.ends_with("8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl") {
            (2, 1)
        } else {
            (0, 0)
        }
    }

    #[test]
    fn corpus_counts_match_stats_json() {
        let mut compared = 0;
        for folder in ["claude_code_spotter", "agentcmd_cli_sessions/claude"] {
            compared += assert_counts_match_stats(
                folder,
                |_| true,
                read,
                |st, s| {
                    let (fp_int, fp_rej) = text_search_false_positives(&s.source);
                    let invocations: BTreeSet<&str> =
                        s.events.iter().map(|e| e.invocation_id.as_str()).collect();
                    let pre = s.recorded_compactions.iter().filter_map(|c| c.pre_tokens);
                    let want_pre = st
                        .get("compaction_pre_tokens")
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter_map(Value::as_u64).sum())
                        .unwrap_or(0);
                    let mut checks = vec![
                        (
                            "model requests",
                            s.events.iter().filter(|e| e.model_request).count() as u64,
                            num(st, "assistant_turns"),
                        ),
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
                        (
                            "compactions",
                            s.recorded_compactions.len() as u64,
                            num(st, "compactions"),
                        ),
                        (
                            "interrupts",
                            count_flag(s, Critical::Interruption),
                            num(st, "interrupts") - fp_int,
                        ),
                        (
                            "refusals",
                            count_flag(s, Critical::Refusal),
                            num(st, "rejections_or_refusals") - fp_rej,
                        ),
                        ("pre tokens", pre.sum(), want_pre),
                        (
                            "approvals/confirmations",
                            count_flag(s, Critical::Approval)
                                + count_flag(s, Critical::Confirmation),
                            num(st, "approvals_or_confirmations"),
                        ),
                    ];
                    checks.extend(usage_checks(s, st));
                    checks
                },
            );
        }
        assert_eq!(compared, 25);
    }

    fn fixture(name: &str) -> String {
        let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/readers2/");
        std::fs::read_to_string(format!("{p}{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    #[test]
    fn one_message_id_is_one_request_with_normalised_usage() {
        let sessions =
            read("claude_usage.jsonl", &fixture("claude_usage.jsonl")).expect("fixture reads");
        assert_eq!(sessions.len(), 1);
        let s = &sessions[0];
        assert_eq!(s.id, "s-usage");
        let requests: Vec<&Event> = s.events.iter().filter(|e| e.model_request).collect();
        assert_eq!(requests.len(), 1, "two lines of msg_1 are one request");
        let r = requests[0];
        assert_eq!(r.parts.len(), 2);
        assert!(matches!(&r.parts[1], Part::ToolCall { name, .. } if name == "Bash"));
        // Anthropic: input 3 + cache read 1000 + cache write 100; the streamed output grows.
        let want = Usage {
            prompt_tokens: 1103,
            cached_read_tokens: 1000,
            cache_write_tokens: 100,
            output_tokens: 12,
        };
        assert_eq!(r.usage, Some(want));
        assert_eq!(
            r.timestamp, 1_767_225_602.0,
            "a merged request keeps its first line's time"
        );
        assert_eq!(s.model.as_deref(), Some("claude-test"));
    }

    /// Requests are the lines sharing a `requestId`: a third-party endpoint that gives two
    /// calls the same `message.id` makes two requests, and lines of one call whose message
    /// ids differ make one; without a `requestId` the `message.id` groups them.
    #[test]
    fn requests_are_grouped_by_request_id_not_message_id() {
        let line = |uuid: &str, req: Option<&str>, msg: &str, text: &str| {
            let req = req.map_or(String::new(), |r| format!(r#""requestId":"{r}","#));
            format!(
                r#"{{"type":"assistant","uuid":"{uuid}","sessionId":"s","version":"2.1.39",{req}"timestamp":"2026-01-01T00:00:0{n}Z","message":{{"id":"{msg}","model":"glm-4.6","role":"assistant","content":[{{"type":"text","text":"{text}"}}],"usage":{{"input_tokens":0,"output_tokens":0}}}}}}"#,
                n = uuid.len() % 10
            )
        };
        let user = r#"{"type":"user","uuid":"u0","sessionId":"s","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"go"}}"#;
        let text = [
            user.to_string(),
            line("a", Some("req_1"), "msg_same", "one"),
            line("bb", Some("req_2"), "msg_same", "two"),
            line("ccc", Some("req_3"), "msg_x", "three, first block"),
            line("dddd", Some("req_3"), "msg_y", "three, second block"),
            line("eeeee", None, "msg_z", "four"),
            line("ffffff", None, "msg_z", "four, again"),
        ]
        .join("\n");
        let s = &read("s.jsonl", &text).expect("reads")[0];
        let requests: Vec<&Event> = s.events.iter().filter(|e| e.model_request).collect();
        let parts: Vec<usize> = requests.iter().map(|e| e.parts.len()).collect();
        assert_eq!(parts, vec![1, 1, 2, 2], "{requests:#?}");
        // a zero usage is recorded as such (the size Claude Code checks stays near 0)
        assert_eq!(requests[0].usage.map(|u| u.prompt_tokens), Some(0));
    }

    /// An `attachment` record is a user-role event Claude Code wrote, its text what the CLI
    /// sends (nothing for a kind it never sends); those a compaction re-attaches (between its
    /// boundary and the next response or prompt) are not events; a record without its `attachment`
    /// object is one line's error.
    #[test]
    fn attachment_records_are_harness_events_except_a_compactions_reattachments() {
        let head = r#""sessionId":"s","version":"2.1.39","timestamp":"2026-01-01T00:00:00Z""#;
        let att = |uuid: &str, a: &str| {
            format!(r#"{{"type":"attachment","uuid":"{uuid}",{head},"attachment":{a}}}"#)
        };
        let lines = [
            att(
                "x0",
                r#"{"type":"hook_success","hookName":"SessionStart:startup","hookEvent":"SessionStart","content":"welcome","stdout":"welcome"}"#,
            ),
            format!(
                r#"{{"type":"user","uuid":"u0",{head},"message":{{"role":"user","content":"go"}}}}"#
            ),
            att("x1", r#"{"type":"already_read_file","filename":"/w/a.rs"}"#),
            format!(
                r#"{{"type":"assistant","uuid":"a1",{head},"message":{{"id":"m1","role":"assistant","content":[{{"type":"text","text":"ok"}}],"usage":{{"input_tokens":5,"output_tokens":1}}}}}}"#
            ),
            format!(
                r#"{{"type":"system","subtype":"compact_boundary","uuid":"b1",{head},"compactMetadata":{{"trigger":"auto","preTokens":9}}}}"#
            ),
            format!(
                r#"{{"type":"user","uuid":"u1",{head},"isCompactSummary":true,"message":{{"role":"user","content":"summary"}}}}"#
            ),
            att("x2", r#"{"type":"todo","content":[],"itemCount":0}"#),
            format!(
                r#"{{"type":"user","uuid":"u2",{head},"message":{{"role":"user","content":"and @b.rs"}}}}"#
            ),
            att(
                "x3",
                r#"{"type":"opened_file_in_ide","filename":"/w/b.rs"}"#,
            ),
            format!(
                r#"{{"type":"assistant","uuid":"a2",{head},"message":{{"id":"m2","role":"assistant","content":[{{"type":"text","text":"ok"}}],"usage":{{"input_tokens":5,"output_tokens":1}}}}}}"#
            ),
        ];
        let s = &read("s.jsonl", &lines.join("\n")).expect("reads")[0];
        let attachments: Vec<(&str, &str, Option<&str>)> = s
            .events
            .iter()
            .flat_map(|e| e.parts.iter().map(move |p| (e, p)))
            .filter_map(|(e, p)| match p {
                Part::Attachment { name, text, .. } => {
                    Some((e.author.as_str(), name.as_str(), text.as_deref()))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            attachments,
            [
                (
                    HARNESS,
                    "hook_success",
                    Some("SessionStart:startup\nwelcome")
                ),
                (HARNESS, "already_read_file", Some("")),
                (HARNESS, "opened_file_in_ide", Some("/w/b.rs")),
            ]
        );
        assert_eq!(s.events.len(), 7, "{:#?}", s.events);
        let bad = format!(r#"{{"type":"attachment","uuid":"x9",{head}}}"#);
        let err = read("s.jsonl", &[lines[1].clone(), bad].join("\n")).unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
    }

    #[test]
    fn sidechains_split_and_compaction_is_kept_aside() {
        let file = "claude_sidechain_and_compaction.jsonl";
        let sessions = read(file, &fixture(file)).expect("fixture reads");
        assert_eq!(sessions.len(), 2, "main session plus one sidechain");
        let main = &sessions[0];
        let side = &sessions[1];
        assert_eq!(main.source, file);
        assert_eq!(side.source, format!("{file}#agent-sidechain-4"));
        assert_eq!(side.events.len(), 2);
        assert!(side.events.iter().all(|e| !e.post_compaction_usage));
        // The compaction is not an event; it points at the first event after it.
        assert_eq!(main.recorded_compactions.len(), 1);
        let c = &main.recorded_compactions[0];
        assert_eq!(
            (c.trigger.as_deref(), c.pre_tokens, c.at_event),
            (Some("auto"), Some(12345), 3)
        );
        assert!(c.summary.contains("did the thing"));
        assert!(main.events.iter().all(|e| e
            .parts
            .iter()
            .all(|p| !matches!(p, Part::Text { text } if text.contains("did the thing")))));
        let requests: Vec<&Event> = main.events.iter().filter(|e| e.model_request).collect();
        assert_eq!(
            requests
                .iter()
                .map(|e| e.post_compaction_usage)
                .collect::<Vec<_>>(),
            [false, true, true]
        );
        // Flags: interrupt marker, rejection, plain tool error.
        let flags: Vec<Vec<Critical>> = main.events.iter().map(|e| e.critical.clone()).collect();
        assert_eq!(flags[3], [Critical::Interruption]);
        assert_eq!(flags[6], [Critical::Refusal]);
        assert_eq!(flags[8], [Critical::ToolError]);
        // Attachment and thought parts; invocations: the interrupt marker is no new turn.
        assert!(
            matches!(&main.events[4].parts[1], Part::Attachment { mime_type: Some(m), size_bytes: Some(6), .. } if m == "image/png")
        );
        assert!(matches!(&main.events[5].parts[0], Part::Thought { text } if text == "hmm"));
        let invs: Vec<&str> = main
            .events
            .iter()
            .map(|e| e.invocation_id.as_str())
            .collect();
        assert_eq!(
            invs,
            ["inv-1", "inv-1", "inv-1", "inv-1", "inv-2", "inv-2", "inv-2", "inv-2", "inv-2"]
        );
    }

    #[test]
    fn harness_text_is_not_authored_by_the_user() {
        let rel = "agentcmd_cli_sessions/claude/full/full-session-two.jsonl";
        let s = read(rel, &read_corpus(rel)).expect("reads");
        let authors: Vec<&str> = s[0]
            .events
            .iter()
            .take(5)
            .map(|e| e.author.as_str())
            .collect();
        // Caveat (isMeta), /clear echo, its empty stdout, the person's prompt, the answer.
        assert_eq!(authors, [HARNESS, HARNESS, HARNESS, "user", "claude"]);
        assert!(s[0].events.iter().take(3).all(|e| e.role == Role::User));
    }

    #[test]
    fn corpus_compactions_mark_later_requests() {
        let rel = "claude_code_spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl";
        let s = read(rel, &read_corpus(rel)).expect("reads");
        let c = &s[0].recorded_compactions[0];
        assert_eq!(
            (c.trigger.as_deref(), c.pre_tokens),
            (Some("auto"), Some(170_251))
        );
        assert!(c
            .summary
            .starts_with("This session is being continued from a previous conversation"));
        for (i, e) in s[0]
            .events
            .iter()
            .enumerate()
            .filter(|(_, e)| e.model_request)
        {
            assert_eq!(e.post_compaction_usage, i >= c.at_event, "event {i}");
        }
        // The largest prompt before the boundary is below preTokens (the count that
        // triggered it includes the request being built); none after it comes close.
        let before = s[0].events[..c.at_event]
            .iter()
            .filter_map(|e| e.usage)
            .map(|u| u.prompt_tokens)
            .max();
        assert!(
            before.is_some_and(|b| b < 170_251 && b > 150_000),
            "{before:?}"
        );
    }

    #[test]
    fn bad_input_is_one_line_naming_the_line() {
        let good = fixture("claude_usage.jsonl");
        let lines: Vec<&str> = good.lines().collect();
        let orphan = format!(
            "{}\n{}\n",
            lines[0],
            r#"{"type":"user","uuid":"u9","sessionId":"s","timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_nope","content":"x"}]}}"#
        );
        // A result without its call is kept, and counted.
        let s = &read("f.jsonl", &orphan).expect("orphan result is read")[0];
        assert_eq!(util::orphan_responses(&s.events), 1);
        assert!(s
            .events
            .iter()
            .flat_map(|e| &e.parts)
            .any(|p| matches!(p, Part::ToolResponse { id: Some(i), .. } if i == "toolu_nope")));
        let late = lines[2].replace("2026-01-01T00:00:03", "2025-12-31T23:00:00");
        let e = read(
            "f.jsonl",
            &format!("{}\n{}\n{}\n", lines[0], lines[1], late),
        )
        .expect_err("out of order");
        assert_eq!(e.location, "line 3");
        assert!(e.message.contains("out of order"), "{e}");
        let e = read("f.jsonl", &format!("{}\n{{\"type\":\n", lines[0])).expect_err("malformed");
        assert_eq!(e.location, "line 2");
        let e = read("f.jsonl", "").expect_err("empty");
        assert!(!e.to_string().contains('\n'));
        let e = read("f.jsonl", "[1,2]\n").expect_err("not an object");
        assert_eq!(e.location, "line 1");
    }

    #[test]
    fn synthetic_api_error_messages_are_not_requests() {
        let first = fixture("claude_usage.jsonl")
            .lines()
            .next()
            .unwrap_or_default()
            .to_string();
        let synthetic = r#"{"type":"assistant","uuid":"a9","sessionId":"s","timestamp":"2026-01-01T00:00:05Z","isApiErrorMessage":true,"message":{"id":"x","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"API Error: overloaded"}],"usage":{"input_tokens":0,"output_tokens":0}}}"#;
        let s = read("f.jsonl", &format!("{first}\n{synthetic}\n")).expect("reads");
        let e = &s[0].events[1];
        assert!(!e.model_request && e.model.is_none());
        assert_eq!(s[0].model, None);
    }

    #[test]
    fn missing_timestamps_are_synthesised() {
        let text = fixture("claude_usage.jsonl")
            .replace("\"timestamp\":\"2026-01-01T00:00:02.000Z\",", "");
        let s = read("f.jsonl", &text).expect("reads");
        assert!(s[0].synthetic_timestamps);
        let ts: Vec<f64> = s[0].events.iter().map(|e| e.timestamp).collect();
        assert!(ts.windows(2).all(|w| w[0] < w[1]), "{ts:?}");
    }

    #[test]
    fn sniff_tells_claude_code_from_neighbours() {
        assert!(sniff(&fixture("claude_usage.jsonl")));
        assert!(sniff(&read_corpus(
            "agentcmd_cli_sessions/claude/full/full-session-five.jsonl"
        )));
        assert!(sniff(&read_corpus("claude_code_spotter/258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-a881341.jsonl")));
        let codex = "agentcmd_cli_sessions/codex/full/rollout-2025-09-24T20-12-23-01997ea4-a70d-7da3-8c20-c736db82a7c5.jsonl";
        assert!(!sniff(&read_corpus(codex)));
        assert!(!sniff(&read_corpus(
            "openhands/tests/runtime/trajs/basic.json"
        )));
        assert!(!sniff(""));
        // A first line too long or cut short is judged by its start.
        let cut = r#"{"parentUuid":null,"isSidechain":false,"sessionId":"s","type":"user","message":{"content":"xx"#;
        assert!(sniff(cut));
        let gemini = r#"{"sessionId":"s","projectHash":"h","messages":[{"id":"1","type":"user","content":"xx"#;
        assert!(!sniff(gemini));
    }

    #[test]
    fn interleaved_sidechains_follow_agent_id_or_parent_chain() {
        let line = |uuid: &str,
                    parent: Option<&str>,
                    side: bool,
                    agent: Option<&str>,
                    text: &str| {
            let mut v = serde_json::json!({
                "type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": "s", "isSidechain": side,
                "timestamp": "2026-01-01T00:00:00Z", "message": {"role": "user", "content": text}
            });
            if let (Some(a), Some(m)) = (agent, v.as_object_mut()) {
                m.insert("agentId".into(), Value::from(a));
            }
            v.to_string()
        };
        let text = [
            line("m1", None, false, None, "main prompt"),
            line("a1", None, true, None, "first sidechain"),
            line("b1", None, true, None, "second sidechain"),
            line("a2", Some("a1"), true, None, "first again"),
            line("x1", Some("zz"), true, Some("abc"), "tagged"),
            line("m2", Some("m1"), false, None, "main again"),
        ]
        .join("\n");
        let s = read("mixed.jsonl", &text).expect("reads");
        let got: Vec<(String, usize)> = s
            .iter()
            .map(|s| (s.source.clone(), s.events.len()))
            .collect();
        assert_eq!(
            got,
            [
                ("mixed.jsonl".to_string(), 2),
                ("mixed.jsonl#agent-sidechain-2".to_string(), 2),
                ("mixed.jsonl#agent-sidechain-3".to_string(), 1),
                ("mixed.jsonl#agent-abc".to_string(), 1),
            ]
        );
        assert_eq!(s[3].id, "s/agent-abc");
    }
}
