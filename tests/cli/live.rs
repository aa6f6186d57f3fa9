//! `live:PROVIDER/MODEL` summarizers against a stub server on 127.0.0.1 that speaks each
//! provider's wire format (no provider API is reachable from tests): calls are counted, the
//! cache makes a rerun free, 429s are retried, a timeout is a failed call, the estimate and
//! the refusal come before any call, and no key reaches an output.

use crate::common::{bin, read_text, root};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The key every test hands the binary: it must appear in no output.
const SECRET: &str = "sk-test-SECRET-4f9c2e7a";

/// One request the stub received.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    /// Lower-cased names.
    headers: Vec<(String, String)>,
    body: String,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
    delay: Duration,
}

type Respond = dyn Fn(usize, &Seen) -> Reply + Send + Sync;

/// An HTTP/1.1 server on an ephemeral 127.0.0.1 port, one thread per connection; every answer
/// closes its connection. It lives until the test process ends.
struct Stub {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Stub {
    fn start(respond: impl Fn(usize, &Seen) -> Reply + Send + Sync + 'static) -> Stub {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let respond: Arc<Respond> = Arc::new(respond);
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (log, respond) = (Arc::clone(&log), Arc::clone(&respond));
                std::thread::spawn(move || serve(stream, &log, &*respond));
            }
        });
        Stub { url, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve(stream: TcpStream, log: &Mutex<Vec<Seen>>, respond: &Respond) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let seen = Seen {
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    let n = {
        let mut l = log.lock().unwrap();
        l.push(seen.clone());
        l.len() - 1
    };
    let reply = respond(n, &seen);
    std::thread::sleep(reply.delay);
    let mut out = stream;
    let mut head = format!(
        "HTTP/1.1 {} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        reply.status,
        reply.body.len()
    );
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = out.write_all(head.as_bytes());
    let _ = out.write_all(reply.body.as_bytes());
    let _ = out.flush();
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Provider {
    Gemini,
    OpenAi,
    Anthropic,
}

impl Provider {
    fn spec(self) -> &'static str {
        match self {
            Provider::Gemini => "live:gemini/gemini-2.5-flash",
            Provider::OpenAi => "live:openai/gpt-4.1-mini",
            Provider::Anthropic => "live:anthropic/claude-haiku-4-5",
        }
    }

    fn key_var(self) -> &'static str {
        match self {
            Provider::Gemini => "GEMINI_API_KEY",
            Provider::OpenAi => "OPENAI_API_KEY",
            Provider::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    /// The base URL as that provider's SDK takes it (OpenAI's includes `/v1`).
    fn base(self, stub: &Stub) -> String {
        match self {
            Provider::OpenAi => format!("{}/v1", stub.url),
            _ => stub.url.clone(),
        }
    }

    fn path(self) -> &'static str {
        match self {
            Provider::Gemini => "/v1beta/models/gemini-2.5-flash:generateContent",
            Provider::OpenAi => "/v1/chat/completions",
            Provider::Anthropic => "/v1/messages",
        }
    }

    /// The prompt of a request in this provider's format.
    fn prompt(self, body: &str) -> String {
        let v: Value = serde_json::from_str(body).unwrap();
        let p = match self {
            Provider::Gemini => &v["contents"][0]["parts"][0]["text"],
            Provider::OpenAi | Provider::Anthropic => &v["messages"][0]["content"],
        };
        p.as_str().unwrap().to_string()
    }

    /// A summary of the prompt (its language line and its last 300 chars) in this
    /// provider's answer format, with usage.
    fn answer(self, prompt: &str) -> Reply {
        let tail: String = {
            let chars: Vec<char> = prompt.chars().collect();
            chars[chars.len().saturating_sub(300)..].iter().collect()
        };
        let text = format!("Conversation Language: English\n{tail}");
        let (i, o) = (prompt.chars().count() / 4, text.chars().count() / 4);
        let body = match self {
            Provider::Gemini => json!({
                "candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                    "finishReason": "STOP"}],
                "usageMetadata": {"promptTokenCount": i, "candidatesTokenCount": o,
                    "thoughtsTokenCount": 7, "totalTokenCount": i + o + 7}}),
            Provider::OpenAi => json!({
                "id": "c", "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop"}],
                "usage": {"prompt_tokens": i, "completion_tokens": o, "total_tokens": i + o}}),
            Provider::Anthropic => json!({
                "id": "m", "type": "message", "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "usage": {"input_tokens": i, "output_tokens": o}}),
        };
        Reply {
            status: 200,
            headers: vec![],
            body: body.to_string(),
            delay: Duration::ZERO,
        }
    }
}

/// Three short sample sessions that compact under both triggers.
fn files() -> Vec<PathBuf> {
    [
        "05-support-12.session.json",
        "13-support-8.session.json",
        "08-coding-10.session.json",
    ]
    .iter()
    .map(|f| root().join("transcripts").join(f))
    .collect()
}

/// `sweep` over [`files`] with both triggers and two size thresholds (the same spans are
/// asked by several settings), the key in the environment, the stub as base URL.
fn sweep(
    p: Provider,
    stub: &Stub,
    cache: &Path,
    out: &Path,
    extra: &[&str],
) -> std::process::Output {
    let mut c = clean_bin();
    c.env(p.key_var(), SECRET)
        .arg("sweep")
        .args(files())
        .args([
            "--summarizer",
            p.spec(),
            "--trigger",
            "tokens,invocations",
            "--after-tokens",
            "20000,30000",
            "--keep-recent-events",
            "6",
            "--after-invocations",
            "3",
            "--overlap",
            "1",
            "--no-cache",
            "--live-base-url",
            &p.base(stub),
            "--live-cache",
        ])
        .arg(cache)
        .arg("--out")
        .arg(out)
        .args(extra);
    c.output().unwrap()
}

/// The binary with no provider key, base URL or proxy from the test's own environment.
fn clean_bin() -> assert_cmd::Command {
    let mut c = bin();
    for v in [
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        c.env_remove(v);
    }
    c
}

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

/// Every file under `dir` (recursively), with its bytes.
fn files_under(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push((p.clone(), std::fs::read(&p).unwrap()));
        }
    }
}

