//! The replay engine: google-adk 2.13.0 events compaction, request by request.
//! Pure: no I/O, no printing, no clock.

pub mod summarizer;
pub mod types;

pub use summarizer::{Outcome, Seed, SummarizeRequest, Summarizer, Summary};
pub use types::*;
