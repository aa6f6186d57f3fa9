//! The engine's public output: one [`Replay`] per (session, setting). Field names follow the
//! oracle's JSON (shared/oracle/README.md) where the oracle has the same number.
//!
//! Variable-length lists per row (summaries carried, hidden intervals) are stored flat in the
//! `Replay` and addressed by ranges, so a replay allocates a handful of vectors, not one per
//! model request.

use serde::Serialize;
use std::ops::Range;

/// `pre_request` (before a model call) or `post_invocation` (after the invocation's last event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    PreRequest,
    PostInvocation,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::PreRequest => "pre_request",
            Phase::PostInvocation => "post_invocation",
        }
    }
}

/// Which ADK trigger fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    TokenThreshold,
    SlidingWindow,
}

impl Trigger {
    pub fn name(self) -> &'static str {
        match self {
            Trigger::TokenThreshold => "token_threshold",
            Trigger::SlidingWindow => "sliding_window",
        }
    }
}

/// What a summarizer call produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallResult {
    /// A summary: a compaction was appended.
    Summary,
    /// The summarizer returned nothing (ADK: `None`): no compaction, trigger stays armed.
    Empty,
    /// The summarizer raised (ADK 2.12+: logged, no compaction, trigger stays armed).
    Failed,
}

/// One summarizer call (every call, whatever its result), in call order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummarizerCall {
    /// 1-based call number in this replay.
    pub call: u32,
    pub phase: Phase,
    pub trigger: Trigger,
    /// Invocation (0-based) in which, or after which, the call was made.
    pub invocation_index: u32,
    /// Pre-request: index of the model event the call preceded.
    pub before_event_index: Option<u32>,
    pub result: CallResult,
    /// 657 fixed template chars + the formatted history.
    pub summarizer_prompt_chars: u64,
    pub summarizer_history_chars: u64,
    /// Summarizer prompt tokens (as the summarizer counts them).
    pub input_tokens: u64,
    /// Summary tokens written (0 unless `result` is `Summary`).
    pub output_tokens: u64,
    /// Summary chars written (0 unless `result` is `Summary`).
    pub summary_chars: u64,
    /// Raw events handed to the summarizer (excluding any seed summary).
    pub raw_events: Range<u32>,
    /// Index into `Replay::compactions` when `result` is `Summary`.
    pub compaction: Option<u32>,
}

/// One compaction (one appended summary), with every field of the oracle's `compactions[]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Compaction {
    /// 1-based, in creation order.
    pub ordinal: u32,
    pub phase: Phase,
    pub trigger: Trigger,
    pub invocation_index: u32,
    pub before_event_index: Option<u32>,
    pub start_timestamp: f64,
    pub end_timestamp: f64,
    /// Events handed to the summarizer, the seed summary included.
    pub summarizer_input_events: u32,
    pub seeded_with_previous_summary: bool,
    /// Ordinal of the summary used as the seed.
    pub seed: Option<u32>,
    /// Raw events existing at creation whose timestamp lies in [start, end].
    pub raw_events_in_range: u32,
    pub first_raw_event_index: Option<u32>,
    pub last_raw_event_index: Option<u32>,
    /// Raw events the summarizer read (contiguous in the transcript).
    pub summarized_events: Range<u32>,
    pub invocations_in_range: InvocationRuns,
    pub summarizer_call: u32,
    pub summarizer_prompt_chars: u64,
    pub summarizer_history_chars: u64,
    pub summary_chars: u64,
    pub summary_json_chars: u64,
    /// Summary tokens as the agent's prompt carries them: the summarizer's count, on the
    /// provider's scale where the session has a fit ([`crate::tokens::sizes::SessionSizes::in_prompt`]; the call's
    /// `output_tokens` keep the summarizer's count).
    pub summary_tokens: u64,
    pub summarizer_input_tokens: u64,
    /// Still in the prompt (not subsumed) at the end of the session.
    pub retained: bool,
    /// Ordinal of the compaction that subsumed this one, if any.
    pub subsumed_by: Option<u32>,
}

