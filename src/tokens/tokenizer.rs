//! Which counter sizes the events: the one name the cache files, the counter and the
//! command line share (its own file, so the cache and the counter both depend on it and not
//! on each other).

use std::fmt;
use std::str::FromStr;

/// Which counter sizes the events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub enum Tokenizer {
    /// tiktoken `o200k_base` (GPT-4o, GPT-5, Codex models): the default.
    #[default]
    O200k,
    /// tiktoken `cl100k_base` (GPT-4, GPT-3.5).
    Cl100k,
    /// ADK's own estimate: floor(characters / 4) with ADK's character rules.
    AdkChars,
}

impl Tokenizer {
    pub const ALL: [Tokenizer; 3] = [Tokenizer::O200k, Tokenizer::Cl100k, Tokenizer::AdkChars];

    /// The name used on the command line and in cache file names.
    pub fn name(self) -> &'static str {
        match self {
            Tokenizer::O200k => "o200k",
            Tokenizer::Cl100k => "cl100k",
            Tokenizer::AdkChars => "adk-chars",
        }
    }
}

impl fmt::Display for Tokenizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A tokenizer name the tool does not know (flags, grid files, the count cache's keys).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown tokenizer `{0}` (expected o200k, cl100k or adk-chars)")]
pub struct UnknownTokenizer(pub String);

impl FromStr for Tokenizer {
    type Err = UnknownTokenizer;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Tokenizer::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| UnknownTokenizer(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer_names_round_trip() {
        for t in Tokenizer::ALL {
            assert_eq!(t.to_string().parse::<Tokenizer>(), Ok(t));
        }
        assert!("gpt2".parse::<Tokenizer>().is_err());
        assert_eq!(Tokenizer::default(), Tokenizer::O200k);
    }
}
