//! One setting a sweep replays: a `Compaction(...)` (or another framework's policy, or one of
//! the guide's alternatives) plus what the replay and the prices need.

use super::manifest::Compaction;
use super::policy::PolicySpec;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Which trigger pair(s) a setting sets; `None` is the no-compaction baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TriggerKind {
    None,
    Tokens,
    Invocations,
    Both,
    /// Another framework's policy (docs/policies.md), not an ADK setting.
    Policy,
}

impl TriggerKind {
    pub fn name(self) -> &'static str {
        match self {
            TriggerKind::None => "none",
            TriggerKind::Tokens => "tokens",
            TriggerKind::Invocations => "invocations",
            TriggerKind::Both => "both",
            TriggerKind::Policy => "policy",
        }
    }

    /// A grid's `trigger` value (the baseline and a policy are not written there).
    pub fn parse(s: &str) -> Option<TriggerKind> {
        match s {
            "tokens" => Some(TriggerKind::Tokens),
            "invocations" => Some(TriggerKind::Invocations),
            "both" => Some(TriggerKind::Both),
            _ => None,
        }
    }

    pub fn uses_tokens(self) -> bool {
        matches!(self, TriggerKind::Tokens | TriggerKind::Both)
    }

    pub fn uses_invocations(self) -> bool {
        matches!(self, TriggerKind::Invocations | TriggerKind::Both)
    }
}

/// When the next turn starts relative to a post-invocation summary (metrics.md "Client
/// modes"): `waits` (like `runtime.run()`) lets every summary land; `streams` starts the next
/// turn at its recorded time, so a summary still being written then is discarded.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ClientMode {
    #[default]
    Waits,
    Streams,
}

/// A `--client` value that is neither mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown client mode `{0}` (expected `waits` or `streams`)")]
pub struct UnknownClientMode(pub String);

impl ClientMode {
    pub fn name(self) -> &'static str {
        match self {
            ClientMode::Waits => "waits",
            ClientMode::Streams => "streams",
        }
    }

    /// The mode a grid's `client` value names (exactly, as the grid writes it).
    pub fn parse(s: &str) -> Option<ClientMode> {
        match s {
            "waits" => Some(ClientMode::Waits),
            "streams" => Some(ClientMode::Streams),
            _ => None,
        }
    }
}

impl fmt::Display for ClientMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ClientMode {
    type Err = UnknownClientMode;
    fn from_str(s: &str) -> Result<Self, UnknownClientMode> {
        ClientMode::parse(s.trim()).ok_or_else(|| UnknownClientMode(s.trim().to_string()))
    }
}

/// The `alternative` text of the files-as-artifacts setting.
pub const ARTIFACTS: &str = "artifacts";

/// One of the guide's alternatives to compaction (docs/alternatives.md), replayed instead of
/// the recorded session. The run folder writes it as its text (`max_llm_calls=25`,
/// `artifacts`, `split:lossless`, `split:idle=30m`), which [`Alternative::parse`] reads back.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Alternative {
    /// `RunConfig(max_llm_calls=N)`.
    Cap(u64),
    /// Attached files saved as artifacts and loaded once.
    Artifacts,
    /// A new session at every lossless split point.
    SplitLossless,
    /// A new session after every pause longer than `written` (`30m`, `2h`): `seconds`.
    SplitIdle { written: String, seconds: u64 },
}

/// A text that names no alternative.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown alternative `{0}`")]
pub struct UnknownAlternative(pub String);

impl Alternative {
    /// The alternative an `alternative` text names.
    pub fn parse(text: &str) -> Option<Alternative> {
        if text == ARTIFACTS {
            return Some(Alternative::Artifacts);
        }
        if let Some(n) = text.strip_prefix("max_llm_calls=") {
            return n.parse().ok().map(Alternative::Cap);
        }
        Alternative::split(text.strip_prefix("split:")?)
    }

