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
//! A [`Spliced`] keeps a text's total and where its first segment ends and its last begins,
//! which is all that prepending or appending can change; composing reads those two segments
//! from the text itself ([`Ends`]), so a rolling summary's counts hold no copies of them.
//! Tests compare with counting the whole text, over the corpus and for both encodings; debug
//! builds of `terse` do the same for each summary.

/// Byte offsets where a segment starts (after 0), by the two rules above.
fn boundaries(text: &str) -> impl Iterator<Item = usize> + '_ {
    let b = text.as_bytes();
    (1..b.len()).filter(move |&q| {
        (b[q - 1] == b'\n' && b[q].is_ascii_alphanumeric()) || (b[q - 1] == b':' && b[q] == b' ')
    })
}

/// A text's token count, with the lengths and counts of its first and last segments (see the
/// module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spliced {
    pub total: u64,
    first_len: u32,
    first_tokens: u64,
    /// 0 when the text is one segment (the first is all of it).
    last_len: u32,
    last_tokens: u64,
}

/// The first and last segments of the text a [`Spliced`] counts ([`Spliced::first_len`],
/// [`Spliced::last_len`]; `last` is empty when the text is one segment), read from the text.
#[derive(Debug, Clone, Copy)]
pub struct Ends<'a> {
    pub first: &'a str,
    pub last: &'a str,
}

impl Spliced {
    /// Bytes of the first segment (all of the text when it is one segment).
    pub fn first_len(&self) -> usize {
        self.first_len as usize
    }

    /// Bytes of the last segment (0 when the text is one segment).
    pub fn last_len(&self) -> usize {
        self.last_len as usize
    }

    /// The first and last segments of `text`, the text this counts.
    pub fn ends<'t>(&self, text: &'t str) -> Ends<'t> {
        Ends {
            first: &text[..self.first_len()],
            last: &text[text.len() - self.last_len()..],
        }
    }

    /// Count `text` segment by segment with `count` (a tiktoken encoding's counter).
    pub fn of(text: &str, count: &dyn Fn(&str) -> u64) -> Spliced {
        let mut cuts = boundaries(text).peekable();
        let Some(&first_end) = cuts.peek() else {
            let n = count(text);
            return Spliced {
                total: n,
                first_len: text.len() as u32,
                first_tokens: n,
                last_len: 0,
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
            first_len: first.len() as u32,
            first_tokens,
            last_len: last.len() as u32,
            last_tokens,
        }
    }

    /// The count of `head + seed + tail`, where `seed` is the text `self` counts, whose
    /// segments at its ends are `seed`: only the first with `head` and the last with `tail`
    /// are counted again.
    pub fn compose(
        &self,
        seed: Ends<'_>,
        head: &str,
        tail: &str,
        count: &dyn Fn(&str) -> u64,
    ) -> Spliced {
        debug_assert_eq!(
            (seed.first.len(), seed.last.len()),
            (self.first_len(), self.last_len()),
            "the seed's ends"
        );
        if self.last_len == 0 {
            // one segment: nothing of it is known to stay apart
            let mut whole = String::with_capacity(head.len() + seed.first.len() + tail.len());
            whole.push_str(head);
            whole.push_str(seed.first);
            whole.push_str(tail);
            return Spliced::of(&whole, count);
        }
        let front = spliced_joined(head, seed.first, count);
        let back = spliced_joined(seed.last, tail, count);
        // The seed's first segment still ends at a boundary and its last still starts at one:
        // the bytes either side of those positions are unchanged.
        let total = self.total - self.first_tokens - self.last_tokens + front.total + back.total;
        let (last_len, last_tokens) = if back.last_len == 0 {
            (back.first_len, back.first_tokens)
        } else {
            (back.last_len, back.last_tokens)
        };
        Spliced {
            total,
            first_len: front.first_len,
            first_tokens: front.first_tokens,
            last_len,
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
        if s.last_len == 0 {
            return None;
        }
        Some(Shape {
            total: s.total,
            first_end: s.first_len,
            first_tokens: s.first_tokens,
            last_start: (text.len() - s.last_len()) as u32,
            last_tokens: s.last_tokens,
        })
    }
}

/// A piece's first segment counted after a known text (`after + first`): kept for a piece
/// that often follows the same lines (an event's lines after the event's before it), and
/// used when the segment open before the piece is `after`.
#[derive(Debug, Clone, Copy)]
pub struct Joined<'a> {
    pub after: &'a str,
    pub tokens: u64,
}

/// `f(a + b)`, the two joined on the stack when short (a summary's first segment with the
/// head before it, its last with the next lines: a few dozen bytes, at every compaction).
fn with_joined<R>(a: &str, b: &str, f: impl FnOnce(&str) -> R) -> R {
    let mut buf = [0u8; 256];
    let n = a.len() + b.len();
    if n <= buf.len() {
        buf[..a.len()].copy_from_slice(a.as_bytes());
        buf[a.len()..n].copy_from_slice(b.as_bytes());
        // (two `str`s end to end are UTF-8)
        if let Ok(joined) = std::str::from_utf8(&buf[..n]) {
            return f(joined);
        }
    }
    f(&[a, b].concat())
}

/// `count` of `a + b` ([`with_joined`]).
fn count_joined(a: &str, b: &str, count: &dyn Fn(&str) -> u64) -> u64 {
    with_joined(a, b, count)
}

