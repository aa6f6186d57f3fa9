//! `live:PROVIDER/MODEL` summarizers: real summaries from a model API, with ADK's own prompt.
//!
//! The prompt is `LlmEventSummarizer`'s ([`crate::tokens::adk::summarizer_prompt`]: its
//! template around the seed summary and the events' formatted lines), sent as one user
//! message, so the summary is what ADK would get from that model. Each call's reported usage
//! (input and output tokens, thinking included), its measured latency (the answering
//! request, from send to the whole body read) and its text replace the model: cost at the
//! price table's rates, latency as measured, references and facts measured on the text.
//!
//! Wire formats: `gemini` (`models/MODEL:generateContent`), `openai` (`chat/completions`, any
//! compatible server: vLLM, Ollama, a LiteLLM proxy) and `anthropic` (`messages`). Keys come
//! from the providers' usual environment variables only, travel in a header, and never
//! reach a message: every error text is passed through [`Client::redact`].
//!
//! Summaries are cached on disk, one file per (provider, model, prompt) named by the xxh3-128
//! of the three, holding the text, the usage and the measured latency: a span several
//! settings compact is summarized once, and a rerun makes no call and reuses the first
//! measurement, so its outputs are the same bytes. Failed calls are never cached.
//!
//! Calls are blocking HTTP (ureq, rustls): no async runtime. At most `concurrency` calls are
//! in flight at once (the sweep runs enough rayon threads for that); a 429 or 5xx is retried
//! with exponential backoff, honouring `Retry-After` (seconds); a call that still fails, times
//! out or answers something unreadable is a failed summarizer call as ADK has it (logged, no
//! compaction, trigger stays armed), with a one-line error.
//!
//! Before the first call a sweep runs a dry replay ([`Client::set_dry`]): a span whose
//! summary is cached gets it, any other is answered by the modelled summarizer of the same
//! model and recorded as a call to make, which gives the call count and cost estimate the CLI
//! shows and checks before going live.

use super::modelled::{EventLines, LengthModel, Modelled};
use crate::engine::summarizer::{summary_json_chars, SummaryText};
use crate::engine::{Outcome, SummarizeRequest, Summarizer, Summary};
use crate::error::{Classify, ExitKind};
use crate::transcript::Session;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Default number of calls in flight at once (`--live-concurrency`).
pub const DEFAULT_CONCURRENCY: usize = 4;

/// Retries of a call answered 429 or 5xx (so at most 1 + this many requests).
pub const RETRIES: u32 = 3;

/// First backoff wait; it doubles on each retry.
const BACKOFF_BASE: Duration = Duration::from_secs(1);

/// Longest wait between two attempts, whatever `Retry-After` asks.
const MAX_BACKOFF: Duration = Duration::from_secs(120);

/// Anthropic's `messages` needs `max_tokens`: ADK's `Claude` model sends this by default.
pub const ANTHROPIC_MAX_TOKENS: u64 = 8192;

/// The `anthropic-version` header.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Largest response body read (a summary is far smaller).
const MAX_BODY_BYTES: u64 = 16 * 1024 * 1024;

/// Format tag of a cache file (bump when its fields change).
const CACHE_FORMAT: &str = "compaction-sim live summary v1";

/// The model APIs a `live:` summarizer can call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Provider {
    Gemini,
    OpenAi,
    Anthropic,
}

impl Provider {
    pub const ALL: [Provider; 3] = [Provider::Gemini, Provider::OpenAi, Provider::Anthropic];

    pub fn name(self) -> &'static str {
        match self {
            Provider::Gemini => "gemini",
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
        }
    }

    pub fn from_name(s: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| p.name() == s)
    }

    /// Environment variables holding the key, in the order they are read.
    pub fn key_vars(self) -> &'static [&'static str] {
        match self {
            Provider::Gemini => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
            Provider::OpenAi => &["OPENAI_API_KEY"],
            Provider::Anthropic => &["ANTHROPIC_API_KEY"],
        }
    }

    /// Environment variable holding a base URL, as the providers' SDKs read it.
    pub fn base_url_var(self) -> Option<&'static str> {
        match self {
            Provider::Gemini => None,
            Provider::OpenAi => Some("OPENAI_BASE_URL"),
            Provider::Anthropic => Some("ANTHROPIC_BASE_URL"),
        }
    }

    /// The provider's own API (OpenAI's base includes `/v1`, as `OPENAI_BASE_URL` does).
    pub fn default_base_url(self) -> &'static str {
        match self {
            Provider::Gemini => "https://generativelanguage.googleapis.com",
            Provider::OpenAi => "https://api.openai.com/v1",
            Provider::Anthropic => "https://api.anthropic.com",
        }
    }
}

/// `PROVIDER/MODEL` of a `live:` spec (the model may itself hold `/`, as vLLM names do).
pub fn parse_target(s: &str) -> Result<(Provider, String), LiveError> {
    let bad = || LiveError::Spec {
        spec: s.to_string(),
    };
    let (p, m) = s.split_once('/').ok_or_else(bad)?;
    let provider = Provider::from_name(p.trim()).ok_or_else(bad)?;
    let model = m.trim();
    if model.is_empty() {
        return Err(bad());
    }
    Ok((provider, model.to_string()))
}

