//! Other frameworks' compaction policies, replayed on the same per-event arrays as the ADK
//! engine (docs/policies.md). The engine stays google-adk 2.13.0 exactly; a policy is a
//! model of another framework's rule, written beside it.
//!
//! Every policy produces the engine's [`Replay`] shape (requests with prompt, history,
//! summary and hidden tokens, shared prefixes for caching, summarizer calls, hidden
//! raw-event intervals), so the cost layer prices it and measures its lost detail unchanged.
//! A policy says only what happens before each model request ([`CompactionPolicy::decide`]);
//! [`driver`] walks the requests once and builds the rows, in time linear in the session.

pub mod anthropic;
pub mod claude_code;
/// Claude Code's auto-compact threshold from its CLI's mechanism.
pub mod claude_code_rule;
/// The size Claude Code checks against it.
pub mod claude_code_size;
pub mod clear;
pub mod codex;
pub mod driver;
pub mod gemini_cli;
pub mod langchain;
pub mod mask;
pub mod measured;
pub mod microcompact;
pub mod openhands;
pub mod turn_summary;

use crate::engine::{Replay, Summarizer};
use crate::tokens::sizes::SessionSizes;
use crate::transcript::Session;

pub use driver::replay;

pub use crate::settings::policy::{
    adk_expressible, summary_family_of, GeminiProfile, LcTrigger, PolicySpec, FAMILIES,
};

impl PolicySpec {
    /// A fresh rule object for one replay.
    pub fn build(&self, ctx: &Ctx<'_>) -> Box<dyn CompactionPolicy> {
        match self {
            PolicySpec::ClearToolResults {
                trigger,
                keep,
                clear_at_least,
                exclude_tools,
            } => Box::new(clear::ClearToolResults::new(
                ctx,
                *trigger,
                *keep,
                *clear_at_least,
                exclude_tools,
            )),
            PolicySpec::MaskObservations { window } => {
                Box::new(mask::MaskObservations::new(ctx, *window))
            }
            PolicySpec::ClaudeCode { pct, window } => {
                Box::new(claude_code::ClaudeCode::new(ctx, *pct, *window))
            }
            PolicySpec::Codex { pct, retain } => Box::new(codex::Codex::new(ctx, *pct, *retain)),
            PolicySpec::Openhands {
                max_size,
                keep_first,
                max_tokens,
            } => Box::new(
                openhands::OpenHands::new(ctx, *max_size, *keep_first).with_max_tokens(*max_tokens),
            ),
            PolicySpec::Langchain {
                trigger,
                keep,
                trim,
            } => Box::new(langchain::LangChain::new(ctx, *trigger, *keep).with_trim(*trim)),
            PolicySpec::GeminiCli {
                threshold_pct,
                profile,
            } => Box::new(gemini_cli::GeminiCli::new(ctx, *threshold_pct, *profile)),
            PolicySpec::AnthropicCompaction { trigger } => {
                Box::new(anthropic::AnthropicCompaction { trigger: *trigger })
            }
            PolicySpec::TurnSummary { n, m } => {
                Box::new(turn_summary::TurnSummary::new(ctx, *n, *m))
            }
            PolicySpec::Hybrid { n, m, window } => {
                Box::new(turn_summary::Hybrid::new(ctx, *n, *m, *window))
            }
            // Which rule depends on what the session records, read above this room
            // (`backtest::as_recorded`); the sweep builds that rule itself. Alone: none.
            PolicySpec::AsRecorded => Box::new(NoCompaction),
        }
    }
}

/// What a policy may read: the session's arrays and text, and the agent model's window.
pub struct Ctx<'a> {
    pub sizes: &'a SessionSizes,
    pub session: &'a Session,
    /// `max_input_tokens` of the agent model (pricing table); `None`: unknown, so the
    /// window-relative policies never fire (`claude-code` carries its own window).
    pub window: Option<u64>,
}

impl Ctx<'_> {
    /// A tool result: the event carries a function response.
    pub fn is_result(&self, e: usize) -> bool {
        self.sizes.has_resps[e]
    }

    /// A user message: the user's own content, not a tool result.
    pub fn is_user_message(&self, e: usize) -> bool {
        let s = self.sizes;
        s.author[e] == s.user_author && s.has_content[e] && !s.has_resps[e]
    }

    /// The session's user messages, in order (what Codex and Gemini CLI keep or split at).
    pub fn user_messages(&self) -> Vec<u32> {
        (0..self.sizes.n)
            .filter(|&e| self.is_user_message(e))
            .map(|e| e as u32)
            .collect()
    }

    /// A message of the framework's own list (events with content a model reads).
    pub fn is_message(&self, e: usize) -> bool {
        self.sizes.has_content[e] && self.sizes.visible[e]
    }
}

