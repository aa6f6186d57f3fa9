//! The policy a session's framework ran with, read from what its transcript records (issue 37
//! item 2): SWE-agent `last_n_observations n` → masking window n; an OpenHands
//! `LLMSummarizingCondenser` → `openhands` (max_size, keep_first); Claude Code's CLI version →
//! that version's auto-compact rule; Codex's `model_auto_compact_token_limit`; ADK's sliding
//! window as its compaction events imply it (replayed by the engine). A session that records
//! nothing is replayed without compaction, and says so.

use crate::policy::claude_code::{
    session_rule, session_version, ClaudeCode, VersionRule, AUTO_COMPACT_WINDOW,
};
use crate::policy::codex::Codex;
use crate::policy::mask::MaskObservations;
use crate::policy::openhands::OpenHands;
use crate::policy::{CompactionPolicy, Ctx};
use crate::transcript::{HistoryProcessor, PolicyRule, Session};

/// OpenHands `LLMSummarizingCondenser` defaults (openhands-sdk), for a config that leaves
/// them out.
const OPENHANDS_MAX_SIZE: u64 = 240;
const OPENHANDS_KEEP_FIRST: u64 = 2;

/// What the `as recorded` replay runs.
#[derive(Debug, Clone, PartialEq)]
pub enum AsRecorded {
    /// Claude Code auto-compact at `threshold` prompt tokens.
    ClaudeCode {
        threshold: u64,
        /// The version's rule, `None` when the threshold was fitted.
        rule: Option<VersionRule>,
        version: String,
    },
    /// SWE-agent `last_n_observations`: observations older than `window` turns masked.
    Mask { window: u64 },
    /// OpenHands `LLMSummarizingCondenser`.
    Openhands { max_size: u64, keep_first: u64 },
    /// Codex auto-compact at `limit` prompt tokens.
    Codex { limit: u64 },
    /// ADK's sliding window (`EventsCompactionConfig(compaction_interval, overlap_size)`, i.e.
    /// `Compaction(after_invocations, overlap)`) as the session's compaction events imply it,
    /// replayed by the engine. `overlap_implied`: false when one compaction cannot show the
    /// overlap (0 is replayed; the first compaction does not depend on it).
    Adk {
        interval: u64,
        overlap: u64,
        overlap_implied: bool,
    },
    /// No compaction; `why`: what the transcript records (or that it records nothing).
    Nothing { why: String },
}

