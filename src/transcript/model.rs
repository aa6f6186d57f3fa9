//! The one session model every reader produces ("Words" in shared/spec/metrics.md).

use super::claude_code_settings::ClaudeCodeSettings;
use serde::{Deserialize, Serialize};

/// The recorded formats compaction-sim reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// ADK session export (snake_case or camelCase) or a JSON list / JSONL of ADK events.
    Adk,
    /// ADK eval set (`eval_cases` / `evalCases`).
    AdkEvalSet,
    /// OpenAI chat message lists (tau-bench trajectories).
    OpenaiChat,
    /// Claude Code JSONL.
    ClaudeCode,
    /// Codex rollout JSONL.
    Codex,
    /// Gemini CLI chat JSON.
    GeminiCli,
    /// OpenHands event streams.
    Openhands,
    /// SWE-agent `.traj`.
    SweAgent,
    /// tau2-bench results JSON.
    Tau2,
    /// compaction-sim's own canonical JSONL (one [`Event`] per line, see docs/formats.md).
    Canonical,
}

impl Format {
    pub const ALL: [Format; 10] = [
        Format::Adk,
        Format::AdkEvalSet,
        Format::OpenaiChat,
        Format::ClaudeCode,
        Format::Codex,
        Format::GeminiCli,
        Format::Openhands,
        Format::SweAgent,
        Format::Tau2,
        Format::Canonical,
    ];

    /// The name used on the command line (`--format`) and in tables.
    pub fn name(self) -> &'static str {
        match self {
            Format::Adk => "adk",
            Format::AdkEvalSet => "adk-eval-set",
            Format::OpenaiChat => "openai-chat",
            Format::ClaudeCode => "claude-code",
            Format::Codex => "codex",
            Format::GeminiCli => "gemini-cli",
            Format::Openhands => "openhands",
            Format::SweAgent => "swe-agent",
            Format::Tau2 => "tau2",
            Format::Canonical => "canonical",
        }
    }

    pub fn from_name(s: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == s)
    }
}

/// Who produced an event's content, as the model API sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A person, or tool results sent back in a user-role turn (ADK, Anthropic).
    #[default]
    User,
    /// The agent's model.
    Model,
    /// A tool-role message (OpenAI chat).
    Tool,
    /// A system message that is part of the recorded history.
    System,
}

/// One piece of an event's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    Text {
        text: String,
    },
    /// Model reasoning that was recorded; ADK's summarizer formats it as `author (thought): …`.
    Thought {
        text: String,
    },
    ToolCall {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        name: String,
        /// Key order is kept (serde_json `preserve_order`): ADK measures `json.dumps(args)`.
        #[serde(default)]
        args: serde_json::Value,
    },
    ToolResponse {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        name: String,
        #[serde(default)]
        response: serde_json::Value,
    },
    /// A file attached to a user message. `text` holds its content when the transcript has it;
    /// otherwise `size_bytes` says how large it was.
    Attachment {
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size_bytes: Option<u64>,
    },
}

/// Largest token count read from a transcript, price or latency file: 2^53, the largest
/// integer an f64 (and so a JSON reader in JavaScript or Python's float) holds exactly.
/// Real prompts are below 10^7 tokens; anything near this bound is a broken file, and
/// keeping every count below it leaves room to add and multiply without overflow.
pub const MAX_TOKENS: u64 = 1 << 53;

/// Largest sum of one session's recorded token counts (prompt, cache and output of every
/// request): 10^12, a million requests of a million tokens. The run folder holds figures up to
/// 1e15 (`settings::number::MAX_TABLE_NUMBER`) and a sweep sums a session's replayed prompts,
/// scaled to the provider's counts, over its requests and over sessions: a session past this
/// is refused where it is read, not after its replays, by a run folder that cannot hold them.
pub const MAX_SESSION_TOKENS: u64 = 1_000_000_000_000;

/// Token usage recorded for one model request, normalised so `prompt_tokens` includes
/// cached tokens (Anthropic logs count cache reads outside `input_tokens`; OpenAI and Gemini
/// count them inside).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    #[serde(default)]
    pub cached_read_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
}

/// Events whose loss into a summary a reviewer cares about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Critical {
    Approval,
    Refusal,
    Confirmation,
    ToolError,
    Interruption,
}