/// What can go wrong with a live summarizer before or around the calls. Failed calls are not
/// errors here: they are failed summarizer calls, recorded per replay.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("summarizer `live:{spec}`: expected live:PROVIDER/MODEL with PROVIDER gemini, openai or anthropic, e.g. live:gemini/gemini-2.5-flash")]
    Spec { spec: String },
    #[error("summarizer `live:{target}`: no API key: set {}", vars.join(" or "))]
    NoKey {
        target: String,
        vars: &'static [&'static str],
    },
    #[error("summarizer `live:{target}`: base URL `{url}` is not an http:// or https:// URL")]
    BaseUrl { target: String, url: String },
    #[error("summarizer `live:{target}`: the HTTP client could not be set up: {detail}")]
    Client { target: String, detail: String },
    /// The sweep would make more calls than allowed without `--yes`.
    #[error("{calls} live summarizer calls (estimated {cost}) exceed --live-max-calls {max}: none made; rerun with --yes to make them, or raise --live-max-calls")]
    TooManyCalls { calls: u64, max: u64, cost: String },
}

impl Classify for LiveError {
    fn exit_kind(&self) -> ExitKind {
        match self {
            LiveError::Spec { .. } | LiveError::BaseUrl { .. } => ExitKind::BadInput,
            LiveError::NoKey { .. } | LiveError::Client { .. } => ExitKind::Environment,
            LiveError::TooManyCalls { .. } => ExitKind::Refused,
        }
    }
}

/// How live summarizers are called (the `--live-*` flags and `--summarizer-timeout`).
#[derive(Debug, Clone)]
pub struct LiveOptions {
    /// `--live-base-url`; else the provider's environment variable; else its own API.
    pub base_url: Option<String>,
    /// Summary cache folder; `None`: no disk cache (calls still shared within the run).
    pub cache_dir: Option<PathBuf>,
    /// Calls in flight at once (at least 1).
    pub concurrency: usize,
    /// Time limit of one request.
    pub timeout: Duration,
}

/// One answered call, as cached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// The summary text (text parts, thoughts left out); empty: the model returned nothing.
    pub text: String,
    /// Prompt tokens the provider reported.
    pub input_tokens: u64,
    /// Output tokens the provider reported (thinking included: it is billed as output).
    pub output_tokens: u64,
    /// Seconds from sending the answering request to its whole body read.
    pub latency_s: f64,
}

#[derive(Serialize, Deserialize)]
struct CacheFile {
    format: String,
    provider: String,
    model: String,
    #[serde(flatten)]
    answer: Answer,
}

/// What one call of a replay really used (zero for a failed call).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CallMeasure {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub seconds: f64,
}

/// A span the dry replay asked for.
#[derive(Debug, Clone, Copy)]
struct Planned {
    input_tokens: u64,
    output_tokens: u64,
    cached: bool,
}

/// Calls a sweep will make, from the dry replay.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Estimate {
    /// Distinct spans not in the cache: the calls to make.
    pub calls: u64,
    /// Distinct spans whose summary is already cached (no call).
    pub cached: u64,
    /// Modelled prompt and summary tokens of the calls to make.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Their cost at the table's rates; `None` when the model has no price.
    pub usd: Option<f64>,
}

/// A counting semaphore: at most `n` calls in flight.
struct Slots {
    free: Mutex<usize>,
    freed: Condvar,
}

struct Slot<'a>(&'a Slots);

impl Slots {
    fn acquire(&self) -> Slot<'_> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 {
            free = self.freed.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= 1;
        Slot(self)
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.0.freed.notify_one();
    }
}

/// A key from the environment. Never printed: `Debug` shows `***`.
struct Secret(String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

/// Why one call failed: a failed summarizer call, whose message is one line without the key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CallError {
    #[error("timed out after {0} s")]
    Timeout(f64),
    #[error("request failed: {0}")]
    Transport(String),
    #[error("reading the answer failed: {0}")]
    Read(String),
    #[error("HTTP {status}{}: {message}", attempts_text(*.attempts))]
    Status {
        status: u16,
        attempts: u32,
        message: String,
    },
    #[error("the answer is not JSON: `{0}`")]
    NotJson(String),
    #[error("the answer reports no token usage (input and output tokens)")]
    NoUsage,
}

fn attempts_text(attempts: u32) -> String {
    if attempts > 1 {
        format!(" after {attempts} attempts")
    } else {
        String::new()
    }
}

type CallResult = Result<Answer, CallError>;

