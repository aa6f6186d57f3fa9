//! `codex`: Codex CLI's auto-compact (openai/codex, codex-rs). It fires when the prompt
//! reaches `auto_compact_token_limit` (default 90 % of the context window); the new history
//! is the newest user messages up to 20,000 tokens (the oldest kept one cut to fit) plus the
//! summary.

use super::{At, CompactionPolicy, Ctx, Decision};

/// `COMPACT_USER_MESSAGE_MAX_TOKENS` (codex-rs/core/src/compact.rs).
pub const USER_MESSAGE_BUDGET: u64 = 20_000;

pub struct Codex {
    limit: Option<u64>,
    users: Vec<u32>,
    before: usize,
}

impl Codex {
    pub fn new(ctx: &Ctx<'_>, pct: u64) -> Self {
        Codex {
            limit: ctx.window.map(|w| w * pct / 100),
            users: ctx.user_messages(),
            before: 0,
        }
    }

    /// At a token limit the rollout records (`model_auto_compact_token_limit`) or one fitted.
    pub fn at_limit(ctx: &Ctx<'_>, limit: u64) -> Self {
        Codex {
            limit: Some(limit),
            users: ctx.user_messages(),
            before: 0,
        }
    }
}

impl CompactionPolicy for Codex {
    fn decide(&mut self, ctx: &Ctx<'_>, at: &At) -> Decision {
        while self.users.get(self.before).is_some_and(|&e| e < at.event) {
            self.before += 1;
        }
        let Some(limit) = self.limit else {
            return Decision::Keep;
        };
        if at.prompt < limit {
            return Decision::Keep;
        }
        let mut left = USER_MESSAGE_BUDGET;
        let mut keep = Vec::new();
        for &e in self.users[..self.before].iter().rev() {
            if left == 0 || e < at.cut {
                break;
            }
            let t = ctx.sizes.tokens[e as usize] as u64;
            keep.push((e, t.min(left)));
            left = left.saturating_sub(t);
        }
        keep.reverse();
        Decision::Summarize {
            head: 0,
            cut: at.event,
            keep,
            passes: 1,
        }
    }
}