impl AsRecorded {
    /// The summarizer family whose recorded summaries this rule's summaries stand for
    /// ([`crate::settings::PolicySpec::summary_family`]).
    pub fn summary_family(&self) -> Option<&'static str> {
        match self {
            AsRecorded::ClaudeCode { .. } => Some("claude-code"),
            AsRecorded::Openhands { .. } => Some("openhands"),
            _ => None,
        }
    }

    /// The setting in words, with where it came from.
    pub fn label(&self) -> String {
        match self {
            AsRecorded::ClaudeCode {
                threshold,
                rule: Some(r),
                version,
            } => format!(
                "claude-code {version}: auto-compact at {threshold} ({})",
                r.text()
            ),
            AsRecorded::ClaudeCode {
                threshold, version, ..
            } => format!("claude-code {version}: auto-compact at {threshold} (fitted)"),
            AsRecorded::Mask { window } => {
                format!(
                    "swe-agent last_n_observations n={window}: mask-observations window={window}"
                )
            }
            AsRecorded::Openhands {
                max_size,
                keep_first,
            } => format!(
                "openhands LLMSummarizingCondenser max_size={max_size} keep_first={keep_first}"
            ),
            AsRecorded::Codex { limit } => format!("codex auto-compact at {limit}"),
            AsRecorded::Adk {
                interval,
                overlap,
                overlap_implied,
            } => format!(
                "adk compaction events: compaction_interval={interval} overlap_size={overlap}{}",
                if *overlap_implied {
                    ""
                } else {
                    " (overlap not implied by one compaction)"
                }
            ),
            AsRecorded::Nothing { why } => format!("no compaction ({why})"),
        }
    }

    /// The rule object for one replay; `None`: no compaction.
    /// A Claude Code session's recorded manual and micro compactions are applied where they
    /// happened, whatever the rule ([`super::as_ran`]).
    pub fn build(&self, ctx: &Ctx<'_>) -> Option<Box<dyn CompactionPolicy>> {
        let rule: Option<Box<dyn CompactionPolicy>> = match self {
            AsRecorded::ClaudeCode { threshold, .. } => {
                Some(Box::new(ClaudeCode::recorded(ctx, *threshold)))
            }
            AsRecorded::Mask { window } => Some(Box::new(MaskObservations::new(ctx, *window))),
            AsRecorded::Openhands {
                max_size,
                keep_first,
            } => Some(Box::new(OpenHands::new(ctx, *max_size, *keep_first))),
            AsRecorded::Codex { limit } => Some(Box::new(Codex::at_limit(ctx, *limit))),
            AsRecorded::Adk { .. } | AsRecorded::Nothing { .. } => None,
        };
        super::as_ran::wrap(ctx, rule)
    }

    /// ADK's engine config for an ADK setting (`None` for any other rule, replayed by
    /// [`AsRecorded::build`]'s policy, or for no compaction).
    pub fn engine_config(&self) -> Option<crate::engine::Config> {
        let AsRecorded::Adk {
            interval, overlap, ..
        } = self
        else {
            return None;
        };
        let c = crate::settings::Compaction {
            after_invocations: Some(*interval),
            overlap: Some(*overlap),
            ..Default::default()
        };
        Some(crate::engine::Config::from_setting(
            &c,
            crate::engine::UsageMode::Adjust,
        ))
    }

    /// The threshold a token-triggered rule fires at (what a fit replaces).
    pub fn threshold(&self) -> Option<u64> {
        match self {
            AsRecorded::ClaudeCode { threshold, .. } => Some(*threshold),
            AsRecorded::Codex { limit } => Some(*limit),
            _ => None,
        }
    }

    /// The same rule at a fitted threshold, and the setting that threshold implies.
    pub fn fitted(&self, threshold: u64) -> Option<(AsRecorded, String)> {
        match self {
            AsRecorded::ClaudeCode { rule, version, .. } => {
                let reserve_buffer = rule.map_or(33_000, |r| r.reserve + r.buffer);
                let window = rule.map_or(AUTO_COMPACT_WINDOW, |r| r.window);
                let effective = window - rule.map_or(20_000, |r| r.reserve);
                let implied = format!(
                    "auto-compact window {} (CLAUDE_CODE_AUTO_COMPACT_WINDOW), or \
                     CLAUDE_AUTOCOMPACT_PCT_OVERRIDE={} on the {window} window",
                    threshold + reserve_buffer,
                    (threshold * 100).div_ceil(effective.max(1))
                );
                let fitted = AsRecorded::ClaudeCode {
                    threshold,
                    rule: None,
                    version: version.clone(),
                };
                Some((fitted, implied))
            }
            AsRecorded::Codex { .. } => Some((
                AsRecorded::Codex { limit: threshold },
                format!("model_auto_compact_token_limit = {threshold}"),
            )),
            _ => None,
        }
    }
}

