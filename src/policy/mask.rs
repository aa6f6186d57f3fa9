//! `mask-observations`: The Complexity Trap's observation masking (arXiv 2508.21433, on
//! SWE-agent): every tool result older than the last `window` turns is replaced by a
//! placeholder, always (no trigger). A turn is one model request; a result belongs to the
//! request that called it. No summarizer call.

use super::{At, Clearable, CompactionPolicy, Ctx, Decision};

/// Tokens of SWE-agent's placeholder ("Old environment output: (N lines omitted)"), modelled.
pub const PLACEHOLDER_TOKENS: u64 = 10;

pub struct MaskObservations {
    results: Clearable,
    /// Per candidate: model requests before it (its turn + 1).
    turn: Vec<u64>,
    window: u64,
    masked: usize,
}

impl MaskObservations {
    pub fn new(ctx: &Ctx<'_>, window: u64) -> Self {
        let (mut cands, mut turn) = (Vec::new(), Vec::new());
        let mut requests = 0u64;
        for e in 0..ctx.sizes.n {
            if ctx.is_result(e) {
                cands.push(e as u32);
                turn.push(requests);
            }
            if ctx.sizes.model_request[e] {
                requests += 1;
            }
        }
        MaskObservations {
            results: Clearable::new(ctx, cands, PLACEHOLDER_TOKENS),
            turn,
            window,
            masked: 0,
        }
    }
}

impl CompactionPolicy for MaskObservations {
    fn clearable(&self) -> Option<&Clearable> {
        Some(&self.results)
    }

    fn decide(&mut self, _ctx: &Ctx<'_>, at: &At) -> Decision {
        let q = at.q as u64;
        while self
            .turn
            .get(self.masked)
            .is_some_and(|&t| t + self.window <= q)
            && self.results.events[self.masked] < at.event
        {
            self.masked += 1;
        }
        Decision::Clear(self.masked)
    }
}
