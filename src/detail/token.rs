//! When a text holds a fact: verbatim and as a whole token, bounded by what the fact's own
//! kind shows (`80` is in `line 80,` but not in `1480`). One rule for every place the detail
//! measure asks it (`facts`, `text_facts`, `references`), below them all so none imports
//! another for it.

/// Bytes either side of an occurrence that decide whether it is a whole token: two chars.
pub const TOKEN_CONTEXT: usize = 8;

/// What continues a fact where a text holds it, by the fact kind its own text shows (a
/// backticked path is bounded as a path): what makes an occurrence part of a longer token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    /// A number: a digit, or `.` and a digit, either side (`80` is not in `1480`, `180.5` or
    /// `0.80`, but is in `line 80,`, `x80` and `80px`).
    Number,
    /// A URL: after it, a char a URL takes (not space, quotes, `<>`, closing brackets), or a
    /// trailing `.,;:!?` and such a char (`https://x.io/a` is not in `https://x.io/a.html`,
    /// but is in `see https://x.io/a.`); anything before it.
    Url,
    /// A path or an email: a word char either side, `/`, `.` or `~` before a leading `/`
    /// (`/b/c.rs` is not in `a/b/c.rs`, `./b/c.rs`, `~/b/c.rs`), `-` joined to a word char
    /// before it, or `.`, `-`, `/` joined to a word char after it (`a.rs` is not in
    /// `a.rs.bak`, `a.rs-old`, `a.rs/x`, but is in `a.rs.` at a sentence's end). A relative
    /// path may follow `/` or `.` (`b/c.rs` in `a/b/c.rs`, `com/x/y.go` in
    /// `github.com/x/y.go`), as the extractor takes it out of such text.
    Path,
    /// An id or a quoted string: where its own end is a word char (letter, digit, `_`), a
    /// word char beside it (`id` is not in `valid` or `user_id`, but is in `user.id`).
    Word,
}

/// A fact's ends and the way text continues it ([`holds`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    bound: Bound,
    first: char,
    last: char,
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// A char a URL pattern takes (`https?://[^\s"'<>`)\]}]+`).
fn is_url_char(c: char) -> bool {
    !c.is_whitespace() && !matches!(c, '"' | '\'' | '<' | '>' | '`' | ')' | ']' | '}')
}

/// Punctuation a URL fact is trimmed of at its end.
fn is_url_trail(c: char) -> bool {
    matches!(c, '.' | ',' | ';' | ':' | '!' | '?')
}

impl Token {
    /// The token of a fact's text.
    pub fn of(fact: &str) -> Token {
        let bound = if fact.starts_with("http://") || fact.starts_with("https://") {
            Bound::Url
        } else if fact
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'.' || b == b',')
        {
            Bound::Number
        } else if fact.contains(char::is_whitespace) {
            Bound::Word
        } else if fact.contains(['/', '@']) {
            Bound::Path
        } else {
            Bound::Word
        };
        Token {
            bound,
            first: fact.chars().next().unwrap_or(' '),
            last: fact.chars().next_back().unwrap_or(' '),
        }
    }

    /// Whether the text before an occurrence (its last two chars decide) lets it start a
    /// token; the start of a text does.
    pub fn fits_before(self, before: &str) -> bool {
        let mut back = before.chars().rev();
        let Some(c1) = back.next() else { return true };
        let c2 = back.next();
        let word2 = c2.is_some_and(is_word);
        match self.bound {
            Bound::Number => {
                !(c1.is_ascii_digit() || c1 == '.' && c2.is_some_and(|c| c.is_ascii_digit()))
            }
            Bound::Url => true,
            Bound::Word => !(is_word(self.first) && is_word(c1)),
            Bound::Path => {
                !(is_word(c1)
                    || self.first == '/' && matches!(c1, '/' | '.' | '~')
                    || c1 == '-' && word2)
            }
        }
    }

    /// Whether the text after an occurrence (its first two chars decide) lets it end a
    /// token; the end of a text does.
    pub fn fits_after(self, after: &str) -> bool {
        let mut on = after.chars();
        let Some(c1) = on.next() else { return true };
        let c2 = on.next();
        match self.bound {
            Bound::Number => {
                !(c1.is_ascii_digit() || c1 == '.' && c2.is_some_and(|c| c.is_ascii_digit()))
            }
            Bound::Url => {
                let carries = |c: char| is_url_char(c) && !is_url_trail(c);
                !(carries(c1) || is_url_trail(c1) && c2.is_some_and(carries))
            }
            Bound::Word => !(is_word(self.last) && is_word(c1)),
            Bound::Path => {
                !(is_word(c1) || matches!(c1, '.' | '-' | '/') && c2.is_some_and(is_word))
            }
        }
    }

    /// Whether `text[start..end]` (an occurrence of the fact) is a whole token.
    pub fn fits(self, text: &str, start: usize, end: usize) -> bool {
        self.fits_before(text.get(..start).unwrap_or(""))
            && self.fits_after(text.get(end..).unwrap_or(""))
    }
}

