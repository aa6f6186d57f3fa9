//! compaction-sim: replay recorded agent transcripts through ADK (google-adk 2.13.0)
//! events-compaction settings and measure what each setting costs, saves and loses.
//!
//! The modules follow the data's path, each knowing only the ones to its left:
//! `transcript` → `tokens` → `settings`/`engine` → `summarize` → `detail` → `cost` → `sweep` →
//! `table` → `chart`/`report` → `run` (docs/development.md "Rooms").
//! `synth` writes sample transcripts; `cli` is the command-line edge (used by `main.rs`).

pub mod atomic;
pub mod backtest;
pub mod chart;
pub mod cli;
pub mod conform;
pub mod cost;
pub mod detail;
pub mod engine;
pub mod error;
pub mod policy;
pub mod report;
pub mod run;
pub mod search;
pub mod settings;
pub mod stats;
pub mod summarize;
pub mod sweep;
pub mod synth;
pub mod table;
pub mod tokens;
pub mod transcript;
