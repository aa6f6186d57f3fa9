//! Claude Code's recorded microcompactions beside the rule's (`policy::microcompact`), one
//! recorded compaction at a time as [`super::anchored`] predicts full ones: before each
//! request the rule reads the size Claude Code checked (the last recorded usage), the history
//! since the last recorded full compaction, and the results the recorded microcompactions
//! (and its own predictions) cleared so far.

use super::compare::Predicted;
use super::SessionReplay;
use crate::policy::microcompact;
use crate::policy::Ctx;
use crate::transcript::Session;

/// The microcompactions the rule makes on `run`'s recorded context, by request: the CLI's
/// estimate of the results it weighed (`before`), of those left (`after`), and how many it
/// cleared (`summary`, as a count). `None` when the session's rule is not Claude Code's.
pub fn predicted(session: &Session, run: &SessionReplay) -> Option<Vec<Predicted>> {
    let super::AsRecorded::ClaudeCode { threshold, .. } = run.policy else {
        return None;
    };
    let measured = microcompact::checked_sizes(session);
    let ctx = Ctx {
        sizes: &run.sized.sizes,
        session,
        window: None,
    };
    let rule = microcompact::Microcompact::new(&ctx, threshold);
    let steps = microcompact::along_record(&ctx, rule, &measured);
    Some(
        steps
            .into_iter()
            .map(|(q, step)| Predicted {
                request: q,
                event: run
                    .replay
                    .requests
                    .get(q)
                    .map_or(session.events.len() as u32, |r| r.event_index),
                before: step.weighed,
                after: step.weighed - step.saved,
                summary: step.cleared.len() as u64,
            })
            .collect(),
    )
}