/// One provider/model: the HTTP client, the summary cache, the calls of this run.
pub struct Client {
    pub provider: Provider,
    pub model: String,
    base_url: String,
    key: Option<Secret>,
    agent: ureq::Agent,
    timeout: Duration,
    cache_dir: Option<PathBuf>,
    slots: Slots,
    /// Every prompt answered (or failed) in this run, by cache key: each is asked once.
    memo: Mutex<HashMap<u128, Arc<OnceLock<CallResult>>>>,
    dry: AtomicBool,
    /// Spans of the dry replay, ordered: the estimate sums them in the same order every run.
    planned: Mutex<BTreeMap<u128, Planned>>,
    requests: AtomicU64,
    from_cache: AtomicU64,
    cache_errors: Mutex<Vec<String>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

/// A URL with any `user:password@` replaced by `***@`.
fn without_userinfo(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    match rest.split_once('@') {
        Some((userinfo, host)) if !userinfo.contains('/') && !scheme.is_empty() => {
            format!("{scheme}://***@{host}")
        }
        _ => url.to_string(),
    }
}

/// The first non-empty value among these environment variables.
fn env_first(vars: &[&str]) -> Option<String> {
    vars.iter()
        .filter_map(|v| std::env::var(v).ok())
        .map(|v| v.trim().to_string())
        .find(|v| !v.is_empty())
}

impl Client {
    /// Read the key and base URL and set up the HTTP client. A missing key is an error,
    /// except for `openai` with a base URL given (local servers often need none).
    pub fn new(provider: Provider, model: &str, opts: &LiveOptions) -> Result<Client, LiveError> {
        let target = format!("{}/{model}", provider.name());
        let key = env_first(provider.key_vars()).map(Secret);
        let from_env = provider.base_url_var().and_then(|v| env_first(&[v]));
        let base_given = opts.base_url.clone().or(from_env);
        if key.is_none() && !(provider == Provider::OpenAi && base_given.is_some()) {
            return Err(LiveError::NoKey {
                target,
                vars: provider.key_vars(),
            });
        }
        let base_url = base_given
            .unwrap_or_else(|| provider.default_base_url().to_string())
            .trim_end_matches('/')
            .to_string();
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(LiveError::BaseUrl {
                target,
                url: crate::transcript::util::one_line(&without_userinfo(&base_url), 200),
            });
        }
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(opts.timeout))
            .http_status_as_error(false)
            // An API answers where it is asked; following a redirect would carry the key
            // header to another place.
            .max_redirects(0)
            .user_agent(concat!("compaction-sim/", env!("CARGO_PKG_VERSION")))
            .build();
        Ok(Client {
            provider,
            model: model.to_string(),
            base_url,
            key,
            agent: config.into(),
            timeout: opts.timeout,
            cache_dir: opts.cache_dir.clone(),
            slots: Slots {
                free: Mutex::new(opts.concurrency.max(1)),
                freed: Condvar::new(),
            },
            memo: Mutex::new(HashMap::new()),
            dry: AtomicBool::new(false),
            planned: Mutex::new(BTreeMap::new()),
            requests: AtomicU64::new(0),
            from_cache: AtomicU64::new(0),
            cache_errors: Mutex::new(Vec::new()),
        })
    }

    /// `PROVIDER/MODEL`.
    pub fn target(&self) -> String {
        format!("{}/{}", self.provider.name(), self.model)
    }

    /// The text with the key (and any `user:password@` of the base URL) replaced by `***`:
    /// every message built from a response, an error or a URL goes through here.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        if let Some(k) = &self.key {
            if !k.0.is_empty() {
                out = out.replace(&k.0, "***");
            }
        }
        if let Some(rest) = self.base_url.split_once("://").map(|(_, r)| r) {
            if let Some((userinfo, _)) = rest.split_once('@').filter(|(u, _)| !u.contains('/')) {
                out = out.replace(userinfo, "***");
            }
        }
        out
    }

    /// A call error whose texts went through [`Client::redact`].
    fn redacted(&self, e: CallError) -> CallError {
        match e {
            CallError::Transport(t) => CallError::Transport(self.redact(&t)),
            CallError::Read(t) => CallError::Read(self.redact(&t)),
            CallError::NotJson(t) => CallError::NotJson(self.redact(&t)),
            CallError::Status {
                status,
                attempts,
                message,
            } => CallError::Status {
                status,
                attempts,
                message: self.redact(&message),
            },
            other => other,
        }
    }

    /// The content address of a prompt.
    pub fn key_of(&self, prompt: &str) -> u128 {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        h.update(self.provider.name().as_bytes());
        h.update(&[0]);
        h.update(self.model.as_bytes());
        h.update(&[0]);
        h.update(prompt.as_bytes());
        h.digest128()
    }

    fn cache_path(&self, key: u128) -> Option<PathBuf> {
        self.cache_dir
            .as_ref()
            .map(|d| d.join(format!("{key:032x}.json")))
    }

    fn read_cache(&self, key: u128) -> Option<Answer> {
        let text = std::fs::read_to_string(self.cache_path(key)?).ok()?;
        let f: CacheFile = serde_json::from_str(&text).ok()?;
        (f.format == CACHE_FORMAT && f.provider == self.provider.name() && f.model == self.model)
            .then_some(f.answer)
    }

    fn write_cache(&self, key: u128, answer: &Answer) {
        let Some(path) = self.cache_path(key) else {
            return;
        };
        let f = CacheFile {
            format: CACHE_FORMAT.to_string(),
            provider: self.provider.name().to_string(),
            model: self.model.clone(),
            answer: answer.clone(),
        };
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .map_err(|e| format!("{}: {e}", path.display()))
            .and_then(|_| {
                let mut bytes = serde_json::to_vec_pretty(&f).map_err(|e| e.to_string())?;
                bytes.push(b'\n');
                crate::atomic::write_atomic(&path, &bytes).map_err(|e| e.to_string())
            });
        if let Err(e) = written {
            if let Ok(mut v) = self.cache_errors.lock() {
                v.push(e);
            }
        }
    }

    /// The summary at `key` when it is known without a call (this run or the disk cache).
    fn known(&self, key: u128) -> Option<Answer> {
        let done = self
            .memo
            .lock()
            .ok()
            .and_then(|m| m.get(&key).and_then(|c| c.get().cloned()));
        match done {
            Some(Ok(a)) => Some(a),
            _ => self.read_cache(key),
        }
    }

    /// True when the prompt's summary is known without a call (this run or the disk cache).
    pub fn is_cached(&self, prompt: &str) -> bool {
        self.known(self.key_of(prompt)).is_some()
    }

    /// The summary of `prompt`: from this run, else the disk cache, else one call (retried
    /// on 429 and 5xx). Concurrent askers of the same prompt wait for the one call.
    pub fn summarize(&self, prompt: &str) -> CallResult {
        let key = self.key_of(prompt);
        let cell = {
            let mut m = self.memo.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(m.entry(key).or_default())
        };
        cell.get_or_init(|| {
            if let Some(a) = self.read_cache(key) {
                self.from_cache.fetch_add(1, Ordering::Relaxed);
                return Ok(a);
            }
            let r = self.call(prompt).map_err(|e| self.redacted(e));
            if let Ok(a) = &r {
                self.write_cache(key, a);
            }
            r
        })
        .clone()
    }

    /// HTTP requests sent so far (retries included).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Summaries read from the disk cache so far.
    pub fn cache_hits(&self) -> u64 {
        self.from_cache.load(Ordering::Relaxed)
    }

    /// Summaries that could not be written to the cache (one line each).
    pub fn cache_errors(&self) -> Vec<String> {
        self.cache_errors
            .lock()
            .map(|v| v.clone())
            .unwrap_or_default()
    }

    /// Dry mode: calls are answered by the modelled summarizer and recorded as planned spans
    /// ([`Client::estimate`]). Switching mode forgets the spans planned so far.
    pub fn set_dry(&self, dry: bool) {
        self.dry.store(dry, Ordering::SeqCst);
        if let Ok(mut p) = self.planned.lock() {
            p.clear();
        }
    }

    pub fn is_dry(&self) -> bool {
        self.dry.load(Ordering::SeqCst)
    }

    fn plan(&self, key: u128, item: Planned) {
        if let Ok(mut p) = self.planned.lock() {
            p.entry(key).or_insert(item);
        }
    }

    /// The calls the dry replay planned, each priced by `price_call(input, output)` (USD,
    /// `None` when it has no price); `price_call` is `None` when the model has no price.
    pub fn estimate(&self, price_call: Option<&dyn Fn(u64, u64) -> Option<f64>>) -> Estimate {
        let planned: Vec<Planned> = self
            .planned
            .lock()
            .map(|p| p.values().copied().collect())
            .unwrap_or_default();
        let mut e = Estimate {
            usd: price_call.map(|_| 0.0),
            ..Estimate::default()
        };
        for p in planned {
            if p.cached {
                e.cached += 1;
                continue;
            }
            e.calls += 1;
            e.input_tokens += p.input_tokens;
            e.output_tokens += p.output_tokens;
            e.usd = match (e.usd, price_call) {
                (Some(acc), Some(pr)) => pr(p.input_tokens, p.output_tokens).map(|u| acc + u),
                _ => None,
            };
        }
        e
    }

    /// URL, headers and body of one request.
    fn request(&self, prompt: &str) -> (String, Vec<(&'static str, String)>, Value) {
        let mut headers: Vec<(&'static str, String)> = Vec::new();
        let key = self.key.as_ref().map(|k| k.0.clone());
        match self.provider {
            Provider::Gemini => {
                if let Some(k) = key {
                    headers.push(("x-goog-api-key", k));
                }
                (
                    format!(
                        "{}/v1beta/models/{}:generateContent",
                        self.base_url, self.model
                    ),
                    headers,
                    json!({"contents": [{"role": "user", "parts": [{"text": prompt}]}]}),
                )
            }
            Provider::OpenAi => {
                if let Some(k) = key {
                    headers.push(("authorization", format!("Bearer {k}")));
                }
                (
                    format!("{}/chat/completions", self.base_url),
                    headers,
                    json!({"model": self.model, "messages": [{"role": "user", "content": prompt}]}),
                )
            }
            Provider::Anthropic => {
                if let Some(k) = key {
                    headers.push(("x-api-key", k));
                }
                headers.push(("anthropic-version", ANTHROPIC_VERSION.to_string()));
                (
                    format!("{}/v1/messages", self.base_url),
                    headers,
                    json!({"model": self.model, "max_tokens": ANTHROPIC_MAX_TOKENS,
                        "messages": [{"role": "user", "content": prompt}]}),
                )
            }
        }
    }

    /// One call, with retries. Errors are one line (not yet redacted).
    fn call(&self, prompt: &str) -> CallResult {
        let (url, headers, body) = self.request(prompt);
        let body = body.to_string();
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let (status, retry_after, text, secs) = {
                let _slot = self.slots.acquire();
                self.requests.fetch_add(1, Ordering::Relaxed);
                let mut req = self
                    .agent
                    .post(&url)
                    .header("content-type", "application/json");
                for (k, v) in &headers {
                    req = req.header(*k, v);
                }
                let t0 = Instant::now();
                let mut resp = match req.send(body.as_bytes()) {
                    Ok(r) => r,
                    Err(ureq::Error::Timeout(_)) => {
                        return Err(CallError::Timeout(self.timeout.as_secs_f64()))
                    }
                    Err(e) => return Err(CallError::Transport(e.to_string())),
                };
                let status = resp.status().as_u16();
                let retry_after = resp
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<f64>().ok())
                    .filter(|s| s.is_finite() && *s >= 0.0);
                let text = match resp
                    .body_mut()
                    .with_config()
                    .limit(MAX_BODY_BYTES)
                    .read_to_string()
                {
                    Ok(t) => t,
                    Err(ureq::Error::Timeout(_)) => {
                        return Err(CallError::Timeout(self.timeout.as_secs_f64()))
                    }
                    Err(e) => return Err(CallError::Read(e.to_string())),
                };
                (status, retry_after, text, t0.elapsed().as_secs_f64())
            };
            match status {
                200..=299 => return self.parse(&text, secs),
                429 | 500..=599 if attempt <= RETRIES => {
                    std::thread::sleep(backoff(attempt, retry_after));
                }
                _ => {
                    return Err(CallError::Status {
                        status,
                        attempts: attempt,
                        message: error_message(&text),
                    })
                }
            }
        }
    }

    /// Text and usage of a 2xx answer.
    fn parse(&self, body: &str, secs: f64) -> CallResult {
        let v: Value = serde_json::from_str(body)
            .map_err(|_| CallError::NotJson(crate::transcript::util::one_line(body, 120)))?;
        let num = |ptr: &str| v.pointer(ptr).and_then(Value::as_u64);
        let texts = |parts: Option<&Value>, keep: &dyn Fn(&Value) -> bool| -> String {
            parts
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter(|p| keep(p))
                        .filter_map(|p| p.get("text").and_then(Value::as_str))
                        .collect()
                })
                .unwrap_or_default()
        };
        let (text, input, output) = match self.provider {
            Provider::Gemini => (
                texts(v.pointer("/candidates/0/content/parts"), &|p| {
                    p.get("thought").and_then(Value::as_bool) != Some(true)
                }),
                num("/usageMetadata/promptTokenCount"),
                num("/usageMetadata/candidatesTokenCount")
                    .map(|c| c + num("/usageMetadata/thoughtsTokenCount").unwrap_or(0))
                    .or_else(|| num("/usageMetadata/promptTokenCount").map(|_| 0)),
            ),
            Provider::OpenAi => (
                v.pointer("/choices/0/message/content")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                num("/usage/prompt_tokens"),
                num("/usage/completion_tokens"),
            ),
            Provider::Anthropic => (
                texts(v.get("content"), &|p| {
                    p.get("type").and_then(Value::as_str) == Some("text")
                }),
                num("/usage/input_tokens").map(|i| {
                    i + num("/usage/cache_creation_input_tokens").unwrap_or(0)
                        + num("/usage/cache_read_input_tokens").unwrap_or(0)
                }),
                num("/usage/output_tokens"),
            ),
        };
        match (input, output) {
            (Some(input_tokens), Some(output_tokens)) => Ok(Answer {
                text,
                input_tokens,
                output_tokens,
                latency_s: secs,
            }),
            _ => Err(CallError::NoUsage),
        }
    }
}

