//! `python:REF` summarizers: the user's own `BaseEventsSummarizer`, run by google-adk itself.
//!
//! Why a worker process and not a reimplementation: the guide tells users to write their own
//! class; only ADK's own `Event` model and the user's own code give the text the pod would get.
//! Each worker (the script in `python_worker.py`, embedded and run with `python -c`) imports
//! google-adk and the user's summarizer once, then answers JSON-lines requests (protocol
//! [`PROTOCOL`]): the span as ADK Event JSON (validated with `Event.model_validate`), awaited
//! through `maybe_summarize_events(events=...)`. Workers are long-lived and pooled: one is
//! started per concurrent caller (at most the rayon threads), reused afterwards. A worker that
//! crashes, breaks the protocol or runs past the time limit is killed and replaced; the call
//! is a failed call with a one-line error, never a stuck sweep.
//!
//! Pools are started at the CLI edge (so a missing interpreter, a missing google-adk or a
//! reference that does not import is one line before any replay) and registered here by
//! reference, where [`super::build`] finds them: the sweep pipeline needs no
//! extra plumbing.

use crate::engine::summarizer::{summary_json_chars, SummaryText};
use crate::engine::{Outcome, SummarizeRequest, Summarizer, Summary};
use crate::error::{Classify, ExitKind};
use crate::transcript::{Event, Part, Role, Session};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command as Process, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// Version of the JSON-lines protocol between this binary and its worker script.
pub const PROTOCOL: u64 = 1;

/// The google-adk release the simulator follows (the install hint names it).
pub const ADK_REQUIREMENT: &str = "google-adk==2.13.0";

/// The worker script.
const WORKER: &str = include_str!("python_worker.py");

/// Environment variable naming the interpreter when `--python` is not given.
pub const PYTHON_ENV: &str = "COMPACTION_SIM_PYTHON";

/// Longest wait for a worker to import google-adk and the user's module.
const MIN_STARTUP: Duration = Duration::from_secs(60);

/// How to run the user's summarizer.
#[derive(Debug, Clone)]
pub struct PythonOptions {
    /// The interpreter: `--python`, else `COMPACTION_SIM_PYTHON`, else `python3`.
    pub python: String,
    /// The target's package folder (`--package DIR`): a leading-dot reference is relative to it.
    pub package: Option<PathBuf>,
    /// Time limit of one call (`--summarizer-timeout`).
    pub timeout: Duration,
}

/// `--python`, else `COMPACTION_SIM_PYTHON`, else `python3`.
pub fn interpreter(flag: Option<&str>) -> String {
    flag.map(str::to_string)
        .or_else(|| {
            std::env::var(PYTHON_ENV)
                .ok()
                .filter(|s| !s.trim().is_empty())
        })
        .unwrap_or_else(|| "python3".to_string())
}

/// Why a Python summarizer could not be started.
#[derive(Debug, thiserror::Error)]
pub enum PythonError {
    #[error("Python interpreter `{python}` could not be started ({source}): install Python 3 and run `pip install {ADK_REQUIREMENT}`, then give it with --python PY or {PYTHON_ENV}")]
    NoInterpreter {
        python: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "`{python}` has no google-adk ({detail}): run `{python} -m pip install {ADK_REQUIREMENT}`"
    )]
    NoAdk { python: String, detail: String },
    /// The reference does not import, or is not a `BaseEventsSummarizer` (the pod's reasons).
    #[error("summarizer {detail}")]
    Reference { reference: String, detail: String },
    #[error("summarizer `python:{reference}`: the Python worker failed to start: {detail}")]
    Worker { reference: String, detail: String },
}

impl Classify for PythonError {
    fn exit_kind(&self) -> ExitKind {
        match self {
            PythonError::Reference { .. } => ExitKind::BadInput,
            _ => ExitKind::Environment,
        }
    }
}

/// What the worker said when it started.
#[derive(Debug, Clone)]
pub struct Handshake {
    pub adk_version: String,
    /// `module.Class` of the summarizer object.
    pub summarizer: String,
}

/// One summary as the worker returned it.
#[derive(Debug, Clone, PartialEq)]
pub struct PyText {
    pub text: String,
    /// `len(compacted_content.model_dump_json(exclude_none=True))`, as ADK's gate measures it.
    pub json_chars: u64,
}