/// One recorded event: a user message, a model response (one model request), or tool output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Event id when the transcript has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `user` for people, otherwise the agent (or tool) name.
    pub author: String,
    pub role: Role,
    /// Invocation (user turn) this event belongs to.
    pub invocation_id: String,
    /// Seconds since the epoch. Readers synthesise increasing times when the source has none.
    pub timestamp: f64,
    pub parts: Vec<Part>,
    /// Recorded usage: present on model-request events that recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// True when this event is one model request (a model response), whether or not usage
    /// was recorded.
    #[serde(default, skip_serializing_if = "is_false")]
    pub model_request: bool,
    /// Model name when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Of `usage.cache_write_tokens`, those written with Anthropic's 1-hour cache lifetime
    /// (Claude Code `cache_creation.ephemeral_1h_input_tokens`), which cost more and live
    /// longer. Kept beside `usage` so only the readers that record it set it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_1h_tokens: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub critical: Vec<Critical>,
    /// The recorded prompt size was measured after a compaction the transcript already
    /// records, so it is a post-compaction size, not a raw-history size.
    #[serde(default, skip_serializing_if = "is_false")]
    pub post_compaction_usage: bool,
    /// ADK `long_running_tool_ids`: calls that stay open across invocations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub long_running_tool_ids: Vec<String>,
    /// ADK ids opened by `requested_tool_confirmations` / `requested_auth_configs`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requested_ids: Vec<String>,
    /// ADK branch (sub-agent isolation) when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Measured latency (seconds) of this model request, when the transcript records it
    /// (OpenHands `response_latencies`); lets the latency model be calibrated per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_s: Option<f64>,
    /// ADK: the content has no (or an empty) `role`. ADK never sends such an event to the
    /// model (`_contains_empty_content`) but still summarizes it and counts its JSON.
    #[serde(default, skip_serializing_if = "is_false")]
    pub role_absent: bool,
    /// ADK never puts this event into a model request outside its workflow node (a user
    /// message carrying `node_info.path`), though it still summarizes it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub context_hidden: bool,
    /// ADK live transcription (`input_transcription` / `output_transcription` on an event with
    /// no content): sent as a text content, but neither summarized nor counted by the gate.
    #[serde(default, skip_serializing_if = "is_false")]
    pub transcription: bool,
    /// ADK-only details of some parts that [`Part`] cannot carry (thought signatures, blob
    /// JSON sizes, a text and a call sharing one genai `Part`); empty for other formats.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adk_parts: Vec<AdkPartExtra>,
    /// ADK 2.13 `isolation_scope`: the event belongs to the task agent run under this scope
    /// (the id of the function call that delegated to it). ADK shows it only to agents of the
    /// same scope and keeps it out of sliding windows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation_scope: Option<String>,
    /// ADK `actions.rewind_before_invocation_id`: this event annuls itself and everything
    /// from the first event of that invocation on (ADK `_apply_rewinds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewind_before_invocation_id: Option<String>,
}

/// What ADK's size measures need to know about one part beyond [`Part`] (indexed by
/// `index` into `Event::parts`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AdkPartExtra {
    pub index: u32,
    /// Exact pydantic JSON length of the whole genai part, when [`Part`] cannot rebuild it
    /// (`inline_data` / `file_data`: base64 data, URI, mime type, display name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_chars: Option<u64>,
    /// JSON chars to add to the part as rebuilt from [`Part`] (`,"thought_signature":"…"`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub json_extra: u64,
    /// ADK's text measures ignore the part's content (blobs: 0 chars, no summary line).
    #[serde(default, skip_serializing_if = "is_false")]
    pub opaque: bool,
    /// Carries a `thought_signature`: ADK always sends it (never invisible).
    #[serde(default, skip_serializing_if = "is_false")]
    pub signature: bool,
    /// Same genai `Part` as the previous part (e.g. a text and a function call in one part):
    /// ADK keeps or drops them together.
    #[serde(default, skip_serializing_if = "is_false")]
    pub joined: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Event {
    pub fn new(
        author: impl Into<String>,
        role: Role,
        invocation_id: impl Into<String>,
        timestamp: f64,
    ) -> Self {
        Event {
            id: None,
            author: author.into(),
            role,
            invocation_id: invocation_id.into(),
            timestamp,
            parts: Vec::new(),
            usage: None,
            model_request: false,
            model: None,
            cache_write_1h_tokens: 0,
            critical: Vec::new(),
            post_compaction_usage: false,
            long_running_tool_ids: Vec::new(),
            requested_ids: Vec::new(),
            branch: None,
            latency_s: None,
            role_absent: false,
            context_hidden: false,
            transcription: false,
            adk_parts: Vec::new(),
            isolation_scope: None,
            rewind_before_invocation_id: None,
        }
    }
}

