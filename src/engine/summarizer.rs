//! The summarizer seam: the engine asks "summarize these raw events (plus the seed summary)"
//! and gets back a size, or nothing, or a failure. Deterministic summarizers matching the
//! oracle's fake model live here; `terse`, `command:` and modelled ones live in `cost`.

use std::ops::Range;

use super::types::{Phase, Trigger};

/// The previous summary handed to a rolling (token-path) summarizer as its first line.
#[derive(Debug, Clone, Copy)]
pub struct Seed<'a> {
    /// Ordinal of the summary used as the seed.
    pub ordinal: u32,
    pub chars: u64,
    /// Start of its range: ADK's seed event carries it as its timestamp.
    pub start_timestamp: f64,
    /// Its text, when the summarizer that wrote it produced text.
    pub text: Option<&'a str>,
}

/// One summarizer call as the engine makes it.
#[derive(Debug, Clone)]
pub struct SummarizeRequest<'a> {
    /// 1-based call number in this replay (failing-call lists use it).
    pub call: u32,
    pub phase: Phase,
    pub trigger: Trigger,
    /// Raw event indices handed to the summarizer (first..last+1, in transcript order, minus
    /// `skip`); the seed, if any, comes first in ADK's list.
    pub events: Range<u32>,
    /// Events inside `events` that ADK does not hand over, ascending: another isolation
    /// scope, annulled by a rewind, or (token path) timestamps going backwards across the
    /// previous summary's end. Usually empty. [`SummarizeRequest::event_indices`] applies it.
    pub skip: &'a [u32],
    pub seed: Option<Seed<'a>>,
    /// ADK's prompt size: 657 fixed template chars + the formatted history.
    pub prompt_chars: u64,
    /// The formatted history alone (`prompt_chars - 657`).
    pub history_chars: u64,
    /// When the call fires (the last event of its invocation) and when the next user turn
    /// starts (`None`: no turn follows), in recorded seconds: a client that streams discards
    /// a post-invocation summary arriving after that turn, decided as the call returns.
    pub fired_at_s: f64,
    pub next_turn_at_s: Option<f64>,
}

impl SummarizeRequest<'_> {
    /// The raw events handed over, in order (`events` minus `skip`).
    pub fn event_indices(&self) -> impl Iterator<Item = u32> + '_ {
        self.events
            .clone()
            .filter(move |i| self.skip.binary_search(i).is_err())
    }
}

/// A summary's measures. `json_chars` is `len(compacted_content.model_dump_json(exclude_none))`
/// (ADK's worth-compacting gate reads it); `tokens` are in the run's tokenizer.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub chars: u64,
    pub json_chars: u64,
    pub tokens: u64,
    /// Summarizer prompt tokens for this call.
    pub input_tokens: u64,
    /// The text, when the summarizer really wrote one (needed to seed `echo` summaries).
    pub text: Option<String>,
}

/// What one call produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Summary(Summary),
    /// The summarizer returned nothing: no compaction; carries the prompt tokens spent.
    Empty {
        input_tokens: u64,
    },
    /// The summarizer raised: no compaction; carries the prompt tokens spent.
    Failed {
        input_tokens: u64,
    },
}

