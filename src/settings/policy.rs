//! Other frameworks' policies as settings (docs/policies.md): the families, their numbers,
//! and how near ADK can come to each. What a policy does lives in `policy/`.

use super::number::parse_number;
use serde::{Deserialize, Serialize};

/// A policy's grid point: the family and its numbers (defaults as the framework ships them).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "policy", rename_all = "kebab-case")]
pub enum PolicySpec {
    /// Anthropic `clear_tool_uses_20250919` / LangChain `ClearToolUsesEdit`.
    ClearToolResults {
        trigger: u64,
        keep: u64,
        clear_at_least: u64,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        exclude_tools: Vec<String>,
    },
    /// The Complexity Trap's observation masking.
    MaskObservations { window: u64 },
    /// Claude Code auto-compact; `pct`: `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE` (can only lower it);
    /// `window`: the auto-compact window (`autoCompactWindow` /
    /// `CLAUDE_CODE_AUTO_COMPACT_WINDOW`), not the price table's: Claude Code compacts on its
    /// own window whatever the API allows.
    ClaudeCode {
        pct: Option<u64>,
        #[serde(default = "default_cc_window")]
        window: u64,
    },
    /// SWE-agent's `summarize_every_n_turns` (The Complexity Trap's LLM summary): at `n + m`
    /// unsummarized turns the oldest `n` become one summary, the last `m` stay raw.
    TurnSummary { n: u64, m: u64 },
    /// The Complexity Trap's hybrid: `last_n_observations` (`window`) on top of a static
    /// `summarize_every_n_turns` (`n`, `m`).
    Hybrid { n: u64, m: u64, window: u64 },
    /// Codex auto-compact at `pct` % of the window (`auto_compact_token_limit`, which Codex
    /// clamps to 90 %); `retain`: the tokens of user messages the new history keeps (64,000
    /// on the remote-compaction-v2 path Codex ships for OpenAI, 20,000 on the local one).
    Codex {
        pct: u64,
        #[serde(default = "default_codex_retain")]
        retain: u64,
    },
    /// OpenHands V1 `LLMSummarizingCondenser`; `max_tokens`: its token trigger (unset as
    /// shipped).
    Openhands {
        max_size: u64,
        keep_first: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_tokens: Option<u64>,
    },
    /// LangChain `SummarizationMiddleware`; `trim`: `trim_tokens_to_summarize`, the newest
    /// tokens of the evicted messages its summarizer reads (`None`: all of them).
    Langchain {
        trigger: LcTrigger,
        keep: u64,
        #[serde(default = "default_lc_trim")]
        trim: Option<u64>,
    },
    /// Gemini CLI: chat compression at `threshold_pct` % of the window, or the experimental
    /// generalist context-management profile (`profile`), which ignores the threshold.
    GeminiCli {
        threshold_pct: u64,
        #[serde(default, skip_serializing_if = "GeminiProfile::is_default")]
        profile: GeminiProfile,
    },
    /// Each session under the policy its own framework ran with, read from its transcript
    /// (`backtest::as_recorded`): the status quo a setting replaces. Not a `--policy` family.
    AsRecorded,
    /// Anthropic server-side compaction (`compact_20260112`): above `trigger` input tokens
    /// the API summarizes the conversation and the summary replaces every earlier block.
    AnthropicCompaction { trigger: u64 },
}

/// Codex's auto-compact limit is clamped to this share of the window (openai/codex#11516).
pub const CODEX_MAX_PCT: u64 = 90;
/// User-message tokens Codex keeps: remote compaction v2 (`RETAINED_MESSAGE_TOKEN_BUDGET`,
/// the default for OpenAI) and the local path (`COMPACT_USER_MESSAGE_MAX_TOKENS`).
pub const CODEX_RETAIN_REMOTE: u64 = 64_000;
pub const CODEX_RETAIN_LOCAL: u64 = 20_000;
/// LangChain's `_DEFAULT_TRIM_TOKEN_LIMIT`.
pub const LC_TRIM: u64 = 4_000;
/// Anthropic `compact_20260112`: the default trigger and the least the API accepts.
pub const ANTHROPIC_TRIGGER: u64 = 150_000;
pub const ANTHROPIC_MIN_TRIGGER: u64 = 50_000;

fn default_codex_retain() -> u64 {
    CODEX_RETAIN_REMOTE
}

fn default_lc_trim() -> Option<u64> {
    Some(LC_TRIM)
}

/// Gemini CLI's context handling: chat compression (`chatCompressionService.ts`) or the
/// experimental generalist profile (`context/config/profiles.ts`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum GeminiProfile {
    #[default]
    Default,
    Generalist,
}

