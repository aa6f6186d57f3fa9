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