/// Tool-result events a clearing policy can replace by a placeholder, oldest first: their
/// tokens as prefix sums (computed once, for the policy's rule and the driver's rows), and
/// the tokens each placeholder leaves.
#[derive(Debug, Clone)]
pub struct Clearable {
    pub events: Vec<u32>,
    /// `prefix[j]`: tokens of the first `j` results' responses.
    pub prefix: Vec<u64>,
    pub placeholder: u64,
}

/// None: what a policy that clears nothing has.
impl Default for Clearable {
    fn default() -> Self {
        Clearable {
            events: Vec::new(),
            prefix: vec![0],
            placeholder: 0,
        }
    }
}

impl Clearable {
    pub fn new(ctx: &Ctx<'_>, events: Vec<u32>, placeholder: u64) -> Self {
        let mut prefix = Vec::with_capacity(events.len() + 1);
        prefix.push(0u64);
        for &e in &events {
            let last = prefix[prefix.len() - 1];
            prefix.push(last + driver::response_tokens(ctx.sizes, e as usize));
        }
        Clearable {
            events,
            prefix,
            placeholder,
        }
    }
}

/// What the driver tells a policy before model request `q`.
#[derive(Debug, Clone, Copy)]
pub struct At {
    /// 0-based request number.
    pub q: usize,
    /// Its model event; events `0..event` exist.
    pub event: u32,
    /// The prompt without any compaction (what a client that keeps everything sends).
    pub baseline_prompt: u64,
    /// The prompt under the policy's state so far (before this request's decision).
    pub prompt: u64,
    /// Messages in the current view (a summary counts as one).
    pub messages: u64,
    /// Raw events `0..head` are kept verbatim at the start; `cut..event` at the end.
    pub head: u32,
    pub cut: u32,
    /// Chars of the summary carried (0 without one).
    pub summary_chars: u64,
    /// Tokens of the summary carried (0 without one).
    pub summary_tokens: u64,
}

/// A policy's decision before one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Keep the state.
    Keep,
    /// Tool results: the first `n` of [`CompactionPolicy::clearable`] are placeholders in
    /// this request (the rest verbatim).
    Clear(usize),
    /// Replace raw events `head..cut` (minus `keep`) by one summary; `passes` summarizer
    /// calls, each later one reading the one before with the same events (a verification).
    Summarize {
        head: u32,
        cut: u32,
        /// Events in `head..cut` re-attached verbatim after the summary, ascending, with
        /// the tokens kept of each (a message cut to fit counts its kept part).
        keep: Vec<(u32, u64)>,
        passes: u32,
    },
}

impl Decision {
    /// Raw events `0..cut` replaced by one summary (seeded with the one before), or `Keep`
    /// when that summarizes nothing the current summary does not already stand for.
    pub fn summarize_to(at: &At, cut: u32) -> Decision {
        if cut <= at.cut {
            return Decision::Keep;
        }
        Decision::Summarize {
            head: 0,
            cut,
            keep: Vec::new(),
            passes: 1,
        }
    }

    /// The whole history before request `at` replaced by one summary (Claude Code's compact).
    pub fn summarize_all(at: &At) -> Decision {
        Decision::Summarize {
            head: 0,
            cut: at.event,
            keep: Vec::new(),
            passes: 1,
        }
    }
}

/// One framework's rule: when it fires, what the next prompt holds, how many summarizer
/// calls it makes. Built fresh per replay ([`PolicySpec::build`]), called once per model
/// request in order, so it may keep cursors that only move forward.
pub trait CompactionPolicy {
    /// Tool results this policy can replace by a placeholder (clearing policies only).
    fn clearable(&self) -> Option<&Clearable> {
        None
    }

    /// The decision before request `at`.
    fn decide(&mut self, ctx: &Ctx<'_>, at: &At) -> Decision;

    /// Whether a new summary joins the ones carried (SWE-agent's `summarize_every_n_turns`
    /// without static checkpointing) instead of replacing them; it still reads only the
    /// newest as its seed.
    fn summaries_accumulate(&self) -> bool {
        false
    }

    /// Tokens of the replaced events the summarizer reads, newest first (LangChain's
    /// `trim_tokens_to_summarize`); `None`: it reads them all, and the summary before them.
    fn summarizer_reads(&self) -> Option<u64> {
        None
    }
}

/// No compaction as a policy: what a session that records no setting is replayed under.
pub struct NoCompaction;

impl CompactionPolicy for NoCompaction {
    fn decide(&mut self, _ctx: &Ctx<'_>, _at: &At) -> Decision {
        Decision::Keep
    }
}

/// Replay `session` under `spec` with `summarizer` (the one `evaluate` wraps).
pub fn replay_spec(spec: &PolicySpec, ctx: &Ctx<'_>, summarizer: &dyn Summarizer) -> Replay {
    let mut policy = spec.build(ctx);
    driver::replay(ctx, policy.as_mut(), summarizer)
}

#[cfg(test)]
mod tests;
