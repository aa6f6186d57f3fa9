//! The context a framework measured before each model request, read from what the session
//! records: the recorded prompt size, except where none is recorded on the history the
//! framework really had. The request a recorded compaction preceded went out compacted, so
//! its size is the size before plus what the history grew since. A threshold rule decided on
//! these sizes fires where the framework did, one recorded compaction at a time (the backtest,
//! and `claude-code` in a sweep while it keeps step with the record).

use crate::tokens::fit::{fit_prompt, PromptFit};
use crate::tokens::sizes::SessionSizes;
use crate::transcript::Session;

/// Per model request of `sizes` (in order): its counted history and, when recorded on the raw
/// history, its recorded prompt size.
pub fn request_sizes(session: &Session, sizes: &SessionSizes) -> Vec<(u32, u64, Option<u64>)> {
    let base = sizes
        .baseline
        .get_or_init(|| crate::engine::contents::baseline(sizes));
    base.request_event
        .iter()
        .zip(&base.request)
        .map(|(&k, meas)| {
            let raw = !session.events[k as usize].post_compaction_usage;
            let recorded = sizes.recorded_prompt[k as usize].filter(|&p| raw && p > 0);
            (k, meas[3], recorded)
        })
        .collect()
}

/// The provider-scale fit (`tokens::fit`) of [`request_sizes`]' recorded requests.
pub fn fit_requests(requests: &[(u32, u64, Option<u64>)]) -> Option<PromptFit> {
    let pairs: Vec<(u64, u64)> = requests
        .iter()
        .filter_map(|&(_, counted, rec)| rec.map(|r| (r, counted)))
        .collect();
    fit_prompt(&pairs)
}

/// Per model request (replay order): its event and the context measured before it. `first`:
/// the size of a request before any recorded size, from its counted history; `grown`: an
/// amount the counted history grew by, on the recorded sizes' scale.
pub fn measured_context(
    session: &Session,
    sizes: &SessionSizes,
    first: impl Fn(u64) -> u64,
    grown: impl Fn(u64) -> u64,
) -> Vec<(u32, u64)> {
    let base = sizes
        .baseline
        .get_or_init(|| crate::engine::contents::baseline(sizes));
    let events = &base.request_event;
    let boundary: std::collections::HashSet<u32> = session
        .recorded_compactions
        .iter()
        // a resumed file's first requests are on the history it holds, summary included
        .filter(|c| !c.resumed)
        .filter_map(|c| events.get(events.partition_point(|&k| (k as usize) < c.at_event)))
        .copied()
        .collect();
    let mut out = Vec::with_capacity(events.len());
    let mut last: Option<(u64, u64)> = None; // (size, history) of the request before
    for (&k, meas) in events.iter().zip(&base.request) {
        let counted = meas[3];
        let recorded = session.events[k as usize]
            .usage
            .map(|u| u.prompt_tokens)
            .filter(|&p| p > 0);
        let size = match (recorded, last) {
            (Some(r), _) if !boundary.contains(&k) => r,
            (_, Some((size, was))) => size + grown(counted.saturating_sub(was)),
            (_, None) => first(counted),
        };
        out.push((k, size));
        last = Some((size, counted));
    }
    out
}

/// Fires once per crossing of `threshold` by the measured context: it only drops below
/// again after a recorded compaction.
#[derive(Debug, Clone)]
pub struct Crossing {
    pub threshold: u64,
    armed: bool,
}

impl Crossing {
    pub fn new(threshold: u64) -> Self {
        Crossing {
            threshold,
            armed: true,
        }
    }

    /// Whether the rule fires before a request whose measured context is `context`.
    pub fn fires(&mut self, context: u64) -> bool {
        if context < self.threshold {
            self.armed = true;
            return false;
        }
        std::mem::replace(&mut self.armed, false)
    }
}
