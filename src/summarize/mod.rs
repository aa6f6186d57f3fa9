//! The summarizers beyond the oracle's deterministic ones, behind the engine's
//! [`Summarizer`] trait ("Summarizers" in metrics.md):
//!
//! - `agent` / `model:NAME`: modelled. No text is written; the summary's length comes from
//!   the [`LengthModel`] applied to the summarizer's input tokens (ADK's prompt: the 657 fixed
//!   template chars, counted as [`TEMPLATE_TOKENS`], + the seed summary + each event's
//!   formatted lines, counted per event with the run's tokenizer). Chars are taken as 4 per
//!   token (the summary JSON size ADK's worth-compacting gate reads).
//! - `terse`: the guide's rule-based summarizer, really run: `author: text` for every part
//!   with text (ADK's thoughts carry text too), the seed summary first as `model: ...`; no
//!   model call. A span with no text returns nothing, so nothing is compacted.
//! - `command:PROGRAM [ARGS]`: runs PROGRAM (no shell; ARGS split on whitespace) with the span
//!   as JSON on stdin; its stdout (trailing whitespace trimmed) is the summary, empty stdout
//!   means "nothing". A non-zero exit, a spawn error or a timeout is a failed call (ADK 2.12+:
//!   logged, no compaction, trigger stays armed) and is recorded in [`Command::errors`].
//! - `python:REF`: the user's own `BaseEventsSummarizer`, run by google-adk in a pool of
//!   Python workers ([`self::python`]); exceptions, hangs and crashes are failed calls.
//! - `live:PROVIDER/MODEL`: a real model API called with ADK's own summarizer prompt
//!   ([`self::live`]): the text, the usage and the latency are measured, not modelled.
//! - `fixed:N | ratio:R | echo[:N] | none`: the oracle's deterministic summarizer (engine).
//!
//! [`Harness`] wraps any of them for a replay: it keeps the texts written (for
//! `facts_dropped`) and turns the calls a client-mode race lost into discarded calls, which
//! the engine sees as failures (no compaction, trigger stays armed: the next turn
//! re-evaluates), while their real outcome is kept for cost.

pub mod live;
mod modelled;
pub mod python;
mod spawn;

pub use modelled::{EventLines, LengthModel, Modelled, TEMPLATE_TOKENS};
use spawn::spawn_program;

use self::python::{PythonSummarizer, SpanMemo};
use crate::engine::summarizer::{summary_json_chars, Deterministic, Policy, SummaryText};
use crate::engine::{Outcome, SummarizeRequest, Summarizer, Summary};
use crate::tokens::splice::{Joined, Shape, Spliced};
use crate::tokens::Tokenizer;
use crate::transcript::{Event, Part, Session};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command as Process, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wait_timeout::ChildExt;

/// Default time limit of a `command:` summarizer.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// A summarizer name that does not parse.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("summarizer `model:` needs a model name, e.g. model:gemini-2.5-flash")]
    NoModel,
    #[error("summarizer `command:` needs a program, e.g. command:./summarize.py")]
    NoProgram,
    #[error("summarizer `python:` needs a reference, e.g. python:summarizers.py:Terse or python:.summarizers.terse")]
    NoReference,
    #[error(transparent)]
    Live(#[from] self::live::LiveError),
    #[error("unknown summarizer `{0}` (expected agent, model:NAME, terse, command:PROGRAM, python:REF, live:PROVIDER/MODEL, fixed:N, ratio:R, echo[:N] or none)")]
    Unknown(String),
}

/// A summarizer that cannot be built for a replay: its program is missing, or its workers
/// or client were not started.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Program(#[from] ProgramNotFound),
    #[error("summarizer `python:{0}`: its Python workers were not started")]
    PythonNotStarted(String),
    #[error("summarizer `live:{provider}/{model}`: its client was not started")]
    LiveNotStarted {
        provider: &'static str,
        model: String,
    },
}

/// A `command:` program that is neither a file nor on `PATH`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("summarizer program `{program}` not found (give a path or put it on PATH)")]
pub struct ProgramNotFound {
    pub program: String,
}

/// A failed `command:` call (ADK 2.12+: logged, no compaction, the trigger stays armed).
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error("summarizer program `{program}` could not start: {source}")]
    Start {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("summarizer program `{program}` timed out after {seconds} s")]
    TimedOut { program: String, seconds: f64 },
    #[error("summarizer program `{program}`: {source}")]
    Wait {
        program: String,
        #[source]
        source: std::io::Error,
    },
    /// `exit`: `status N` or `a signal`; `stderr`: the first line it wrote, if any.
    #[error("summarizer program `{program}` exited with {exit}{}", stderr_suffix(.stderr))]
    Exited {
        program: String,
        exit: String,
        stderr: String,
    },
    #[error("summarizer program `{program}` printed invalid UTF-8")]
    NotUtf8 {
        program: String,
        #[source]
        source: std::string::FromUtf8Error,
    },
}

fn stderr_suffix(first_line: &str) -> String {
    if first_line.is_empty() {
        String::new()
    } else {
        format!(": {first_line}")
    }
}

/// A summarizer as written on the command line.
#[derive(Debug, Clone, PartialEq)]
pub enum SummarizerSpec {
    /// The agent's own model (the platform default).
    Agent,
    /// A declared model, priced and timed at its own rates.
    Model(String),
    Terse,
    Command {
        program: String,
        args: Vec<String>,
    },
    /// The user's own ADK summarizer: `path/file.py:NAME`, `package.module:NAME` or a dotted
    /// path (`.summarizers.terse`, relative to `--package DIR`).
    Python(String),
    /// A model API called with ADK's prompt: `live:gemini/gemini-2.5-flash`.
    Live {
        provider: self::live::Provider,
        model: String,
    },
    /// The oracle's deterministic summaries (conformance); priced and timed as the agent model.
    Deterministic(Policy),
}

/// The trimmed name after a spec's prefix, or `missing` when there is none.
fn named(rest: &str, missing: SpecError) -> Result<String, SpecError> {
    let rest = rest.trim();
    if rest.is_empty() {
        Err(missing)
    } else {
        Ok(rest.to_string())
    }
}