/// The policy `session`'s framework ran with, as its transcript records it.
pub fn as_recorded(session: &Session) -> AsRecorded {
    let Some(p) = &session.recorded_policy else {
        return AsRecorded::Nothing {
            why: "the transcript records no compaction setting".into(),
        };
    };
    match &p.rule {
        PolicyRule::ClaudeCodeAuto { .. } => claude_code(session),
        PolicyRule::SweAgent { processors, .. } => swe_agent(processors),
        PolicyRule::Openhands(c) => match c.kind.as_str() {
            "LLMSummarizingCondenser" | "llm" => AsRecorded::Openhands {
                max_size: c.max_size.unwrap_or(OPENHANDS_MAX_SIZE),
                keep_first: c.keep_first.unwrap_or(OPENHANDS_KEEP_FIRST),
            },
            other => AsRecorded::Nothing {
                why: format!("OpenHands condenser `{other}` is not modelled"),
            },
        },
        PolicyRule::Codex {
            auto_compact_token_limit: Some(limit),
            ..
        } => AsRecorded::Codex { limit: *limit },
        PolicyRule::Codex { .. } => AsRecorded::Nothing {
            why: "the rollout records no model_auto_compact_token_limit".into(),
        },
        PolicyRule::Adk {
            compaction_interval: Some(interval),
            overlap_size,
        } => AsRecorded::Adk {
            interval: *interval,
            overlap: overlap_size.unwrap_or(0),
            overlap_implied: overlap_size.is_some(),
        },
        PolicyRule::Adk { overlap_size, .. } => AsRecorded::Nothing {
            why: format!(
                "ADK compaction events imply no single compaction_interval (overlap_size={})",
                opt(*overlap_size)
            ),
        },
    }
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "?".to_string(), |x| x.to_string())
}

/// Claude Code: the rule of the version it ran under the settings it records
/// ([`session_rule`], the one a sweep's `claude-code` reads).
fn claude_code(session: &Session) -> AsRecorded {
    let Some(version) = session_version(session) else {
        return AsRecorded::Nothing {
            why: "Claude Code without a recorded version".into(),
        };
    };
    let Some(cli) = session_rule(session) else {
        return AsRecorded::Nothing {
            why: format!("Claude Code version `{version}` does not parse"),
        };
    };
    let rule = VersionRule::from_rule(&cli);
    let Some(threshold) = cli.threshold() else {
        return AsRecorded::Nothing {
            why: format!(
                "Claude Code {version}: auto-compact off (DISABLE_COMPACT or \
                 DISABLE_AUTO_COMPACT in the recorded settings, or autoCompactEnabled shown \
                 off)"
            ),
        };
    };
    if auto_compact_off(session, threshold) {
        return AsRecorded::Nothing {
            why: format!(
                "Claude Code {version}: auto-compact off (the context passed {threshold} with \
                 no automatic compaction)"
            ),
        };
    }
    AsRecorded::ClaudeCode {
        threshold,
        rule: Some(rule),
        version,
    }
}

/// The user turned auto-compact off (`autoCompactEnabled: false`, where the transcript does
/// not show it: `claude_code_settings` reads it where it does): no automatic compaction, yet the size Claude Code checked before a request
/// (`policy::claude_code_size`) reached the threshold. (A last response past it is no sign:
/// no request followed it, so nothing was checked.)
fn auto_compact_off(session: &Session, threshold: u64) -> bool {
    let auto = session
        .recorded_compactions
        .iter()
        .any(|c| c.trigger.as_deref() == Some("auto") && !c.is_micro());
    !auto
        && crate::policy::claude_code_size::checked_sizes(session)
            .into_iter()
            .flatten()
            .any(|size| size >= threshold)
}

/// SWE-agent: `last_n_observations` is modelled; any other processor is named.
fn swe_agent(processors: &[HistoryProcessor]) -> AsRecorded {
    let window = processors.iter().find_map(|p| match p {
        HistoryProcessor::LastNObservations { n } => Some(*n),
        HistoryProcessor::Other { .. } => None,
    });
    match window {
        Some(window) => AsRecorded::Mask { window },
        None if processors.is_empty() => AsRecorded::Nothing {
            why: "SWE-agent config lists no history processor".into(),
        },
        None => AsRecorded::Nothing {
            why: format!(
                "SWE-agent history processors not modelled: {}",
                processors
                    .iter()
                    .map(|p| match p {
                        HistoryProcessor::Other { name, .. } => name.as_str(),
                        HistoryProcessor::LastNObservations { .. } => "last_n_observations",
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
    }
}
