//! `anthropic-compaction`: Anthropic's server-side compaction (`compact_20260112`, beta
//! `compact-2026-01-12`). When a request's input tokens exceed `trigger` (default 150,000,
//! at least 50,000), the API summarizes the conversation into a `compaction` block and
//! continues the response from it; on later requests it drops every block before that
//! block. So the whole history before the request that exceeds the trigger is replaced by
//! one summary, made before the response (the request waits for it).

use super::{At, CompactionPolicy, Ctx, Decision};

pub struct AnthropicCompaction {
    /// Input tokens above which the API compacts.
    pub trigger: u64,
}

impl CompactionPolicy for AnthropicCompaction {
    fn decide(&mut self, _ctx: &Ctx<'_>, at: &At) -> Decision {
        if at.prompt > self.trigger && at.event > at.cut {
            Decision::summarize_all(at)
        } else {
            Decision::Keep
        }
    }
}