impl SummarizerSpec {
    /// Parse `agent | model:NAME | terse | command:PROGRAM [ARGS] | python:REF |
    /// live:PROVIDER/MODEL | fixed:N | ratio:R | echo[:N] | none`.
    pub fn parse(s: &str) -> Result<SummarizerSpec, SpecError> {
        let s = s.trim();
        match s {
            "agent" => return Ok(SummarizerSpec::Agent),
            "terse" => return Ok(SummarizerSpec::Terse),
            _ => {}
        }
        if let Some(name) = s.strip_prefix("model:") {
            return named(name, SpecError::NoModel).map(SummarizerSpec::Model);
        }
        if let Some(cmd) = s.strip_prefix("command:") {
            let mut words = cmd.split_whitespace().map(str::to_string);
            let Some(program) = words.next() else {
                return Err(SpecError::NoProgram);
            };
            return Ok(SummarizerSpec::Command {
                program,
                args: words.collect(),
            });
        }
        if let Some(r) = s.strip_prefix("python:") {
            return named(r, SpecError::NoReference).map(SummarizerSpec::Python);
        }
        if let Some(t) = s.strip_prefix("live:") {
            let (provider, model) = self::live::parse_target(t.trim())?;
            return Ok(SummarizerSpec::Live { provider, model });
        }
        Policy::parse(s)
            .map(SummarizerSpec::Deterministic)
            .map_err(|_| SpecError::Unknown(s.to_string()))
    }

    /// The canonical spelling, for tables.
    pub fn name(&self) -> String {
        match self {
            SummarizerSpec::Agent => "agent".to_string(),
            SummarizerSpec::Model(m) => format!("model:{m}"),
            SummarizerSpec::Terse => "terse".to_string(),
            SummarizerSpec::Command { program, args } => {
                let mut s = format!("command:{program}");
                for a in args {
                    s.push(' ');
                    s.push_str(a);
                }
                s
            }
            SummarizerSpec::Python(r) => format!("python:{r}"),
            SummarizerSpec::Live { provider, model } => format!("live:{}/{model}", provider.name()),
            SummarizerSpec::Deterministic(p) => match p {
                Policy::Fixed(n) => format!("fixed:{n}"),
                Policy::Ratio(r) => format!("ratio:{r}"),
                Policy::Echo(None) => "echo".to_string(),
                Policy::Echo(Some(n)) => format!("echo:{n}"),
                Policy::None => "none".to_string(),
            },
        }
    }

    /// True for summarizers whose text is real (facts can be checked against it).
    pub fn writes_real_text(&self) -> bool {
        matches!(
            self,
            SummarizerSpec::Terse
                | SummarizerSpec::Command { .. }
                | SummarizerSpec::Python(_)
                | SummarizerSpec::Live { .. }
        )
    }

    /// True for summarizers whose calls are measured (usage and latency), not modelled.
    pub fn is_measured(&self) -> bool {
        matches!(self, SummarizerSpec::Live { .. })
    }

    /// The model a call is priced and timed at: `None` for the free ones (`terse`,
    /// `command`, `python`: what they call, if anything, is not known here), else the named
    /// model or the agent's (for `live:`, its model, priced from the usage it reports).
    pub fn billed_model<'a>(&'a self, agent_model: Option<&'a str>) -> Billed<'a> {
        match self {
            SummarizerSpec::Terse | SummarizerSpec::Command { .. } | SummarizerSpec::Python(_) => {
                Billed::Free
            }
            SummarizerSpec::Model(m) | SummarizerSpec::Live { model: m, .. } => {
                Billed::Model(Some(m.as_str()))
            }
            SummarizerSpec::Agent | SummarizerSpec::Deterministic(_) => Billed::Model(agent_model),
        }
    }
}

/// Who pays for a summarizer call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Billed<'a> {
    /// No model call: zero cost and zero latency.
    Free,
    /// A model call at this model's rates (`None`: the agent model is not known).
    Model(Option<&'a str>),
}

fn text_summary(text: String, count: &(dyn Fn(&str) -> u64 + Sync)) -> Outcome {
    if text.is_empty() {
        return Outcome::Empty { input_tokens: 0 };
    }
    let tokens = count(&text);
    text_outcome(SummaryText::flat(text), tokens)
}

/// The summary of a free summarizer that wrote `text` (no prompt tokens billed).
fn text_outcome(text: SummaryText, tokens: u64) -> Outcome {
    Outcome::Summary(Summary {
        chars: text.chars(),
        json_chars: summary_json_chars(text.escaped_len()),
        tokens,
        input_tokens: 0,
        text: Some(text),
    })
}

/// The guide's `Terse` summarizer.
pub struct Terse<'a> {
    pub session: &'a Session,
    pub count: &'a (dyn Fn(&str) -> u64 + Sync),
    /// The run's tokenizer: a tiktoken encoding counts a seeded text by what it added
    /// ([`Spliced`]); ADK's chars / 4 from the length.
    pub tokenizer: Tokenizer,
    /// Each event's lines measured once for the session (`None`: measured at each call).
    pub lines: Option<&'a TerseLines>,
}

/// What `terse` writes for each event of a session ([`push_terse_lines`]), measured once:
/// under a token trigger a rolling summary writes an event's lines again at every
/// compaction of every setting, and cutting and counting them each time was most of its
/// cost (and its lookups of segment counts, scattered over a table as large as the session,
/// most of its growth with the session). The lines themselves are kept end to end, so a
/// summary copies them from one buffer in event order instead of following each event's parts
/// through the session.
#[derive(Debug, Default)]
pub struct TerseLines {
    rows: Vec<TerseRow>,
    /// Every event's lines, end to end (event i's at `rows[i].start`, `rows[i].len` bytes).
    text: String,
}

#[derive(Debug, Clone, Copy, Default)]
struct TerseRow {
    start: usize,
    len: u32,
    chars: u64,
    escaped: u64,
    /// `None`: one segment, or counted by ADK's chars / 4.
    shape: Option<Shape>,
    /// The nearest earlier event with lines, when both have two segments or more, and the
    /// count of its last segment joined with this event's first: what a rolling summary
    /// counts where the two meet (else looked up in the session's count memo, a table as
    /// large as the session, at every compaction of every setting).
    join: Option<(u32, u64)>,
}