/// A compaction the transcript itself records (ground truth, kept aside; the replay uses the
/// raw history instead, so a no-compaction replay of the session is unchanged by it).
///
/// Positions are given three ways, because the backtest compares against the replay and
/// reports against the file:
/// - `at_event` indexes [`Session::events`];
/// - `request` is the replay's request numbering: `Replay::requests[q]` of the engine and of
///   the policy driver hold one entry per event with `model_request == true`, in event order,
///   so `q` = number of such events before `events[at_event]` (0-based); the same request's
///   `event_index` is the index into `Session::events`;
/// - `boundary_raw` / `summary_raw` point into the source file (see [`RawPos`]).
///
/// Fields after `summary` were added for the backtest (issue 37); each is left out of the
/// canonical JSONL when not recorded, so sessions without them write the same bytes as before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedCompaction {
    /// Index into `Session::events` of the first event recorded after the compaction.
    pub at_event: usize,
    /// Where it came from, e.g. `claude-code compact_boundary` or `adk compaction event`.
    pub source: String,
    /// `auto` / `manual` when known (Claude Code `compactMetadata.trigger`); read it through
    /// [`RecordedCompaction::trigger_kind`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// Prompt tokens before compacting, when recorded: Claude Code `compactMetadata.preTokens`
    /// (Claude Code's own count of the context that triggered it); OpenHands: the recorded
    /// prompt of the last agent request before the condensation (`prompt_tokens +
    /// cache_write_tokens` of its `token_usages` entry, see `openhands_v1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_timestamp: Option<f64>,
    /// Time of the boundary record (Claude Code `compact_boundary`, OpenHands `Condensation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_timestamp: Option<f64>,
    /// The summary text, when recorded (Claude Code: the `isCompactSummary` user record;
    /// OpenHands: the condensation's `summary`; Codex: the `compacted` message).
    #[serde(default)]
    pub summary: String,
    /// The replay's index of the first model request after the compaction (see the type's
    /// doc); `None` when no model request follows it. Set by [`Session::index_recorded`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<usize>,
    /// Recorded prompt tokens of that first request (`Usage::prompt_tokens`, cached included):
    /// the context size the framework rebuilt after compacting, when recorded. Set by
    /// [`Session::index_recorded`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_after: Option<u64>,
    /// Where the boundary record sits in the source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boundary_raw: Option<RawPos>,
    /// Where the summary record sits in the source, when it is a record of its own (Claude
    /// Code `isCompactSummary`; OpenHands v1 keeps it on the condensation itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_raw: Option<RawPos>,
    /// Duration the framework recorded, milliseconds (Claude Code `compactMetadata.durationMs`
    /// in versions that write it). Otherwise [`RecordedCompaction::duration_s`] falls back to
    /// the timestamps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Events of `Session::events` the compaction took out of the prompt, as half-open index
    /// ranges in order. Claude Code: everything before the boundary (`0..at_event`, the
    /// summary replaces the whole history). OpenHands: the events named by
    /// `forgotten_event_ids` (events that are not in the session, like the condenser's own
    /// records, are left out). Empty when the transcript does not say.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forgotten: Vec<std::ops::Range<usize>>,
    /// OpenHands `forgotten_event_ids` as recorded (event ids of the source).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forgotten_ids: Vec<String>,
    /// OpenHands `summary_offset`: the position in the condensed view where the summary is
    /// inserted (the `keep_first` events stay before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_offset: Option<usize>,
    /// The framework version in force at the boundary (Claude Code: the boundary line's
    /// `version`), so a session resumed under another version names the right rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// What the compaction did: a summary of the history (`full`, every framework's) or the
    /// clearing of old tool results (`micro`, Claude Code `microcompact_boundary`).
    #[serde(default, skip_serializing_if = "CompactionKind::is_full")]
    pub kind: CompactionKind,
    /// Micro only: the events whose tool results it cleared (indexes into
    /// `Session::events`, ascending), from `compactedToolIds` mapped to the results read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cleared: Vec<usize>,
    /// Micro only: `microcompactMetadata.compactedToolIds` as recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cleared_ids: Vec<String>,
    /// Micro only: `microcompactMetadata.tokensSaved` (Claude Code's length / 4 estimate of
    /// the results it cleared). `pre_tokens` is then its estimate of all the old tool results
    /// it weighed, cleared or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_saved: Option<u64>,
    /// The file starts with this compaction: the history it summarized is not in the file (a
    /// resumed session). Listed, never predicted; its summary is the file's first event.
    #[serde(default, skip_serializing_if = "is_false")]
    pub resumed: bool,
}