/// A failed call, as the one line the run reports for it (the worker's own words).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct PyCallError(pub String);

/// One call's result: a summary, `None` (nothing compacted), or a one-line error.
pub type PyResult = Result<Option<PyText>, PyCallError>;

struct Worker {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    stderr_tail: Arc<Mutex<String>>,
    /// Closed when the stderr reader has read everything the worker wrote: a crash message is
    /// read after it, or the last line may still be in the pipe (a race seen under load).
    stderr_done: Receiver<()>,
    next_id: u64,
}

/// How long an exited worker's stderr may take to drain (longer only when a process the worker
/// started still holds the pipe open).
const STDERR_DRAIN: Duration = Duration::from_secs(2);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The last non-empty line a worker wrote on stderr (for crash messages).
fn last_line(tail: &Mutex<String>) -> String {
    tail.lock()
        .map(|t| {
            t.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim()
                .to_string()
        })
        .unwrap_or_default()
}

/// The worker's stdout, line by line, read on a thread (the channel closes at its end).
fn read_lines(stdout: std::process::ChildStdout) -> Receiver<String> {
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            match line {
                Ok(l) => {
                    if tx.send(l).is_err() {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
    });
    lines
}

/// The end of the worker's stderr, kept on a thread (for crash messages), and a channel
/// closed when it has all been read.
fn keep_tail(mut stderr: std::process::ChildStderr) -> (Arc<Mutex<String>>, Receiver<()>) {
    let stderr_tail = Arc::new(Mutex::new(String::new()));
    let tail = Arc::clone(&stderr_tail);
    let (done_tx, stderr_done) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        let _done = done_tx;
        let mut buf = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 {
                break;
            }
            if let Ok(mut t) = tail.lock() {
                t.push_str(&String::from_utf8_lossy(&buf[..n]));
                // Keep the end only: the last line is what a crash message needs.
                if t.len() > 16_384 {
                    let cut = t.len() - 8_192;
                    let cut = (cut..t.len()).find(|&i| t.is_char_boundary(i)).unwrap_or(0);
                    t.drain(..cut);
                }
            }
        }
    });
    (stderr_tail, stderr_done)
}

impl Worker {
    fn spawn(reference: &str, opts: &PythonOptions) -> Result<(Worker, Handshake), PythonError> {
        let mut worker = Worker::start(reference, opts)?;
        let hs = worker.handshake(reference, opts)?;
        Ok((worker, hs))
    }