impl GeminiProfile {
    /// The generalist profile's budget: compress above `max`, keep the newest `retained`.
    pub const GENERALIST_MAX: u64 = 150_000;
    pub const GENERALIST_RETAINED: u64 = 65_000;

    pub fn is_default(&self) -> bool {
        *self == GeminiProfile::Default
    }

    pub fn parse(s: &str) -> Option<GeminiProfile> {
        match s.trim() {
            "default" => Some(GeminiProfile::Default),
            "generalist" => Some(GeminiProfile::Generalist),
            _ => None,
        }
    }

    pub fn text(&self) -> &'static str {
        match self {
            GeminiProfile::Default => "default",
            GeminiProfile::Generalist => "generalist",
        }
    }
}

/// Claude Code's auto-compact window unless set: 200,000 (docs/policies.md).
pub const CC_WINDOW: u64 = 200_000;

fn default_cc_window() -> u64 {
    CC_WINDOW
}
/// The `policy` column of the `as recorded` row.
pub const AS_RECORDED: &str = "as-recorded";

/// LangChain's `trigger` context size: `("tokens", n)`, `("messages", n)` or
/// `("fraction", f)` (kept as per-mille so a setting stays hashable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LcTrigger {
    Tokens(u64),
    Messages(u64),
    FractionPermille(u64),
    /// deepagents' `compute_summarization_defaults`: `fraction:0.85` when the model's
    /// window is known, else `tokens:170000`.
    Auto,
}

impl LcTrigger {
    /// deepagents' trigger share and its fallback for a model without a window.
    pub const AUTO_PERMILLE: u64 = 850;
    pub const AUTO_TOKENS: u64 = 170_000;

    /// `auto`, `tokens:N`, `messages:N` or `fraction:F` (0 < F <= 1).
    pub fn parse(s: &str) -> Option<LcTrigger> {
        if s.trim() == "auto" {
            return Some(LcTrigger::Auto);
        }
        let (k, v) = s.split_once(':')?;
        match k.trim() {
            "tokens" => parse_number("lc-trigger", v)
                .ok()
                .filter(|&n| n > 0)
                .map(LcTrigger::Tokens),
            "messages" => v
                .trim()
                .parse()
                .ok()
                .filter(|&n| n > 0)
                .map(LcTrigger::Messages),
            "fraction" => {
                let f: f64 = v.trim().parse().ok()?;
                (f > 0.0 && f <= 1.0)
                    .then(|| LcTrigger::FractionPermille((f * 1000.0).round() as u64))
            }
            _ => None,
        }
    }

    pub fn text(&self) -> String {
        match self {
            LcTrigger::Tokens(n) => format!("tokens:{n}"),
            LcTrigger::Messages(n) => format!("messages:{n}"),
            LcTrigger::FractionPermille(p) => format!("fraction:{}", *p as f64 / 1000.0),
            LcTrigger::Auto => "auto".to_string(),
        }
    }
}

/// The policy families, in the order `--policy all` lists them.
pub const FAMILIES: &[&str] = &[
    "clear-tool-results",
    "mask-observations",
    "claude-code",
    "codex",
    "openhands",
    "langchain",
    "gemini-cli",
    "turn-summary",
    "hybrid",
    "anthropic-compaction",
];

/// The summarizer family whose recorded summaries the summaries of policy family `policy`
/// stand for ([`PolicySpec::summary_family`]).
pub fn summary_family_of(policy: &str) -> Option<&'static str> {
    ["claude-code", "openhands"]
        .into_iter()
        .find(|f| *f == policy)
}

