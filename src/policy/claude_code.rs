//! `claude-code`: Claude Code's auto-compact (closed source; the rule as its public issues
//! and changelog describe it, docs/policies.md). It fires when the prompt reaches
//! `window - min(max output, 20,000) - 13,000` (167,000 on a 200,000 window); the `pct`
//! override (`CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`) gives `floor(effective window × pct / 100)`
//! and can only lower it. The whole history is replaced by one summary; the files and todo
//! list Claude Code re-attaches are not modelled.

use super::{At, CompactionPolicy, Ctx, Decision};

/// `min(max output, 20,000)`: the pricing table has no max output; every Claude model in it
/// writes at least 20,000, so the reserve is 20,000.
pub const OUTPUT_RESERVE: u64 = 20_000;
/// The auto-compact buffer below the effective window.
pub const BUFFER: u64 = 13_000;

pub struct ClaudeCode {
    threshold: Option<u64>,
}

/// The window Claude Code's auto-compact reads for the Claude models of the corpus: 200,000,
/// whatever the API allows (the 1M window is opt-in; `CLAUDE_CODE_AUTO_COMPACT_WINDOW` /
/// `autoCompactWindow` change it). The price table's `max_input_tokens` is the API's maximum.
pub const AUTO_COMPACT_WINDOW: u64 = 200_000;

/// The first CLI version whose output reserve is capped at 20,000 (CHANGELOG 2.1.21: "Fixed
/// auto-compact triggering too early on models with large output token limits").
pub const RESERVE_CAP_SINCE: (u64, u64, u64) = (2, 1, 21);

/// Claude Code's auto-compact rule as one CLI version runs it (docs/policies.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionRule {
    /// The window the threshold is taken from.
    pub window: u64,
    /// Tokens reserved for the model's output: its max output, capped at [`OUTPUT_RESERVE`]
    /// from 2.1.21 on.
    pub reserve: u64,
    pub buffer: u64,
}

impl VersionRule {
    /// The rule of CLI `version` (`2.0.57`) for `model` on `window`; `None` for a version
    /// that does not parse.
    pub fn of(version: &str, model: Option<&str>, window: u64) -> Option<VersionRule> {
        let v = parse_version(version)?;
        let max_output = max_output(model);
        let reserve = if v >= RESERVE_CAP_SINCE {
            max_output.min(OUTPUT_RESERVE)
        } else {
            max_output
        };
        Some(VersionRule {
            window,
            reserve,
            buffer: BUFFER,
        })
    }

    /// The prompt size at which it compacts.
    pub fn threshold(&self) -> u64 {
        self.window
            .saturating_sub(self.reserve)
            .saturating_sub(self.buffer)
    }

    /// `window − reserve − buffer = …`, for the report.
    pub fn text(&self) -> String {
        format!(
            "{} - {} reserve - {} buffer = {}",
            self.window,
            self.reserve,
            self.buffer,
            self.threshold()
        )
    }
}

/// `major.minor.patch` of a CLI version string.
pub fn parse_version(v: &str) -> Option<(u64, u64, u64)> {
    let mut it = v.trim().split('.').map(|x| x.trim().parse::<u64>().ok());
    Some((it.next()??, it.next()??, it.next().flatten().unwrap_or(0)))
}

/// The max output Claude Code requests of a model (its default `max_tokens`): 64,000 for the
/// Claude 4.5+ models (Opus 4.5 and later, Sonnet 4.5, Haiku 4.5), 32,000 for Opus 4/4.1 and
/// unknown models. Before 2.1.21 the whole of it was reserved.
pub fn max_output(model: Option<&str>) -> u64 {
    let m = model.unwrap_or("");
    let older_opus = m.contains("opus-4-1") || m.contains("opus-4-2025") || m == "claude-opus-4";
    if m.contains("claude") && !older_opus && (m.contains("-4-") || m.contains("-5")) {
        64_000
    } else {
        32_000
    }
}

/// The auto-compact threshold for a window and an optional percentage override.
pub fn threshold(window: u64, pct: Option<u64>) -> u64 {
    let effective = window.saturating_sub(OUTPUT_RESERVE);
    let default = effective.saturating_sub(BUFFER);
    match pct.filter(|&p| p > 0 && p <= 100) {
        Some(p) => (effective * p / 100).min(default),
        None => default,
    }
}

impl ClaudeCode {
    pub fn new(ctx: &Ctx<'_>, pct: Option<u64>) -> Self {
        ClaudeCode {
            threshold: ctx.window.map(|w| threshold(w, pct)),
        }
    }

    /// At a known threshold (a version's rule, or one fitted from recorded compactions).
    pub fn at(threshold: u64) -> Self {
        ClaudeCode {
            threshold: Some(threshold),
        }
    }
}

impl CompactionPolicy for ClaudeCode {
    fn decide(&mut self, _ctx: &Ctx<'_>, at: &At) -> Decision {
        match self.threshold {
            Some(t) if at.prompt >= t => Decision::Summarize {
                head: 0,
                cut: at.event,
                keep: Vec::new(),
                passes: 1,
            },
            _ => Decision::Keep,
        }
    }
}