    /// Start the interpreter on the worker script, its stdout read line by line and the end
    /// of its stderr kept, each on a thread of its own.
    fn start(reference: &str, opts: &PythonOptions) -> Result<Worker, PythonError> {
        let config = json!({
            "protocol": PROTOCOL,
            "ref": reference,
            "package": opts.package.as_ref().map(|p| p.display().to_string()),
        });
        let mut child = super::spawn::spawn_program(
            Process::new(&opts.python)
                .arg("-c")
                .arg(WORKER)
                .arg(config.to_string())
                .env("PYTHONUNBUFFERED", "1")
                .env("PYTHONIOENCODING", "utf-8")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        )
        .map_err(|source| PythonError::NoInterpreter {
            python: opts.python.clone(),
            source,
        })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            return Err(PythonError::Worker {
                reference: reference.to_string(),
                detail: "no pipes to the worker".into(),
            });
        };
        let (stderr_tail, stderr_done) = keep_tail(stderr);
        Ok(Worker {
            child,
            stdin,
            lines: read_lines(stdout),
            stderr_tail,
            stderr_done,
            next_id: 0,
        })
    }

    /// Read the worker's first line: google-adk imported and the reference loaded, or why not.
    fn handshake(
        &mut self,
        reference: &str,
        opts: &PythonOptions,
    ) -> Result<Handshake, PythonError> {
        let fail = |detail: String| PythonError::Worker {
            reference: reference.to_string(),
            detail,
        };
        let first = match self.lines.recv_timeout(opts.timeout.max(MIN_STARTUP)) {
            Ok(l) => l,
            Err(RecvTimeoutError::Timeout) => {
                return Err(fail(format!(
                    "no answer after {} s",
                    opts.timeout.max(MIN_STARTUP).as_secs_f64()
                )))
            }
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.child.wait().ok();
                let _ = self.stderr_done.recv_timeout(STDERR_DRAIN);
                let err = last_line(&self.stderr_tail);
                let code = status
                    .and_then(|s| s.code())
                    .map_or("a signal".to_string(), |c| format!("status {c}"));
                return Err(fail(if err.is_empty() {
                    format!("it exited with {code}")
                } else {
                    format!("it exited with {code}: {err}")
                }));
            }
        };
        let v: Value = serde_json::from_str(&first)
            .map_err(|_| fail(format!("unexpected first line `{}`", short(&first))))?;
        if v.get("protocol").and_then(Value::as_u64) != Some(PROTOCOL) {
            return Err(fail(format!(
                "protocol {} where {PROTOCOL} was expected",
                v.get("protocol").unwrap_or(&Value::Null)
            )));
        }
        let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        if v.get("ok").and_then(Value::as_bool) != Some(true) {
            return Err(match text("kind").as_str() {
                "no-adk" => PythonError::NoAdk {
                    python: opts.python.clone(),
                    detail: text("error"),
                },
                _ => PythonError::Reference {
                    reference: reference.to_string(),
                    detail: text("error"),
                },
            });
        }
        Ok(Handshake {
            adk_version: text("adk_version"),
            summarizer: text("summarizer"),
        })
    }

    /// One call. The bool says whether the worker can be used again.
    fn call(&mut self, events: &str, timeout: Duration) -> (PyResult, bool) {
        self.next_id += 1;
        let id = self.next_id;
        let line = format!("{{\"id\":{id},\"events\":{events}}}\n");
        if self
            .stdin
            .write_all(line.as_bytes())
            .and_then(|_| self.stdin.flush())
            .is_err()
        {
            return (Err(PyCallError(self.exit_message())), false);
        }
        let answer = match self.lines.recv_timeout(timeout) {
            Ok(l) => l,
            Err(RecvTimeoutError::Timeout) => {
                return (
                    Err(PyCallError(format!(
                        "timed out after {} s (worker stopped)",
                        timeout.as_secs_f64()
                    ))),
                    false,
                )
            }
            Err(RecvTimeoutError::Disconnected) => {
                return (Err(PyCallError(self.exit_message())), false)
            }
        };
        let Ok(v) = serde_json::from_str::<Value>(&answer) else {
            return (
                Err(PyCallError(format!(
                    "failed: the worker broke protocol {PROTOCOL}: `{}`",
                    short(&answer)
                ))),
                false,
            );
        };
        if v.get("id").and_then(Value::as_u64) != Some(id) {
            return (
                Err(PyCallError(format!(
                    "failed: the worker broke protocol {PROTOCOL}: answer for another call"
                ))),
                false,
            );
        }
        if v.get("ok").and_then(Value::as_bool) != Some(true) {
            let e = v.get("error").and_then(Value::as_str).unwrap_or("failed");
            return (Err(PyCallError(format!("raised {e}"))), true);
        }
        match v.get("text") {
            Some(Value::String(t)) => {
                let json_chars = v
                    .get("json_chars")
                    .and_then(Value::as_u64)
                    .unwrap_or_else(|| summary_json_chars(crate::tokens::adk::json_str_len_raw(t)));
                (
                    Ok(Some(PyText {
                        text: t.clone(),
                        json_chars,
                    })),
                    true,
                )
            }
            _ => (Ok(None), true),
        }
    }

    fn exit_message(&mut self) -> String {
        let status = self.child.wait().ok();
        let _ = self.stderr_done.recv_timeout(STDERR_DRAIN);
        let code = status
            .and_then(|s| s.code())
            .map_or("a signal".to_string(), |c| format!("status {c}"));
        let err = last_line(&self.stderr_tail);
        if err.is_empty() {
            format!("failed: the worker exited with {code}")
        } else {
            format!(
                "failed: the worker exited with {code}: {}",
                crate::transcript::util::one_line(&err, 300)
            )
        }
    }
}

fn short(s: &str) -> String {
    crate::transcript::util::one_line(s, 120)
}