/// Whether `text` holds `fact` as a whole token: somewhere verbatim, and not inside a longer
/// token ([`Token`]): `80` is in `line 80,` but not in `1480`; `id` is in `user.id` but not
/// in `valid`. What "a text holds a fact" means everywhere in the detail measure (summaries,
/// the part of a payload ADK's summarizer keeps, the search of rolling summaries).
pub fn holds(text: &str, fact: &str) -> bool {
    let Some(first) = fact.chars().next() else {
        return true;
    };
    let token = Token::of(fact);
    let mut from = 0;
    while let Some(k) = text.get(from..).and_then(|t| t.find(fact)) {
        let at = from + k;
        if token.fits(text, at, at + fact.len()) {
            return true;
        }
        from = at + first.len_utf8();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_inside_a_longer_number_is_not_held() {
        for text in [
            "1480 tokens",
            "took 180.5 s",
            "0.80 share",
            "8080",
            "id 801",
        ] {
            assert!(!holds(text, "80"), "{text:?}");
        }
    }

    #[test]
    fn a_number_beside_punctuation_letters_or_a_text_end_is_held() {
        for text in [
            "line 80,",
            "80",
            "x80",
            "80px",
            "2024-05-12 80.",
            "(80)",
            "80.\n",
        ] {
            assert!(holds(text, "80"), "{text:?}");
        }
        assert!(holds("took 180.5 s", "180.5"));
        assert!(!holds("took 180.55 s", "180.5"));
    }

    #[test]
    fn a_word_inside_a_longer_word_is_not_held() {
        for text in ["valid", "user_id", "ids", "idx"] {
            assert!(!holds(text, "id"), "{text:?}");
        }
        for text in ["id", "user.id", "the id: 4", "\"id\""] {
            assert!(holds(text, "id"), "{text:?}");
        }
        assert!(!holds("types of", "type"));
        assert!(holds("a refund approved.", "refund approved"));
        assert!(!holds("refund approvedly", "refund approved"));
    }

    #[test]
    fn a_quoted_string_with_non_word_ends_is_held_inside_anything() {
        // an end that is not a word char: nothing beside it makes a longer token
        assert!(holds("x~> 1.4)", "~> 1.4"));
        assert!(!holds("x~> 1.45", "~> 1.4"));
        assert!(holds("x--force=y", "--force="));
    }

    #[test]
    fn a_path_inside_a_longer_path_is_not_held() {
        for text in [
            "src/cost/mod.rs.bak",
            "src/cost/mod.rs-old",
            "src/cost/mod.rs/x",
            "xsrc/cost/mod.rs",
            "a-src/cost/mod.rs",
            "src/cost/mod.rsx",
        ] {
            assert!(!holds(text, "src/cost/mod.rs"), "{text:?}");
        }
        for text in [
            "./var/log",
            "~/var/log",
            "x/var/log",
            "/var/logs",
            "//var/log",
        ] {
            assert!(!holds(text, "/var/log"), "{text:?}");
        }
    }

    /// The extractor takes `dashboard/page.tsx` out of `(protected)/dashboard/page.tsx` (no
    /// path starts at the `)`), so a text spelling it so holds it.
    #[test]
    fn a_path_at_a_sentence_end_or_in_brackets_is_held() {
        for text in [
            "src/cost/mod.rs",
            "see src/cost/mod.rs.",
            "(src/cost/mod.rs)",
            "`src/cost/mod.rs`: done",
            "src/cost/mod.rs:12",
        ] {
            assert!(holds(text, "src/cost/mod.rs"), "{text:?}");
        }
        assert!(holds("cat /var/log/ -", "/var/log/"));
        assert!(holds("ls /var/log/", "/var/log"));
    }

    #[test]
    fn an_email_inside_a_longer_one_is_not_held() {
        assert!(!holds("bob@example.com.au", "bob@example.com"));
        assert!(!holds("jbob@example.com", "bob@example.com"));
        assert!(holds("mail bob@example.com.", "bob@example.com"));
    }

    #[test]
    fn a_url_continued_by_its_path_is_not_held() {
        assert!(!holds("https://x.io/a.html", "https://x.io/a"));
        assert!(!holds("https://x.io/a/b", "https://x.io/a"));
        assert!(!holds("https://x.io/ab", "https://x.io/a"));
        for text in [
            "see https://x.io/a.",
            "<https://x.io/a>",
            "(https://x.io/a)",
            "https://x.io/a?\n",
        ] {
            assert!(holds(text, "https://x.io/a"), "{text:?}");
        }
    }

    #[test]
    fn an_id_inside_a_longer_id_is_not_held() {
        assert!(!holds("ABC-1234", "ABC-123"));
        assert!(!holds("XABC-123", "ABC-123"));
        assert!(holds("ticket ABC-123.", "ABC-123"));
    }

    #[test]
    fn a_fact_held_only_inside_a_token_is_found_at_a_later_occurrence() {
        assert!(holds("1480 then 80", "80"));
        assert!(holds("8080 80", "80"));
        assert!(!holds("8080 808", "80"));
    }
}