/// [`Spliced::of`] `a + b` ([`with_joined`]).
fn spliced_joined(a: &str, b: &str, count: &dyn Fn(&str) -> u64) -> Spliced {
    with_joined(a, b, |t| Spliced::of(t, count))
}

impl Spliced {
    /// The count of `head + seed + tail`, where `seed` is the text `self` counts and `tail`
    /// is pieces end to end, each given by its length, its [`Shape`] (`None`: one segment)
    /// and maybe a [`Joined`] count of its first segment: what [`Spliced::compose`] gives,
    /// counting only the segments that cross from one piece into the next, as slices of
    /// `tail` (nothing is copied but the segments that start in the seed). Correct for pieces
    /// starting with a `\n`, where no boundary can fall (module doc); debug builds compare
    /// with `compose`.
    pub fn compose_pieces<'t>(
        &self,
        seed: Ends<'_>,
        head: &str,
        tail: &str,
        pieces: impl Iterator<Item = (u32, Option<Shape>, Option<Joined<'t>>)> + Clone,
        count: &dyn Fn(&str) -> u64,
    ) -> Spliced {
        debug_assert_eq!(
            pieces.clone().map(|(n, ..)| n as usize).sum::<usize>(),
            tail.len(),
            "pieces end to end are the tail"
        );
        debug_assert!(pieces
            .clone()
            .scan(0usize, |at, (n, ..)| {
                let piece = &tail[*at..*at + n as usize];
                *at += n as usize;
                Some(piece)
            })
            .all(|t| t.is_empty() || t.starts_with('\n')));
        if self.last_len == 0 {
            return self.compose(seed, head, tail, count);
        }
        let front = spliced_joined(head, seed.first, count);
        // segments of the seed's last segment and the pieces: closed ones counted in
        // `closed`; the open one (still growing) starts in the seed (`None`) or at a byte of
        // the tail, its count known when a piece's own last segment ends the tail
        let mut closed = 0u64;
        let mut open_from: Option<usize> = None;
        let mut open_tokens = Some(self.last_tokens);
        let mut at = 0usize;
        for (len, shape, joined) in pieces {
            let len = len as usize;
            if len == 0 {
                continue;
            }
            match shape {
                Some(sh) => {
                    let end = at + sh.first_end as usize;
                    let open = match open_from {
                        None if at == 0 => Some(seed.last),
                        None => None,
                        Some(from) => Some(&tail[from..at]),
                    };
                    let known = joined.filter(|j| open == Some(j.after)).map(|j| j.tokens);
                    let crossing = || match open_from {
                        None => count_joined(seed.last, &tail[..end], count),
                        Some(from) => count(&tail[from..end]),
                    };
                    debug_assert!(known.is_none_or(|k| k == crossing()), "joined count");
                    closed += known.unwrap_or_else(crossing);
                    closed += sh.total - sh.first_tokens - sh.last_tokens;
                    open_from = Some(at + sh.last_start as usize);
                    open_tokens = Some(sh.last_tokens);
                }
                None => open_tokens = None,
            }
            at += len;
        }
        let last_tokens = open_tokens.unwrap_or_else(|| match open_from {
            None => count_joined(seed.last, tail, count),
            Some(from) => count(&tail[from..]),
        });
        let last_len = match open_from {
            None => seed.last.len() + tail.len(),
            Some(from) => tail.len() - from,
        };
        let joined = Spliced {
            total: self.total - self.first_tokens - self.last_tokens
                + front.total
                + closed
                + last_tokens,
            first_len: front.first_len,
            first_tokens: front.first_tokens,
            last_len: last_len as u32,
            last_tokens,
        };
        debug_assert_eq!(
            joined,
            self.compose(seed, head, tail, count),
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
                        // each piece's first segment known after the piece before it
                        let shaped: Vec<(u32, Option<Shape>, Option<Joined>)> = chosen
                            .iter()
                            .enumerate()
                            .map(|(k, &p)| {
                                let shape = Shape::of(p, &c);
                                let before = k.checked_sub(1).map(|b| chosen[b]).and_then(|b| {
                                    Shape::of(b, &c).map(|bs| &b[bs.last_start as usize..])
                                });
                                let joined = before.zip(shape).map(|(after, sh)| Joined {
                                    after,
                                    tokens: c(&[after, &p[..sh.first_end as usize]].concat()),
                                });
                                (p.len() as u32, shape, joined)
                            })
                            .collect();
                        let ends = s.ends(seed);
                        let joined = s.compose_pieces(
                            ends,
                            "model: ",
                            &chosen.concat(),
                            shaped.iter().copied(),
                            &c,
                        );
                        let text = format!("model: {seed}{}", chosen.concat());
                        assert_eq!(joined.total, c(&text), "{tok} {text:?}");
                        assert_eq!(joined, s.compose(ends, "model: ", &chosen.concat(), &c));
                        // the ends it keeps are the whole text's, as counting it finds them
                        let whole = Spliced::of(&text, &c);
                        assert_eq!(joined.ends(&text).first, whole.ends(&text).first);
                        assert_eq!(joined.ends(&text).last, whole.ends(&text).last);
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
                s = s.compose(s.ends(&text), head, tail, &c);
                text = format!("{head}{text}{tail}");
                assert_eq!(s.total, c(&text), "{tok} step {i}: {text:?}");
                assert_eq!(s, Spliced::of(&text, &c), "{tok} step {i}: ends");
            }
        }
    }
}