/// Long-lived workers for one reference.
pub struct Pool {
    pub reference: String,
    pub handshake: Handshake,
    opts: PythonOptions,
    idle: Mutex<Vec<Worker>>,
}

impl Pool {
    /// Start the first worker: checks the interpreter, google-adk and the reference.
    pub fn start(reference: &str, opts: PythonOptions) -> Result<Pool, PythonError> {
        let (w, handshake) = Worker::spawn(reference, &opts)?;
        Ok(Pool {
            reference: reference.to_string(),
            handshake,
            opts,
            idle: Mutex::new(vec![w]),
        })
    }

    /// Summarize one span (a JSON array of ADK events).
    pub fn summarize(&self, events: &str) -> PyResult {
        let idle = self.idle.lock().ok().and_then(|mut v| v.pop());
        let mut worker = match idle {
            Some(w) => w,
            None => match Worker::spawn(&self.reference, &self.opts) {
                Ok((w, _)) => w,
                Err(PythonError::Worker { detail, .. }) => {
                    return Err(PyCallError(format!(
                        "failed: a new worker did not start: {detail}"
                    )))
                }
                Err(e) => {
                    return Err(PyCallError(format!(
                        "failed: a new worker did not start: {e}"
                    )))
                }
            },
        };
        let (result, keep) = worker.call(events, self.opts.timeout);
        if keep {
            if let Ok(mut v) = self.idle.lock() {
                v.push(worker);
            }
        }
        result
    }
}

fn pools() -> &'static Mutex<HashMap<String, Arc<Pool>>> {
    static POOLS: OnceLock<Mutex<HashMap<String, Arc<Pool>>>> = OnceLock::new();
    POOLS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Start (once) the pool for `reference` and register it for [`super::build`].
pub fn start(reference: &str, opts: &PythonOptions) -> Result<Arc<Pool>, PythonError> {
    if let Some(p) = registered(reference) {
        return Ok(p);
    }
    let pool = Arc::new(Pool::start(reference, opts.clone())?);
    if let Ok(mut m) = pools().lock() {
        m.insert(reference.to_string(), Arc::clone(&pool));
    }
    Ok(pool)
}

/// The pool started for `reference`, if any.
pub fn registered(reference: &str) -> Option<Arc<Pool>> {
    pools().lock().ok().and_then(|m| m.get(reference).cloned())
}

/// Summaries already written for a session, by (summarizer, span): every setting that
/// compacts the same span gets the same text without asking Python again.
#[derive(Debug, Default)]
pub struct SpanMemo {
    done: Mutex<HashMap<u128, PyResult>>,
}

impl SpanMemo {
    fn get_or(&self, key: u128, f: impl FnOnce() -> PyResult) -> PyResult {
        if let Some(r) = self.done.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return r;
        }
        let r = f();
        if let Ok(mut m) = self.done.lock() {
            m.insert(key, r.clone());
        }
        r
    }
}

/// An ADK `Part` for a session part; an attachment's text becomes its `inline_data` data
/// (standard base64).
fn adk_part_json(p: &Part) -> Value {
    match p {
        Part::Text { text } => json!({"text": text}),
        Part::Thought { text } => json!({"text": text, "thought": true}),
        Part::ToolCall { id, name, args } => {
            let mut fc = Map::new();
            if let Some(id) = id {
                fc.insert("id".into(), json!(id));
            }
            fc.insert("name".into(), json!(name));
            if args.is_object() {
                fc.insert("args".into(), args.clone());
            }
            json!({"function_call": fc})
        }
        Part::ToolResponse { id, name, response } => {
            let mut fr = Map::new();
            if let Some(id) = id {
                fr.insert("id".into(), json!(id));
            }
            fr.insert("name".into(), json!(name));
            let response = match response {
                Value::Object(_) => response.clone(),
                Value::Null => json!({}),
                other => json!({"result": other}),
            };
            fr.insert("response".into(), response);
            json!({"function_response": fr})
        }
        Part::Attachment {
            name,
            mime_type,
            text,
            ..
        } => {
            let mut b = Map::new();
            b.insert("display_name".into(), json!(name));
            if let Some(m) = mime_type {
                b.insert("mime_type".into(), json!(m));
            }
            if let Some(t) = text {
                b.insert("data".into(), json!(STANDARD.encode(t.as_bytes())));
            }
            json!({"inline_data": b})
        }
    }
}