/// The secret is in no file under `dirs` and in none of the outputs.
fn assert_no_key(dirs: &[&Path], outputs: &[&std::process::Output]) {
    let mut all = Vec::new();
    for d in dirs {
        files_under(d, &mut all);
    }
    assert!(!all.is_empty(), "there are files to check");
    for (p, bytes) in all {
        assert!(
            !text(&bytes).contains(SECRET),
            "the key leaked into {}",
            p.display()
        );
    }
    for o in outputs {
        assert!(!text(&o.stdout).contains(SECRET), "key on stdout");
        assert!(!text(&o.stderr).contains(SECRET), "key on stderr");
    }
}

fn run_json(out: &Path) -> Value {
    serde_json::from_str(&read_text(&out.join("run.json"))).unwrap()
}

/// The number N of "N calls to make" in the estimate line.
fn estimated_calls(stderr: &str) -> u64 {
    let line = stderr
        .lines()
        .find(|l| l.contains("calls to make"))
        .unwrap_or_else(|| panic!("no estimate line in: {stderr}"));
    let after = line.split("`: ").nth(1).unwrap();
    after.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn each_provider_is_called_in_its_format_once_per_span_and_a_rerun_makes_no_call() {
    for p in [Provider::Gemini, Provider::OpenAi, Provider::Anthropic] {
        let stub = Stub::start(move |_, seen| p.answer(&p.prompt(&seen.body)));
        let tmp = tempfile::tempdir().unwrap();
        let cache = tmp.path().join("live-cache");
        let (first, second) = (tmp.path().join("first"), tmp.path().join("second"));
        let o1 = sweep(
            p,
            &stub,
            &cache,
            &first,
            &["--yes", "--live-concurrency", "2"],
        );
        assert!(o1.status.success(), "{p:?}: {}", text(&o1.stderr));
        let seen = stub.seen();
        assert!(
            seen.len() >= 3,
            "{p:?}: some calls were made: {}",
            seen.len()
        );
        // Each span once: no prompt was sent twice, though several settings compact it.
        let mut prompts: Vec<String> = seen.iter().map(|s| p.prompt(&s.body)).collect();
        prompts.sort();
        prompts.dedup();
        assert_eq!(prompts.len(), seen.len(), "{p:?}: a prompt was sent twice");
        for s in &seen {
            assert_eq!(s.path, p.path(), "{p:?}");
            match p {
                Provider::Gemini => assert_eq!(s.header("x-goog-api-key"), Some(SECRET)),
                Provider::OpenAi => {
                    assert_eq!(
                        s.header("authorization"),
                        Some(&*format!("Bearer {SECRET}"))
                    )
                }
                Provider::Anthropic => {
                    assert_eq!(s.header("x-api-key"), Some(SECRET));
                    assert_eq!(s.header("anthropic-version"), Some("2023-06-01"));
                    let v: Value = serde_json::from_str(&s.body).unwrap();
                    assert_eq!(v["max_tokens"], json!(8192));
                }
            }
            let prompt = p.prompt(&s.body);
            assert!(
                prompt.starts_with(
                    "The following is a conversation history between a user and an AI agent. It may"
                ),
                "{prompt}"
            );
            assert!(prompt.contains("interaction.\n\n"), "{prompt}");
        }
        let run = run_json(&first);
        assert_eq!(run["summarizer_errors"], json!([]), "{p:?}");
        // The live rows are priced from the usage the stub reported.
        let csv = read_text(&first.join("runs.csv"));
        let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
        let (cost, tokens_in) = (col("summarizer_cost_usd"), col("summarizer_input_tokens"));
        let mut charged = 0.0;
        let mut read = 0u64;
        for l in csv.lines().skip(1) {
            let f: Vec<&str> = l.split(',').collect();
            charged += f[cost].parse::<f64>().unwrap();
            read += f[tokens_in].parse::<u64>().unwrap();
        }
        let reported: u64 = seen
            .iter()
            .map(|s| p.prompt(&s.body).chars().count() as u64 / 4)
            .sum();
        assert!(charged > 0.0, "{p:?}: live calls cost something");
        assert!(
            read >= reported,
            "{p:?}: every reported prompt token is counted"
        );
        assert!(text(&o1.stdout).contains(&format!(
            "summarizer `{}`: {} requests sent, 0 summaries read from the cache",
            p.spec(),
            seen.len()
        )));

        // The rerun reads every summary (and its measured latency) from the cache.
        let o2 = sweep(p, &stub, &cache, &second, &[]);
        assert!(o2.status.success(), "{p:?}: {}", text(&o2.stderr));
        assert_eq!(
            stub.seen().len(),
            seen.len(),
            "{p:?}: the rerun made a call"
        );
        assert_eq!(
            estimated_calls(&text(&o2.stderr)),
            0,
            "{}",
            text(&o2.stderr)
        );
        for f in ["runs.csv", "settings.csv"] {
            assert_eq!(
                read_text(&first.join(f)),
                read_text(&second.join(f)),
                "{p:?}: {f}"
            );
        }
        assert_no_key(&[&first, &second, &cache], &[&o1, &o2]);
    }
}

#[test]
fn a_429_and_a_503_are_retried_honouring_retry_after() {
    let p = Provider::OpenAi;
    // The first distinct prompt is answered 429 (Retry-After: 0) once, the second 503 once
    // (no Retry-After: the 1 s backoff); every other request is answered.
    let order: Arc<Mutex<Vec<String>>> = Arc::default();
    let stub = Stub::start(move |_, seen| {
        let mut order = order.lock().unwrap();
        let first_time = !order.contains(&seen.body);
        if first_time {
            order.push(seen.body.clone());
        }
        let refuse = |status: u16, headers: Vec<(&'static str, String)>| Reply {
            status,
            headers,
            body: r#"{"error": {"message": "try again"}}"#.into(),
            delay: Duration::ZERO,
        };
        match (first_time, order.len()) {
            (true, 1) => refuse(429, vec![("retry-after", "0".into())]),
            (true, 2) => refuse(503, vec![]),
            _ => p.answer(&p.prompt(&seen.body)),
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let (cache, out) = (tmp.path().join("c"), tmp.path().join("run"));
    let o = sweep(p, &stub, &cache, &out, &["--yes"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let seen = stub.seen();
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for s in &seen {
        *counts.entry(s.body.as_str()).or_default() += 1;
    }
    // The two refused prompts were sent twice, every other once; no call failed.
    assert!(counts.len() >= 3);
    assert_eq!(
        counts.values().filter(|&&n| n == 2).count(),
        2,
        "{counts:?}"
    );
    assert!(counts.values().all(|&n| n <= 2));
    assert_eq!(run_json(&out)["summarizer_errors"], json!([]));
}

#[test]
fn a_timeout_is_a_failed_call_listed_in_run_json_and_the_report() {
    let p = Provider::Anthropic;
    let stub = Stub::start(move |_, seen| Reply {
        delay: Duration::from_secs(3),
        ..p.answer(&p.prompt(&seen.body))
    });
    let tmp = tempfile::tempdir().unwrap();
    let (cache, out) = (tmp.path().join("c"), tmp.path().join("run"));
    let o = sweep(
        p,
        &stub,
        &cache,
        &out,
        &[
            "--yes",
            "--summarizer-timeout",
            "0.5",
            "--live-concurrency",
            "8",
            // Only compaction rows: the guide's alternatives save tokens with no summarizer.
            "--alternatives",
            "none",
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let errors = run_json(&out)["summarizer_errors"].clone();
    let errors = errors.as_array().unwrap();
    assert!(!errors.is_empty());
    for e in errors {
        let m = e["message"].as_str().unwrap();
        assert!(
            m.starts_with("call ")
                && m.ends_with(
                    "summarizer `live:anthropic/claude-haiku-4-5` timed out after 0.5 s"
                ),
            "{m}"
        );
        assert!(e["setting_id"].as_u64().is_some() && e["session_id"].is_string());
    }
    // A failed call compacts nothing and costs nothing; nothing is cached.
    let csv = read_text(&out.join("runs.csv"));
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let (saved, cost) = (
        header
            .iter()
            .position(|h| *h == "tokens_saved_gross")
            .unwrap(),
        header
            .iter()
            .position(|h| *h == "summarizer_cost_usd")
            .unwrap(),
    );
    assert!(csv.lines().skip(1).all(|l| {
        let f: Vec<&str> = l.split(',').collect();
        f[saved] == "0" && f[cost].parse::<f64>() == Ok(0.0)
    }));
    let mut cached = Vec::new();
    files_under(&cache, &mut cached);
    assert!(cached.is_empty(), "failed calls are not cached");
    let report = read_text(&out.join("report.md"));
    assert!(report.contains("## Failed summarizer calls"), "{report}");
    assert!(report.contains("timed out after 0.5 s"));
    assert!(text(&o.stderr).contains("warning: "));
}

#[test]
fn the_estimate_comes_first_and_a_sweep_over_the_limit_is_refused() {
    let p = Provider::Gemini;
    let stub = Stub::start(move |_, seen| p.answer(&p.prompt(&seen.body)));
    let tmp = tempfile::tempdir().unwrap();
    let (cache, out) = (tmp.path().join("c"), tmp.path().join("run"));
    // Without --yes and with the default --live-max-calls 0: refused, nothing called or written.
    let o = sweep(p, &stub, &cache, &out, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    let planned = estimated_calls(&err);
    assert!(planned >= 3, "{err}");
    assert!(err.contains("(0 spans already cached)"), "{err}");
    assert!(err.contains("at the table's prices of"), "{err}");
    assert!(err.contains("an estimate, from a dry replay"), "{err}");
    assert!(
        err.contains(&format!(
            "error: {planned} live summarizer calls (estimated $"
        )) && err.contains("exceed --live-max-calls 0: none made; rerun with --yes"),
        "{err}"
    );
    assert!(stub.seen().is_empty(), "no call before the check");
    assert!(!out.exists(), "no run folder");
    // Within --live-max-calls it proceeds.
    let limit = planned.to_string();
    let o = sweep(p, &stub, &cache, &out, &["--live-max-calls", &limit]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let made = stub.seen().len() as u64;
    assert!(made >= 1);
    // Every span is cached now: the estimate is 0 calls, and a rerun needs no --yes.
    let again = tmp.path().join("again");
    let o = sweep(p, &stub, &cache, &again, &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(estimated_calls(&text(&o.stderr)), 0);
    assert!(text(&o.stderr).contains(&format!("({made} spans already cached)")));
    assert_eq!(stub.seen().len() as u64, made);
}

#[test]
fn a_key_echoed_in_a_provider_error_is_redacted() {
    let stub = Stub::start(|_, seen| Reply {
        status: 401,
        headers: vec![],
        body: json!({"error": {"message": format!(
            "Incorrect API key provided: {}",
            seen.header("authorization").unwrap_or("")
        )}})
        .to_string(),
        delay: Duration::ZERO,
    });
    let tmp = tempfile::tempdir().unwrap();
    let (cache, out) = (tmp.path().join("c"), tmp.path().join("run"));
    let o = sweep(Provider::OpenAi, &stub, &cache, &out, &["--yes"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // A 401 is not retried: one request per distinct span.
    let errors = run_json(&out)["summarizer_errors"].clone();
    let errors = errors.as_array().unwrap();
    assert!(!errors.is_empty());
    for e in errors {
        let m = e["message"].as_str().unwrap();
        assert!(
            m.ends_with("HTTP 401: Incorrect API key provided: Bearer ***"),
            "{m}"
        );
    }
    assert_no_key(&[&out], &[&o]);
}

#[test]
fn a_missing_key_is_an_environment_error_naming_the_variables() {
    let stub = Stub::start(|_, _| unreachable!("no call without a key"));
    let tmp = tempfile::tempdir().unwrap();
    let o = clean_bin()
        .args([
            "sweep",
            "--summarizer",
            "live:gemini/gemini-2.5-flash",
            "--live-base-url",
        ])
        .arg(&stub.url)
        .arg("--out")
        .arg(tmp.path().join("run"))
        .args(files())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains(
            "summarizer `live:gemini/gemini-2.5-flash`: no API key: set GEMINI_API_KEY or GOOGLE_API_KEY"
        ),
        "{}",
        text(&o.stderr)
    );
    assert!(stub.seen().is_empty());
}

#[test]
fn replay_with_a_live_summarizer_prices_and_times_the_measured_calls() {
    let p = Provider::OpenAi;
    let stub = Stub::start(move |_, seen| Reply {
        delay: Duration::from_millis(300),
        ..p.answer(&p.prompt(&seen.body))
    });
    let tmp = tempfile::tempdir().unwrap();
    let o = clean_bin()
        .env("OPENAI_API_KEY", SECRET)
        .arg("replay")
        .arg(&files()[0])
        .args([
            "--after-invocations",
            "3",
            "--overlap",
            "1",
            "--summarizer",
            "live:openai/gpt-4.1-mini",
            "--live-base-url",
            &format!("{}/v1", stub.url),
            "--live-cache",
        ])
        .arg(tmp.path())
        .args(["--yes", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).expect("--json keeps stdout pure JSON");
    let m = &v["metrics"];
    let calls = stub.seen().len() as u64;
    assert!(calls >= 1);
    assert_eq!(m["summarizer_calls"], json!(calls));
    // Each call waited at least the stub's 300 ms: measured, not modelled.
    assert!(
        m["end_of_run_latency_max_s"].as_f64().unwrap() >= 0.3,
        "{m}"
    );
    assert!(m["summarizer_cost_usd"].as_f64().unwrap() > 0.0, "{m}");
    assert_no_key(&[tmp.path()], &[&o]);
    // The table form says what is measured; the rerun reads the cache.
    let o = clean_bin()
        .env("OPENAI_API_KEY", SECRET)
        .arg("replay")
        .arg(&files()[0])
        .args([
            "--after-invocations",
            "3",
            "--overlap",
            "1",
            "--summarizer",
            "live:openai/gpt-4.1-mini",
            "--live-base-url",
            &format!("{}/v1", stub.url),
            "--live-cache",
        ])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains("summarizer basis         measured: tokens as the API reported them"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "0 requests sent, {calls} summaries read from the cache"
        )),
        "{out}"
    );
    assert_eq!(stub.seen().len() as u64, calls);
}

/// The prompt a live summarizer sends is the one google-adk's `LlmEventSummarizer` builds for
/// the same events: its template around `_format_events_for_prompt` of the span (the seed
/// summary first, as ADK's rolling summaries put it), on every sample transcript.
#[test]
fn the_prompt_is_the_one_adks_llm_event_summarizer_builds() {
    use compaction_sim::engine::{Phase, Seed, SummarizeRequest, Trigger};
    use compaction_sim::summarize::python::span_json;
    use compaction_sim::tokens::adk::{summarizer_prompt, summarizer_text};
    let py = crate::python::test_python();
    let seed_text = compaction_sim::engine::summarizer::SummaryText::flat(
        "Conversation Language: English\nearlier: {braces} kept".into(),
    );
    let mut spans = Vec::new();
    let mut ours = Vec::new();
    let mut dir: Vec<PathBuf> = std::fs::read_dir(root().join("transcripts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".session.json"))
        .collect();
    dir.sort();
    assert_eq!(dir.len(), 40);
    for (k, f) in dir.iter().enumerate() {
        for s in
            compaction_sim::transcript::detect::load_file(f.display().to_string(), None).unwrap()
        {
            let n = s.events.len() as u32;
            // Every other transcript as a rolling summary: seeded, over its second half.
            let (events, seed) = if k % 2 == 0 {
                (0..n, None)
            } else {
                (
                    n / 2..n,
                    Some(Seed {
                        ordinal: 1,
                        chars: 30,
                        start_timestamp: 0.0,
                        text: Some(&seed_text),
                    }),
                )
            };
            let req = SummarizeRequest {
                call: 1,
                phase: Phase::PostInvocation,
                trigger: Trigger::TokenThreshold,
                events,
                skip: &[],
                seed,
                prompt_chars: 0,
                history_chars: 0,
                fired_at_s: 0.0,
                next_turn_at_s: None,
            };
            spans.push(span_json(&s, &req));
            ours.push(summarizer_prompt(
                seed.and_then(|s| s.text).map(|t| t.to_string()).as_deref(),
                req.event_indices()
                    .map(|i| summarizer_text(&s.events[i as usize]))
                    .collect::<Vec<_>>()
                    .iter()
                    .map(String::as_str),
            ));
        }
    }
    let script = "import json, sys\n\
        from google.adk.events.event import Event\n\
        from google.adk.apps.llm_event_summarizer import LlmEventSummarizer\n\
        s = LlmEventSummarizer(llm=None)\n\
        out = []\n\
        for span in json.load(sys.stdin):\n\
        \x20   events = [Event.model_validate(e) for e in span]\n\
        \x20   out.append(s._prompt_template.format(conversation_history=s._format_events_for_prompt(events)))\n\
        json.dump(out, sys.stdout)\n";
    let mut child = std::process::Command::new(&py)
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let input = format!("[{}]", spans.join(","));
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success());
    let adk: Vec<String> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(adk.len(), ours.len());
    for (i, (a, o)) in adk.iter().zip(&ours).enumerate() {
        assert_eq!(a, o, "transcript span {i}");
    }
}

/// Shards of a live sweep and their merge read the summaries the single run cached: no call,
/// and the merged folder is the single run's, bytes for bytes.
#[test]
fn sharded_live_sweeps_merge_like_the_single_run_without_a_call() {
    let p = Provider::OpenAi;
    let stub = Stub::start(move |_, seen| p.answer(&p.prompt(&seen.body)));
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("c");
    let single = tmp.path().join("single");
    let o = sweep(p, &stub, &cache, &single, &["--yes"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let made = stub.seen().len();
    assert!(made >= 1);
    let parts = [tmp.path().join("p1"), tmp.path().join("p2")];
    for (k, part) in parts.iter().enumerate() {
        let shard = format!("{}/2", k + 1);
        let o = sweep(p, &stub, &cache, part, &["--shard", &shard]);
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    let merged = tmp.path().join("merged");
    let o = clean_bin()
        .env(p.key_var(), SECRET)
        .arg("merge")
        .args(&parts)
        .args(["--no-cache", "--quiet", "--live-base-url", &p.base(&stub)])
        .arg("--live-cache")
        .arg(&cache)
        .arg("--out")
        .arg(&merged)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(stub.seen().len(), made, "shards and merge made no call");
    for f in ["runs.csv", "settings.csv", "timelines.json"] {
        assert_eq!(
            read_text(&single.join(f)),
            read_text(&merged.join(f)),
            "{f}"
        );
    }
    assert_no_key(&[&single, &merged, &parts[0], &parts[1]], &[&o]);
}
