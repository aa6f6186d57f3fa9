//! The summarizer seam: the engine asks "summarize these raw events (plus the seed summary)"
//! and gets back a size, or nothing, or a failure. Deterministic summarizers matching the
//! oracle's fake model live here; `terse`, `command:` and modelled ones live in `cost`.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use super::types::{Phase, Trigger};
use crate::tokens::splice::{Ends, Spliced};

/// A summary's text. A rolling summarizer writes its seed's text again with a little around
/// it (`terse`: `model: ` + seed + new lines), so a text can be kept as `head + seed + tail`
/// sharing the seed: the texts of a replay then take O(history), not O(history²), and what
/// reads them (token counts, fact searches) can work on what each text added.
#[derive(Clone)]
pub struct SummaryText(Arc<TextNode>);

struct TextNode {
    /// What a rolling summarizer writes before its seed: a constant of the summarizer.
    head: &'static str,
    seed: Option<SummaryText>,
    tail: Box<str>,
    len: usize,
    chars: u64,
    /// JSON-escaped length ([`crate::tokens::adk::json_str_len_raw`]), additive over the parts.
    escaped: u64,
    /// The token count by segments, when the summarizer that wrote it keeps one.
    spliced: Option<Spliced>,
}

impl Drop for TextNode {
    // A chain of seeds is as deep as a replay has summaries: unlink it iteratively.
    fn drop(&mut self) {
        let mut next = self.seed.take();
        while let Some(SummaryText(arc)) = next {
            next = match Arc::try_unwrap(arc) {
                Ok(mut node) => node.seed.take(),
                Err(_) => None,
            };
        }
    }
}

impl SummaryText {
    /// A text standing alone.
    pub fn flat(text: String) -> SummaryText {
        SummaryText::flat_spliced(text, None)
    }

    /// A text standing alone, with its count by segments.
    pub fn flat_spliced(text: String, spliced: Option<Spliced>) -> SummaryText {
        SummaryText(Arc::new(TextNode {
            head: "",
            seed: None,
            len: text.len(),
            chars: text.chars().count() as u64,
            escaped: crate::tokens::adk::json_str_len_raw(&text),
            tail: text.into_boxed_str(),
            spliced,
        }))
    }

    /// `head + seed + tail`, sharing `seed`.
    pub fn seeded(
        head: &'static str,
        seed: &SummaryText,
        tail: &str,
        spliced: Option<Spliced>,
    ) -> SummaryText {
        let measured = (
            tail.chars().count() as u64,
            crate::tokens::adk::json_str_len_raw(tail),
        );
        SummaryText::seeded_measured(head, seed, tail.to_string(), measured, spliced)
    }

    /// [`SummaryText::seeded`], with the tail's chars and JSON-escaped length already known
    /// (a rolling summarizer's tail is lines it measured once).
    pub fn seeded_measured(
        head: &'static str,
        seed: &SummaryText,
        tail: String,
        (tc, te): (u64, u64),
        spliced: Option<Spliced>,
    ) -> SummaryText {
        debug_assert_eq!(tc, tail.chars().count() as u64, "tail chars");
        debug_assert_eq!(
            te,
            crate::tokens::adk::json_str_len_raw(&tail),
            "tail escaped"
        );
        let hc = head.chars().count() as u64;
        let he = crate::tokens::adk::json_str_len_raw(head);
        SummaryText(Arc::new(TextNode {
            len: head.len() + seed.0.len + tail.len(),
            chars: hc + seed.0.chars + tc,
            escaped: he + seed.0.escaped + te,
            head,
            seed: Some(seed.clone()),
            tail: tail.into_boxed_str(),
            spliced,
        }))
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.0.len
    }

    pub fn is_empty(&self) -> bool {
        self.0.len == 0
    }

    /// Length in chars (code points).
    pub fn chars(&self) -> u64 {
        self.0.chars
    }

    /// JSON-escaped length in chars, without the quotes.
    pub fn escaped_len(&self) -> u64 {
        self.0.escaped
    }

    pub fn spliced(&self) -> Option<&Spliced> {
        self.0.spliced.as_ref()
    }

    /// The seed this text was written around, with what comes before and after it.
    pub fn parts(&self) -> (&str, Option<&SummaryText>, &str) {
        (self.0.head, self.0.seed.as_ref(), &self.0.tail)
    }