/// What a recorded compaction did (see [`RecordedCompaction::kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionKind {
    /// The history replaced by a summary.
    #[default]
    Full,
    /// Old tool results replaced by a placeholder, no summary (Claude Code microcompaction).
    Micro,
}

impl CompactionKind {
    fn is_full(&self) -> bool {
        *self == CompactionKind::Full
    }

    /// `full` or `micro`, as the backtest's rows write it.
    pub fn name(self) -> &'static str {
        match self {
            CompactionKind::Full => "full",
            CompactionKind::Micro => "micro",
        }
    }
}

/// How a compaction was started, as the transcript says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompactionTrigger {
    /// The framework's own rule fired (Claude Code `trigger: "auto"`; every OpenHands
    /// condensation, which its condenser starts by itself).
    Auto,
    /// A person asked for it (Claude Code `/compact`, `trigger: "manual"`): listed, never
    /// matched against a policy.
    Manual,
    /// The transcript does not say.
    Unknown,
}

/// A position in the source file of a record that is not an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RawPos {
    /// 1-based line of a JSONL file (Claude Code, Codex).
    Line(usize),
    /// 0-based index in the source's event list (OpenHands: a v0 list position, or the
    /// `NNNNN` of a v1 `events/event-NNNNN-*.json` file; ADK: the `events` index).
    Index(usize),
}

impl RecordedCompaction {
    /// A compaction at `at_event` from `source` with nothing else recorded yet.
    pub fn new(at_event: usize, source: impl Into<String>) -> Self {
        RecordedCompaction {
            at_event,
            source: source.into(),
            trigger: None,
            pre_tokens: None,
            start_timestamp: None,
            end_timestamp: None,
            summary: String::new(),
            request: None,
            tokens_after: None,
            boundary_raw: None,
            summary_raw: None,
            duration_ms: None,
            forgotten: Vec::new(),
            forgotten_ids: Vec::new(),
            summary_offset: None,
            version: None,
            kind: CompactionKind::Full,
            cleared: Vec::new(),
            cleared_ids: Vec::new(),
            tokens_saved: None,
            resumed: false,
        }
    }

    /// True for a Claude Code microcompaction (tool results cleared, no summary).
    pub fn is_micro(&self) -> bool {
        self.kind == CompactionKind::Micro
    }

    /// A summary of history the file holds: a full compaction that is not the one a resumed
    /// file starts with. What a token-threshold rule is matched against (when automatic).
    pub fn is_full_in_file(&self) -> bool {
        !self.is_micro() && !self.resumed
    }

    /// `full`, `micro` or `manual` (a full compaction a person asked for): how the backtest
    /// and `inspect` list it.
    pub fn kind_name(&self) -> &'static str {
        match (self.kind, self.trigger_kind()) {
            (CompactionKind::Micro, _) => "micro",
            (CompactionKind::Full, CompactionTrigger::Manual) => "manual",
            (CompactionKind::Full, _) => "full",
        }
    }

    /// `trigger` read as what started it; OpenHands condensations are automatic by design.
    pub fn trigger_kind(&self) -> CompactionTrigger {
        match self.trigger.as_deref() {
            Some("auto") => CompactionTrigger::Auto,
            Some("manual") => CompactionTrigger::Manual,
            _ => CompactionTrigger::Unknown,
        }
    }

    /// How long it took, seconds: the recorded `duration_ms`, else end minus start when both
    /// timestamps are recorded (and not backwards).
    pub fn duration_s(&self) -> Option<f64> {
        if let Some(ms) = self.duration_ms {
            return Some(ms as f64 / 1000.0);
        }
        match (self.start_timestamp, self.end_timestamp) {
            (Some(a), Some(b)) if b >= a => Some(b - a),
            _ => None,
        }
    }
}

/// What a transcript records about the context policy its framework ran with: the input of
/// the `as recorded` replay (issue 37). `None` on a session means the transcript records
/// nothing, so `as recorded` is `no compaction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedPolicy {
    /// Where it was read, e.g. `swe-agent replay_config.agent.history_processors`.
    pub source: String,
    /// Framework versions recorded, in order of first appearance (Claude Code writes `version`
    /// on every line and a resumed session can change it; Codex `session_meta.cli_version`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<String>,
    pub rule: PolicyRule,
}