impl TerseLines {
    /// Measure every event's lines; `count` is the run's tokenizer (`None`: chars / 4, no
    /// segments to keep).
    pub fn new(session: &Session, count: Option<&(dyn Fn(&str) -> u64 + Sync)>) -> TerseLines {
        let mut all = String::new();
        let mut rows: Vec<TerseRow> = Vec::with_capacity(session.events.len());
        // the nearest earlier event with lines
        let mut before: Option<u32> = None;
        for (i, e) in session.events.iter().enumerate() {
            let start = all.len();
            push_terse_lines(e, &mut all);
            let text = &all[start..];
            let shape = count.and_then(|c| Shape::of(text, c));
            let join = match (before, shape, count) {
                (Some(p), Some(sh), Some(c)) => rows[p as usize].shape.map(|ps| {
                    // (the earlier event's lines end where this one's start)
                    let after = &all[rows[p as usize].start + ps.last_start as usize..start];
                    let first = &text[..sh.first_end as usize];
                    (p, c(&[after, first].concat()))
                }),
                _ => None,
            };
            rows.push(TerseRow {
                start,
                len: text.len() as u32,
                chars: text.chars().count() as u64,
                escaped: crate::tokens::adk::json_str_len_raw(text),
                shape,
                join,
            });
            if !text.is_empty() {
                before = Some(i as u32);
            }
        }
        TerseLines { rows, text: all }
    }

    /// Event `i`'s measures (an index past the session writes nothing: a zero-length row).
    fn row(&self, i: u32) -> TerseRow {
        self.rows.get(i as usize).copied().unwrap_or_default()
    }

    /// Event `i`'s lines as a piece of a tail ([`Spliced::compose_pieces`]): their length,
    /// shape, and the count where they meet the lines before them in the session.
    fn piece(&self, i: u32) -> (u32, Option<Shape>, Option<Joined<'_>>) {
        let r = self.row(i);
        let join = r.join.and_then(|(p, tokens)| {
            let pr = self.row(p);
            let after = self
                .text
                .get(pr.start + pr.shape?.last_start as usize..pr.start + pr.len as usize)?;
            Some(Joined { after, tokens })
        });
        (r.len, r.shape, join)
    }

    /// Event `i`'s lines (empty past the session).
    fn lines(&self, i: u32) -> &str {
        let r = self.row(i);
        self.text
            .get(r.start..r.start + r.len as usize)
            .unwrap_or_default()
    }
}

/// What a seeded `Terse` text starts with: the seed is the first event it is handed, and its
/// author is `model`.
const SEED_HEAD: &str = "model: ";

/// `\n` + `author: text` for each of an event's text parts: the guide's comprehension,
/// joined by newlines (the first `\n` is the caller's to drop when nothing comes before).
pub fn push_terse_lines(event: &Event, out: &mut String) {
    for part in &event.parts {
        if let Part::Text { text } | Part::Thought { text } = part {
            if !text.is_empty() {
                out.reserve(event.author.len() + text.len() + 3);
                out.push('\n');
                out.push_str(&event.author);
                out.push_str(": ");
                out.push_str(text);
            }
        }
    }
}

impl Terse<'_> {
    /// The whole text of a request's summary (empty: none).
    pub fn text(&self, req: &SummarizeRequest<'_>) -> String {
        self.summary_text(req)
            .map(|t| t.to_string())
            .unwrap_or_default()
    }

    /// `"\n".join(said)`, kept as the seed's text with what this call adds around it, so a
    /// rolling summary costs what it adds, not its length.
    fn summary_text(&self, req: &SummarizeRequest<'_>) -> Option<SummaryText> {
        let events = &self.session.events;
        // the session's measures of each event's lines (`TerseLines`), when they are this
        // session's: the tail is then copied from its buffer, allocated once at its length
        let lines = self.lines.filter(|l| l.rows.len() == events.len());
        // "\n" + each line: the tail after a seed; without a seed the first "\n" is cut
        let (mut tail, sizes) = match lines {
            Some(l) => {
                let (len, chars, escaped) = req
                    .event_indices()
                    .map(|i| l.row(i))
                    .fold((0usize, 0u64, 0u64), |(n, c, e), r| {
                        (n + r.len as usize, c + r.chars, e + r.escaped)
                    });
                let mut tail = String::with_capacity(len);
                req.event_indices().for_each(|i| tail.push_str(l.lines(i)));
                (tail, Some((chars, escaped)))
            }
            None => {
                let mut tail = String::new();
                for e in req.event_indices().filter_map(|i| events.get(i as usize)) {
                    push_terse_lines(e, &mut tail);
                }
                (tail, None)
            }
        };
        #[cfg(debug_assertions)]
        if lines.is_some() {
            let mut written = String::new();
            for e in req.event_indices().filter_map(|i| events.get(i as usize)) {
                push_terse_lines(e, &mut written);
            }
            assert_eq!(tail, written, "terse lines from the session's buffer");
        }
        let spliced = self.tokenizer != Tokenizer::AdkChars;
        match req.seed.and_then(|s| s.text).filter(|t| !t.is_empty()) {
            Some(seed) => {
                let (Some(lines), Some(sizes)) = (lines, sizes) else {
                    let count = spliced.then(|| {
                        seed.with_ends(|s, ends| s.compose(ends, SEED_HEAD, &tail, self.count))
                            .unwrap_or_else(|| {
                                Spliced::of(&format!("{SEED_HEAD}{seed}{tail}"), self.count)
                            })
                    });
                    return Some(SummaryText::seeded(SEED_HEAD, seed, &tail, count));
                };
                let pieces = req.event_indices().map(|i| lines.piece(i));
                let count = spliced.then(|| {
                    seed.with_ends(|s, ends| {
                        // each event's lines in the tail, by their measures
                        s.compose_pieces(ends, SEED_HEAD, &tail, pieces, self.count)
                    })
                    .unwrap_or_else(|| Spliced::of(&format!("{SEED_HEAD}{seed}{tail}"), self.count))
                });
                Some(SummaryText::seeded_measured(
                    SEED_HEAD, seed, tail, sizes, count,
                ))
            }
            None if tail.is_empty() => None,
            None => {
                tail.remove(0);
                let count = spliced.then(|| Spliced::of(&tail, self.count));
                Some(SummaryText::flat_spliced(tail, count))
            }
        }
    }
}

