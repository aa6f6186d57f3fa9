//! What real summaries kept (issue 37 item 5): at each recorded compaction whose summary text
//! is recorded, the references the cost layer counts as broken ([`references::tally`], one
//! implementation) measured on THAT text at THAT cut, beside the `agent` summarizer's
//! estimate at the same cut with its bounds (as the sweep computes it: `estimate` with the
//! built-in retention, low = unseen, high = at risk); and the re-fetches that follow it: tool
//! calls repeating one made before the compaction (same tool name, same arguments JSON), and
//! how many of them the measure marked (their model event has a broken reference, or their
//! response re-obtained a fact a later broken reference used), split by
//! whether they returned what they returned before ([`super::refetch`]). This is the check of
//! the detail measure against what agents did.
//!
//! The cut: request `q` after the compaction sees the events the recorded compactions so far
//! forgot (their union: an OpenHands view drops every condensation's events, a Claude Code
//! summary replaces the whole history) only through this compaction's summary, up to the
//! request before the next recorded compaction.

use serde::{Deserialize, Serialize};

use super::refetch;
use crate::cost::pricing::PriceTable;
use crate::detail::references::{self, RecordedCut, RecordedSummaries, Retention};
use crate::tokens::sizes::SessionSizes;
use crate::transcript::Session;

/// The `agent` summarizer's estimate of references broken, within its bounds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AgentEstimate {
    pub value: f64,
    /// References beyond the summarizer's sight: broken whatever it writes.
    pub low: u64,
    /// Every reference at risk broken.
    pub high: u64,
}

/// One recorded compaction's real summary, measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Kept {
    /// References at risk at the cut (every holder forgotten): what the summary had to hold.
    pub refs_at_risk: u64,
    /// Of those, the ones the recorded summary text does not hold.
    pub refs_broken: u64,
    pub agent_estimate: AgentEstimate,
    /// Tool calls after the compaction (before the next) repeating one made before it.
    pub refetches: u64,
    /// Of those, the ones whose model event has a broken reference.
    pub refetches_marked_broken: u64,
    /// The re-fetches returning what the call returned before ([`refetch`]), and what they
    /// added to later prompts.
    pub refetch: refetch::Refetches,
    /// Of the same-result ones, those whose model event has a broken reference.
    pub refetches_same_result_marked: u64,
}

/// What the per-compaction measure reads once per session.
pub struct SessionKept<'s> {
    recorded: RecordedSummaries<'s>,
    retention: Option<Retention>,
    prices: PriceTable,
}

impl<'s> SessionKept<'s> {
    /// `None` when no recorded compaction of `session` carries its summary text.
    pub fn new(session: &'s Session) -> Option<Self> {
        Some(SessionKept {
            recorded: RecordedSummaries::new(session)?,
            retention: crate::cost::latency::LatencyTable::builtin().retention,
            prices: PriceTable::builtin(),
        })
    }

    /// Recorded compaction `i` measured at its cut ([`RecordedSummaries::at`]), its
    /// re-fetches priced on `sizes` (the provider's scale); `None` when it records no summary
    /// text.
    pub fn at(&self, sizes: &SessionSizes, i: usize) -> Option<Kept> {
        let (cut, measured) = self.recorded.at(i)?;
        let r = &self.recorded;
        let priced = refetch::refetches(
            r.session,
            sizes,
            &self.prices,
            &r.calls,
            &cut.events,
            &cut.repeats,
        );
        let (marked, same_marked) = self.marked(&cut, measured.broken_total());
        Some(Kept {
            refs_at_risk: measured.at_risk_total(),
            refs_broken: measured.broken_total(),
            agent_estimate: AgentEstimate {
                value: (references::estimate(&measured, self.retention.as_ref()) * 10.0).round()
                    / 10.0,
                low: measured.unseen_total(),
                high: measured.at_risk_total(),
            },
            refetches: priced.repeated,
            refetches_marked_broken: marked,
            refetch: priced,
            refetches_same_result_marked: same_marked,
        })
    }

    /// Of the repeated calls at `cut`, those the measure marked: all of them, and the
    /// same-result ones. A call is marked when its model event has a broken reference (the
    /// agent asked for what it lost), or when its response re-obtained a fact the summary lost
    /// and the agent then used ([`references::RecordedCut::hidden`]): made visible, the
    /// response would spare a broken reference of the window. `in_window`: the window's
    /// broken references ([`RecordedSummaries::at`]).
    fn marked(&self, cut: &RecordedCut, in_window: u64) -> (u64, u64) {
        let broken = |hidden: &[(u32, u32)], events: std::ops::Range<usize>| {
            self.recorded.tally(cut, hidden, events).broken_total()
        };
        let hidden = &cut.hidden;
        let mut broken_at: std::collections::HashMap<usize, bool> = Default::default();
        let (mut marked, mut same) = (0, 0);
        for r in &cut.repeats {
            let call = &self.recorded.calls[r.call];
            let k = call.event;
            let asked = *broken_at
                .entry(k)
                .or_insert_with(|| broken(hidden, k..k + 1) > 0);
            let used = || {
                let at = call.result.as_ref().map(|x| x.0 as u32);
                at.and_then(|e| without(hidden, e))
                    .is_some_and(|shown| broken(&shown, cut.events.clone()) < in_window)
            };
            if asked || (r.same_result && used()) {
                marked += 1;
                same += u64::from(r.same_result);
            }
        }
        (marked, same)
    }
}

/// `hidden` (sorted, disjoint, closed runs) without event `e`; `None` when `e` is not hidden.
fn without(hidden: &[(u32, u32)], e: u32) -> Option<Vec<(u32, u32)>> {
    let at = references::run_of(hidden, e)?;
    let (a, b) = hidden[at];
    let mut out = hidden[..at].to_vec();
    if a < e {
        out.push((a, e - 1));
    }
    if e < b {
        out.push((e + 1, b));
    }
    out.extend_from_slice(&hidden[at + 1..]);
    Some(out)
}