/// An ADK Event (snake_case JSON, as `Event.model_validate` reads it) for a session event.
/// Attachments become `inline_data` (their text as the data when the transcript has it).
pub fn adk_event_json(e: &Event) -> Value {
    let parts: Vec<Value> = e.parts.iter().map(adk_part_json).collect();
    let mut o = Map::new();
    if let Some(id) = &e.id {
        o.insert("id".into(), json!(id));
    }
    o.insert("author".into(), json!(e.author));
    o.insert("invocation_id".into(), json!(e.invocation_id));
    o.insert("timestamp".into(), json!(e.timestamp));
    if e.transcription {
        let text: String = e
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let key = if e.role == Role::User {
            "input_transcription"
        } else {
            "output_transcription"
        };
        o.insert(key.into(), json!({ "text": text }));
    } else {
        let mut content = Map::new();
        if !e.role_absent {
            let role = if e.role == Role::Model {
                "model"
            } else {
                "user"
            };
            content.insert("role".into(), json!(role));
        }
        content.insert("parts".into(), Value::Array(parts));
        o.insert("content".into(), Value::Object(content));
    }
    if let Some(b) = &e.branch {
        o.insert("branch".into(), json!(b));
    }
    if let Some(s) = &e.isolation_scope {
        o.insert("isolation_scope".into(), json!(s));
    }
    if !e.long_running_tool_ids.is_empty() {
        o.insert(
            "long_running_tool_ids".into(),
            json!(e.long_running_tool_ids),
        );
    }
    if let Some(m) = &e.model {
        o.insert("model_version".into(), json!(m));
    }
    if let Some(u) = &e.usage {
        o.insert(
            "usage_metadata".into(),
            json!({
                "prompt_token_count": u.prompt_tokens,
                "candidates_token_count": u.output_tokens,
                "cached_content_token_count": u.cached_read_tokens,
            }),
        );
    }
    if let Some(r) = &e.rewind_before_invocation_id {
        o.insert(
            "actions".into(),
            json!({ "rewind_before_invocation_id": r }),
        );
    }
    Value::Object(o)
}

/// The events ADK hands the summarizer for a request, as JSON text: the seed summary first
/// (author `model`, at the previous summary's start, as `_collect_token_threshold_candidates`
/// builds it), then the raw events.
pub fn span_json(session: &Session, req: &SummarizeRequest<'_>) -> String {
    let mut events = Vec::new();
    if let Some(seed) = req.seed {
        if let Some(text) = seed.text {
            events.push(json!({
                "author": "model",
                "invocation_id": format!("compaction-sim-seed-{}", seed.ordinal),
                "timestamp": seed.start_timestamp,
                "content": {"role": "model", "parts": [{"text": text}]},
            }));
        }
    }
    for i in req.event_indices() {
        if let Some(e) = session.events.get(i as usize) {
            events.push(adk_event_json(e));
        }
    }
    // NaN / Infinity / big integers reach Python as the bare literals it wrote.
    crate::transcript::pyjson::untag_json_text(&Value::Array(events).to_string()).into_owned()
}

/// A `python:REF` summarizer for one replay.
pub struct PythonSummarizer<'a> {
    pub pool: Arc<Pool>,
    pub session: &'a Session,
    pub count: &'a (dyn Fn(&str) -> u64 + Sync),
    memo: Option<&'a SpanMemo>,
    errors: Mutex<Vec<String>>,
}

impl<'a> PythonSummarizer<'a> {
    pub fn new(
        pool: Arc<Pool>,
        session: &'a Session,
        count: &'a (dyn Fn(&str) -> u64 + Sync),
        memo: Option<&'a SpanMemo>,
    ) -> Self {
        PythonSummarizer {
            pool,
            session,
            count,
            memo,
            errors: Mutex::new(Vec::new()),
        }
    }

