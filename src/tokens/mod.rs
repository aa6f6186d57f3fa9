//! Token counting: each event counted once (o200k, cl100k or ADK's chars/4), cached on
//! disk, and the per-event size arrays the engine replays on.

pub mod adk;
pub mod cache;
pub mod count;
pub mod sizes;
pub mod splice;

pub use cache::CacheOpts;
pub use count::{
    count_sessions, count_sessions_with_stats, count_text, counted_texts, CountStats, Counter,
    Tokenizer,
};
