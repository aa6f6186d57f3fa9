//! Token-threshold rules (Claude Code, Codex) backtested one compaction at a time: each
//! recorded compaction is predicted from the context the framework really had since the one
//! before (its recorded sizes), so one early or late prediction does not shift every later
//! one. The size of the request a compaction preceded is not recorded (the request went out
//! compacted): it is the last recorded size plus what the history grew since, on the
//! provider's scale.

use crate::policy::{At, CompactionPolicy, Ctx, Decision};
use crate::tokens::fit::PromptFit;
use crate::tokens::sizes::SessionSizes;
use crate::transcript::Session;

/// Per model request (replay order): the context the framework had before it. `scaled`: the
/// session's arrays already on the provider's scale ([`super::sizes::provider_sizes`]).
pub fn anchored_sizes(session: &Session, scaled: &SessionSizes, fit: &PromptFit) -> SessionSizes {
    let base = scaled
        .baseline
        .get_or_init(|| crate::engine::contents::baseline(scaled));
    let events = &base.request_event;
    let boundary: std::collections::HashSet<u32> = session
        .recorded_compactions
        .iter()
        .filter_map(|c| events.get(events.partition_point(|&k| (k as usize) < c.at_event)))
        .copied()
        .collect();
    let mut out = scaled.clone();
    out.baseline = std::sync::OnceLock::new();
    let mut last: Option<(u64, u64)> = None; // (size, history) of the request before
    for (&k, meas) in events.iter().zip(&base.request) {
        let counted = meas[3];
        let recorded = session.events[k as usize]
            .usage
            .map(|u| u.prompt_tokens)
            .filter(|&p| p > 0);
        let size = match (recorded, last) {
            (Some(r), _) if !boundary.contains(&k) => r,
            (_, Some((size, was))) => size + counted.saturating_sub(was),
            (_, None) => (fit.overhead + counted as i64).max(0) as u64,
        };
        out.recorded_prompt[k as usize] = Some(size);
        last = Some((size, counted));
    }
    out
}

/// Fires before a request whose context reaches `threshold`, once per crossing: the recorded
/// context only drops below it again after a recorded compaction.
pub struct Anchored {
    pub threshold: u64,
    armed: bool,
}

impl Anchored {
    pub fn new(threshold: u64) -> Self {
        Anchored {
            threshold,
            armed: true,
        }
    }
}

impl CompactionPolicy for Anchored {
    fn decide(&mut self, _ctx: &Ctx<'_>, at: &At) -> Decision {
        if at.baseline_prompt < self.threshold {
            self.armed = true;
            return Decision::Keep;
        }
        if !self.armed {
            return Decision::Keep;
        }
        self.armed = false;
        Decision::Summarize {
            head: 0,
            cut: at.event,
            keep: Vec::new(),
            passes: 1,
        }
    }
}