    /// The same text object (not just equal text).
    pub fn same(&self, other: &SummaryText) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The whole text, borrowed when it has no seed.
    pub fn whole(&self) -> std::borrow::Cow<'_, str> {
        match &self.0.seed {
            None if self.0.head.is_empty() => std::borrow::Cow::Borrowed(&self.0.tail),
            _ => std::borrow::Cow::Owned(self.to_string()),
        }
    }

    /// An id of the text object, the same for its clones while one lives.
    pub fn node_id(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    /// The chain from this text down to the one with no seed.
    fn chain(&self) -> Vec<&TextNode> {
        let mut out: Vec<&TextNode> = vec![&self.0];
        let mut node: &TextNode = &self.0;
        while let Some(s) = &node.seed {
            node = &s.0;
            out.push(node);
        }
        out
    }

    /// Append the whole text to `out`.
    pub fn write_to(&self, out: &mut String) {
        let chain = self.chain();
        out.reserve(self.0.len);
        for n in &chain {
            out.push_str(n.head);
        }
        for n in chain.iter().rev() {
            out.push_str(&n.tail);
        }
    }

    /// The first `n` bytes, or a few more to end on a char boundary (all when shorter).
    /// Walks the chain only as deep as the bytes asked for.
    pub fn prefix(&self, n: usize) -> String {
        let mut out = String::new();
        let mut take = |p: &str| {
            let mut end = (n - out.len()).min(p.len());
            while !p.is_char_boundary(end) {
                end += 1;
            }
            out.push_str(&p[..end]);
            out.len() >= n
        };
        let mut node = &*self.0;
        loop {
            if take(node.head) {
                return out;
            }
            match &node.seed {
                Some(s) => node = &*s.0,
                None => break,
            }
        }
        // every head taken: the tails, innermost first
        for t in self.chain().iter().rev() {
            if take(&t.tail) {
                break;
            }
        }
        out
    }

    /// The last `n` bytes, or a few more to start on a char boundary (all when shorter).
    /// Borrowed when they are in the text's own tail (a rolling summary's last segment,
    /// usually); else walks the chain only as deep as the bytes asked for.
    pub fn suffix(&self, n: usize) -> std::borrow::Cow<'_, str> {
        let own = &self.0.tail;
        if let Some(start) = own.len().checked_sub(n) {
            if own.is_char_boundary(start) {
                return std::borrow::Cow::Borrowed(&own[start..]);
            }
        }
        fn take<'t>(p: &'t str, got: &mut usize, n: usize, rev: &mut Vec<&'t str>) -> bool {
            let mut start = p.len().saturating_sub(n - *got);
            while !p.is_char_boundary(start) {
                start -= 1;
            }
            *got += p.len() - start;
            rev.push(&p[start..]);
            *got >= n
        }
        let mut rev: Vec<&str> = Vec::new();
        let mut got = 0;
        let mut node: &TextNode = &self.0;
        let mut done = false;
        loop {
            if take(&node.tail, &mut got, n, &mut rev) {
                done = true;
                break;
            }
            match &node.seed {
                Some(s) => node = &s.0,
                None => break,
            }
        }
        if !done {
            // every tail taken: the heads, innermost first
            let chain = self.chain();
            for t in chain.into_iter().rev() {
                if take(t.head, &mut got, n, &mut rev) {
                    break;
                }
            }
        }
        std::borrow::Cow::Owned(rev.iter().rev().copied().collect())
    }

    /// The first and last segments of this text, as its count by segments ([`Spliced`])
    /// places them: what composing a text around this one counts again.
    pub fn with_ends<R>(&self, f: impl FnOnce(&Spliced, Ends<'_>) -> R) -> Option<R> {
        let s = self.0.spliced.as_ref()?;
        // the first segment is in the head (a rolling summary's) or, with no seed, the tail
        let n = s.first_len();
        let own = match &self.0.seed {
            Some(_) => self.0.head,
            None if self.0.head.is_empty() => &self.0.tail,
            None => "",
        };
        let first = match own.get(..n) {
            Some(p) => std::borrow::Cow::Borrowed(p),
            None => std::borrow::Cow::Owned(self.prefix(n)),
        };
        let last = self.suffix(s.last_len());
        Some(f(
            s,
            Ends {
                first: &first,
                last: &last,
            },
        ))
    }
}

impl fmt::Display for SummaryText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.write_to(&mut s);
        f.write_str(&s)
    }
}

impl fmt::Debug for SummaryText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_string(), f)
    }
}

