//! The modelled summarizer (`agent`, `model:NAME`): no text is written; the summary's length
//! comes from the [`LengthModel`] applied to the summarizer's input tokens (ADK's prompt: the
//! 657 fixed template chars, counted as [`TEMPLATE_TOKENS`], + the seed summary + each
//! event's formatted lines, counted per event with the run's tokenizer).

use crate::engine::summarizer::summary_json_chars;
use crate::engine::{Outcome, SummarizeRequest, Summarizer, Summary};
use crate::transcript::Session;

/// ADK's fixed template text around the history is 657 chars, counted as ceil(657 / 4)
/// tokens whatever the tokenizer (the modelled summarizer's convention).
pub const TEMPLATE_TOKENS: u64 = crate::engine::TEMPLATE_FIXED_CHARS.div_ceil(4);

/// Output length of a modelled summary: `min(cap, max(min, round(ratio * input)))`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LengthModel {
    pub ratio: f64,
    pub cap_tokens: u64,
    #[serde(default)]
    pub min_tokens: u64,
}

impl Default for LengthModel {
    fn default() -> Self {
        LengthModel {
            ratio: 0.10,
            cap_tokens: 4000,
            min_tokens: 64,
        }
    }
}

impl LengthModel {
    pub fn summary_tokens(&self, input_tokens: u64) -> u64 {
        let raw = (self.ratio * input_tokens as f64).round().max(0.0) as u64;
        raw.max(self.min_tokens).min(self.cap_tokens)
    }
}

/// Per event, the token count of what ADK's summarizer prompt holds for it
/// (`tokens::adk::summarizer_text`, 0 when the event contributes no line): the input the
/// modelled summarizer sizes its prompt from. The lines themselves are not kept (a long
/// session's lines are as large as its tool payloads); whoever needs one makes it.
#[derive(Debug, Clone, Default)]
pub struct EventLines {
    pub tokens: Vec<u64>,
    /// Per event, what its line shows of it (empty: not known, see [`EventLines::from_parts`]).
    pub shapes: Vec<crate::tokens::adk::LineShape>,
    /// `prefix[i]` = tokens of events `0..i`: a span's prompt in O(1) (a token trigger whose
    /// summaries keep failing asks for a longer span at every request).
    prefix: Vec<u64>,
}

/// A modelled summarizer (`agent`, `model:NAME`): sizes only.
pub struct Modelled<'a> {
    pub lines: &'a EventLines,
    pub length: LengthModel,
    /// Counts a seed text with the run's tokenizer.
    pub count: &'a (dyn Fn(&str) -> u64 + Sync),
}

impl Modelled<'_> {
    /// Summarizer prompt tokens for a request: template + seed + each event's lines.
    pub fn input_tokens(&self, req: &SummarizeRequest<'_>) -> u64 {
        let seed = req.seed.map_or(0, |s| match s.text {
            Some(t) => (self.count)(&t.to_string()),
            None => s.chars.div_ceil(4),
        });
        TEMPLATE_TOKENS + seed + self.lines.span_tokens(req)
    }
}

impl Summarizer for Modelled<'_> {
    fn summarize(&self, req: &SummarizeRequest<'_>) -> Outcome {
        let input_tokens = self.input_tokens(req);
        let tokens = self.length.summary_tokens(input_tokens);
        let chars = tokens * 4;
        Outcome::Summary(Summary {
            chars,
            json_chars: summary_json_chars(chars),
            tokens,
            input_tokens,
            text: None,
        })
    }
}

impl EventLines {
    /// ADK's summarizer lines of every event and their size in the run's tokenizer.
    pub fn new(session: &Session, count: &(dyn Fn(&str) -> u64 + Sync)) -> Self {
        let (tokens, shapes) = session
            .events
            .iter()
            .map(|e| {
                let t = crate::tokens::adk::summarizer_text(e);
                let shape = crate::tokens::adk::line_shape(e, &t);
                (if t.is_empty() { 0 } else { count(&t) }, shape)
            })
            .unzip();
        EventLines {
            shapes,
            ..EventLines::from_parts(tokens)
        }
    }

    /// The lines' token counts as given (shapes unknown).
    pub fn from_parts(tokens: Vec<u64>) -> Self {
        let mut prefix = Vec::with_capacity(tokens.len() + 1);
        prefix.push(0);
        let mut sum = 0u64;
        for &t in &tokens {
            sum += t;
            prefix.push(sum);
        }
        EventLines {
            tokens,
            shapes: Vec::new(),
            prefix,
        }
    }

    /// Tokens of the events `req` hands over.
    fn span_tokens(&self, req: &SummarizeRequest<'_>) -> u64 {
        let (a, b) = (req.events.start as usize, req.events.end as usize);
        if req.skip.is_empty() && a <= b && b < self.prefix.len() {
            return self.prefix[b] - self.prefix[a];
        }
        req.event_indices()
            .filter_map(|i| self.tokens.get(i as usize))
            .sum()
    }
}