impl Summarizer for Terse<'_> {
    fn summarize(&self, req: &SummarizeRequest<'_>) -> Outcome {
        let Some(text) = self.summary_text(req) else {
            return Outcome::Empty { input_tokens: 0 };
        };
        let tokens = match text.spliced() {
            Some(s) => s.total,
            // ADK's estimate: floor(chars / 4) of the whole text
            None => text.chars() / 4,
        };
        // Debug builds count the whole text too (short texts: the check is quadratic).
        #[cfg(debug_assertions)]
        if text.len() < 1 << 16 {
            assert_eq!(
                tokens,
                (self.count)(&text.to_string()),
                "terse summary tokens by segments vs whole"
            );
        }
        text_outcome(text, tokens)
    }
}

/// An external summarizer program.
pub struct Command<'a> {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub timeout: Duration,
    pub session: &'a Session,
    pub count: &'a (dyn Fn(&str) -> u64 + Sync),
    errors: Mutex<Vec<String>>,
    /// Outputs by input JSON: a `streams` replay asks the same calls again on each pass, and
    /// the program then runs once per distinct input.
    memo: Mutex<BTreeMap<String, Result<String, Arc<CommandError>>>>,
}

/// Find `program` the way a shell would without running one: a path containing `/` is taken
/// as is, anything else is searched in `PATH`.
pub fn resolve_program(program: &str) -> Result<PathBuf, ProgramNotFound> {
    let found = if program.contains('/') || program.contains(std::path::MAIN_SEPARATOR) {
        let p = PathBuf::from(program);
        p.is_file().then_some(p)
    } else {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(program))
                .find(|p| p.is_file())
        })
    };
    found.ok_or_else(|| ProgramNotFound {
        program: program.to_string(),
    })
}

impl<'a> Command<'a> {
    /// Checks that the program exists, so a typo fails before any replay.
    pub fn new(
        program: &str,
        args: Vec<String>,
        timeout: Duration,
        session: &'a Session,
        count: &'a (dyn Fn(&str) -> u64 + Sync),
    ) -> Result<Self, ProgramNotFound> {
        Ok(Command {
            program: resolve_program(program)?,
            args,
            timeout,
            session,
            count,
            errors: Mutex::new(Vec::new()),
            memo: Mutex::new(BTreeMap::new()),
        })
    }

    /// One line per failed call, in call order.
    pub fn errors(&self) -> Vec<String> {
        self.errors.lock().map(|e| e.clone()).unwrap_or_default()
    }

    /// The JSON the program reads on stdin.
    pub fn input_json(&self, req: &SummarizeRequest<'_>) -> serde_json::Value {
        let events: Vec<&Event> = req
            .event_indices()
            .filter_map(|i| self.session.events.get(i as usize))
            .collect();
        serde_json::json!({
            "session_id": self.session.id,
            "call": req.call,
            "phase": req.phase.name(),
            "trigger": req.trigger.name(),
            "seed": req.seed.and_then(|s| s.text),
            "events": events,
        })
    }

    /// Run the program once; `Ok(stdout)` or a one-line error.
    pub fn run(&self, input: &[u8]) -> Result<String, CommandError> {
        let program = || self.program.display().to_string();
        let mut child = spawn_program(
            Process::new(&self.program)
                .args(&self.args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        )
        .map_err(|source| CommandError::Start {
            program: program(),
            source,
        })?;
        // Feed stdin and drain stdout/stderr on threads so a large span cannot deadlock.
        let mut stdin = child.stdin.take();
        let input = input.to_vec();
        let writer = std::thread::spawn(move || {
            if let Some(s) = stdin.as_mut() {
                let _ = s.write_all(&input);
            }
        });
        let mut stdout = child.stdout.take();
        let reader = std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(s) = stdout.as_mut() {
                let _ = s.read_to_end(&mut buf);
            }
            buf
        });
        let mut stderr = child.stderr.take();
        let err_reader = std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(s) = stderr.as_mut() {
                let _ = s.read_to_end(&mut buf);
            }
            buf
        });
        let status = match child.wait_timeout(self.timeout) {
            Ok(Some(status)) => status,
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                let _ = writer.join();
                return Err(CommandError::TimedOut {
                    program: program(),
                    seconds: self.timeout.as_secs_f64(),
                });
            }
            Err(source) => {
                return Err(CommandError::Wait {
                    program: program(),
                    source,
                })
            }
        };
        let _ = writer.join();
        let out = reader.join().unwrap_or_default();
        let err = err_reader.join().unwrap_or_default();
        if !status.success() {
            let first = String::from_utf8_lossy(&err)
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            return Err(CommandError::Exited {
                program: program(),
                exit: status
                    .code()
                    .map_or("a signal".to_string(), |c| format!("status {c}")),
                stderr: first,
            });
        }
        String::from_utf8(out).map_err(|source| CommandError::NotUtf8 {
            program: program(),
            source,
        })
    }
}

impl Summarizer for Command<'_> {
    fn summarize(&self, req: &SummarizeRequest<'_>) -> Outcome {
        // NaN / Infinity / big integers reach the program as the bare literals Python wrote.
        let input = crate::transcript::pyjson::untag_json_text(&self.input_json(req).to_string())
            .into_owned();
        let cached = self.memo.lock().ok().and_then(|m| m.get(&input).cloned());
        let result = match cached {
            Some(r) => r,
            None => {
                let r = self.run(input.as_bytes()).map_err(Arc::new);
                if let Ok(mut m) = self.memo.lock() {
                    m.insert(input, r.clone());
                }
                r
            }
        };
        match result {
            Ok(out) => text_summary(out.trim_end().to_string(), self.count),
            Err(e) => {
                if let Ok(mut errs) = self.errors.lock() {
                    errs.push(format!("call {}: {e}", req.call));
                }
                Outcome::Failed { input_tokens: 0 }
            }
        }
    }
}

