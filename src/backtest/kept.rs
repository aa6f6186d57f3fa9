//! What real summaries kept (issue 37 item 5): at each recorded compaction whose summary text
//! is recorded, the references the cost layer counts as broken ([`references::tally`], one
//! implementation) measured on THAT text at THAT cut, beside the `agent` summarizer's
//! estimate at the same cut with its bounds (as the sweep computes it: `estimate` with the
//! built-in retention, low = unseen, high = at risk); and the re-fetches that follow it: tool
//! calls repeating one made before the compaction (same tool name, same arguments JSON), and
//! how many of them the measure marked (their model event has a broken reference). This is
//! the check of the detail measure against what agents did.
//!
//! The cut: request `q` after the compaction sees the events the recorded compactions so far
//! forgot (their union: an OpenHands view drops every condensation's events, a Claude Code
//! summary replaces the whole history) only through this compaction's summary, up to the
//! request before the next recorded compaction.

use std::collections::HashSet;
use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::detail::references::{self, Retention, SessionReferences};
use crate::engine::summarizer::SummaryText;
use crate::engine::Replay;
use crate::transcript::{Part, Session};

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
}

/// What the per-compaction measure reads once per session.
pub struct SessionKept<'s> {
    session: &'s Session,
    refs: SessionReferences,
    retention: Option<Retention>,
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
        })
    }

    /// Recorded compaction `i` measured on `free`'s requests (one per model event); `None`
    /// when it records no summary text.
    pub fn at(&self, free: &Replay, i: usize) -> Option<Kept> {
        let recorded = &self.session.recorded_compactions;
        let c = &recorded[i];
        if c.summary.is_empty() {
            return None;
        }
        // up to the next summary (a microcompaction in between leaves the summary in place)
        let next = recorded[i + 1..].iter().find(|n| !n.is_micro());
        let events = c.at_event..next.map_or(usize::MAX, |n| n.at_event);
        let hidden = forgotten_so_far(self.session, i);
        let text = SummaryText::flat(c.summary.clone());
        let texts = [Some(&text)];
        let cut = at_cut(free, &hidden, |k| events.contains(&k));
        let measured = references::tally(&self.refs, &cut, Some(&texts), None);
        let modelled = references::tally(&self.refs, &cut, None, None);
        let (refetches, marked) = self.refetches(free, &hidden, &texts, events);
        Some(Kept {
            refs_at_risk: measured.at_risk_total(),
            refs_broken: measured.broken_total(),
            agent_estimate: AgentEstimate {
                value: (references::estimate(&modelled, self.retention.as_ref()) * 10.0).round()
                    / 10.0,
                low: modelled.unseen_total(),
                high: modelled.at_risk_total(),
            },
            refetches,
            refetches_marked_broken: marked,
        })
    }

    /// Tool calls in `events` repeating one made before them, and those whose model event
    /// has a broken reference at the cut.
    fn refetches(
        &self,
        free: &Replay,
        hidden: &[(u32, u32)],
        texts: &[Option<&SummaryText>],
        events: Range<usize>,
    ) -> (u64, u64) {
        let all = &self.session.events;
        let before: HashSet<(&str, String)> = all[..events.start.min(all.len())]
            .iter()
            .flat_map(tool_calls)
            .collect();
        let (mut refetches, mut marked) = (0, 0);
        let end = events.end.min(all.len());
        for (k, event) in all.iter().enumerate().take(end).skip(events.start) {
            let repeats = tool_calls(event)
                .filter(|call| before.contains(call))
                .count() as u64;
            if repeats == 0 {
                continue;
            }
            refetches += repeats;
            let one = at_cut(free, hidden, |e| e == k);
            if references::tally(&self.refs, &one, Some(texts), None).broken_total() > 0 {
                marked += repeats;
            }
        }
        (refetches, marked)
    }
}

/// An event's tool calls as (name, arguments JSON).
fn tool_calls(e: &crate::transcript::Event) -> impl Iterator<Item = (&str, String)> {
    e.parts.iter().filter_map(|p| match p {
        Part::ToolCall { name, args, .. } => Some((name.as_str(), args.to_string())),
        _ => None,
    })
}

/// The events recorded compactions `0..=i` forgot, as sorted disjoint closed runs.
fn forgotten_so_far(session: &Session, i: usize) -> Vec<(u32, u32)> {
    let mut ranges: Vec<Range<usize>> = session.recorded_compactions[..=i]
        .iter()
        .flat_map(|c| c.forgotten.iter().cloned())
        .filter(|r| !r.is_empty())
        .collect();
    ranges.sort_by_key(|r| r.start);
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for r in ranges {
        let (a, b) = (r.start as u32, r.end as u32 - 1);
        match runs.last_mut() {
            Some(last) if a <= last.1 + 1 => last.1 = last.1.max(b),
            _ => runs.push((a, b)),
        }
    }
    runs
}

/// `free`'s requests whose model event passes `keep`, each seeing `hidden` only through
/// summary 1: the replay [`references::tally`] reads for one recorded cut.
fn at_cut(free: &Replay, hidden: &[(u32, u32)], keep: impl Fn(usize) -> bool) -> Replay {
    let requests = free
        .requests
        .iter()
        .filter(|r| keep(r.event_index as usize))
        .map(|r| {
            let mut r = r.clone();
            r.hidden = 0..hidden.len() as u32;
            r.carried = 0..1;
            r
        })
        .collect();
    Replay {
        requests,
        hidden: hidden.to_vec(),
        carried: vec![1],
        ..Replay::default()
    }
}