impl PolicySpec {
    /// The family name (`--policy` value, the `policy` column).
    pub fn family(&self) -> &'static str {
        match self {
            PolicySpec::ClearToolResults { .. } => "clear-tool-results",
            PolicySpec::MaskObservations { .. } => "mask-observations",
            PolicySpec::ClaudeCode { .. } => "claude-code",
            PolicySpec::Codex { .. } => "codex",
            PolicySpec::Openhands { .. } => "openhands",
            PolicySpec::Langchain { .. } => "langchain",
            PolicySpec::GeminiCli { .. } => "gemini-cli",
            PolicySpec::TurnSummary { .. } => "turn-summary",
            PolicySpec::Hybrid { .. } => "hybrid",
            PolicySpec::AsRecorded => AS_RECORDED,
            PolicySpec::AnthropicCompaction { .. } => "anthropic-compaction",
        }
    }

    /// The summarizer family whose recorded summaries the policy's summaries stand for (the
    /// framework whose prompt writes them; issue 45's per-family retention): `claude-code`
    /// and `openhands`; `None` for the others (their estimate uses the pooled fit). An
    /// `as-recorded` setting's family is its session's rule's.
    pub fn summary_family(&self) -> Option<&'static str> {
        summary_family_of(self.family())
    }

    /// Its numbers as `name=value` pairs (the `policy_setting` column).
    pub fn params(&self) -> String {
        match self {
            PolicySpec::ClearToolResults {
                trigger,
                keep,
                clear_at_least,
                exclude_tools,
            } => {
                let mut s =
                    format!("trigger={trigger} keep={keep} clear_at_least={clear_at_least}");
                if !exclude_tools.is_empty() {
                    s.push_str(&format!(" exclude_tools={}", exclude_tools.join(",")));
                }
                s
            }
            PolicySpec::MaskObservations { window } => format!("window={window}"),
            PolicySpec::ClaudeCode { pct, window } => match pct {
                None => format!("pct=default window={window}"),
                Some(p) => format!("pct={p} window={window}"),
            },
            PolicySpec::Codex { pct, retain } if *pct > CODEX_MAX_PCT => {
                format!("limit_pct={pct} clamped_pct={CODEX_MAX_PCT} retain={retain}")
            }
            PolicySpec::Codex { pct, retain } => format!("limit_pct={pct} retain={retain}"),
            PolicySpec::Openhands {
                max_size,
                keep_first,
                max_tokens,
            } => match max_tokens {
                None => format!("max_size={max_size} keep_first={keep_first}"),
                Some(t) => format!("max_size={max_size} keep_first={keep_first} max_tokens={t}"),
            },
            PolicySpec::Langchain {
                trigger,
                keep,
                trim,
            } => format!(
                "trigger={} keep=messages:{keep} trim={}",
                trigger.text(),
                trim.map_or("none".to_string(), |t| t.to_string())
            ),
            PolicySpec::GeminiCli {
                profile: GeminiProfile::Generalist,
                ..
            } => format!(
                "profile=generalist max_tokens={} retained_tokens={}",
                GeminiProfile::GENERALIST_MAX,
                GeminiProfile::GENERALIST_RETAINED
            ),
            PolicySpec::GeminiCli { threshold_pct, .. } => {
                format!("threshold={}", *threshold_pct as f64 / 100.0)
            }
            PolicySpec::TurnSummary { n, m } => format!("n={n} m={m}"),
            PolicySpec::Hybrid { n, m, window } => format!("n={n} m={m} window={window}"),
            PolicySpec::AsRecorded => "per session".to_string(),
            PolicySpec::AnthropicCompaction { trigger } => format!("trigger={trigger}"),
        }
    }

    /// Whether it calls a summarizer (the setting's `summarizer` axis applies).
    pub fn summarizes(&self) -> bool {
        !matches!(
            self,
            PolicySpec::ClearToolResults { .. } | PolicySpec::MaskObservations { .. }
        )
    }

    /// Whether it needs the agent model's context window (from the pricing table);
    /// `claude-code` carries its own auto-compact window.
    pub fn needs_window(&self) -> bool {
        match self {
            PolicySpec::Codex { .. } => true,
            PolicySpec::GeminiCli { profile, .. } => profile.is_default(),
            PolicySpec::Langchain { trigger, .. } => {
                matches!(trigger, LcTrigger::FractionPermille(_))
            }
            _ => false,
        }
    }

    /// The report's label: plainly not a line for an ADK manifest.
    pub fn label(&self) -> String {
        if *self == PolicySpec::AsRecorded {
            return "as recorded (each session under its own framework's setting)".to_string();
        }
        format!(
            "policy {} ({}): modelled, not an ADK setting",
            self.family(),
            self.params()
        )
    }
}

/// How near ADK 2.13 can come to a policy family (the report's "Other policies" says it).
pub fn adk_expressible(family: &str) -> &'static str {
    match family {
        "clear-tool-results" | "mask-observations" => {
            "no: ADK compaction only summarizes; clearing tool results needs a before_model_callback"
        }
        "claude-code" | "codex" | "gemini-cli" | "anthropic-compaction" => {
            "partly: after_tokens at the same threshold fires at the same point; what is kept differs"
        }
        "turn-summary" | "hybrid" => {
            "partly: ADK's sliding window summarizes every N invocations, not N model turns; masking needs a before_model_callback"
        }
        _ => "partly: keep_recent_events is the nearest tail rule; ADK triggers on tokens or invocations, not message counts",
    }
}