impl serde::Serialize for SummaryText {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl PartialEq for SummaryText {
    fn eq(&self, other: &Self) -> bool {
        self.same(other) || (self.0.len == other.0.len && self.to_string() == other.to_string())
    }
}

/// The previous summary handed to a rolling (token-path) summarizer as its first line.
#[derive(Debug, Clone, Copy)]
pub struct Seed<'a> {
    /// Ordinal of the summary used as the seed.
    pub ordinal: u32,
    pub chars: u64,
    /// Start of its range: ADK's seed event carries it as its timestamp.
    pub start_timestamp: f64,
    /// Its text, when the summarizer that wrote it produced text.
    pub text: Option<&'a SummaryText>,
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
    pub fn event_indices(&self) -> impl Iterator<Item = u32> + Clone + '_ {
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
    pub text: Option<SummaryText>,
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

/// Why a `--summary` policy does not parse (each carries the text as given).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error("summary policy `{0}` needs a number")]
    NeedsNumber(String),
    #[error("summary policy `{0}`: not a whole number")]
    NotWhole(String),
    #[error("summary policy `{0}` needs a ratio")]
    NeedsRatio(String),
    #[error("summary policy `{0}`: not a number")]
    NotNumber(String),
    #[error("summary policy `{0}`: ratio must be >= 0")]
    NegativeRatio(String),
    #[error("unknown summary policy `{0}` (expected fixed:N, ratio:R, echo[:N] or none)")]
    Unknown(String),
}

