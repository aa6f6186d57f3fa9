//! The command-line edge: clap definitions, printing, and mapping library errors to exit
//! codes by kind ([`exit`]) (docs/cli.md "Exit codes"): 0 ok, 1 refused or disagreement, 2 bad input or
//! usage, 3 an I/O or environment failure, 130 interrupted.
//!
//! Each subcommand lives in its own file with its `Args` struct and a `run` function.
//! Nothing printed can panic: stdout goes through [`outln!`] (a closed pipe drops the rest
//! of the output, and the command still ends with its own exit code and writes its files;
//! any other write error is one line and exit 3), and
//! stderr through [`errln!`] (whose write errors are ignored: there is nowhere left to say
//! them).

use clap::{Parser, Subcommand};
use std::io::Write;
use std::process::ExitCode;

/// `println!` for the subcommands: returns early with a [`StdoutError`] instead of
/// panicking when stdout is closed or full. Needs a function returning `anyhow::Result`.
macro_rules! outln {
    () => {
        $crate::cli::out(format_args!("\n"))?
    };
    ($($arg:tt)*) => {
        $crate::cli::out(format_args!("{}\n", format_args!($($arg)*)))?
    };
}

/// `print!` for the subcommands (see [`outln!`]).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::out(format_args!($($arg)*))?
    };
}

/// `eprintln!` that never panics (a closed stderr is ignored) and never passes an escape
/// sequence to the terminal (see [`out`]).
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::cli::err_line(format_args!($($arg)*))
    };
}

pub mod backtest;
pub mod calibrate;
pub mod check;
pub mod conform;
pub mod cost_flags;
pub mod db_flags;
pub mod exit;
pub mod grid_flags;
pub mod inspect;
pub mod merge;
pub mod pricing;
pub mod replay;
pub mod report;
pub mod samples;
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
    /// Price table maintenance: `pricing import` derives the built-in table from LiteLLM's.
    Pricing(pricing::PricingArgs),
    /// Every compaction the transcripts record, beside the `as recorded` replay's prediction.
    Backtest(backtest::BacktestArgs),
}

/// Exit codes shared by every subcommand.
pub const EXIT_OK: u8 = 0;
pub const EXIT_REFUSED: u8 = 1;
pub const EXIT_BAD_INPUT: u8 = 2;
pub const EXIT_ENVIRONMENT: u8 = 3;
/// After Ctrl-C, SIGTERM or SIGHUP (the shell convention for SIGINT).
pub const EXIT_INTERRUPTED: u8 = 130;

