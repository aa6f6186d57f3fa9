//! `openhands`: OpenHands V1 SDK `LLMSummarizingCondenser` (openhands-sdk,
//! `context/condenser/llm_summarizing_condenser.py`). When the view holds more than
//! `max_size` events (default 240), it keeps the first `keep_first` (default 2) and the
//! newest `max_size // 2 - keep_first - 1`, so that with the summary the view holds
//! `max_size // 2`, and summarizes the middle (the previous summary included). An event here
//! is a transcript event with content; the condenser's token limit (`max_tokens`, unset by
//! default) and atomic-unit boundaries are not modelled.

use super::{At, CompactionPolicy, Ctx, Decision};

pub struct OpenHands {
    max_size: u64,
    keep_first: u64,
    /// Events with content, ascending.
    msgs: Vec<u32>,
    before: usize,
}

impl OpenHands {
    pub fn new(ctx: &Ctx<'_>, max_size: u64, keep_first: u64) -> Self {
        OpenHands {
            max_size,
            keep_first,
            msgs: (0..ctx.sizes.n)
                .filter(|&e| ctx.is_message(e))
                .map(|e| e as u32)
                .collect(),
            before: 0,
        }
    }
}

/// Events kept from the tail: `max_size // 2 - keep_first - 1`.
pub fn tail(max_size: u64, keep_first: u64) -> u64 {
    (max_size / 2).saturating_sub(keep_first + 1)
}

impl CompactionPolicy for OpenHands {
    fn decide(&mut self, _ctx: &Ctx<'_>, at: &At) -> Decision {
        while self.msgs.get(self.before).is_some_and(|&e| e < at.event) {
            self.before += 1;
        }
        if at.messages <= self.max_size {
            return Decision::Keep;
        }
        let tail = tail(self.max_size, self.keep_first) as usize;
        if tail == 0 || self.before < tail {
            return Decision::Keep;
        }
        let head = match self.keep_first as usize {
            0 => 0,
            f => self.msgs.get(f - 1).map_or(0, |&e| e + 1),
        };
        let cut = self.msgs[self.before - tail];
        Decision::Summarize {
            head,
            cut,
            keep: Vec::new(),
            passes: 1,
        }
    }
}