impl Policy {
    /// Parse `fixed:N | ratio:R | echo[:N] | none`.
    pub fn parse(s: &str) -> Result<Policy, PolicyError> {
        let (kind, arg) = match s.split_once(':') {
            Some((k, a)) => (k, Some(a)),
            None => (s, None),
        };
        let num = |a: Option<&str>| -> Result<u64, PolicyError> {
            a.ok_or_else(|| PolicyError::NeedsNumber(s.to_string()))?
                .trim()
                .parse::<u64>()
                .map_err(|_| PolicyError::NotWhole(s.to_string()))
        };
        match kind {
            "fixed" | "fixed-chars" => Ok(Policy::Fixed(num(arg)?)),
            "ratio" => {
                let r: f64 = arg
                    .ok_or_else(|| PolicyError::NeedsRatio(s.to_string()))?
                    .trim()
                    .parse()
                    .map_err(|_| PolicyError::NotNumber(s.to_string()))?;
                if !r.is_finite() || r < 0.0 {
                    return Err(PolicyError::NegativeRatio(s.to_string()));
                }
                Ok(Policy::Ratio(r))
            }
            "echo" => match arg {
                None | Some("") => Ok(Policy::Echo(None)),
                a => Ok(Policy::Echo(Some(num(a)?))),
            },
            "none" if arg.is_none() => Ok(Policy::None),
            _ => Err(PolicyError::Unknown(s.to_string())),
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
    /// Shared: one session's texts serve every replay of it.
    pub event_text: std::sync::Arc<[String]>,
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
    pub fn new(
        policy: Policy,
        fail_calls: Vec<u32>,
        event_text: impl Into<std::sync::Arc<[String]>>,
    ) -> Self {
        Deterministic {
            policy,
            fail_calls,
            event_text: event_text.into(),
        }
    }

    /// The formatted history ADK's summarizer builds for this request (seed line first), cut
    /// at `limit` chars: `echo:N` keeps N, and copying each span's whole history only to cut
    /// it was most of a long `echo` replay.
    pub fn history(&self, req: &SummarizeRequest<'_>, limit: Option<usize>) -> String {
        let mut out = String::new();
        let mut left = limit.unwrap_or(usize::MAX);
        // append the first `left` chars of `s` (all of it without a limit)
        let put = |out: &mut String, s: &str, left: &mut usize| {
            if limit.is_none() {
                out.push_str(s);
                return;
            }
            match s.char_indices().nth(*left) {
                Some((b, _)) => {
                    out.push_str(&s[..b]);
                    *left = 0;
                }
                None => {
                    out.push_str(s);
                    *left -= s.chars().count();
                }
            }
        };
        let mut first = true;
        if let Some(seed) = req.seed {
            if let Some(t) = seed.text {
                if !t.is_empty() {
                    put(&mut out, "model: ", &mut left);
                    if limit.is_none() {
                        t.write_to(&mut out);
                    } else {
                        let mut text = String::new();
                        t.write_to(&mut text);
                        put(&mut out, &text, &mut left);
                    }
                    first = false;
                }
            }
        }
        for i in req.event_indices() {
            if left == 0 {
                break;
            }
            if let Some(t) = self.event_text.get(i as usize) {
                if t.is_empty() {
                    continue;
                }
                if !first {
                    put(&mut out, "\n", &mut left);
                }
                put(&mut out, t, &mut left);
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
                let mut text = self.history(req, limit.map(|n| n as usize));
                #[cfg(debug_assertions)]
                {
                    let whole = self.history(req, None);
                    let cut: String = match limit {
                        None => whole,
                        Some(n) => whole.chars().take(n as usize).collect(),
                    };
                    assert_eq!(text, cut, "history cut while written vs cut after");
                }
                if text.is_empty() {
                    text = format!("[oracle summary #{}]", req.call);
                }
                let text = SummaryText::flat(text);
                (
                    text.chars(),
                    summary_json_chars(text.escaped_len()),
                    Some(text),
                )
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The ends a seeded text hands to the next count are its whole text's first and last
    /// segments, wherever they lie: in its head or tail, its seed's, or across the joins (an
    /// empty tail, a tail with no boundary, a first segment longer than the head).
    #[test]
    fn a_texts_ends_are_its_whole_texts_segments() {
        let count = |t: &str| t.len() as u64;
        let mut t =
            SummaryText::flat_spliced("user: hi".into(), Some(Spliced::of("user: hi", &count)));
        let steps = [
            ("model: ", "\nagent: ok"),
            ("model: ", ""),
            ("model: ", "tail with no boundary"),
            ("x", "\n\u{e9}t\u{e9}: y"),
            ("", ""),
            ("model: ", "\nuser: bye"),
        ];
        for (i, (head, tail)) in steps.iter().cycle().take(30).enumerate() {
            let whole = format!("{head}{t}{tail}");
            let s = t
                .with_ends(|s, ends| s.compose(ends, head, tail, &count))
                .expect("counted");
            t = SummaryText::seeded(head, &t, tail, Some(s));
            assert_eq!(t.to_string(), whole);
            let expected = Spliced::of(&whole, &count);
            assert_eq!(t.spliced(), Some(&expected), "step {i}");
            let (first, last) = t
                .with_ends(|_, e| (e.first.to_string(), e.last.to_string()))
                .expect("counted");
            let e = expected.ends(&whole);
            assert_eq!(
                (first.as_str(), last.as_str()),
                (e.first, e.last),
                "step {i}"
            );
        }
    }

    /// A chain as deep as a long replay has rolling summaries is dropped without recursing
    /// (a recursive drop overflows a test thread's stack long before 200,000 levels).
    #[test]
    fn a_deep_chain_of_seeded_texts_drops_without_overflowing_the_stack() {
        let mut t = SummaryText::flat("user: hi".into());
        for _ in 0..200_000 {
            t = SummaryText::seeded("model: ", &t, "\nagent: ok", None);
        }
        assert_eq!(t.len(), 8 + 200_000 * (7 + 10));
        drop(t);
    }

    /// Lengths, prefixes, suffixes and the whole text of shared texts agree with the text
    /// written out, multi-byte characters at the cuts included.
    #[test]
    fn shared_texts_measure_and_cut_like_the_written_text() {
        let root = SummaryText::flat("é: \"quoted\"\n".into());
        let mut texts = vec![root.clone()];
        let mut t = root;
        for (i, (head, tail)) in [
            ("model: ", "\nuser: añb"),
            ("", ""),
            ("x", "\t€\n"),
            ("model: ", ""),
        ]
        .iter()
        .cycle()
        .take(12)
        .enumerate()
        {
            t = SummaryText::seeded(head, &t, &format!("{tail}{i}"), None);
            texts.push(t.clone());
        }
        let branch = SummaryText::seeded("b: ", &texts[3], "!", None);
        texts.push(branch);
        for t in &texts {
            let whole = t.to_string();
            assert_eq!(t.len(), whole.len());
            assert_eq!(t.chars(), whole.chars().count() as u64);
            assert_eq!(
                t.escaped_len(),
                crate::tokens::adk::json_str_len_raw(&whole)
            );
            assert_eq!(t.whole(), whole);
            for n in 0..=whole.len() + 2 {
                let p = t.prefix(n);
                assert!(
                    whole.starts_with(&p) && (p.len() >= n.min(whole.len())),
                    "{whole:?} {n} {p:?}"
                );
                assert!(p.len() < n.min(whole.len()) + 4, "{whole:?} {n} {p:?}");
                let s = t.suffix(n);
                assert!(
                    whole.ends_with(&*s) && (s.len() >= n.min(whole.len())),
                    "{whole:?} {n} {s:?}"
                );
                assert!(s.len() < n.min(whole.len()) + 4, "{whole:?} {n} {s:?}");
            }
        }
    }
}
