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

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub enum ClientMode {
    #[default]
    Waits,
    Streams,
}

impl ClientMode {
    pub fn name(self) -> &'static str {
        match self {
            ClientMode::Waits => "waits",
            ClientMode::Streams => "streams",
        }
    }
}

impl fmt::Display for ClientMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ClientMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "waits" => Ok(ClientMode::Waits),
            "streams" => Ok(ClientMode::Streams),
            other => Err(format!(
                "unknown client mode `{other}` (expected `waits` or `streams`)"
            )),
        }
    }
}

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
    fn parse_modes() {
        assert_eq!("waits".parse::<ClientMode>(), Ok(ClientMode::Waits));
        assert_eq!("streams".parse::<ClientMode>(), Ok(ClientMode::Streams));
        assert!("stream"
            .parse::<ClientMode>()
            .unwrap_err()
            .contains("`stream`"));
    }

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