/// What [`build`] needs besides the spec.
pub struct BuildContext<'a> {
    pub session: &'a Session,
    pub lines: &'a EventLines,
    pub length: LengthModel,
    /// Counts a text with the run's tokenizer.
    pub count: &'a (dyn Fn(&str) -> u64 + Sync),
    /// The tokenizer `count` counts with.
    pub tokenizer: Tokenizer,
    /// Time limit of a `command:` summarizer.
    pub timeout: Duration,
    /// 1-based calls of the deterministic summarizer that fail (the oracle's failures).
    pub fail_calls: Vec<u32>,
    /// Context window of the summarizer model: a modelled call whose prompt is larger fails
    /// (the provider rejects it; ADK 2.12+ logs it, compacts nothing, stays armed).
    pub context_window: Option<u64>,
    /// The session's memo of `python:` summaries (shared by every setting of the session).
    pub spans: Option<&'a SpanMemo>,
    /// The session's events as `terse` writes them, measured once (for a `terse` setting).
    pub terse: Option<&'a TerseLines>,
    /// The session's events' summarizer texts, written once (for an `echo` setting).
    pub echo: Option<std::sync::Arc<[String]>>,
}

/// A summarizer built from its spec, ready for the engine.
pub enum Built<'a> {
    /// With the summarizer model's context window.
    Modelled(Modelled<'a>, Option<u64>),
    Terse(Terse<'a>),
    Command(Command<'a>),
    Python(PythonSummarizer<'a>),
    Live(self::live::LiveSummarizer<'a>),
    Deterministic(Deterministic),
}

impl Built<'_> {
    /// One line per failed `command:` call (empty for the others).
    pub fn errors(&self) -> Vec<String> {
        match self {
            Built::Command(c) => c.errors(),
            Built::Python(p) => p.errors(),
            Built::Live(l) => l.errors(),
            _ => Vec::new(),
        }
    }

    /// The measured latency of call `call` of this pass, for a measured (`live:`)
    /// summarizer (0 when the call measured nothing); `None` for the others.
    pub fn measured_seconds(&self, call: u32) -> Option<f64> {
        match self {
            Built::Live(l) => Some(l.measured_seconds(call).unwrap_or(0.0)),
            _ => None,
        }
    }

    /// What each call of the latest replay pass really used, for a measured (`live:`)
    /// summarizer; `None` for the modelled and free ones.
    pub fn measured(&self) -> Option<BTreeMap<u32, self::live::CallMeasure>> {
        match self {
            Built::Live(l) => Some(l.measured()),
            _ => None,
        }
    }
}

impl Summarizer for Built<'_> {
    fn summarize(&self, req: &SummarizeRequest<'_>) -> Outcome {
        match self {
            Built::Modelled(m, window) => match m.summarize(req) {
                Outcome::Summary(s) if window.is_some_and(|w| s.input_tokens > w) => {
                    Outcome::Failed {
                        input_tokens: s.input_tokens,
                    }
                }
                other => other,
            },
            Built::Terse(t) => t.summarize(req),
            Built::Command(c) => c.summarize(req),
            Built::Python(p) => p.summarize(req),
            Built::Live(l) => l.summarize(req),
            Built::Deterministic(d) => d.summarize(req),
        }
    }
}

/// Build the summarizer a spec names. Fails only for a `command:` program that is missing, a
/// `python:` summarizer whose workers were not started (see [`self::python::start`]) or a
/// `live:` one whose client was not (see [`self::live::start`]).
pub fn build<'a>(spec: &SummarizerSpec, ctx: BuildContext<'a>) -> Result<Built<'a>, BuildError> {
    Ok(match spec {
        SummarizerSpec::Agent | SummarizerSpec::Model(_) => Built::Modelled(
            Modelled {
                lines: ctx.lines,
                length: ctx.length,
                count: ctx.count,
            },
            ctx.context_window,
        ),
        SummarizerSpec::Terse => Built::Terse(Terse {
            session: ctx.session,
            count: ctx.count,
            tokenizer: ctx.tokenizer,
            lines: ctx.terse,
        }),
        SummarizerSpec::Command { program, args } => Built::Command(Command::new(
            program,
            args.clone(),
            ctx.timeout,
            ctx.session,
            ctx.count,
        )?),
        SummarizerSpec::Python(r) => Built::Python(PythonSummarizer::new(
            self::python::registered(r).ok_or_else(|| BuildError::PythonNotStarted(r.clone()))?,
            ctx.session,
            ctx.count,
            ctx.spans,
        )),
        SummarizerSpec::Live { provider, model } => Built::Live(self::live::LiveSummarizer::new(
            self::live::registered(*provider, model).ok_or_else(|| BuildError::LiveNotStarted {
                provider: provider.name(),
                model: model.clone(),
            })?,
            ctx.session,
            ctx.lines,
            ctx.length,
            ctx.count,
        )),
        SummarizerSpec::Deterministic(p) => Built::Deterministic(Deterministic::new(
            p.clone(),
            ctx.fail_calls,
            // only `echo` writes the lines; the others size from the request
            match (p, ctx.echo) {
                (Policy::Echo(_), Some(texts)) => texts,
                (Policy::Echo(_), None) => echo_texts(ctx.session),
                _ => std::sync::Arc::from(Vec::new()),
            },
        )),
    })
}

/// Each event's summarizer text, what `echo` summaries are cut from.
pub fn echo_texts(session: &Session) -> std::sync::Arc<[String]> {
    session
        .events
        .iter()
        .map(crate::tokens::adk::summarizer_text)
        .collect()
}

