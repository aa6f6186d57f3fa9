//! Client modes ("Client modes" in metrics.md).
//!
//! - `waits` (default, like `runtime.run()`): the next turn starts after the summary; every
//!   summary lands.
//! - `streams`: the next turn starts at its recorded time. A post-invocation summary still
//!   being written then is discarded (ADK's stale-session discard): its cost is paid, nothing
//!   is replaced, and the next turn re-evaluates the trigger.
//!
//! The race is decided here, from recorded times and the latency model, and handed to the
//! pure engine as a per-call outcome (see `summarizers::RaceSummarizer`).

pub use crate::settings::{ClientMode, UnknownClientMode};

/// Whether a post-invocation summary that starts at `fired_at_s` (the invocation's last
/// recorded event) and takes `summary_s` seconds loses the race with the next turn, which
/// starts at `next_turn_at_s` (its first recorded event; `None` if this was the last turn).
/// A tie (the summary ends exactly as the turn starts) lands.
pub fn summary_discarded(
    mode: ClientMode,
    fired_at_s: f64,
    summary_s: f64,
    next_turn_at_s: Option<f64>,
) -> bool {
    match (mode, next_turn_at_s) {
        (ClientMode::Streams, Some(next)) => fired_at_s + summary_s > next,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn race() {
        // Fired at t=100 s, the summary takes 8 s: done at 108 s.
        // Next turn at 105 s: it arrives first -> discarded in streams.
        assert!(summary_discarded(
            ClientMode::Streams,
            100.0,
            8.0,
            Some(105.0)
        ));
        // Next turn at 120 s: the summary is done -> lands.
        assert!(!summary_discarded(
            ClientMode::Streams,
            100.0,
            8.0,
            Some(120.0)
        ));
        // Exactly at 108 s: lands.
        assert!(!summary_discarded(
            ClientMode::Streams,
            100.0,
            8.0,
            Some(108.0)
        ));
        // waits never discards; the last turn has no successor.
        assert!(!summary_discarded(
            ClientMode::Waits,
            100.0,
            8.0,
            Some(105.0)
        ));
        assert!(!summary_discarded(ClientMode::Streams, 100.0, 8.0, None));
    }
}
