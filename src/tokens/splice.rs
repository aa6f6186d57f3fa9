//! Token counts of texts built from other texts (`head + seed + tail`), in time linear in what
//! was added, not in the whole text.
//!
//! Why: the guide's `Terse` summarizer writes `model: ` + its seed + the new lines, so under a
//! token trigger each summary is the previous one plus a little, and re-tokenizing each made
//! a replay quadratic in the session's length.
//!
//! How: tiktoken's pre-tokenizer (o200k and cl100k alike) cuts a text into pieces by a regex
//! that only looks forward, and BPE works inside a piece, so a text's count is the sum of its
//! segments' counts wherever every piece ends at a segment boundary. Two positions are such
//! boundaries whatever surrounds them, by the two patterns:
//! - after `\n` when an ASCII letter or digit follows: no piece takes a newline and then a
//!   letter or digit (a word's optional leading character excludes `\r\n`; punctuation takes
//!   trailing `\r\n/` only; whitespace runs stop before non-whitespace);
//! - after `:` when a space follows: a word may start with one non-letter (the `:`) only if a
//!   letter follows it, and a punctuation run takes no space after it.
//!
//! A [`Spliced`] keeps a text's total and its first and last segments, which are all that
//! prepending or appending can change. Tests compare with counting the whole text, over the
//! corpus and for both encodings; debug builds of `terse` do the same for each summary.

/// Byte offsets where a segment starts (after 0), by the two rules above.
fn boundaries(text: &str) -> impl Iterator<Item = usize> + '_ {
    let b = text.as_bytes();
    (1..b.len()).filter(move |&q| {
        (b[q - 1] == b'\n' && b[q].is_ascii_alphanumeric()) || (b[q - 1] == b':' && b[q] == b' ')
    })
}

/// A text's token count, with its first and last segments (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spliced {
    pub total: u64,
    first: Box<str>,
    first_tokens: u64,
    /// Empty when the text is one segment (`first` is all of it).
    last: Box<str>,
    last_tokens: u64,
}

impl Spliced {
    /// Count `text` segment by segment with `count` (a tiktoken encoding's counter).
    pub fn of(text: &str, count: &dyn Fn(&str) -> u64) -> Spliced {
        let mut cuts = boundaries(text).peekable();
        let Some(&first_end) = cuts.peek() else {
            let n = count(text);
            return Spliced {
                total: n,
                first: text.into(),
                first_tokens: n,
                last: Box::default(),
                last_tokens: 0,
            };
        };
        let first = &text[..first_end];
        let first_tokens = count(first);
        let mut total = first_tokens;
        let mut start = first_end;
        cuts.next();
        for q in cuts {
            total += count(&text[start..q]);
            start = q;
        }
        let last = &text[start..];
        let last_tokens = count(last);
        Spliced {
            total: total + last_tokens,
            first: first.into(),
            first_tokens,
            last: last.into(),
            last_tokens,
        }
    }

    /// The count of `head + seed + tail`, where `seed` is the text `self` counts: only the
    /// seed's first segment with `head` and its last with `tail` are counted again.
    pub fn compose(&self, head: &str, tail: &str, count: &dyn Fn(&str) -> u64) -> Spliced {
        if self.last.is_empty() {
            // one segment: nothing of it is known to stay apart
            let mut whole = String::with_capacity(head.len() + self.first.len() + tail.len());
            whole.push_str(head);
            whole.push_str(&self.first);
            whole.push_str(tail);
            return Spliced::of(&whole, count);
        }
        let front = Spliced::of(&[head, &self.first].concat(), count);
        let back = Spliced::of(&[&self.last, tail].concat(), count);
        // The seed's first segment still ends at a boundary and its last still starts at one:
        // the bytes either side of those positions are unchanged.
        let total = self.total - self.first_tokens - self.last_tokens + front.total + back.total;
        let (last, last_tokens) = if back.last.is_empty() {
            (back.first, back.first_tokens)
        } else {
            (back.last, back.last_tokens)
        };
        Spliced {
            total,
            first: front.first,
            first_tokens: front.first_tokens,
            last,
            last_tokens,
        }
    }
}

/// Where a text's first segment ends and its last begins, with the counts: what appending the
/// text to a [`Spliced`] needs, so a text appended again and again (an event's lines, which a
/// rolling summary writes at every compaction of every setting) is cut and counted once.
/// Only for texts of two segments or more ([`Shape::of`] says `None` otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub total: u64,
    pub first_end: u32,
    pub first_tokens: u64,
    pub last_start: u32,
    pub last_tokens: u64,
}

impl Shape {
    /// The shape of `text`, counted with `count`; `None` when it is one segment.
    pub fn of(text: &str, count: &dyn Fn(&str) -> u64) -> Option<Shape> {
        let s = Spliced::of(text, count);
        if s.last.is_empty() {
            return None;
        }
        Some(Shape {
            total: s.total,
            first_end: s.first.len() as u32,
            first_tokens: s.first_tokens,
            last_start: (text.len() - s.last.len()) as u32,
            last_tokens: s.last_tokens,
        })
    }
}

/// The length of `pieces` end to end: room for the segment still open at the end.
fn tail_len<'t>(pieces: impl Iterator<Item = (&'t str, Option<Shape>)>) -> usize {
    pieces.map(|(t, _)| t.len()).sum()
}

