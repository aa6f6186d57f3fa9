//! The `as recorded` replay as the session ran (issue 43 item 4): besides the rule its
//! framework ran with, what the transcript records happened that no rule predicts is applied
//! where it happened. A manual compaction (Claude Code `/compact`, `trigger: "manual"`)
//! replaces the history before its boundary by a summary, followed by the files Claude Code
//! re-attaches, at the first request after it; a microcompaction (`microcompact_boundary`)
//! clears exactly the tool results it names from the first request after it on. Neither is
//! predicted or matched: they are the status quo the other rows are compared with.

use crate::policy::claude_code::reattached;
use crate::policy::microcompact::PLACEHOLDER_TOKENS;
use crate::policy::{At, Clearable, CompactionPolicy, Ctx, Decision, NoCompaction};
use crate::transcript::{CompactionTrigger, Format, Session};

/// The framework's rule (`inner`) plus the recorded manual and micro compactions.
pub struct AsRan {
    inner: Box<dyn CompactionPolicy>,
    /// Per manual compaction, in order: its first request, and the events before it.
    manual: Vec<(usize, u32)>,
    next_manual: usize,
    /// Per microcompaction, in order: its first request, and the results cleared by then
    /// (a prefix of `results`).
    micro: Vec<(usize, usize)>,
    next_micro: usize,
    /// Every result a recorded microcompaction cleared, ascending.
    results: Clearable,
    cleared: usize,
}

/// `rule` with the session's recorded manual and micro compactions applied where they
/// happened; `rule` itself when it records none (or is not Claude Code). `None` stays `None`
/// (no compaction, replayed by the engine) when there is nothing to apply.
pub fn wrap(
    ctx: &Ctx<'_>,
    rule: Option<Box<dyn CompactionPolicy>>,
) -> Option<Box<dyn CompactionPolicy>> {
    let s = ctx.session;
    if s.format != Format::ClaudeCode {
        return rule;
    }
    let manual = manual_compactions(s);
    let (events, micro) = micro_compactions(s);
    if manual.is_empty() && micro.is_empty() {
        return rule;
    }
    Some(Box::new(AsRan {
        inner: rule.unwrap_or_else(|| Box::new(NoCompaction)),
        manual,
        next_manual: 0,
        micro,
        next_micro: 0,
        results: Clearable::new(ctx, events, PLACEHOLDER_TOKENS),
        cleared: 0,
    }))
}

/// (first request, events before it) of each manual full compaction the file holds the
/// history of.
fn manual_compactions(s: &Session) -> Vec<(usize, u32)> {
    s.recorded_compactions
        .iter()
        .filter(|c| c.is_full_in_file() && c.trigger_kind() == CompactionTrigger::Manual)
        .filter_map(|c| Some((c.request?, c.at_event as u32)))
        .collect()
}

/// Every result the microcompactions cleared (ascending), and per microcompaction its first
/// request and the results cleared by then.
fn micro_compactions(s: &Session) -> (Vec<u32>, Vec<(usize, usize)>) {
    let micro: Vec<_> = s
        .recorded_compactions
        .iter()
        .filter(|c| c.is_micro())
        .collect();
    let mut events: Vec<u32> = micro
        .iter()
        .flat_map(|c| c.cleared.iter().map(|&e| e as u32))
        .filter(|&e| (e as usize) < s.events.len())
        .collect();
    events.sort_unstable();
    events.dedup();
    let mut last = 0u32;
    let steps = micro
        .iter()
        .filter_map(|c| {
            last = last.max(c.cleared.iter().map(|&e| e as u32 + 1).max().unwrap_or(0));
            // the results cleared by then: every one up to the newest named so far (the
            // CLI clears oldest first, so that is what the records named)
            Some((c.request?, events.partition_point(|&e| e < last)))
        })
        .collect();
    (events, steps)
}

impl CompactionPolicy for AsRan {
    fn clearable(&self) -> Option<&Clearable> {
        if self.micro.is_empty() {
            self.inner.clearable()
        } else {
            Some(&self.results)
        }
    }

    fn decide(&mut self, ctx: &Ctx<'_>, at: &At) -> Decision {
        while let Some(&(_, n)) = self.micro.get(self.next_micro).filter(|m| m.0 <= at.q) {
            self.cleared = self.cleared.max(n);
            self.next_micro += 1;
        }
        if let Some(&(_, cut)) = self.manual.get(self.next_manual).filter(|m| m.0 <= at.q) {
            self.next_manual += 1;
            return Decision::Summarize {
                head: 0,
                cut,
                keep: reattached(ctx.session, ctx.sizes, cut as usize),
                passes: 1,
            };
        }
        match self.inner.decide(ctx, at) {
            d @ Decision::Summarize { .. } => d,
            _ if self.micro.is_empty() => Decision::Keep,
            _ => Decision::Clear(self.cleared),
        }
    }
}