/// One model request (one recorded model event).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Request {
    pub event_index: u32,
    pub invocation_index: u32,
    /// Index into `SessionSizes::authors` of the calling agent.
    pub author: u32,
    /// What ADK's pre-request check read (recorded count or chars/4 estimate); `None` when the
    /// token pair is not configured or nothing could be measured.
    pub measured_prompt_tokens: Option<u64>,
    /// ADK chars of the request contents after any pre-request compaction.
    pub adk_chars: u64,
    pub adk_chars_uncompacted: u64,
    /// Number of `Content` items.
    pub contents: u32,
    pub contents_uncompacted: u32,
    /// pydantic JSON chars of the request contents.
    pub json_chars: u64,
    pub json_chars_uncompacted: u64,
    /// History tokens (run tokenizer) the request carries: visible raw events + summaries.
    pub history_tokens: u64,
    /// The same without compaction.
    pub baseline_history_tokens: u64,
    /// Tokens of the summaries carried.
    pub summary_tokens: u64,
    /// Tokens of raw history events this request sees only through a summary.
    pub hidden_tokens: u64,
    /// Tokens of the history prefix shared with the previous request of the session (for
    /// prompt caching): compaction breaks the prefix where the first changed item sits.
    pub shared_prefix_tokens: u64,
    /// True when a pre-request compaction fired right before this request.
    pub pre_request_compacted: bool,
    /// Ordinals of the pre-request compactions made before this request.
    pub pre_request_compactions: Range<u32>,
    /// Recorded `prompt_token_count` on the event (as in the transcript).
    pub recorded_prompt_tokens: Option<u64>,
    /// The count replayed into the session under the usage mode (what later checks read).
    pub replayed_prompt_tokens: Option<u64>,
    /// Prompt tokens of this request without / with compaction ("Words" in metrics.md):
    /// the recorded count when there is one, else the history tokens.
    pub baseline_prompt_tokens: u64,
    pub prompt_tokens: u64,
    /// Range into `Replay::carried` (ordinals of the summaries in the request, stream order).
    pub carried: Range<u32>,
    /// Range into `Replay::hidden` (closed raw-event-index intervals seen only via a summary).
    pub hidden: Range<u32>,
}

/// Post-invocation outcome for one invocation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Invocation {
    pub index: u32,
    pub first_event_index: u32,
    /// Number of events.
    pub events: u32,
    pub first_timestamp: f64,
    pub last_timestamp: f64,
    /// What the post-invocation token check read (`None` without the token pair).
    pub post_measured_prompt_tokens: Option<u64>,
    /// Ordinal of the post-invocation compaction, if one was made.
    pub post_compaction: Option<u32>,
    pub post_trigger: Option<Trigger>,
    /// Summarizer calls made in (and after) this invocation.
    pub summarizer_calls: u32,
    /// ADK chars / contents / tokens of the history the next request would carry (before its
    /// new user message), for the session's main agent.
    pub next_request_adk_chars: u64,
    pub next_request_adk_chars_uncompacted: u64,
    pub next_request_contents: u32,
    pub next_request_history_tokens: u64,
    pub next_request_baseline_history_tokens: u64,
    /// Range into `Replay::retained`: the ordinals of the non-subsumed summaries after this
    /// invocation, as closed runs `(first, last)` ascending (a long sliding session retains
    /// thousands of summaries: one run, not one number each). Invocations with no summary
    /// appended between them share one range, so a long replay stores a list per summary,
    /// not one allocation per invocation; [`Replay::retained_ordinals`] lists them.
    pub retained_summaries: Range<u32>,
}

/// Session totals, as the oracle's `totals`.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Totals {
    pub summarizer_calls: u32,
    pub compactions: u32,
    pub pre_request_token_threshold: u32,
    pub post_invocation_token_threshold: u32,
    pub post_invocation_sliding_window: u32,
    pub failed_or_empty_summaries: u32,
    pub summarizer_prompt_chars: u64,
    pub summary_chars: u64,
    pub summarizer_input_tokens: u64,
    pub summarizer_output_tokens: u64,
    pub final_retained_summaries: Vec<u32>,
}

/// Everything a replay of one session under one setting says.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Replay {
    pub requests: Vec<Request>,
    pub invocations: Vec<Invocation>,
    pub compactions: Vec<Compaction>,
    pub calls: Vec<SummarizerCall>,
    pub totals: Totals,
    /// Flat storage addressed by `Request::carried`.
    pub carried: Vec<u32>,
    /// Flat storage addressed by `Request::hidden`: closed `(first, last)` raw event indices.
    pub hidden: Vec<(u32, u32)>,
    /// Flat storage addressed by `Request::pre_request_compactions`.
    pub pre_request: Vec<u32>,
    /// Flat storage addressed by `Invocation::retained_summaries`: closed ordinal runs.
    pub retained: Vec<(u32, u32)>,
}

impl Replay {
    /// Ordinals of the summaries request `r` carries.
    pub fn carried(&self, r: &Request) -> &[u32] {
        self.carried
            .get(r.carried.start as usize..r.carried.end as usize)
            .unwrap_or(&[])
    }

