//! `Compaction(...)`: the manifest's fields, their validation and its words
//! (shared/spec/platform-compaction-guide.txt; ADK's `EventsCompactionConfig`, adk-compaction.md §2).

use serde::{Deserialize, Serialize};
use std::fmt;

/// One compaction setting as the platform manifest spells it. The pairs map onto ADK's
/// `token_threshold`/`event_retention_size` and `compaction_interval`/`overlap_size`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Compaction {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_recent_events: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_invocations: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap: Option<u64>,
    /// Summarizer reference as written (e.g. `.summarizers.terse`); `None` = the agent's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarizer: Option<String>,
}

/// A refused setting: which field, and why (the guide's words).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The field at fault (`after_tokens`, ..., or `compaction` for the whole block).
    pub field: String,
    pub message: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for Refusal {}