    /// One line per failed call, in call order.
    pub fn errors(&self) -> Vec<String> {
        self.errors.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

impl Summarizer for PythonSummarizer<'_> {
    fn summarize(&self, req: &SummarizeRequest<'_>) -> Outcome {
        let span = span_json(self.session, req);
        let ask = || self.pool.summarize(&span);
        let result = match self.memo {
            Some(m) => {
                let mut key = self.pool.reference.clone().into_bytes();
                key.push(0);
                key.extend_from_slice(span.as_bytes());
                m.get_or(xxhash_rust::xxh3::xxh3_128(&key), ask)
            }
            None => ask(),
        };
        match result {
            Ok(Some(t)) => Outcome::Summary(Summary {
                chars: t.text.chars().count() as u64,
                json_chars: t.json_chars,
                tokens: if t.text.is_empty() {
                    0
                } else {
                    (self.count)(&t.text)
                },
                input_tokens: 0,
                text: Some(SummaryText::flat(t.text)),
            }),
            Ok(None) => Outcome::Empty { input_tokens: 0 },
            Err(e) => {
                if let Ok(mut errs) = self.errors.lock() {
                    errs.push(format!(
                        "call {}: summarizer `python:{}` {e}",
                        req.call, self.pool.reference
                    ));
                }
                Outcome::Failed { input_tokens: 0 }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Phase, Seed, Trigger};
    use crate::transcript::{Format, Usage};

    fn session() -> Session {
        let mut user = Event::new("user", Role::User, "i1", 1.5);
        user.parts.push(Part::Text { text: "hi".into() });
        user.parts.push(Part::Attachment {
            name: "a.txt".into(),
            mime_type: Some("text/plain".into()),
            text: Some("abc".into()),
            size_bytes: None,
        });
        let mut call = Event::new("agent", Role::Model, "i1", 2.0);
        call.parts.push(Part::Thought { text: "hmm".into() });
        call.parts.push(Part::ToolCall {
            id: Some("c1".into()),
            name: "f".into(),
            args: json!({"x": 1}),
        });
        call.usage = Some(Usage {
            prompt_tokens: 10,
            cached_read_tokens: 2,
            cache_write_tokens: 0,
            output_tokens: 3,
        });
        call.long_running_tool_ids = vec!["c1".into()];
        let mut resp = Event::new("agent", Role::User, "i1", 3.0);
        resp.parts.push(Part::ToolResponse {
            id: Some("c1".into()),
            name: "f".into(),
            response: json!("plain"),
        });
        Session::new("s", "mem", Format::Canonical, vec![user, call, resp])
    }

    #[test]
    fn events_are_written_as_adk_event_json() {
        let s = session();
        assert_eq!(
            adk_event_json(&s.events[0]),
            json!({"author": "user", "invocation_id": "i1", "timestamp": 1.5,
                "content": {"role": "user", "parts": [{"text": "hi"},
                    {"inline_data": {"display_name": "a.txt", "mime_type": "text/plain", "data": "YWJj"}}]}})
        );
        assert_eq!(
            adk_event_json(&s.events[1]),
            json!({"author": "agent", "invocation_id": "i1", "timestamp": 2.0,
                "content": {"role": "model", "parts": [{"text": "hmm", "thought": true},
                    {"function_call": {"id": "c1", "name": "f", "args": {"x": 1}}}]},
                "long_running_tool_ids": ["c1"],
                "usage_metadata": {"prompt_token_count": 10, "candidates_token_count": 3,
                    "cached_content_token_count": 2}})
        );
        // A tool result that is not an object is wrapped as ADK wraps one: {"result": ...}.
        assert_eq!(
            adk_event_json(&s.events[2])["content"]["parts"][0],
            json!({"function_response": {"id": "c1", "name": "f", "response": {"result": "plain"}}})
        );
    }

    #[test]
    fn a_rolling_span_starts_with_the_seed_as_adk_builds_it() {
        let older = SummaryText::flat("older".into());
        let s = session();
        let skip = [1];
        let req = SummarizeRequest {
            call: 2,
            phase: Phase::PostInvocation,
            trigger: Trigger::TokenThreshold,
            events: 0..3,
            skip: &skip,
            seed: Some(Seed {
                ordinal: 1,
                chars: 5,
                start_timestamp: 0.5,
                text: Some(&older),
            }),
            prompt_chars: 0,
            history_chars: 0,
            fired_at_s: 0.0,
            next_turn_at_s: None,
        };
        let v: Value = serde_json::from_str(&span_json(&s, &req)).unwrap();
        let v = v.as_array().unwrap();
        // seed, then events 0 and 2 (1 is skipped)
        assert_eq!(v.len(), 3);
        assert_eq!(
            v[0],
            json!({"author": "model", "invocation_id": "compaction-sim-seed-1", "timestamp": 0.5,
                "content": {"role": "model", "parts": [{"text": "older"}]}})
        );
        assert_eq!(v[1]["timestamp"], json!(1.5));
        assert_eq!(v[2]["timestamp"], json!(3.0));
    }

    #[test]
    fn a_missing_interpreter_is_an_environment_error_naming_the_install() {
        let e = Pool::start(
            "x.py:Y",
            PythonOptions {
                python: "/no/such/python3".into(),
                package: None,
                timeout: Duration::from_secs(5),
            },
        )
        .err()
        .unwrap();
        assert_eq!(e.exit_kind(), ExitKind::Environment);
        let msg = e.to_string();
        assert!(
            msg.starts_with("Python interpreter `/no/such/python3` could not be started"),
            "{msg}"
        );
        assert!(msg.contains("pip install google-adk==2.13.0"), "{msg}");
    }

    /// A fake interpreter: a shell script that ignores its arguments and runs `body`.
    #[cfg(unix)]
    fn fake_python(dir: &std::path::Path, body: &str) -> String {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join("fake-python");
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p.display().to_string()
    }

    #[cfg(unix)]
    #[test]
    fn another_protocol_version_is_refused_at_startup() {
        let dir = tempfile::tempdir().unwrap();
        let py = fake_python(dir.path(), r#"echo '{"protocol": 2, "ok": true}'"#);
        let opts = PythonOptions {
            python: py,
            package: None,
            timeout: Duration::from_secs(5),
        };
        let e = Pool::start("x.py:Y", opts).err().unwrap();
        assert_eq!(
            e.to_string(),
            "summarizer `python:x.py:Y`: the Python worker failed to start: protocol 2 where 1 was expected"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_worker_that_breaks_the_protocol_is_a_failed_call_and_is_replaced() {
        // Handshakes, then answers every request with text that is not protocol JSON.
        let dir = tempfile::tempdir().unwrap();
        let py = fake_python(
            dir.path(),
            r#"echo '{"protocol": 1, "ok": true, "adk_version": "2.13.0", "summarizer": "m.C"}'
while read line; do echo 'hello from print()'; done"#,
        );
        let opts = PythonOptions {
            python: py,
            package: None,
            timeout: Duration::from_secs(5),
        };
        let pool = Pool::start("m:C", opts).unwrap();
        assert_eq!(pool.handshake.summarizer, "m.C");
        let e = pool.summarize("[]").unwrap_err();
        assert_eq!(
            e.0,
            "failed: the worker broke protocol 1: `hello from print()`"
        );
        // The broken worker was dropped, not put back.
        assert_eq!(pool.idle.lock().unwrap().len(), 0);
        // A well-behaved answer for the right id is read back.
        let dir2 = tempfile::tempdir().unwrap();
        let py = fake_python(
            dir2.path(),
            r#"echo '{"protocol": 1, "ok": true}'
read line; echo '{"id": 1, "ok": true, "text": "said", "json_chars": 44}'
read line; echo '{"id": 2, "ok": true, "text": null}'
read line; echo '{"id": 3, "ok": false, "error": "KeyError: x"}'"#,
        );
        let pool = Pool::start(
            "m:C",
            PythonOptions {
                python: py,
                package: None,
                timeout: Duration::from_secs(5),
            },
        )
        .unwrap();
        assert_eq!(
            pool.summarize("[]"),
            Ok(Some(PyText {
                text: "said".into(),
                json_chars: 44
            }))
        );
        assert_eq!(pool.summarize("[]"), Ok(None));
        assert_eq!(
            pool.summarize("[]"),
            Err(PyCallError("raised KeyError: x".into()))
        );
        assert_eq!(pool.idle.lock().unwrap().len(), 1);
    }
}
