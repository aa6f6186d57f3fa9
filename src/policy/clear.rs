//! `clear-tool-results`: Anthropic context editing `clear_tool_uses_20250919` (and LangChain's
//! `ClearToolUsesEdit`, same defaults). The client sends the whole history; once the prompt
//! passes `trigger`, the oldest tool results are replaced by a placeholder, keeping the newest
//! `keep`; with `clear_at_least` > 0 nothing is cleared unless that many tokens would be.
//! No summarizer call.

use super::driver::response_tokens;
use super::{At, CompactionPolicy, Ctx, Decision};
use crate::transcript::Part;

/// Tokens the placeholder (`[cleared]`) leaves in place of a result (modelled).
pub const PLACEHOLDER_TOKENS: u64 = 3;

pub struct ClearToolResults {
    cands: Vec<u32>,
    /// `cp[j]`: tokens of the first `j` candidates.
    cp: Vec<u64>,
    trigger: u64,
    keep: u64,
    clear_at_least: u64,
    before: usize,
}

impl ClearToolResults {
    pub fn new(
        ctx: &Ctx<'_>,
        trigger: u64,
        keep: u64,
        clear_at_least: u64,
        exclude: &[String],
    ) -> Self {
        let mut cands = Vec::new();
        let mut cp = vec![0u64];
        for e in 0..ctx.sizes.n {
            if !ctx.is_result(e) {
                continue;
            }
            let excluded = !exclude.is_empty()
                && ctx.session.events[e].parts.iter().any(|p| {
                    matches!(p, Part::ToolResponse { name, .. } if exclude.iter().any(|x| x == name))
                });
            if excluded {
                continue;
            }
            cands.push(e as u32);
            cp.push(cp[cp.len() - 1] + response_tokens(ctx.sizes, e));
        }
        ClearToolResults {
            cands,
            cp,
            trigger,
            keep,
            clear_at_least,
            before: 0,
        }
    }
}

impl CompactionPolicy for ClearToolResults {
    fn clearable(&self) -> (&[u32], u64) {
        (&self.cands, PLACEHOLDER_TOKENS)
    }

    fn decide(&mut self, _ctx: &Ctx<'_>, at: &At) -> Decision {
        while self.cands.get(self.before).is_some_and(|&e| e < at.event) {
            self.before += 1;
        }
        // the server sees the whole prompt the client sends: the trigger reads that
        if at.baseline_prompt <= self.trigger {
            return Decision::Clear(0);
        }
        let n = self.before.saturating_sub(self.keep as usize);
        let freed = self.cp[n].saturating_sub(n as u64 * PLACEHOLDER_TOKENS);
        if self.clear_at_least > 0 && freed < self.clear_at_least {
            return Decision::Clear(0);
        }
        Decision::Clear(n)
    }
}
