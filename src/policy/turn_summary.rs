//! `turn-summary` and `hybrid`: SWE-agent's `summarize_every_n_turns` history processor as
//! The Complexity Trap ran it (arXiv 2508.21433; `sweagent/agent/history_processors.py`
//! `SummarizeEveryNTurns` of Recursive-Safeguarding/the-complexity-trap, commit `adfaa1a`),
//! alone and under `last_n_observations` (docs/policies.md).
//!
//! A turn is one model request with what follows it up to the next (SWE-agent: an action and
//! its observation). Once `n + m` turns are unsummarized, the oldest `n` of them become one
//! summary, written by one summarizer call that reads the previous summary (or, the first
//! time, only the task) and those `n` turns raw; the last `m` stay raw. What the agent reads
//! before the first request (system prompt, task) is never summarized. `turn-summary` (no
//! static checkpointing) keeps every summary in the prompt, one after the other; the hybrid
//! (`enable_static_checkpointing`) keeps only the newest, and masks every observation older
//! than the last `window` turns, the summary's raw turns included as the masking runs after.

use super::mask::MaskObservations;
use super::{At, Clearable, CompactionPolicy, Ctx, Decision};

/// The `n`/`m` rule: turns summarized so far and where each turn starts.
pub struct TurnSummary {
    n: usize,
    m: usize,
    /// Event of each model request (the start of its turn).
    starts: Vec<u32>,
    /// Turns already in a summary.
    done: usize,
    accumulate: bool,
}

impl TurnSummary {
    pub fn new(ctx: &Ctx<'_>, n: u64, m: u64) -> Self {
        TurnSummary {
            n: n.max(1) as usize,
            m: m as usize,
            starts: (0..ctx.sizes.n)
                .filter(|&e| ctx.sizes.model_request[e])
                .map(|e| e as u32)
                .collect(),
            done: 0,
            accumulate: true,
        }
    }

    /// The firing before request `at`: the oldest `n` unsummarized turns, or `None`.
    fn fire(&mut self, at: &At) -> Option<Decision> {
        // A summary that was not written (the summarizer failed or returned nothing) leaves
        // its turns unsummarized, as SWE-agent keeps them: the next request tries again.
        while self.done > 0 && self.starts.get(self.done).is_some_and(|&e| at.cut < e) {
            self.done = self.done.saturating_sub(self.n);
        }
        if at.q < self.done + self.n + self.m {
            return None;
        }
        let head = *self.starts.first()?;
        let cut = *self.starts.get(self.done + self.n)?;
        self.done += self.n;
        Some(Decision::Summarize {
            head,
            cut,
            keep: Vec::new(),
            passes: 1,
        })
    }
}

impl CompactionPolicy for TurnSummary {
    fn decide(&mut self, _ctx: &Ctx<'_>, at: &At) -> Decision {
        self.fire(at).unwrap_or(Decision::Keep)
    }

    fn summaries_accumulate(&self) -> bool {
        self.accumulate
    }
}

/// The hybrid: the static summary when it fires, observation masking otherwise.
pub struct Hybrid {
    summary: TurnSummary,
    mask: MaskObservations,
}

impl Hybrid {
    pub fn new(ctx: &Ctx<'_>, n: u64, m: u64, window: u64) -> Self {
        let mut summary = TurnSummary::new(ctx, n, m);
        summary.accumulate = false;
        Hybrid {
            summary,
            mask: MaskObservations::new(ctx, window),
        }
    }
}

impl CompactionPolicy for Hybrid {
    fn clearable(&self) -> Option<&Clearable> {
        self.mask.clearable()
    }

    fn decide(&mut self, ctx: &Ctx<'_>, at: &At) -> Decision {
        // The masking's cursor moves on either way; at a firing every observation it masks
        // lies in the summarized turns (the `m` kept turns are the newest), so the summary
        // alone says what the request holds.
        let masked = self.mask.decide(ctx, at);
        self.summary.fire(at).unwrap_or(masked)
    }
}