    /// A split rule as a grid writes it: `lossless` or `idle=DURATION`.
    pub fn split(rule: &str) -> Option<Alternative> {
        if rule == "lossless" {
            return Some(Alternative::SplitLossless);
        }
        let written = rule.strip_prefix("idle=")?;
        Some(Alternative::SplitIdle {
            seconds: duration_seconds(written)?,
            written: written.to_string(),
        })
    }

    /// The cap N of `max_llm_calls=N`.
    pub fn cap(&self) -> Option<u64> {
        match self {
            Alternative::Cap(n) => Some(*n),
            _ => None,
        }
    }

    /// What is done instead of the recorded run, as the setting's label says it.
    pub fn describe(&self) -> String {
        match self {
            Alternative::Cap(n) => format!("run_config=RunConfig(max_llm_calls={n})"),
            Alternative::Artifacts => "attached files loaded once with load_artifact".to_string(),
            Alternative::SplitLossless => "a new session at every lossless split point".to_string(),
            Alternative::SplitIdle { written, .. } => {
                format!("a new session after every pause longer than {written}")
            }
        }
    }
}

impl fmt::Display for Alternative {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Alternative::Cap(n) => write!(f, "max_llm_calls={n}"),
            Alternative::Artifacts => f.write_str(ARTIFACTS),
            Alternative::SplitLossless => f.write_str("split:lossless"),
            Alternative::SplitIdle { written, .. } => write!(f, "split:idle={written}"),
        }
    }
}

impl From<Alternative> for String {
    fn from(a: Alternative) -> String {
        a.to_string()
    }
}

impl TryFrom<String> for Alternative {
    type Error = UnknownAlternative;
    fn try_from(text: String) -> Result<Self, UnknownAlternative> {
        Alternative::parse(&text).ok_or(UnknownAlternative(text))
    }
}

/// `90s`, `30m`, `2h` as whole seconds (above 0).
pub fn duration_seconds(s: &str) -> Option<u64> {
    let (n, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit())?);
    let n: u64 = n.parse().ok().filter(|&n| n > 0)?;
    let mult = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// The cap N of an `alternative` text written by [`cap_alternative`].
pub fn parse_cap_alternative(a: &str) -> Option<u64> {
    Alternative::parse(a)?.cap()
}

/// One point of the grid: a `Compaction(...)` plus what the replay and the prices need.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Setting {
    /// Position in the resolved grid; the join key between runs and settings.
    pub setting_id: u32,
    pub trigger_kind: TriggerKind,
    pub after_tokens: Option<u64>,
    pub keep_recent_events: Option<u64>,
    pub after_invocations: Option<u64>,
    pub overlap: Option<u64>,
    /// `None` for the baseline (nothing is summarized).
    pub summarizer: Option<String>,
    /// `recorded` = each session's own recorded model.
    pub agent_model: String,
    pub client: ClientMode,
    pub tokenizer: String,
    /// The guide's alternative replayed instead of the recorded session; `None` for a plain
    /// compaction setting or the baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alternative: Option<Alternative>,
    /// Another framework's policy replayed instead of ADK's compaction (`--policy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicySpec>,
}

impl Setting {
    /// The no-compaction setting of `tokenizer`, `agent_model` and `client` (the baseline,
    /// or with `alternative` one of the guide's alternatives replayed alone).
    pub fn without_compaction(
        tokenizer: &str,
        agent_model: &str,
        client: ClientMode,
        alternative: Option<Alternative>,
    ) -> Setting {
        Setting {
            setting_id: 0,
            trigger_kind: TriggerKind::None,
            after_tokens: None,
            keep_recent_events: None,
            after_invocations: None,
            overlap: None,
            summarizer: None,
            agent_model: agent_model.to_string(),
            client,
            tokenizer: tokenizer.to_string(),
            alternative,
            policy: None,
        }
    }

    /// No compaction: the baseline and the alternatives replayed without compaction (the
    /// recommendation rule never picks these; see [`Setting::is_plain_baseline`]).
    pub fn is_baseline(&self) -> bool {
        self.trigger_kind == TriggerKind::None
    }