/// The policy itself, per framework.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "kebab-case")]
pub enum PolicyRule {
    /// Claude Code's automatic compaction. The files record no setting, only the CLI version
    /// (`versions`): the threshold is that version's rule (and the user's
    /// `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE` / auto-compact window, which the files do not record),
    /// with what the session shows of its settings (`claude_code_settings`).
    ClaudeCodeAuto {
        #[serde(default, skip_serializing_if = "ClaudeCodeSettings::is_empty")]
        settings: ClaudeCodeSettings,
    },
    /// SWE-agent `agent.history_processors`, in the order SWE-agent applies them (empty when
    /// the config lists none: SWE-agent then sends the whole history), and the run's
    /// `info.model_stats` (what the as-recorded replay's prompt tokens are checked against).
    SweAgent {
        processors: Vec<HistoryProcessor>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model_stats: Option<ModelStats>,
    },
    /// An OpenHands condenser: v0 `metadata.condenser_config`, SDK v1
    /// `base_state.json` `agent.condenser`.
    Openhands(Condenser),
    /// Codex: `model_auto_compact_token_limit` when a rollout records it (config
    /// `model_auto_compact_token_limit`), and the model's context window when recorded
    /// (`token_count.info.model_context_window`).
    Codex {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        auto_compact_token_limit: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context_window: Option<u64>,
    },
    /// ADK: what the session's own compaction events imply (events between compactions and
    /// the overlap of consecutive ranges), when they are regular enough to say.
    Adk {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        compaction_interval: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        overlap_size: Option<u64>,
    },
}

/// SWE-agent `info.model_stats`: the run's totals over its model calls, as recorded (demos
/// replayed without a model record zeros).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelStats {
    /// Prompt tokens summed over the calls (the model's tokenizer, via litellm).
    pub tokens_sent: u64,
    pub api_calls: u64,
    /// `tokens_sent` was counted on a Hugging Face tokenizer the run's config names
    /// (`agent.model.custom_tokenizer`, SWE-agent from commit 34f9f687), not the model's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub custom_tokenizer: bool,
}

/// One SWE-agent history processor as its trajectory's config records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HistoryProcessor {
    /// `last_n_observations`: observations older than the last `n` are replaced by a one-line
    /// notice (SWE-agent `sweagent/agent/history_processors.py` `LastNObservations`); the
    /// replay models it as masking with window `n`.
    LastNObservations { n: u64 },
    /// Any other processor (`cache_control`, `remove_regex`, `closed_window`, ...): named,
    /// not modelled. `params` is the recorded object as JSON text.
    Other { name: String, params: String },
}

/// An OpenHands condenser configuration as recorded. v0 names it by `type` (`noop`, `llm`,
/// `recent`, `observation_masking`, `amortized`, ...), the SDK v1 by `kind`
/// (`LLMSummarizingCondenser`, `NoOpCondenser`, ...); `kind` holds whichever was recorded.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Condenser {
    pub kind: String,
    /// Events the view may hold before it condenses (`max_size`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_size: Option<u64>,
    /// Events always kept at the start (`keep_first`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_first: Option<u64>,
    /// Token limit some condensers also condense at (`max_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Observation masking window (`attention_window`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attention_window: Option<u64>,
    /// The condenser's LLM model, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Condensers of a pipeline (`pipeline` / `PipelineCondenser`), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<Condenser>,
}

/// One recorded session, in one model whatever the source format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    /// Session id (from the source, else derived from the file name). Never use it as a path
    /// without sanitising it.
    pub id: String,
    /// The file it came from, plus `#fragment` when one file holds many sessions.
    pub source: String,
    pub format: Format,
    pub events: Vec<Event>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recorded_compactions: Vec<RecordedCompaction>,
    /// The agent's model, when the transcript names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// True when the reader had to invent timestamps.
    #[serde(default, skip_serializing_if = "is_false")]
    pub synthetic_timestamps: bool,
    /// Tool-approval policies the agent ran under, in order of first use (Codex
    /// `turn_context.approval_policy`: `never`, `on-request`, ...); empty when not recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approval_policies: Vec<String>,
    /// The context policy the framework ran with, as the transcript records it (see
    /// [`RecordedPolicy`]); `None` when it records none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_policy: Option<RecordedPolicy>,
    /// What the reader found wrong in what the session records and so did not use, or
    /// adjusted, one line each naming the file, where and what: said once, never silent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Set when the reader read records whose times step back in file order (a format whose
    /// file order is the order things happened, Claude Code): the largest step back, seconds.
    /// Times handed out never go backwards; this says they were adjusted, and by how much.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing_adjusted_s: Option<f64>,
}