impl Spliced {
    /// The count of `head + seed + tail`, where `seed` is the text `self` counts and `tail`
    /// is `pieces` end to end, each with its [`Shape`] (`None`: one segment): what
    /// [`Spliced::compose`] gives, counting only the segments that cross from one piece into
    /// the next. Correct for pieces starting with a `\n`, where no boundary can fall (module
    /// doc); debug builds compare with `compose`.
    pub fn compose_pieces<'t>(
        &self,
        head: &str,
        pieces: impl Iterator<Item = (&'t str, Option<Shape>)> + Clone,
        count: &dyn Fn(&str) -> u64,
    ) -> Spliced {
        #[cfg(debug_assertions)]
        let tail: String = pieces.clone().map(|(t, _)| t).collect();
        debug_assert!(pieces
            .clone()
            .all(|(t, _)| t.is_empty() || t.starts_with('\n')));
        if self.last.is_empty() {
            let tail: String = pieces.map(|(t, _)| t).collect();
            return self.compose(head, &tail, count);
        }
        let front = Spliced::of(&[head, &self.first].concat(), count);
        // segments of the seed's last segment and the pieces: closed ones counted in `closed`,
        // the open one (still growing) in `open`, its count known when a piece's own last
        // segment ends the tail
        let mut closed = 0u64;
        let mut open = String::with_capacity(self.last.len() + tail_len(pieces.clone()));
        open.push_str(&self.last);
        let mut open_tokens = Some(self.last_tokens);
        for (text, shape) in pieces {
            if text.is_empty() {
                continue;
            }
            match shape {
                Some(sh) => {
                    open.push_str(&text[..sh.first_end as usize]);
                    closed += count(&open) + sh.total - sh.first_tokens - sh.last_tokens;
                    open.clear();
                    open.push_str(&text[sh.last_start as usize..]);
                    open_tokens = Some(sh.last_tokens);
                }
                None => {
                    open.push_str(text);
                    open_tokens = None;
                }
            }
        }
        let last_tokens = open_tokens.unwrap_or_else(|| count(&open));
        let joined = Spliced {
            total: self.total - self.first_tokens - self.last_tokens
                + front.total
                + closed
                + last_tokens,
            first: front.first,
            first_tokens: front.first_tokens,
            last: open.into_boxed_str(),
            last_tokens,
        };
        #[cfg(debug_assertions)]
        debug_assert_eq!(
            joined,
            self.compose(head, &tail, count),
            "pieces vs compose"
        );
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::{count_text, Tokenizer};

    fn counter(tok: Tokenizer) -> impl Fn(&str) -> u64 {
        move |t: &str| count_text(tok, t) as u64
    }

    #[test]
    fn a_text_counts_as_the_sum_of_its_segments() {
        for tok in [Tokenizer::O200k, Tokenizer::Cl100k] {
            let c = counter(tok);
            for text in [
                "",
                "user: hi",
                "model: model: user: Book flight 123\nagent: Booked.\nuser: thanks",
                "a:  b::  c\n\nd\n 1\n2:\t",
                "user: ends with newline\n",
                "x: \u{e9}t\u{e9}\nY: 12345678\n/path: ok\n",
            ] {
                assert_eq!(Spliced::of(text, &c).total, c(text), "{tok} {text:?}");
            }
        }
    }

    /// Appending pieces by their shapes counts what counting the whole text counts, whether a
    /// piece is one segment or many and whatever its neighbours end with.
    #[test]
    fn composing_pieces_equals_counting_the_whole_text() {
        let pieces = [
            "\nuser: Book flight 123",
            "\nagent: Booked: seat 4A.",
            "\n_tool: no boundary",
            "\n",
            "\n\u{4e2d}\u{6587}: \u{6587}",
            "\n  indented: x\nY: 1",
            "\n9: z:",
            "\nplain",
        ];
        for tok in [Tokenizer::O200k, Tokenizer::Cl100k] {
            let c = counter(tok);
            for seed in ["user: hi\nagent: ok", "one segment", "a: b"] {
                let s = Spliced::of(seed, &c);
                for start in 0..pieces.len() {
                    for len in 0..4 {
                        let chosen: Vec<&str> = pieces
                            .iter()
                            .cycle()
                            .skip(start)
                            .take(len)
                            .copied()
                            .collect();
                        let shaped: Vec<(&str, Option<Shape>)> =
                            chosen.iter().map(|&p| (p, Shape::of(p, &c))).collect();
                        let joined = s.compose_pieces("model: ", shaped.iter().copied(), &c);
                        let text = format!("model: {seed}{}", chosen.concat());
                        assert_eq!(joined.total, c(&text), "{tok} {text:?}");
                        assert_eq!(joined, s.compose("model: ", &chosen.concat(), &c));
                    }
                }
            }
        }
    }

    #[test]
    fn a_composed_count_equals_counting_the_whole_text() {
        for tok in [Tokenizer::O200k, Tokenizer::Cl100k] {
            let c = counter(tok);
            let mut text = "user: Book flight 123".to_string();
            let mut s = Spliced::of(&text, &c);
            let tails = [
                "\nagent: Booked: seat 4A.",
                "",
                "\n  indented: x",
                "\nuser: /cancel it\nagent: done.",
                ":: odd",
                "\n\u{4e2d}\u{6587}: \u{6587}",
            ];
            for (i, tail) in tails.iter().cycle().take(24).enumerate() {
                let head = if i % 5 == 4 { "" } else { "model: " };
                s = s.compose(head, tail, &c);
                text = format!("{head}{text}{tail}");
                assert_eq!(s.total, c(&text), "{tok} step {i}: {text:?}");
            }
        }
    }
}