    /// The recorded sessions with no compaction: what every "saved" is measured against.
    pub fn is_plain_baseline(&self) -> bool {
        self.is_baseline() && self.alternative.is_none()
    }

    /// The alternative's text (`""` for none), as the run folder's `alternative` column.
    pub fn alternative_text(&self) -> String {
        self.alternative
            .as_ref()
            .map(Alternative::to_string)
            .unwrap_or_default()
    }

    /// The `Compaction(...)` this setting stands for: its trigger pairs, and the summarizer
    /// the manifest would name (`None` for the agent's own model).
    pub fn compaction(&self) -> Compaction {
        Compaction {
            after_tokens: self.after_tokens,
            keep_recent_events: self.keep_recent_events,
            after_invocations: self.after_invocations,
            overlap: self.overlap,
            summarizer: self.summarizer.as_deref().and_then(summarizer_path),
        }
    }

    /// The line to paste into the manifest, e.g.
    /// `compaction=Compaction(after_tokens=80_000, keep_recent_events=20)`.
    pub fn label(&self) -> String {
        if let Some(a) = &self.alternative {
            let what = a.describe();
            if self.is_baseline() {
                return format!("{what} (no compaction)");
            }
            let plain = Setting {
                alternative: None,
                ..self.clone()
            };
            return format!("{what} + {}", plain.label());
        }
        if self.is_baseline() {
            return "no compaction (leave `compaction` out of the manifest)".to_string();
        }
        if let Some(p) = &self.policy {
            return p.label();
        }
        format!("compaction={}", self.compaction().normalised())
    }
}

/// The manifest's `summarizer=` dotted path for a summarizer the user must supply; `None` for
/// the agent's own model (the manifest default).
fn summarizer_path(s: &str) -> Option<String> {
    if s == "agent" {
        return None;
    }
    let name: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    Some(format!(".summarizers.{}", name.trim_matches('_')))
}

/// Limits a recommended setting must meet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budgets {
    /// Ceiling on `references_broken_share_mean` (0..1): the share of the facts the agent
    /// used later that no text it could still read held (metrics.md "References").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broken_references: Option<f64>,
    /// Ceiling on `detail_lost_mean` (0..1), the share of history read only through
    /// summaries (how much is compacted, not what is lost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail_lost: Option<f64>,
    /// Ceiling, seconds, on the p95 over sessions of the longest single summarizer wait
    /// (`end_of_run_latency_max_s_p95` and `pre_request_latency_max_s_p95`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_s: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alternatives_read_back_as_written() {
        for text in [
            "max_llm_calls=25",
            "artifacts",
            "split:lossless",
            "split:idle=30m",
        ] {
            let a = Alternative::parse(text).unwrap();
            assert_eq!(a.to_string(), text);
            let json = serde_json::to_string(&a).unwrap();
            assert_eq!(json, format!("\"{text}\""));
            assert_eq!(serde_json::from_str::<Alternative>(&json).unwrap(), a);
        }
        assert_eq!(
            Alternative::split("idle=2h"),
            Some(Alternative::SplitIdle {
                written: "2h".into(),
                seconds: 7200
            })
        );
        assert_eq!(Alternative::parse("split:idle=0m"), None);
        assert_eq!(parse_cap_alternative("max_llm_calls=3"), Some(3));
        assert_eq!(parse_cap_alternative("artifacts"), None);
    }

    #[test]
    fn client_modes_parse() {
        assert_eq!("waits".parse::<ClientMode>(), Ok(ClientMode::Waits));
        assert_eq!(" streams ".parse::<ClientMode>(), Ok(ClientMode::Streams));
        assert!("stream"
            .parse::<ClientMode>()
            .unwrap_err()
            .to_string()
            .contains("`stream`"));
        assert_eq!(ClientMode::parse(" waits"), None);
    }
}