impl Usage {
    /// The first count above [`MAX_TOKENS`], as (field name, value): readers that build a
    /// usage from typed structs (canonical JSONL) check it with this.
    pub fn over_limit(&self) -> Option<(&'static str, u64)> {
        [
            ("prompt_tokens", self.prompt_tokens),
            ("cached_read_tokens", self.cached_read_tokens),
            ("cache_write_tokens", self.cache_write_tokens),
            ("output_tokens", self.output_tokens),
        ]
        .into_iter()
        .find(|(_, v)| *v > MAX_TOKENS)
    }
}

/// A copy of a parsed JSON payload at its size: a JSON object grows by doubling as its keys
/// are read, so a long session's tool payloads, copied as parsed, held a third more than
/// their entries. Readers copy payloads with this while the parsed tree is still at hand:
/// shrinking them afterwards freed the doubled tables between the events' lasting data,
/// where the allocator could not give the room back (88 MB of a 200,000-event session).
/// Same keys, same order, same values.
pub fn compact_json(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Array(a) => Value::Array(a.iter().map(compact_json).collect()),
        Value::Object(m) => {
            let mut exact = serde_json::Map::with_capacity(m.len());
            for (k, x) in m {
                exact.insert(k.clone(), compact_json(x));
            }
            Value::Object(exact)
        }
        other => other.clone(),
    }
}

impl Session {
    /// A session that records nothing beyond its events: no compactions, model, approval or
    /// context policy, and real timestamps. Readers start from it and set what their transcript
    /// records (struct update), so a field added later has one default instead of one per reader.
    pub fn new(
        id: impl Into<String>,
        source: impl Into<String>,
        format: Format,
        events: Vec<Event>,
    ) -> Self {
        Self {
            id: id.into(),
            source: source.into(),
            format,
            events,
            recorded_compactions: Vec::new(),
            model: None,
            synthetic_timestamps: false,
            approval_policies: Vec::new(),
            recorded_policy: None,
            notes: Vec::new(),
            timing_adjusted_s: None,
        }
    }

    /// Fill each recorded compaction's `request` and `tokens_after` from the events (readers
    /// call it once the session is complete): the first model request at or after `at_event`,
    /// numbered as the replay numbers requests (see [`RecordedCompaction`]).
    pub fn index_recorded(&mut self) {
        if self.recorded_compactions.is_empty() {
            return;
        }
        let mut requests_before = Vec::with_capacity(self.events.len() + 1);
        let mut q = 0usize;
        for e in &self.events {
            requests_before.push(q);
            q += usize::from(e.model_request);
        }
        requests_before.push(q);
        for c in &mut self.recorded_compactions {
            let first = self
                .events
                .iter()
                .enumerate()
                .skip(c.at_event)
                .find(|(_, e)| e.model_request);
            c.request = first.map(|(k, _)| requests_before[k]);
            // a reader's own figure (Codex's estimate after compacting) where no request
            // follows to record one
            c.tokens_after = first
                .and_then(|(_, e)| e.usage)
                .map(|u| u.prompt_tokens)
                .or(c.tokens_after);
        }
    }