/// A summarizer the engine can call. Implementations must be deterministic for a given
/// request (replays are compared across threads and runs).
pub trait Summarizer: Sync {
    fn summarize(&self, req: &SummarizeRequest<'_>) -> Outcome;
}

/// `len(Content(role='model', parts=[Part(text=t)]).model_dump_json(exclude_none=True))` for a
/// text whose JSON-escaped length is `escaped_len`: `{"parts":[{"text":"…"}],"role":"model"}` (38 + text).
pub const fn summary_json_chars(escaped_len: u64) -> u64 {
    38 + escaped_len
}

/// The oracle fake model's length policies (`--summary`, shared/oracle/adk_oracle.py).
#[derive(Debug, Clone, PartialEq)]
pub enum Policy {
    /// `fixed:N`: exactly N chars.
    Fixed(u64),
    /// `ratio:R`: `max(1, round(R * history_chars))` chars.
    Ratio(f64),
    /// `echo` / `echo:N`: the formatted history itself, cut at N chars.
    Echo(Option<u64>),
    /// `none`: the model returns no content.
    None,
}

impl Policy {
    /// Parse `fixed:N | ratio:R | echo[:N] | none`.
    pub fn parse(s: &str) -> Result<Policy, String> {
        let (kind, arg) = match s.split_once(':') {
            Some((k, a)) => (k, Some(a)),
            None => (s, None),
        };
        let num = |a: Option<&str>| -> Result<u64, String> {
            a.ok_or_else(|| format!("summary policy `{s}` needs a number"))?
                .trim()
                .parse::<u64>()
                .map_err(|_| format!("summary policy `{s}`: not a whole number"))
        };
        match kind {
            "fixed" | "fixed-chars" => Ok(Policy::Fixed(num(arg)?)),
            "ratio" => {
                let r: f64 = arg
                    .ok_or_else(|| format!("summary policy `{s}` needs a ratio"))?
                    .trim()
                    .parse()
                    .map_err(|_| format!("summary policy `{s}`: not a number"))?;
                if !r.is_finite() || r < 0.0 {
                    return Err(format!("summary policy `{s}`: ratio must be >= 0"));
                }
                Ok(Policy::Ratio(r))
            }
            "echo" => match arg {
                None | Some("") => Ok(Policy::Echo(None)),
                a => Ok(Policy::Echo(Some(num(a)?))),
            },
            "none" if arg.is_none() => Ok(Policy::None),
            _ => Err(format!(
                "unknown summary policy `{s}` (expected fixed:N, ratio:R, echo[:N] or none)"
            )),
        }
    }
}

/// The oracle's deterministic fake summarizer: a length policy plus 1-based calls that fail.
/// `echo` needs each event's formatted summarizer text (`tokens::adk::summarizer_text`), in
/// transcript order; the other policies need no text.
#[derive(Debug, Clone)]
pub struct Deterministic {
    pub policy: Policy,
    pub fail_calls: Vec<u32>,
    /// Per event: its summarizer lines joined by `\n` (empty when it contributes none).
    pub event_text: Vec<String>,
}

/// `_deterministic_text(n, header)` of the oracle: the header, then ` summary-filler` repeated,
/// cut at `n` chars (ASCII, so chars = bytes).
pub fn filler_text(n: u64, call: u32) -> String {
    let mut t = format!("[oracle summary #{call}]");
    let n = n as usize;
    while t.len() < n {
        t.push_str(" summary-filler");
    }
    t.truncate(n);
    t
}

impl Deterministic {
    pub fn new(policy: Policy, fail_calls: Vec<u32>, event_text: Vec<String>) -> Self {
        Deterministic {
            policy,
            fail_calls,
            event_text,
        }
    }

    /// The formatted history ADK's summarizer builds for this request (seed line first).
    pub fn history(&self, req: &SummarizeRequest<'_>) -> String {
        let mut out = String::new();
        let mut first = true;
        if let Some(seed) = req.seed {
            if let Some(t) = seed.text {
                if !t.is_empty() {
                    out.push_str("model: ");
                    out.push_str(t);
                    first = false;
                }
            }
        }
        for i in req.event_indices() {
            if let Some(t) = self.event_text.get(i as usize) {
                if t.is_empty() {
                    continue;
                }
                if !first {
                    out.push('\n');
                }
                out.push_str(t);
                first = false;
            }
        }
        out
    }
}

impl Summarizer for Deterministic {
    fn summarize(&self, req: &SummarizeRequest<'_>) -> Outcome {
        let input_tokens = req.prompt_chars.div_ceil(4);
        if self.fail_calls.contains(&req.call) {
            return Outcome::Failed { input_tokens };
        }
        let (chars, json_chars, text) = match self.policy {
            Policy::None => return Outcome::Empty { input_tokens },
            Policy::Fixed(n) => {
                // `_deterministic_text` returns '' for n <= 0, still a (blank) summary.
                (n, summary_json_chars(n), None)
            }
            Policy::Ratio(r) => {
                let n = ((r * req.history_chars as f64).round_ties_even() as u64).max(1);
                (n, summary_json_chars(n), None)
            }
            Policy::Echo(limit) => {
                let history = self.history(req);
                let mut text = match limit {
                    None => history,
                    Some(n) => history.chars().take(n as usize).collect(),
                };
                if text.is_empty() {
                    text = format!("[oracle summary #{}]", req.call);
                }
                let chars = text.chars().count() as u64;
                let json = summary_json_chars(crate::tokens::adk::json_str_len_raw(&text));
                (chars, json, Some(text))
            }
        };
        Outcome::Summary(Summary {
            chars,
            json_chars,
            tokens: chars.div_ceil(4),
            input_tokens,
            text,
        })
    }
}