/// Set by SIGINT, SIGTERM or SIGHUP (what Ctrl-C, `timeout` and Kubernetes send): every
/// phase of a command that writes outputs checks it and stops, and its build folder is
/// removed on the way out.
pub static CANCEL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Set while a command reads its inputs before writing anything (a `--grid` FIFO with no
/// writer blocks in `open`, where no phase can check [`CANCEL`]): a signal then ends the
/// process at once, with 130 like any interruption.
pub static EXIT_AT_ONCE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Install the one handler for SIGINT, SIGTERM and SIGHUP (ctrlc's `termination` feature).
pub fn install_signal_handler() {
    use std::sync::atomic::Ordering;
    // Fails only if a handler is already installed (then it is ours).
    let _ = ctrlc::set_handler(|| {
        if EXIT_AT_ONCE.load(Ordering::SeqCst) {
            errln!("error: interrupted: nothing written");
            std::process::exit(i32::from(EXIT_INTERRUPTED));
        }
        CANCEL.store(true, Ordering::SeqCst)
    });
}

/// For a command that writes only standard output (and its token cache, written atomically):
/// SIGINT, SIGTERM or SIGHUP end it at once with 130, as they end any other command.
pub fn exit_at_once_on_signal() {
    EXIT_AT_ONCE.store(true, std::sync::atomic::Ordering::SeqCst);
    install_signal_handler();
}

/// Standard output could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write to standard output")]
pub struct StdoutError(#[source] pub std::io::Error);

/// Set once a write to stdout finds the pipe closed (`| head`, `| true`): later output is
/// dropped, and the command goes on to its real outcome (its files, its exit code), which a
/// closed pipe must not hide.
static STDOUT_CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Write `bytes` to stdout unless its reader is gone (see [`STDOUT_CLOSED`]); any other
/// failure (a full disk) is a [`StdoutError`].
fn write_stdout(bytes: &[u8]) -> Result<(), StdoutError> {
    use std::sync::atomic::Ordering;
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut lock = std::io::stdout().lock();
    match lock.write_all(bytes) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        r => r.map_err(StdoutError),
    }
}

/// Flush stdout (see [`write_stdout`]: a closed pipe is not a failure).
fn flush_stdout() -> Result<(), StdoutError> {
    match std::io::stdout().lock().flush() {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.map_err(StdoutError),
    }
}

/// Write to stdout, mapping failure to [`StdoutError`] (used by [`outln!`] and [`out!`]).
/// A safety net under the per-field [`term`] escaping: control characters other than the
/// line breaks and tabs of the output's own layout (escape sequences, carriage returns, bells)
/// are escaped whatever string carried them.
pub fn out(args: std::fmt::Arguments<'_>) -> Result<(), StdoutError> {
    let text = std::fmt::format(args);
    write_stdout(layout_only(&text).as_bytes())
}

/// One line to stderr (see [`errln!`]); write errors are ignored: there is nowhere left to
/// report them.
pub fn err_line(args: std::fmt::Arguments<'_>) {
    let mut text = std::fmt::format(args);
    text.push('\n');
    let _ = std::io::stderr()
        .lock()
        .write_all(layout_only(&text).as_bytes());
}

/// `s` with every control character but `\n` and `\t` escaped.
fn layout_only(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(
        s.split('\n')
            .map(|line| line.split('\t').map(term).collect::<Vec<_>>().join("\t"))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// Write bytes to stdout (tables rendered whole), mapping failure to [`StdoutError`].
pub fn out_bytes(bytes: &[u8]) -> Result<(), StdoutError> {
    write_stdout(bytes)
}

/// Text from transcripts or file names as the terminal should see it: control characters
/// (escape sequences, newlines) escaped, so no input can move the cursor, retitle the window
/// or forge an output line.
pub fn term(s: &str) -> std::borrow::Cow<'_, str> {
    crate::transcript::util::escape_control(s)
}

/// Most unreadable inputs listed one per line; the rest are counted in one more line (a
/// folder of a million bad files must not print a million lines).
pub const LISTED_BAD_INPUTS: usize = 20;

/// Print `lines` (each already one line, escaped here) after `prefix`, the first
/// [`LISTED_BAD_INPUTS`] of them, then how many more there are.
pub fn print_capped(prefix: &str, lines: impl IntoIterator<Item = String>) {
    let mut more = 0usize;
    for (i, l) in lines.into_iter().enumerate() {
        if i < LISTED_BAD_INPUTS {
            errln!("{prefix}{}", term(&l));
        } else {
            more += 1;
        }
    }
    if more > 0 {
        errln!(
            "{prefix}and {more} more unreadable input{} not listed (the first {LISTED_BAD_INPUTS} are)",
            if more == 1 { "" } else { "s" }
        );
    }
}

/// Say which spellings of one file were read once (`./x` beside `x`, a link beside its
/// target). Always said, even with -q.
pub fn print_merged(merged: &[crate::transcript::detect::Merged]) {
    for m in merged {
        errln!("note: {}", term(&m.to_string()));
    }
}

/// What the readers found wrong in a session's record and did not use, or adjusted (its
/// notes, each naming file, where and what). Always said, even with -q.
pub fn print_notes<'a>(notes: impl IntoIterator<Item = &'a String>) {
    for n in notes {
        errln!("warning: {}", term(n));
    }
}

/// One warning per session holding tool responses without their call: ADK 2.13.0 reads such
/// a session and leaves those responses out of every request, and so does the replay; the
/// reader says so instead of refusing the session. Always said, even with -q.
pub fn warn_orphan_responses<'a>(sessions: impl IntoIterator<Item = (&'a str, &'a str, u64)>) {
    for (source, id, n) in sessions {
        if n > 0 {
            errln!(
                "warning: {} (session {}): {n} tool response{} without {} call: kept, and left out of requests as ADK 2.13.0 leaves them",
                term(source),
                term(id),
                if n == 1 { "" } else { "s" },
                if n == 1 { "its" } else { "their" },
            );
        }
    }
}

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // Help and version go to stdout: a closed pipe there is not an error, a full
            // device is (exit 3, as for any command's output).
            let printed = e.print().map_err(StdoutError).and_then(|()| flush_stdout());
            return ExitCode::from(match printed {
                Err(StdoutError(io)) if io.kind() != std::io::ErrorKind::BrokenPipe => {
                    errln!("error: cannot write to standard output: {io}");
                    EXIT_ENVIRONMENT
                }
                _ if e.use_stderr() => EXIT_BAD_INPUT,
                _ => EXIT_OK,
            });
        }
    };
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
        Command::Pricing(a) => pricing::run(a),
        Command::Backtest(a) => backtest::run(a),
    };
    // What is still buffered must reach stdout before the code says it did.
    let result = result.and_then(|code| {
        flush_stdout()?;
        Ok(code)
    });
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            let (code, say) = exit::exit_for(&e);
            if say {
                errln!(
                    "error: {}",
                    crate::transcript::util::one_line(&format!("{e:#}"), 2000)
                );
            }
            ExitCode::from(code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Any transcript string through the printers' helper, and a line holding it
        /// through stdout's safety net: no control character left but the layout's own.
        #[test]
        fn no_transcript_string_puts_a_control_character_on_the_terminal(
            s in crate::transcript::util::HOSTILE_TEXT
        ) {
            let shown = term(&s);
            proptest::prop_assert!(!shown.chars().any(char::is_control), "{:?}", shown);
            let line = format!("session {shown}\tsource {shown}\n");
            proptest::prop_assert_eq!(layout_only(&line).lines().count(), 1);
        }
    }

    #[test]
    fn control_characters_never_reach_the_terminal() {
        let id = "abc\u{1b}]0;title\u{7}\u{1b}[2J\nforged line";
        let shown = term(id);
        assert!(!shown.chars().any(char::is_control), "{shown}");
        assert!(shown.contains("\\u{1b}]0;title"), "{shown}");
        assert_eq!(term("plain 'id' \"x\""), "plain 'id' \"x\"");
    }

    #[test]
    fn no_escape_sequence_reaches_stdout_whatever_carries_it() {
        let s = "row\tcell\nnext \u{1b}[2J\r\u{7}";
        let shown = layout_only(s);
        assert_eq!(shown, "row\tcell\nnext \\u{1b}[2J\\r\\u{7}");
        assert_eq!(layout_only("plain\n"), "plain\n");
    }
}