/// Wait before retry `attempt` (1-based): `Retry-After` when given, else 1 s doubling.
fn backoff(attempt: u32, retry_after: Option<f64>) -> Duration {
    let d = match retry_after {
        Some(s) => Duration::try_from_secs_f64(s).unwrap_or(MAX_BACKOFF),
        None => BACKOFF_BASE.saturating_mul(1 << (attempt - 1).min(16)),
    };
    d.min(MAX_BACKOFF)
}

/// The message of a provider's error answer (`{"error": {"message": ...}}` in all three
/// formats), else the start of the body.
fn error_message(body: &str) -> String {
    let v: Option<Value> = serde_json::from_str(body).ok();
    let msg = v.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error"))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    crate::transcript::util::one_line(msg.as_deref().unwrap_or(body).trim(), 200)
}

type Registry = Mutex<HashMap<(Provider, String), Arc<Client>>>;

fn clients() -> &'static Registry {
    static CLIENTS: OnceLock<Registry> = OnceLock::new();
    CLIENTS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Set up (once) the client of `provider/model` and register it for
/// [`super::build`].
pub fn start(
    provider: Provider,
    model: &str,
    opts: &LiveOptions,
) -> Result<Arc<Client>, LiveError> {
    if let Some(c) = registered(provider, model) {
        return Ok(c);
    }
    let c = Arc::new(Client::new(provider, model, opts)?);
    if let Ok(mut m) = clients().lock() {
        m.insert((provider, model.to_string()), Arc::clone(&c));
    }
    Ok(c)
}

