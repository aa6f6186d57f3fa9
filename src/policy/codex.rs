//! `codex`: Codex CLI's auto-compact (openai/codex, codex-rs). It fires when the prompt
//! reaches `auto_compact_token_limit`: the configured limit, clamped to 90 % of the context
//! window (the default too); the new history is the newest user messages up to the retained
//! budget (64,000 tokens on remote compaction v2, Codex's default for OpenAI; 20,000 on the
//! local path; the oldest kept one cut to fit) plus the summary.

use super::{At, CompactionPolicy, Ctx, Decision};
use crate::settings::policy::{CODEX_MAX_PCT, CODEX_RETAIN_LOCAL};

/// `COMPACT_USER_MESSAGE_MAX_TOKENS` (codex-rs/core/src/compact.rs): the local path's budget,
/// what a rollout's recorded limit is replayed with.
pub const USER_MESSAGE_BUDGET: u64 = CODEX_RETAIN_LOCAL;

pub struct Codex {
    limit: Option<u64>,
    /// Tokens of user messages the new history keeps.
    budget: u64,
    users: Vec<u32>,
    before: usize,
}

impl Codex {
    /// At `pct` % of the window (Codex clamps it to 90 %), keeping `retain` tokens of user
    /// messages.
    pub fn new(ctx: &Ctx<'_>, pct: u64, retain: u64) -> Self {
        Codex {
            limit: ctx.window.map(|w| w * pct.min(CODEX_MAX_PCT) / 100),
            budget: retain,
            users: ctx.user_messages(),
            before: 0,
        }
    }

    /// At a token limit the rollout records (`model_auto_compact_token_limit`) or one fitted.
    pub fn at_limit(ctx: &Ctx<'_>, limit: u64) -> Self {
        Codex {
            limit: Some(limit),
            budget: USER_MESSAGE_BUDGET,
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
        let mut left = self.budget;
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
