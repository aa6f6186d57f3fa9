//! `langchain`: LangChain v1 `SummarizationMiddleware`
//! (`libs/langchain_v1/langchain/agents/middleware/summarization.py`). Before a model call,
//! when `trigger` is met (`tokens` >= N, `messages` >= N, or tokens >= `fraction` of the
//! model's `max_input_tokens`), every message but the newest `keep` (default 20 messages) is
//! replaced by one summary message; the cut moves back so that a tool result is not kept
//! without the call that asked for it.

use super::{At, CompactionPolicy, Ctx, Decision, LcTrigger};

pub struct LangChain {
    trigger: LcTrigger,
    keep: u64,
    window: Option<u64>,
    msgs: Vec<u32>,
    before: usize,
}

impl LangChain {
    pub fn new(ctx: &Ctx<'_>, trigger: LcTrigger, keep: u64) -> Self {
        LangChain {
            trigger,
            keep,
            window: ctx.window,
            msgs: (0..ctx.sizes.n)
                .filter(|&e| ctx.is_message(e))
                .map(|e| e as u32)
                .collect(),
            before: 0,
        }
    }
}

impl CompactionPolicy for LangChain {
    fn decide(&mut self, ctx: &Ctx<'_>, at: &At) -> Decision {
        while self.msgs.get(self.before).is_some_and(|&e| e < at.event) {
            self.before += 1;
        }
        let fire = match self.trigger {
            LcTrigger::Tokens(n) => at.prompt >= n,
            LcTrigger::Messages(n) => at.messages >= n,
            LcTrigger::FractionPermille(p) => {
                self.window.is_some_and(|w| at.prompt * 1000 >= w * p)
            }
        };
        let keep = self.keep as usize;
        if !fire || self.before <= keep {
            return Decision::Keep;
        }
        let mut i = self.before - keep;
        // a kept tool result keeps the call before it
        while i > 0 && ctx.is_result(self.msgs[i] as usize) {
            i -= 1;
        }
        let cut = self.msgs[i];
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
}