/// Says, as a call returns its summary, whether the client throws it away (a `streams`
/// client whose next turn overtook it).
pub type Race<'a> = &'a (dyn Fn(&SummarizeRequest<'_>, &Summary) -> bool + Sync);

/// Wraps the summarizer of one replay: records texts written, and discards the calls in
/// `discard` or that lose the `race` (the engine sees a failure; the real outcome is kept in
/// `discarded`).
pub struct Harness<'a> {
    pub inner: &'a dyn Summarizer,
    pub discard: BTreeSet<u32>,
    race: Option<Race<'a>>,
    texts: Mutex<CallTexts>,
    discarded: Mutex<BTreeMap<u32, Summary>>,
}

/// Summary texts by call number. Calls are numbered 1, 2, ... in a replay, so a list
/// indexed by number: a long rolling replay writes a text at nearly every call, and a tree
/// of them cost a node walk at each insert and lookup and a scattered drop.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallTexts(Vec<Option<SummaryText>>);

impl CallTexts {
    /// How many calls wrote a text.
    pub fn len(&self) -> usize {
        self.0.iter().flatten().count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn insert(&mut self, call: u32, text: SummaryText) {
        let i = call as usize;
        if self.0.len() <= i {
            self.0.resize(i + 1, None);
        }
        self.0[i] = Some(text);
    }

    pub fn get(&self, call: &u32) -> Option<&SummaryText> {
        self.0.get(*call as usize).and_then(Option::as_ref)
    }

    /// Call numbers with a text, ascending.
    pub fn keys(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.0.len() as u32).filter(|&i| self.0[i as usize].is_some())
    }
}

impl<const N: usize> From<[(u32, SummaryText); N]> for CallTexts {
    fn from(texts: [(u32, SummaryText); N]) -> CallTexts {
        let mut out = CallTexts::default();
        for (call, text) in texts {
            out.insert(call, text);
        }
        out
    }
}

impl<'a> Harness<'a> {
    pub fn new(inner: &'a dyn Summarizer, discard: BTreeSet<u32>) -> Self {
        Harness {
            inner,
            discard,
            race: None,
            texts: Mutex::new(CallTexts::default()),
            discarded: Mutex::new(BTreeMap::new()),
        }
    }

    /// A harness that discards each summary losing `race`, decided as the call returns.
    pub fn racing(inner: &'a dyn Summarizer, race: Race<'a>) -> Self {
        Harness {
            race: Some(race),
            ..Harness::new(inner, BTreeSet::new())
        }
    }

    /// Texts of the summaries written, by call number, taken out of the harness (not
    /// copied: a rolling text summarizer's texts add up to the square of the history).
    pub fn texts(&self) -> CallTexts {
        self.texts
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default()
    }

    /// Summaries produced but discarded, by call number, taken out of the harness.
    pub fn discarded(&self) -> BTreeMap<u32, Summary> {
        self.discarded
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default()
    }
}

impl Summarizer for Harness<'_> {
    fn summarize(&self, req: &SummarizeRequest<'_>) -> Outcome {
        let outcome = self.inner.summarize(req);
        if let Outcome::Summary(s) = &outcome {
            if self.discard.contains(&req.call) || self.race.is_some_and(|lost| lost(req, s)) {
                if let Ok(mut d) = self.discarded.lock() {
                    d.insert(req.call, s.clone());
                }
                return Outcome::Failed {
                    input_tokens: s.input_tokens,
                };
            }
            if let Some(t) = &s.text {
                if let Ok(mut texts) = self.texts.lock() {
                    texts.insert(req.call, t.clone());
                }
            }
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Phase, Trigger};
    use crate::transcript::{Format, Role};

    fn session() -> Session {
        let mut user = Event::new("user", Role::User, "i1", 1.0);
        user.parts.push(Part::Text {
            text: "Book flight 123".into(),
        });
        let mut call = Event::new("agent", Role::Model, "i1", 2.0);
        call.parts.push(Part::ToolCall {
            id: Some("c1".into()),
            name: "book".into(),
            args: serde_json::json!({"n": 123}),
        });
        let mut resp = Event::new("agent", Role::User, "i1", 3.0);
        resp.parts.push(Part::ToolResponse {
            id: Some("c1".into()),
            name: "book".into(),
            response: serde_json::json!({"ok": true}),
        });
        let mut answer = Event::new("agent", Role::Model, "i1", 4.0);
        answer.parts.push(Part::Thought {
            text: "done".into(),
        });
        answer.parts.push(Part::Text {
            text: "Booked.".into(),
        });
        Session::new(
            "s",
            "mem",
            Format::Canonical,
            vec![user, call, resp, answer],
        )
    }

    fn req(events: std::ops::Range<u32>) -> SummarizeRequest<'static> {
        SummarizeRequest {
            call: 1,
            phase: Phase::PostInvocation,
            trigger: Trigger::SlidingWindow,
            events,
            skip: &[],
            seed: None,
            prompt_chars: 700,
            history_chars: 43,
            fired_at_s: 0.0,
            next_turn_at_s: None,
        }
    }

    fn words(t: &str) -> u64 {
        t.split_whitespace().count() as u64
    }

    /// `echo:N` writes only the first N chars of the history: what it writes equals the whole
    /// history cut after, at every N, with a seed line, empty events and non-ASCII text.
    #[test]
    fn echo_history_cut_while_written_equals_the_whole_history_cut() {
        let texts = vec![
            "user: h\u{e9}llo \u{e9}t\u{e9}".to_string(),
            String::new(),
            "agent: ok".to_string(),
            "\u{1f600} tool: done".to_string(),
        ];
        let d = Deterministic::new(Policy::Echo(None), vec![], texts);
        let seed_text = SummaryText::flat("earlier \u{e9}".into());
        let seed = crate::engine::summarizer::Seed {
            ordinal: 1,
            chars: seed_text.chars(),
            start_timestamp: 0.0,
            text: Some(&seed_text),
        };
        for seeded in [false, true] {
            let mut r = req(0..4);
            if seeded {
                r.seed = Some(seed);
            }
            let whole = d.history(&r, None);
            assert!(whole.contains("agent: ok") && (whole.starts_with("model: ") == seeded));
            for n in 0..=whole.chars().count() + 2 {
                let cut: String = whole.chars().take(n).collect();
                assert_eq!(d.history(&r, Some(n)), cut, "n {n}, seeded {seeded}");
            }
        }
    }

    #[test]
    fn parse_every_spelling() {
        assert_eq!(
            SummarizerSpec::parse("agent").ok(),
            Some(SummarizerSpec::Agent)
        );
        assert_eq!(
            SummarizerSpec::parse("terse").ok(),
            Some(SummarizerSpec::Terse)
        );
        assert_eq!(
            SummarizerSpec::parse("model:gpt-5-nano").ok(),
            Some(SummarizerSpec::Model("gpt-5-nano".into()))
        );
        assert_eq!(
            SummarizerSpec::parse("command:./s.py --short").ok(),
            Some(SummarizerSpec::Command {
                program: "./s.py".into(),
                args: vec!["--short".into()]
            })
        );
        assert_eq!(
            SummarizerSpec::parse("fixed:200").ok(),
            Some(SummarizerSpec::Deterministic(Policy::Fixed(200)))
        );
        assert_eq!(
            SummarizerSpec::parse("echo:50").ok(),
            Some(SummarizerSpec::Deterministic(Policy::Echo(Some(50))))
        );
        assert_eq!(
            SummarizerSpec::parse("none").ok(),
            Some(SummarizerSpec::Deterministic(Policy::None))
        );
        assert_eq!(
            SummarizerSpec::parse("python:.summarizers.terse").ok(),
            Some(SummarizerSpec::Python(".summarizers.terse".into()))
        );
        assert_eq!(
            SummarizerSpec::parse("python: mine.py:Brief").ok(),
            Some(SummarizerSpec::Python("mine.py:Brief".into()))
        );
        assert!(SummarizerSpec::parse("model:").is_err());
        assert!(SummarizerSpec::parse("command:").is_err());
        assert!(SummarizerSpec::parse("python:").is_err());
        assert_eq!(
            SummarizerSpec::parse("live:gemini/gemini-2.5-flash").ok(),
            Some(SummarizerSpec::Live {
                provider: crate::summarize::live::Provider::Gemini,
                model: "gemini-2.5-flash".into()
            })
        );
        let e = SummarizerSpec::parse("live:vertex/gemini-2.5-flash")
            .unwrap_err()
            .to_string();
        assert!(e.contains("PROVIDER gemini, openai or anthropic"), "{e}");
        let e = SummarizerSpec::parse("gpt").unwrap_err().to_string();
        assert!(e.starts_with("unknown summarizer `gpt`"), "{e}");
        for s in [
            "agent",
            "terse",
            "model:x",
            "command:p a b",
            "python:pkg.mod:Terse",
            "live:openai/meta-llama/Llama-3.1-8B",
            "fixed:3",
            "echo",
            "none",
        ] {
            assert_eq!(SummarizerSpec::parse(s).unwrap().name(), s);
        }
    }

    #[test]
    fn terse_keeps_what_was_said() {
        let s = session();
        let t = Terse {
            session: &s,
            count: &words,
            tokenizer: Tokenizer::O200k,
            lines: None,
        };
        // Events 0..4: user text, tool call (dropped), tool response (dropped), thought + text.
        let Outcome::Summary(sum) = t.summarize(&req(0..4)) else {
            panic!("summary expected")
        };
        let text = sum.text.unwrap().to_string();
        assert_eq!(text, "user: Book flight 123\nagent: done\nagent: Booked.");
        assert_eq!(sum.chars, text.chars().count() as u64);
        // 48 chars whose 2 newlines escape to 2 chars each -> 50 escaped; the JSON frame
        // `{"parts":[{"text":""}],"role":"model"}` is 38 chars.
        assert_eq!(sum.json_chars, 38 + 50);
        // words: user: Book flight 123 / agent: done / agent: Booked. -> 4 + 2 + 2 = 8
        assert_eq!(sum.tokens, 8);
        assert_eq!(sum.input_tokens, 0);
    }

    #[test]
    fn terse_on_a_span_with_no_text_returns_nothing() {
        let s = session();
        let t = Terse {
            session: &s,
            count: &words,
            tokenizer: Tokenizer::O200k,
            lines: None,
        };
        assert_eq!(t.summarize(&req(1..3)), Outcome::Empty { input_tokens: 0 });
    }

    #[test]
    fn terse_puts_the_seed_first() {
        let s = session();
        let t = Terse {
            session: &s,
            count: &words,
            tokenizer: Tokenizer::O200k,
            lines: None,
        };
        let mut r = req(3..4);
        let older = SummaryText::flat("older".into());
        r.seed = Some(crate::engine::Seed {
            ordinal: 1,
            chars: 5,
            start_timestamp: 0.0,
            text: Some(&older),
        });
        assert_eq!(t.text(&r), "model: older\nagent: done\nagent: Booked.");
    }

    /// A rolling `terse` summary written from the session's measured lines is the text, the
    /// count and the sizes written by cutting and counting each call's lines, for both
    /// encodings, across events whose lines join in every way the segment rules allow.
    #[test]
    fn terse_from_measured_lines_writes_and_counts_the_same() {
        let texts = [
            "Book flight 123",
            "ok: seat 4A\nthen: pay",
            "",
            "_under: score\n",
            "caf\u{e9}: \u{4e2d}\u{6587}",
            "no boundary here",
            "ends with colon:",
            " leading space: x\n\ny",
            "12: numbers\n34",
        ];
        let authors = ["user", "agent", "_tool", "9x", "\u{e9}l\u{e8}ve"];
        let mut events = Vec::new();
        for (i, text) in texts.iter().cycle().take(40).enumerate() {
            let author = authors[i % authors.len()];
            let mut e = Event::new(author, Role::Model, "i1", i as f64);
            if i % 7 == 3 {
                e.parts.push(Part::Thought {
                    text: "thinking: hard".into(),
                });
            }
            e.parts.push(Part::Text {
                text: (*text).into(),
            });
            events.push(e);
        }
        let s = Session {
            events,
            ..session()
        };
        for tok in [Tokenizer::O200k, Tokenizer::Cl100k] {
            let count = move |t: &str| crate::tokens::count_text(tok, t) as u64;
            let lines = TerseLines::new(&s, Some(&count));
            let measured = Terse {
                session: &s,
                count: &count,
                tokenizer: tok,
                lines: Some(&lines),
            };
            let cut = Terse {
                lines: None,
                ..measured
            };
            let mut seed: Option<SummaryText> = None;
            let (mut at, mut step) = (0u32, 1u32);
            while at < 40 {
                let end = (at + step).min(40);
                let mut r = req(at..end);
                r.seed = seed.as_ref().map(|t| crate::engine::Seed {
                    ordinal: 1,
                    chars: t.chars(),
                    start_timestamp: 0.0,
                    text: Some(t),
                });
                let (a, b) = (measured.summarize(&r), cut.summarize(&r));
                assert_eq!(a, b, "{tok} events {at}..{end}");
                if let Outcome::Summary(sum) = a {
                    let whole = sum.text.as_ref().unwrap().to_string();
                    assert_eq!(sum.tokens, count(&whole), "{tok} events {at}..{end}");
                    seed = sum.text;
                }
                at = end;
                step = step % 3 + 1;
            }
        }
    }

    #[test]
    fn modelled_sizes_from_lines_and_length_model() {
        let lines = EventLines::from_parts(vec![1000, 2000, 3000, 4000]);
        let m = Modelled {
            lines: &lines,
            length: LengthModel {
                ratio: 0.1,
                cap_tokens: 500,
                min_tokens: 10,
            },
            count: &words,
        };
        // events 1..3: 165 + 2000 + 3000 = 5,165 input; 0.1 * 5,165 = 516.5 -> 517, capped 500.
        let Outcome::Summary(s) = m.summarize(&req(1..3)) else {
            panic!()
        };
        assert_eq!((s.input_tokens, s.tokens, s.chars), (5165, 500, 2000));
        // event 0 with a 40-char seed without text: 165 + 10 + 1000 = 1,175 -> 118 (117.5 rounds up).
        let mut r = req(0..1);
        r.seed = Some(crate::engine::Seed {
            ordinal: 1,
            chars: 40,
            start_timestamp: 0.0,
            text: None,
        });
        let Outcome::Summary(s) = m.summarize(&r) else {
            panic!()
        };
        assert_eq!((s.input_tokens, s.tokens), (1175, 118));
    }

    #[test]
    fn modelled_call_over_the_context_window_fails() {
        // events 1..3 read 165 + 2,000 + 3,000 = 5,165 tokens: over a 5,000-token window the
        // call fails (no compaction); under a 6,000-token window it summarizes.
        let s = session();
        let lines = EventLines::from_parts(vec![1000, 2000, 3000, 4000]);
        let ctx = |w| BuildContext {
            session: &s,
            tokenizer: Tokenizer::O200k,
            lines: &lines,
            length: LengthModel::default(),
            count: &words,
            timeout: DEFAULT_COMMAND_TIMEOUT,
            fail_calls: vec![],
            context_window: Some(w),
            spans: None,
            terse: None,
            echo: None,
        };
        let small = build(&SummarizerSpec::Agent, ctx(5_000)).unwrap();
        assert_eq!(
            small.summarize(&req(1..3)),
            Outcome::Failed { input_tokens: 5165 }
        );
        let big = build(&SummarizerSpec::Agent, ctx(6_000)).unwrap();
        assert!(matches!(big.summarize(&req(1..3)), Outcome::Summary(_)));
    }

    #[test]
    fn harness_discards_and_keeps_texts() {
        let s = session();
        let t = Terse {
            session: &s,
            count: &words,
            tokenizer: Tokenizer::O200k,
            lines: None,
        };
        let h = Harness::new(&t, BTreeSet::from([2]));
        let mut r1 = req(0..1);
        r1.call = 1;
        let mut r2 = req(0..1);
        r2.call = 2;
        assert!(matches!(h.summarize(&r1), Outcome::Summary(_)));
        assert_eq!(h.summarize(&r2), Outcome::Failed { input_tokens: 0 });
        assert_eq!(h.texts().keys().collect::<Vec<_>>(), vec![1]);
        assert_eq!(h.discarded().keys().copied().collect::<Vec<_>>(), vec![2]);
    }

    #[test]
    fn missing_program_is_a_clear_error() {
        let s = session();
        let e = Command::new(
            "./no-such-summarizer",
            vec![],
            DEFAULT_COMMAND_TIMEOUT,
            &s,
            &words,
        )
        .err()
        .unwrap();
        assert_eq!(
            e.to_string(),
            "summarizer program `./no-such-summarizer` not found (give a path or put it on PATH)"
        );
    }

    #[cfg(unix)]
    #[test]
    fn command_reads_json_and_prints_summary() {
        let s = session();
        // `head -c 13` prints the first 13 bytes of the JSON it read: `{"session_id"`.
        let c = Command::new(
            "head",
            vec!["-c".into(), "13".into()],
            DEFAULT_COMMAND_TIMEOUT,
            &s,
            &words,
        )
        .unwrap();
        let Outcome::Summary(sum) = c.summarize(&req(0..2)) else {
            panic!("{:?}", c.errors())
        };
        assert_eq!(
            sum.text.map(|t| t.to_string()).as_deref(),
            Some("{\"session_id\"")
        );
    }

    #[cfg(unix)]
    #[test]
    fn command_runs_once_per_distinct_input() {
        // `tee -a LOG` appends what it reads to LOG and echoes it: asking the same call twice
        // must leave one copy in LOG; a different span runs again.
        let s = session();
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("runs.log");
        let c = Command::new(
            "tee",
            vec!["-a".into(), log.display().to_string()],
            DEFAULT_COMMAND_TIMEOUT,
            &s,
            &words,
        )
        .unwrap();
        let first = c.summarize(&req(0..1));
        assert_eq!(c.summarize(&req(0..1)), first);
        let once = std::fs::read_to_string(&log).unwrap();
        assert_eq!(once.matches("session_id").count(), 1);
        c.summarize(&req(0..2));
        assert_eq!(
            std::fs::read_to_string(&log)
                .unwrap()
                .matches("session_id")
                .count(),
            2
        );
    }

    #[cfg(unix)]
    #[test]
    fn command_failure_and_hang_are_failed_calls_with_errors() {
        let s = session();
        let c = Command::new("false", vec![], DEFAULT_COMMAND_TIMEOUT, &s, &words).unwrap();
        assert_eq!(c.summarize(&req(0..1)), Outcome::Failed { input_tokens: 0 });
        assert!(
            c.errors()[0].starts_with("call 1: summarizer program `"),
            "{:?}",
            c.errors()
        );
        assert!(
            c.errors()[0].ends_with("exited with status 1"),
            "{:?}",
            c.errors()
        );
        let c = Command::new(
            "sleep",
            vec!["5".into()],
            Duration::from_millis(200),
            &s,
            &words,
        )
        .unwrap();
        assert_eq!(c.summarize(&req(0..1)), Outcome::Failed { input_tokens: 0 });
        assert!(
            c.errors()[0].ends_with("timed out after 0.2 s"),
            "{:?}",
            c.errors()
        );
    }
}
