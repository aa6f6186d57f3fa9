//! Transcripts in: one reader per recorded format, one [`Session`] model out.
//!
//! Readers only translate; they never count tokens or know about settings. Every reader
//! returns `Vec<Session>` because one file may hold many sessions (tau-bench, eval sets).

pub mod adk;
pub mod adk_legacy_eval;
pub mod canonical;
pub mod claude_code;
/// Claude Code `attachment` records.
pub mod claude_code_attach;
/// Claude Code `microcompact_boundary` records.
pub mod claude_code_micro;
/// The Claude Code settings a session shows it ran with (`env`, `model`).
pub mod claude_code_settings;
pub mod codex;
/// ADK's session databases (SQLite, PostgreSQL), read directly.
pub mod db;
pub mod detect;
pub mod error;
pub mod gemini_cli;
/// One Claude Code session over several files, joined by its `sessionId`.
pub mod join;
pub mod model;
pub mod openai_chat;
pub mod openhands;
/// OpenHands SDK v1 conversation folders (one folder, one session).
pub mod openhands_v1;
/// Python-only JSON numbers (NaN, Infinity, big integers), kept as tagged strings.
pub mod pyjson;
pub(crate) mod readutil;
pub mod swe_agent;
pub mod tau2;
/// Shared reader helpers (JSON paths, timestamps, invocations, critical-event rules).
pub mod util;

pub use canonical::write_canonical;
pub use claude_code_settings::ClaudeCodeSettings;
pub use detect::{detect, load_file, load_inputs, load_paths, Loaded};
pub use error::ReadError;
pub use model::*;