    /// The ADK setting a session's own compaction events imply, as ADK's sliding window
    /// makes them (`google/adk/apps/compaction.py`): once `compaction_interval` invocations
    /// are new since the last compaction it summarizes them plus the `overlap_size`
    /// invocations before them. So each recorded range (`start_timestamp..=end_timestamp`,
    /// read against the events' times) holds `interval` invocations that end after the
    /// previous range and `overlap` that do not. A figure is given only when every
    /// compaction agrees on it (the overlap needs a second compaction); `None` when the
    /// session records no ADK compaction with both timestamps.
    pub fn implied_adk_policy(&self) -> Option<RecordedPolicy> {
        let mut new_counts = Vec::new();
        let mut overlaps = Vec::new();
        let mut prev_end: Option<f64> = None;
        for c in &self.recorded_compactions {
            let (Some(start), Some(end)) = (c.start_timestamp, c.end_timestamp) else {
                return None;
            };
            // Invocations in the range, with the time of their latest event in it.
            let mut last_of: Vec<(&str, f64)> = Vec::new();
            for e in self
                .events
                .iter()
                .filter(|e| (start..=end).contains(&e.timestamp))
            {
                match last_of.iter_mut().find(|(id, _)| *id == e.invocation_id) {
                    Some(x) => x.1 = x.1.max(e.timestamp),
                    None => last_of.push((&e.invocation_id, e.timestamp)),
                }
            }
            let fresh = last_of
                .iter()
                .filter(|(_, t)| prev_end.is_none_or(|p| *t > p))
                .count() as u64;
            if prev_end.is_some() {
                overlaps.push(last_of.len() as u64 - fresh);
            }
            new_counts.push(fresh);
            prev_end = Some(end);
        }
        let agreed = |v: &[u64]| match v.split_first() {
            Some((first, rest)) if rest.iter().all(|x| x == first) => Some(*first),
            _ => None,
        };
        let compaction_interval = agreed(&new_counts);
        let overlap_size = agreed(&overlaps);
        (compaction_interval.is_some() || overlap_size.is_some()).then(|| RecordedPolicy {
            source: "adk compaction events".to_string(),
            versions: Vec::new(),
            rule: PolicyRule::Adk {
                compaction_interval,
                overlap_size,
            },
        })
    }

    /// Give back the room lists kept past their length (events, parts). Payloads are
    /// compacted when read ([`compact_json`]).
    pub fn shrink(&mut self) {
        for e in &mut self.events {
            e.parts.shrink_to_fit();
        }
        self.events.shrink_to_fit();
    }
}