/// The client started for `provider/model`, if any.
pub fn registered(provider: Provider, model: &str) -> Option<Arc<Client>> {
    clients()
        .lock()
        .ok()
        .and_then(|m| m.get(&(provider, model.to_string())).cloned())
}

/// Every client started, in (provider, model) order.
pub fn all_started() -> Vec<Arc<Client>> {
    let mut v: Vec<Arc<Client>> = clients()
        .lock()
        .map(|m| m.values().cloned().collect())
        .unwrap_or_default();
    v.sort_by(|a, b| (a.provider, &a.model).cmp(&(b.provider, &b.model)));
    v
}

/// The default summary cache: `live/` in the token-count cache folder.
pub fn default_cache_dir(token_cache: Option<&Path>) -> Option<PathBuf> {
    token_cache.map(|d| d.join("live"))
}

/// A `live:` summarizer for one replay.
pub struct LiveSummarizer<'a> {
    pub client: Arc<Client>,
    pub session: &'a Session,
    pub lines: &'a EventLines,
    pub length: LengthModel,
    pub count: &'a (dyn Fn(&str) -> u64 + Sync),
    measured: Mutex<BTreeMap<u32, CallMeasure>>,
    errors: Mutex<Vec<String>>,
}

impl<'a> LiveSummarizer<'a> {
    pub fn new(
        client: Arc<Client>,
        session: &'a Session,
        lines: &'a EventLines,
        length: LengthModel,
        count: &'a (dyn Fn(&str) -> u64 + Sync),
    ) -> Self {
        LiveSummarizer {
            client,
            session,
            lines,
            length,
            count,
            measured: Mutex::new(BTreeMap::new()),
            errors: Mutex::new(Vec::new()),
        }
    }

