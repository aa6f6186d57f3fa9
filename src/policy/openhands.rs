//! `openhands`: OpenHands V1 SDK `LLMSummarizingCondenser` (openhands-sdk,
//! `context/condenser/llm_summarizing_condenser.py`). When the view holds more than
//! `max_size` events (default 240), it keeps the first `keep_first` (default 2) and the
//! newest `max_size // 2 - keep_first - 1`, so that with the summary the view holds
//! `max_size // 2`, and summarizes the middle (the previous summary included). With a token
//! limit (`max_tokens`, unset by default) it also condenses when the view's tokens exceed it,
//! forgetting the shortest prefix after the head whose tokens pass `total - max_tokens / 2`;
//! with both reasons the stricter (smaller) tail wins. An event here is a transcript event
//! with content; atomic-unit boundaries are not modelled.

use super::{At, CompactionPolicy, Ctx, Decision};

pub struct OpenHands {
    max_size: u64,
    keep_first: u64,
    max_tokens: Option<u64>,
    /// Events with content, ascending.
    msgs: Vec<u32>,
    before: usize,
}

impl OpenHands {
    pub fn new(ctx: &Ctx<'_>, max_size: u64, keep_first: u64) -> Self {
        OpenHands {
            max_size,
            keep_first,
            max_tokens: None,
            msgs: (0..ctx.sizes.n)
                .filter(|&e| ctx.is_message(e))
                .map(|e| e as u32)
                .collect(),
            before: 0,
        }
    }

    /// Condense also when the view's tokens exceed `max_tokens`.
    pub fn with_max_tokens(mut self, max_tokens: Option<u64>) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Where the token reason cuts: after the shortest prefix of the view past the head (the
    /// summary, then raw events from `from`) whose tokens exceed `total - max / 2`; `None`
    /// when the summary alone does.
    fn token_cut(&self, ctx: &Ctx<'_>, at: &At, max: u64, from: u32) -> Option<u32> {
        let s = ctx.sizes;
        let tp = &s
            .baseline
            .get_or_init(|| crate::engine::contents::baseline(s))
            .tok_prefix;
        let reduce = at.prompt.saturating_sub(max / 2);
        if at.summary_tokens > reduce {
            return None;
        }
        let base = tp[from as usize];
        let lo = self.msgs.partition_point(|&e| e < from).min(self.before);
        let msgs = &self.msgs[lo..self.before];
        // first message whose prefix (through it) passes the reduction
        let j = msgs.partition_point(|&e| at.summary_tokens + tp[e as usize + 1] - base <= reduce);
        Some(msgs.get(j + 1).copied().unwrap_or(at.event))
    }
}

/// Events kept from the tail: `max_size // 2 - keep_first - 1`.
pub fn tail(max_size: u64, keep_first: u64) -> u64 {
    (max_size / 2).saturating_sub(keep_first + 1)
}

impl CompactionPolicy for OpenHands {
    fn decide(&mut self, ctx: &Ctx<'_>, at: &At) -> Decision {
        while self.msgs.get(self.before).is_some_and(|&e| e < at.event) {
            self.before += 1;
        }
        let head = match self.keep_first as usize {
            0 => 0,
            f => self.msgs.get(f - 1).map_or(0, |&e| e + 1),
        };
        let mut cut = None;
        if at.messages > self.max_size {
            let tail = tail(self.max_size, self.keep_first) as usize;
            if tail > 0 && self.before >= tail {
                cut = Some(self.msgs[self.before - tail]);
            }
        }
        if let Some(max) = self.max_tokens.filter(|&m| at.prompt > m) {
            let from = if at.summary_tokens > 0 { at.cut } else { head };
            if let Some(c) = self.token_cut(ctx, at, max, from.max(head)) {
                cut = Some(cut.map_or(c, |e| e.max(c)));
            }
        }
        let Some(cut) = cut.filter(|&c| c > head && c > at.cut) else {
            return Decision::Keep;
        };
        Decision::Summarize {
            head,
            cut,
            keep: Vec::new(),
            passes: 1,
        }
    }
}
