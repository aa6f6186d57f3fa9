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

use super::refetch::{self, Call};
use crate::cost::pricing::PriceTable;
use crate::detail::references::{self, Retention, SessionReferences};
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
    session: &'s Session,
    refs: SessionReferences,
    retention: Option<Retention>,
    calls: Vec<Call>,
    prices: PriceTable,
}

impl<'s> SessionKept<'s> {
    /// `None` when no recorded compaction of `session` carries its summary text.
    pub fn new(session: &'s Session) -> Option<Self> {
        if session
            .recorded_compactions
            .iter()
            .all(|c| c.summary.is_empty())
        {
            return None;
        }
        let facts = crate::detail::facts::event_facts(session);
        Some(SessionKept {
            session,
            refs: SessionReferences::new(session, &facts, &[]),
            retention: crate::cost::latency::LatencyTable::builtin().retention,
            calls: refetch::calls(session),
            prices: PriceTable::builtin(),
        })
    }

    /// Recorded compaction `i` measured at its cut ([`references::at_recorded`]), its
    /// re-fetches priced on `sizes` (the provider's scale); `None` when it records no summary
    /// text.
    pub fn at(&self, sizes: &SessionSizes, i: usize) -> Option<Kept> {
        let measured = references::at_recorded(&self.refs, self.session, &self.calls, i)?;
        let events = references::summary_span(self.session, i);
        let priced = refetch::refetches(self.session, sizes, &self.prices, &self.calls, &events);
        let (marked, same_marked) = self.marked(i, &events, measured.broken_total());
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

    /// Of the repeated calls in `events`, those the measure marked at the cut of recorded
    /// compaction `i`: all of them, and the same-result ones. A call is marked when its model
    /// event has a broken reference (the agent asked for what it lost), or when its response
    /// re-obtained a fact the summary lost and the agent then used ([`references::recorded_hidden`]):
    /// made visible, the response would spare a broken reference of the window.
    /// `in_window`: the window's broken references ([`references::at_recorded`]).
    fn marked(&self, i: usize, events: &std::ops::Range<usize>, in_window: u64) -> (u64, u64) {
        let hidden = references::recorded_hidden(self.session, &self.calls, i);
        let text = crate::engine::summarizer::SummaryText::flat(
            self.session.recorded_compactions[i].summary.clone(),
        );
        let texts = [Some(&text)];
        let broken = |hidden: &[(u32, u32)], events: std::ops::Range<usize>| {
            let cut = references::recorded_cut(self.session, hidden, events);
            references::tally(&self.refs, &cut, Some(&texts), None).broken_total()
        };
        let mut broken_at: std::collections::HashMap<usize, bool> = Default::default();
        let (mut marked, mut same) = (0, 0);
        for r in refetch::repeats(&self.calls, events) {
            let call = &self.calls[r.call];
            let k = call.event;
            let asked = *broken_at
                .entry(k)
                .or_insert_with(|| broken(&hidden, k..k + 1) > 0);
            let used = || {
                let at = call.result.as_ref().map(|x| x.0 as u32);
                at.and_then(|e| without(&hidden, e))
                    .is_some_and(|shown| broken(&shown, events.clone()) < in_window)
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