    /// One line per failed call, in call order.
    pub fn errors(&self) -> Vec<String> {
        self.errors.lock().map(|e| e.clone()).unwrap_or_default()
    }

    /// The latency call `call` of this pass used.
    pub fn measured_seconds(&self, call: u32) -> Option<f64> {
        self.measured.lock().ok()?.get(&call).map(|m| m.seconds)
    }

    /// What each call of the latest replay pass used, by call number.
    pub fn measured(&self) -> BTreeMap<u32, CallMeasure> {
        self.measured.lock().map(|m| m.clone()).unwrap_or_default()
    }

    /// ADK's summarizer prompt for a request.
    pub fn prompt(&self, req: &SummarizeRequest<'_>) -> String {
        let seed = req.seed.and_then(|s| s.text).map(|t| t.to_string());
        // the events' lines, made for this call (not kept per session: see `EventLines`)
        let lines: Vec<String> = req
            .event_indices()
            .filter_map(|i| self.session.events.get(i as usize))
            .map(crate::tokens::adk::summarizer_text)
            .collect();
        crate::tokens::adk::summarizer_prompt(seed.as_deref(), lines.iter().map(String::as_str))
    }

    fn measure(&self, call: u32, m: CallMeasure) {
        if let Ok(mut map) = self.measured.lock() {
            map.insert(call, m);
        }
    }

    /// The dry replay. A span whose prompt is known (no seed, or a seed with its text) and
    /// whose summary is cached gets that summary, recorded as cached: a fully cached rerun
    /// plans no call. Any other span gets the modelled summary and is recorded as a call,
    /// keyed by its prompt, or (seeded by a modelled summary, so its prompt is unknown) by the
    /// session, the seed's place and size, and its events.
    fn plan(&self, req: &SummarizeRequest<'_>) -> Outcome {
        let prompt_known = req.seed.is_none_or(|s| s.text.is_some());
        let key = if prompt_known {
            let p = self.prompt(req);
            let key = self.client.key_of(&p);
            if let Some(a) = self.client.known(key) {
                let (input_tokens, output_tokens) = (a.input_tokens, a.output_tokens);
                self.client.plan(
                    key,
                    Planned {
                        input_tokens,
                        output_tokens,
                        cached: true,
                    },
                );
                return self.outcome(req.call, a);
            }
            key
        } else {
            let mut h = xxhash_rust::xxh3::Xxh3::new();
            h.update(b"seeded\0");
            h.update(self.session.source.as_bytes());
            h.update(&[0]);
            h.update(self.session.id.as_bytes());
            h.update(&[0]);
            if let Some(seed) = req.seed {
                h.update(&seed.start_timestamp.to_le_bytes());
                h.update(&seed.chars.to_le_bytes());
            }
            for i in req.event_indices() {
                h.update(&i.to_le_bytes());
            }
            h.digest128()
        };
        let modelled = Modelled {
            lines: self.lines,
            length: self.length,
            count: self.count,
        };
        let outcome = modelled.summarize(req);
        let (input_tokens, output_tokens) = match &outcome {
            Outcome::Summary(s) => (s.input_tokens, s.tokens),
            _ => (0, 0),
        };
        self.client.plan(
            key,
            Planned {
                input_tokens,
                output_tokens,
                cached: false,
            },
        );
        outcome
    }

