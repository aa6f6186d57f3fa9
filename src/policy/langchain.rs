//! `langchain`: LangChain v1 `SummarizationMiddleware`
//! (`libs/langchain_v1/langchain/agents/middleware/summarization.py`). Before a model call,
//! when `trigger` is met (`tokens` >= N, `messages` >= N, or tokens >= `fraction` of the
//! model's `max_input_tokens`), every message but the newest `keep` (default 20 messages) is
//! replaced by one summary message; the cut moves back so that a tool result is not kept
//! without the call that asked for it. The trigger `auto` is deepagents' default
//! (`compute_summarization_defaults`): 0.85 of the window, 170,000 tokens without one. The
//! summarizer reads only the newest `trim` tokens of what it replaces
//! (`trim_tokens_to_summarize`, 4,000 as LangChain ships it; deepagents' factory passes
//! `None`, everything).

use super::{At, CompactionPolicy, Ctx, Decision, LcTrigger};

pub struct LangChain {
    trigger: LcTrigger,
    keep: u64,
    trim: Option<u64>,
    window: Option<u64>,
    msgs: Vec<u32>,
    before: usize,
}

impl LangChain {
    pub fn new(ctx: &Ctx<'_>, trigger: LcTrigger, keep: u64) -> Self {
        LangChain {
            trigger,
            keep,
            trim: None,
            window: ctx.window,
            msgs: (0..ctx.sizes.n)
                .filter(|&e| ctx.is_message(e))
                .map(|e| e as u32)
                .collect(),
            before: 0,
        }
    }

    /// The summarizer reads only the newest `trim` tokens of the evicted messages.
    pub fn with_trim(mut self, trim: Option<u64>) -> Self {
        self.trim = trim;
        self
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
            LcTrigger::Auto => match self.window {
                Some(w) => at.prompt * 1000 >= w * LcTrigger::AUTO_PERMILLE,
                None => at.prompt >= LcTrigger::AUTO_TOKENS,
            },
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
        Decision::summarize_to(at, self.msgs[i])
    }

    fn summarizer_reads(&self) -> Option<u64> {
        self.trim
    }
}
