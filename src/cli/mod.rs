//! The command-line edge: clap definitions, and mapping library errors to exit codes
//! (0 ok, 1 refused or disagreement, 2 bad input or usage).
//!
//! Each subcommand lives in its own file with its `Args` struct and a `run` function.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

pub mod calibrate;
pub mod check;
pub mod conform;
pub mod cost_flags;
pub mod db_flags;
pub mod inspect;
pub mod merge;
pub mod replay;
pub mod report;
pub mod sweep;
pub mod synth;

/// Replay recorded agent sessions through ADK compaction settings, offline, and report
/// what each setting costs, saves and loses.
#[derive(Debug, Parser)]
#[command(name = "compaction-sim", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Read transcripts and print one row per session (sizes, usage, critical events).
    Inspect(inspect::InspectArgs),
    /// Validate a `Compaction(...)` setting the way the platform manifest does.
    Check(check::CheckArgs),
    /// Replay one transcript under one setting and print the per-request timeline.
    Replay(replay::ReplayArgs),
    /// Compare the engine with oracle outputs from the real google-adk code.
    Conform(conform::ConformArgs),
    /// Fit latency parameters from transcripts that record request times.
    Calibrate(calibrate::CalibrateArgs),
    /// Sweep many settings over many sessions and write a run folder.
    Sweep(sweep::SweepArgs),
    /// Merge partial (sharded) run folders into one run.
    Merge(merge::MergeArgs),
    /// Re-render the charts and report of a run folder, without replaying.
    Report(report::ReportArgs),
    /// Generate realistic sample sessions as ADK session JSON.
    Synth(synth::SynthArgs),
}

/// Exit codes shared by every subcommand.
pub const EXIT_OK: u8 = 0;
pub const EXIT_REFUSED: u8 = 1;
pub const EXIT_BAD_INPUT: u8 = 2;

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Inspect(a) => inspect::run(a),
        Command::Check(a) => check::run(a),
        Command::Replay(a) => replay::run(a),
        Command::Conform(a) => conform::run(a),
        Command::Calibrate(a) => calibrate::run(a),
        Command::Sweep(a) => sweep::run(a),
        Command::Merge(a) => merge::run(a),
        Command::Report(a) => report::run(a),
        Command::Synth(a) => synth::run(a),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}
