//! `clear-tool-results`: Anthropic context editing `clear_tool_uses_20250919` (and LangChain's
//! `ClearToolUsesEdit`, same defaults). The client sends the whole history; once the prompt
//! passes `trigger`, the oldest tool results are replaced by a placeholder, keeping the newest
//! `keep`; with `clear_at_least` > 0 nothing is cleared unless that many tokens would be.
//! No summarizer call.

use super::{At, Clearable, CompactionPolicy, Ctx, Decision};
use crate::transcript::Part;

/// Tokens the placeholder (`[cleared]`) leaves in place of a result (modelled).
pub const PLACEHOLDER_TOKENS: u64 = 3;

pub struct ClearToolResults {
    results: Clearable,
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
        let excluded = |e: usize| {
            !exclude.is_empty()
                && ctx.session.events[e].parts.iter().any(|p| {
                    matches!(p, Part::ToolResponse { name, .. } if exclude.iter().any(|x| x == name))
                })
        };
        let cands = (0..ctx.sizes.n)
            .filter(|&e| ctx.is_result(e) && !excluded(e))
            .map(|e| e as u32)
            .collect();
        ClearToolResults {
            results: Clearable::new(ctx, cands, PLACEHOLDER_TOKENS),
            trigger,
            keep,
            clear_at_least,
            before: 0,
        }
    }
}

impl CompactionPolicy for ClearToolResults {
    fn clearable(&self) -> Option<&Clearable> {
        Some(&self.results)
    }

    fn decide(&mut self, _ctx: &Ctx<'_>, at: &At) -> Decision {
        let cands = &self.results.events;
        while cands.get(self.before).is_some_and(|&e| e < at.event) {
            self.before += 1;
        }
        // the server sees the whole prompt the client sends: the trigger reads that
        if at.baseline_prompt <= self.trigger {
            return Decision::Clear(0);
        }
        let n = self.before.saturating_sub(self.keep as usize);
        let freed = self.results.prefix[n].saturating_sub(n as u64 * PLACEHOLDER_TOKENS);
        if self.clear_at_least > 0 && freed < self.clear_at_least {
            return Decision::Clear(0);
        }
        Decision::Clear(n)
    }
}
