//! Token-threshold rules (Claude Code, Codex) backtested one compaction at a time: each
//! recorded compaction is predicted from the context the framework really had since the one
//! before (its recorded sizes), so one early or late prediction does not shift every later
//! one. The size of the request a compaction preceded is not recorded (the request went out
//! compacted): it is the last recorded size plus what the history grew since, on the
//! provider's scale ([`crate::policy::measured`], which `claude-code` in a sweep reads too).

use crate::policy::claude_code_size::checked_context;
use crate::policy::measured::{measured_context, Crossing};
use crate::policy::{At, CompactionPolicy, Ctx, Decision};
use crate::tokens::fit::PromptFit;
use crate::tokens::sizes::SessionSizes;
use crate::transcript::Session;

/// Per model request (replay order): the context the framework had before it. `scaled`: the
/// session's arrays already on the provider's scale ([`super::sizes::provider_sizes`]).
/// Claude Code's: the size its CLI checked (`policy::claude_code_size`).
pub fn anchored_sizes(session: &Session, scaled: &SessionSizes, fit: &PromptFit) -> SessionSizes {
    let measured = checked_context(session, scaled).unwrap_or_else(|| {
        measured_context(
            session,
            scaled,
            |counted| (fit.overhead + counted as i64).max(0) as u64,
            |grown| grown,
        )
    });
    let mut out = scaled.clone();
    out.baseline = std::sync::OnceLock::new();
    for (k, size) in measured {
        out.recorded_prompt[k as usize] = Some(size);
    }
    out
}

/// Fires before a request whose context reaches `threshold`, once per crossing: the recorded
/// context only drops below it again after a recorded compaction.
pub struct Anchored(Crossing);

impl Anchored {
    pub fn new(threshold: u64) -> Self {
        Anchored(Crossing::new(threshold))
    }
}

impl CompactionPolicy for Anchored {
    fn decide(&mut self, _ctx: &Ctx<'_>, at: &At) -> Decision {
        if self.0.fires(at.baseline_prompt) {
            Decision::summarize_all(at)
        } else {
            Decision::Keep
        }
    }
}