    /// Closed raw-event-index intervals request `r` sees only through a summary.
    pub fn hidden(&self, r: &Request) -> &[(u32, u32)] {
        self.hidden
            .get(r.hidden.start as usize..r.hidden.end as usize)
            .unwrap_or(&[])
    }

    /// Ordinals of the pre-request compactions made right before request `r`.
    pub fn pre_request(&self, r: &Request) -> &[u32] {
        self.pre_request
            .get(r.pre_request_compactions.start as usize..r.pre_request_compactions.end as usize)
            .unwrap_or(&[])
    }

    /// The non-subsumed summaries after invocation `inv`, as closed ordinal runs ascending.
    pub fn retained_runs(&self, inv: &Invocation) -> &[(u32, u32)] {
        self.retained
            .get(inv.retained_summaries.start as usize..inv.retained_summaries.end as usize)
            .unwrap_or(&[])
    }

    /// The ordinals of the non-subsumed summaries after invocation `inv`, ascending.
    pub fn retained_ordinals(&self, inv: &Invocation) -> Vec<u32> {
        self.retained_runs(inv)
            .iter()
            .flat_map(|&(a, b)| a..=b)
            .collect()
    }

    /// The compaction with this 1-based ordinal.
    pub fn compaction(&self, ordinal: u32) -> Option<&Compaction> {
        self.compactions.get((ordinal as usize).checked_sub(1)?)
    }
}

/// Sorted distinct invocation indices, kept as runs of consecutive ones: a rolling summary's
/// range reaches back to the session's start, and a list of every invocation per summary
/// made a long replay's compactions quadratic in memory. The first run is kept inline: most
/// compactions cover one run, and an allocation per compaction, alive to the end of the
/// replay, was a measurable part of a long replay's time in the allocator.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InvocationRuns {
    /// Empty only when there are no runs at all.
    first: std::ops::Range<u32>,
    rest: Vec<std::ops::Range<u32>>,
}

impl InvocationRuns {
    /// From ascending, distinct indices.
    pub fn from_sorted(indices: impl IntoIterator<Item = u32>) -> InvocationRuns {
        let mut runs = InvocationRuns::default();
        for i in indices {
            let last = runs.rest.last_mut().unwrap_or(&mut runs.first);
            if last.start == last.end {
                *last = i..i + 1;
            } else if last.end == i {
                last.end += 1;
            } else {
                runs.rest.push(i..i + 1);
            }
        }
        runs
    }

    /// The indices `a..b`.
    pub fn range(r: std::ops::Range<u32>) -> InvocationRuns {
        InvocationRuns {
            first: if r.is_empty() { 0..0 } else { r },
            rest: Vec::new(),
        }
    }

    fn runs(&self) -> impl Iterator<Item = &std::ops::Range<u32>> + '_ {
        std::iter::once(&self.first)
            .filter(|r| !r.is_empty())
            .chain(&self.rest)
    }

    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.runs().flat_map(|r| r.clone())
    }

    pub fn to_vec(&self) -> Vec<u32> {
        self.iter().collect()
    }

    pub fn len(&self) -> usize {
        self.runs().map(|r| r.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.first.is_empty()
    }
}

/// Written as the list of indices, as before it was kept as runs.
impl Serialize for InvocationRuns {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::InvocationRuns;

    /// Runs list the indices they were built from, whether none, one run (kept inline) or
    /// several; a run given as a range equals the same indices given one by one.
    #[test]
    fn invocation_runs_list_their_indices() {
        for indices in [
            vec![],
            vec![0],
            vec![3, 4, 5],
            vec![0, 1, 3],
            vec![2, 4, 6, 7, 9],
        ] {
            let runs = InvocationRuns::from_sorted(indices.iter().copied());
            assert_eq!(runs.to_vec(), indices);
            assert_eq!(runs.len(), indices.len());
            assert_eq!(runs.is_empty(), indices.is_empty());
            let json = serde_json::to_string(&runs).unwrap();
            assert_eq!(json, serde_json::to_string(&indices).unwrap());
        }
        assert_eq!(
            InvocationRuns::range(3..6),
            InvocationRuns::from_sorted([3, 4, 5])
        );
        assert_eq!(InvocationRuns::range(4..4), InvocationRuns::default());
        assert_ne!(
            InvocationRuns::from_sorted([1, 2]),
            InvocationRuns::from_sorted([1, 3])
        );
    }
}