    /// The outcome of an answered call (its measure recorded).
    fn outcome(&self, call: u32, a: Answer) -> Outcome {
        self.measure(
            call,
            CallMeasure {
                input_tokens: a.input_tokens,
                output_tokens: a.output_tokens,
                seconds: a.latency_s,
            },
        );
        if a.text.is_empty() {
            // ADK: no content, no compaction (the call was still paid for).
            return Outcome::Empty {
                input_tokens: a.input_tokens,
            };
        }
        Outcome::Summary(Summary {
            chars: a.text.chars().count() as u64,
            json_chars: summary_json_chars(crate::tokens::adk::json_str_len_raw(&a.text)),
            tokens: (self.count)(&a.text),
            input_tokens: a.input_tokens,
            text: Some(SummaryText::flat(a.text)),
        })
    }
}

impl Summarizer for LiveSummarizer<'_> {
    fn summarize(&self, req: &SummarizeRequest<'_>) -> Outcome {
        if self.client.is_dry() {
            return self.plan(req);
        }
        let prompt = self.prompt(req);
        match self.client.summarize(&prompt) {
            Ok(a) => self.outcome(req.call, a),
            Err(e) => {
                self.measure(req.call, CallMeasure::default());
                if let Ok(mut errs) = self.errors.lock() {
                    errs.push(format!(
                        "call {}: summarizer `live:{}` {e}",
                        req.call,
                        self.client.target()
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

    #[test]
    fn targets_parse_with_slashes_in_the_model() {
        assert_eq!(
            parse_target("gemini/gemini-2.5-flash").unwrap(),
            (Provider::Gemini, "gemini-2.5-flash".to_string())
        );
        assert_eq!(
            parse_target("openai/meta-llama/Llama-3.1-8B").unwrap(),
            (Provider::OpenAi, "meta-llama/Llama-3.1-8B".to_string())
        );
        for bad in ["gemini", "gemini/", "vertex/x", "/m"] {
            let e = parse_target(bad).unwrap_err();
            assert_eq!(e.exit_kind(), ExitKind::BadInput);
            assert!(e.to_string().contains(&format!("`live:{bad}`")), "{e}");
        }
    }

    #[test]
    fn backoff_doubles_and_honours_retry_after_within_bounds() {
        assert_eq!(backoff(1, None), Duration::from_secs(1));
        assert_eq!(backoff(3, None), Duration::from_secs(4));
        assert_eq!(backoff(2, Some(0.0)), Duration::ZERO);
        assert_eq!(backoff(1, Some(7.5)), Duration::from_millis(7500));
        assert_eq!(backoff(1, Some(1e9)), MAX_BACKOFF);
        assert_eq!(backoff(40, None), MAX_BACKOFF);
    }

    #[test]
    fn provider_errors_are_one_short_line() {
        assert_eq!(
            error_message(r#"{"error": {"message": "quota\nexceeded", "code": 429}}"#),
            "quota\\nexceeded"
        );
        assert_eq!(error_message(r#"{"error": "bad model"}"#), "bad model");
        assert_eq!(error_message("<html>oops</html>"), "<html>oops</html>");
    }

    fn client(provider: Provider) -> Client {
        // A base URL is given, so openai needs no key; the others get a fake one through
        // the struct (the environment is not touched by unit tests).
        let mut c = Client::new(
            Provider::OpenAi,
            "m",
            &LiveOptions {
                base_url: Some("http://user:pw@127.0.0.1:9/v1".into()),
                cache_dir: None,
                concurrency: 1,
                timeout: Duration::from_secs(1),
            },
        )
        .unwrap();
        c.provider = provider;
        c.key = Some(Secret("sk-secret-123".into()));
        c
    }

    fn c_redacts_status() -> CallError {
        client(Provider::OpenAi).redacted(CallError::Status {
            status: 401,
            attempts: 1,
            message: "bad key sk-secret-123".into(),
        })
    }

    #[test]
    fn a_base_url_that_is_not_http_is_refused_without_its_credentials() {
        let e = Client::new(
            Provider::OpenAi,
            "m",
            &LiveOptions {
                base_url: Some("ftp://user:pw@host/v1".into()),
                cache_dir: None,
                concurrency: 1,
                timeout: Duration::from_secs(1),
            },
        )
        .unwrap_err();
        assert_eq!(e.exit_kind(), ExitKind::BadInput);
        assert_eq!(
            e.to_string(),
            "summarizer `live:openai/m`: base URL `ftp://***@host/v1` is not an http:// or https:// URL"
        );
    }

    #[test]
    fn keys_and_url_credentials_are_redacted_and_never_debug_printed() {
        let c = client(Provider::OpenAi);
        assert_eq!(
            c.redact("bad key sk-secret-123 for http://user:pw@127.0.0.1:9/v1"),
            "bad key *** for http://***@127.0.0.1:9/v1"
        );
        let dbg = format!("{c:?}");
        assert!(!dbg.contains("sk-secret-123"), "{dbg}");
    }

    #[test]
    fn answers_of_each_provider_are_read_with_their_usage() {
        let g = client(Provider::Gemini);
        let a = g
            .parse(
                r#"{"candidates": [{"content": {"role": "model", "parts": [
                {"text": "plan", "thought": true}, {"text": "Sum"}, {"text": "mary"}]}}],
                "usageMetadata": {"promptTokenCount": 900, "candidatesTokenCount": 40,
                "thoughtsTokenCount": 60}}"#,
                0.5,
            )
            .unwrap();
        assert_eq!(
            (a.text.as_str(), a.input_tokens, a.output_tokens),
            ("Summary", 900, 100)
        );
        // No candidates (a blocked prompt): empty text, usage still read.
        let a = g
            .parse(r#"{"usageMetadata": {"promptTokenCount": 12}}"#, 0.1)
            .unwrap();
        assert_eq!(
            (a.text.as_str(), a.input_tokens, a.output_tokens),
            ("", 12, 0)
        );
        let o = client(Provider::OpenAi);
        let a = o
            .parse(
                r#"{"choices": [{"message": {"role": "assistant", "content": "S"}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 3}}"#,
                0.2,
            )
            .unwrap();
        assert_eq!(
            (a.text.as_str(), a.input_tokens, a.output_tokens),
            ("S", 10, 3)
        );
        let an = client(Provider::Anthropic);
        let a = an
            .parse(
                r#"{"content": [{"type": "thinking", "thinking": "x"}, {"type": "text", "text": "T"}],
                "usage": {"input_tokens": 7, "output_tokens": 2}}"#,
                0.3,
            )
            .unwrap();
        assert_eq!(
            (a.text.as_str(), a.input_tokens, a.output_tokens),
            ("T", 7, 2)
        );
        assert_eq!(a.latency_s, 0.3);
        assert_eq!(o.parse(r#"{"choices": []}"#, 0.1), Err(CallError::NoUsage));
        let e = o.parse("not json", 0.1).unwrap_err().to_string();
        assert_eq!(e, "the answer is not JSON: `not json`");
        let e = CallError::Status {
            status: 503,
            attempts: 4,
            message: "overloaded".into(),
        };
        assert_eq!(e.to_string(), "HTTP 503 after 4 attempts: overloaded");
        let e = c_redacts_status();
        assert_eq!(e.to_string(), "HTTP 401: bad key ***");
    }

    #[test]
    fn a_missing_key_names_the_variables() {
        // A provider whose variables are surely unset in a test: the unit test cannot unset
        // them safely, so it only runs when they are absent.
        if Provider::Anthropic
            .key_vars()
            .iter()
            .any(|v| std::env::var_os(v).is_some())
            || std::env::var_os("ANTHROPIC_BASE_URL").is_some()
        {
            return;
        }
        let e = Client::new(
            Provider::Anthropic,
            "claude-haiku-4-5",
            &LiveOptions {
                base_url: None,
                cache_dir: None,
                concurrency: 1,
                timeout: Duration::from_secs(1),
            },
        )
        .unwrap_err();
        assert_eq!(e.exit_kind(), ExitKind::Environment);
        assert_eq!(
            e.to_string(),
            "summarizer `live:anthropic/claude-haiku-4-5`: no API key: set ANTHROPIC_API_KEY"
        );
    }

    #[test]
    fn the_cache_round_trips_and_is_keyed_by_provider_model_and_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = client(Provider::OpenAi);
        c.cache_dir = Some(dir.path().join("live"));
        let a = Answer {
            text: "S".into(),
            input_tokens: 5,
            output_tokens: 1,
            latency_s: 0.25,
        };
        let k = c.key_of("prompt");
        assert_ne!(k, c.key_of("prompt "));
        c.write_cache(k, &a);
        assert_eq!(c.read_cache(k), Some(a.clone()));
        assert!(c.is_cached("prompt"));
        assert!(!c.is_cached("other"));
        // The same prompt under another model is another address.
        let mut other = client(Provider::OpenAi);
        other.model = "m2".into();
        other.cache_dir = c.cache_dir.clone();
        assert_ne!(other.key_of("prompt"), k);
        // Served from the cache: no request is sent (the base URL is unreachable anyway).
        assert_eq!(c.summarize("prompt"), Ok(a));
        assert_eq!((c.requests(), c.cache_hits()), (0, 1));
        let file = std::fs::read_to_string(c.cache_path(k).unwrap()).unwrap();
        assert!(!file.contains("sk-secret-123"), "{file}");
    }
}