impl Event {
    /// The ADK extra of part `i`, if any.
    pub fn adk_part(&self, i: usize) -> Option<&AdkPartExtra> {
        self.adk_parts.iter().find(|x| x.index as usize == i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three invocations per compaction, one of them shared with the range before: ADK's
    /// `compaction_interval` 2 and `overlap_size` 1.
    #[test]
    fn adk_compaction_ranges_imply_interval_and_overlap() {
        let events: Vec<Event> = (0..6)
            .flat_map(|i| {
                let t = 10.0 * i as f64;
                [
                    Event::new("user", Role::User, format!("i{i}"), t),
                    Event::new("agent", Role::Model, format!("i{i}"), t + 1.0),
                ]
            })
            .collect();
        let range = |a: f64, b: f64| {
            let mut c = RecordedCompaction::new(0, "adk compaction event");
            c.start_timestamp = Some(a);
            c.end_timestamp = Some(b);
            c
        };
        let mut s = Session {
            // i0..i1, then i1..i3 (i1 again), then i3..i5 (i3 again).
            recorded_compactions: vec![range(0.0, 11.0), range(10.0, 31.0), range(30.0, 51.0)],
            ..Session::new("s", "s", Format::Adk, events)
        };
        let p = s.implied_adk_policy().expect("implied");
        assert_eq!(
            p.rule,
            PolicyRule::Adk {
                compaction_interval: Some(2),
                overlap_size: Some(1)
            }
        );
        // Ranges that disagree on the overlap imply the interval only.
        s.recorded_compactions[2] = range(40.0, 51.0);
        assert_eq!(
            s.implied_adk_policy().map(|p| p.rule),
            Some(PolicyRule::Adk {
                compaction_interval: Some(2),
                overlap_size: None
            })
        );
        s.recorded_compactions[0].start_timestamp = None;
        assert_eq!(s.implied_adk_policy(), None);
    }

    /// Every recorded policy survives the canonical header's JSON (the tag must not clash
    /// with a field of a variant, as `kind` did with `Condenser::kind`).
    #[test]
    fn recorded_policies_round_trip_through_json() {
        let rules = [
            PolicyRule::ClaudeCodeAuto {
                settings: Default::default(),
            },
            PolicyRule::SweAgent {
                processors: vec![
                    HistoryProcessor::LastNObservations { n: 5 },
                    HistoryProcessor::Other {
                        name: "cache_control".into(),
                        params: "{}".into(),
                    },
                ],
                model_stats: Some(ModelStats {
                    tokens_sent: 7_141,
                    api_calls: 5,
                    custom_tokenizer: true,
                }),
            },
            PolicyRule::Openhands(Condenser {
                kind: "pipeline".into(),
                stages: vec![Condenser {
                    kind: "llm".into(),
                    max_size: Some(80),
                    keep_first: Some(4),
                    ..Condenser::default()
                }],
                ..Condenser::default()
            }),
            PolicyRule::Codex {
                auto_compact_token_limit: Some(1),
                context_window: None,
            },
            PolicyRule::Adk {
                compaction_interval: Some(3),
                overlap_size: Some(1),
            },
        ];
        for rule in rules {
            let p = RecordedPolicy {
                source: "s".into(),
                versions: vec!["1".into()],
                rule,
            };
            let text = serde_json::to_string(&p).unwrap();
            let back: RecordedPolicy = serde_json::from_str(&text).unwrap();
            assert_eq!(back, p, "{text}");
        }
    }

    /// A compaction's request is the replay's index of the first model request at or after
    /// it (requests counted over `model_request` events only); its tokens after are that
    /// request's recorded prompt. Durations: recorded milliseconds first, then timestamps.
    #[test]
    fn recorded_compactions_are_numbered_as_the_replay_numbers_requests() {
        let mut events = Vec::new();
        for (i, req) in [false, true, false, true, false, false, true]
            .iter()
            .enumerate()
        {
            let mut e = Event::new("a", Role::Model, "i", i as f64);
            e.model_request = *req;
            if *req {
                e.usage = Some(Usage {
                    prompt_tokens: 100 * i as u64,
                    ..Usage::default()
                });
            }
            events.push(e);
        }
        let mut s = Session {
            recorded_compactions: [0, 2, 4, 7]
                .into_iter()
                .map(|at| RecordedCompaction::new(at, "test"))
                .collect(),
            ..Session::new("s", "s", Format::Canonical, events)
        };
        s.index_recorded();
        let got: Vec<(Option<usize>, Option<u64>)> = s
            .recorded_compactions
            .iter()
            .map(|c| (c.request, c.tokens_after))
            .collect();
        assert_eq!(
            got,
            [
                (Some(0), Some(100)),
                (Some(1), Some(300)),
                (Some(2), Some(600)),
                (None, None)
            ]
        );
        let mut c = RecordedCompaction::new(0, "t");
        assert_eq!(
            (c.duration_s(), c.trigger_kind()),
            (None, CompactionTrigger::Unknown)
        );
        c.start_timestamp = Some(10.0);
        c.end_timestamp = Some(12.5);
        c.trigger = Some("manual".into());
        assert_eq!(
            (c.duration_s(), c.trigger_kind()),
            (Some(2.5), CompactionTrigger::Manual)
        );
        c.duration_ms = Some(1_250);
        assert_eq!(c.duration_s(), Some(1.25));
        c.end_timestamp = Some(9.0);
        c.duration_ms = None;
        assert_eq!(
            c.duration_s(),
            None,
            "a clock that went back gives no duration"
        );
    }

    /// A compacted payload has the values, the key order (ADK measures `json.dumps` in that
    /// order) and the JSON text of what was read.
    #[test]
    fn compacted_payloads_keep_values_key_order_and_json() {
        let mut call = Event::new("agent", Role::Model, "i1", 1.0);
        call.parts.push(Part::ToolCall {
            id: Some("c1".into()),
            name: "book".into(),
            args: serde_json::from_str(
                r#"{"z": 1, "a": {"y": [3, {"q": 1, "b": 2}], "c": null}, "m": "x"}"#,
            )
            .unwrap(),
        });
        let mut resp = Event::new("agent", Role::User, "i1", 2.0);
        resp.parts.push(Part::ToolResponse {
            id: Some("c1".into()),
            name: "book".into(),
            response: serde_json::from_str(
                r#"{"ok": true, "lines": [{"sku": "B-2", "n": 2}, {"sku": "A-1", "n": 1}]}"#,
            )
            .unwrap(),
        });
        let mut s = Session::new("s", "s.json", Format::Adk, vec![call, resp]);
        let before = serde_json::to_string(&s).unwrap();
        let copy = s.clone();
        for e in &mut s.events {
            for p in &mut e.parts {
                if let Part::ToolCall { args: v, .. } | Part::ToolResponse { response: v, .. } = p {
                    *v = compact_json(v);
                }
            }
        }
        s.shrink();
        assert_eq!(s, copy);
        assert_eq!(serde_json::to_string(&s).unwrap(), before);
        assert!(
            before.contains(r#"{"z":1,"a":{"y":[3,{"q":1,"b":2}],"c":null},"m":"x"}"#),
            "{before}"
        );
    }
}
