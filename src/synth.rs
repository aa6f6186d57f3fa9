//! Deterministic generator of realistic sample sessions, written as ADK session JSON exports
//! (snake_case, the shape of `shared/oracle/goldens/t00.session.json`).
//!
//! Why a generator rather than real logs: the default run needs sessions with every shape the
//! platform's users run (support and coding agents, think time, small and huge tool outputs,
//! attached files, confirmations approved and refused, short and long sessions) and no
//! private data. Why our own PRNG (splitmix64): the committed files must be byte-identical
//! whatever version of `rand` is in the lock file.
//!
//! Session `i` depends only on `(seed, i)`, so `--sessions 10` is a prefix of `--sessions 40`.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::{json, Map, Value};

/// splitmix64: tiny, fast and fully specified, so its stream never changes.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`; returns 0 for `n == 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        self.next_u64() % n
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.below(hi - lo + 1)
    }

    /// Uniform in `[0, 1)` with 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        let i = self.below(items.len() as u64) as usize;
        &items[i.min(items.len().saturating_sub(1))]
    }

    /// Log-uniform between `lo` and `hi` (think times, tool latencies): many short, few long.
    pub fn log_uniform(&mut self, lo: f64, hi: f64) -> f64 {
        (lo.ln() + self.unit() * (hi.ln() - lo.ln())).exp()
    }

    fn hex(&mut self, n: usize) -> String {
        let mut s = String::with_capacity(n);
        while s.len() < n {
            s.push_str(&format!("{:016x}", self.next_u64()));
        }
        s.truncate(n);
        s
    }

    fn uuid(&mut self) -> String {
        let h = self.hex(32);
        format!(
            "{}-{}-4{}-a{}-{}",
            &h[0..8],
            &h[8..12],
            &h[13..16],
            &h[17..20],
            &h[20..32]
        )
    }
}

/// What kind of agent a session talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Support,
    Coding,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Support => "support",
            Kind::Coding => "coding",
        }
    }
}

/// How many user turns a session has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    Short,
    Medium,
    Long,
}

/// One generated session: its file name (safe: built from the index only) and JSON text.
#[derive(Debug, Clone)]
pub struct SynthFile {
    pub file_name: String,
    pub kind: Kind,
    pub invocations: usize,
    pub json: String,
}

/// Largest file `synth` writes: the largest file compaction-sim reads
/// (`transcript::detect::MAX_FILE_BYTES`); a larger one could not be replayed.
pub const MAX_SYNTH_FILE_BYTES: u64 = crate::transcript::detect::MAX_FILE_BYTES;

/// Largest output of one `synth` run: 4 GiB.
pub const MAX_SYNTH_BYTES: u64 = 4 << 30;

/// An output `synth` refuses before writing anything: the size it would write and the limit.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SizeError {
    #[error("{file} would be about {} bytes, over the limit of {MAX_SYNTH_FILE_BYTES} bytes per file (the largest file compaction-sim reads); nothing was written", fmt_bytes(*would))]
    File { file: String, would: f64 },
    #[error("this output would be about {} bytes in all, over the limit of {MAX_SYNTH_BYTES} bytes per run; nothing was written", fmt_bytes(*would))]
    Total { would: f64 },
}

fn fmt_bytes(b: f64) -> String {
    if b < 1e15 {
        format!("{b:.0}")
    } else {
        format!("{b:.2e}")
    }
}

/// What an output would write, estimated before writing: its largest file (name and bytes)
/// and the bytes of all its files.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    pub largest: String,
    pub largest_bytes: f64,
    pub total_bytes: f64,
}

impl Estimate {
    fn of(files: impl IntoIterator<Item = (String, f64)>) -> Estimate {
        let mut e = Estimate {
            largest: String::new(),
            largest_bytes: 0.0,
            total_bytes: 0.0,
        };
        for (name, bytes) in files {
            if bytes > e.largest_bytes || e.largest.is_empty() {
                e.largest = name;
                e.largest_bytes = bytes;
            }
            e.total_bytes += bytes;
        }
        e
    }

    /// Refused when a file is over [`MAX_SYNTH_FILE_BYTES`] or all are over
    /// [`MAX_SYNTH_BYTES`].
    pub fn check(&self) -> Result<(), SizeError> {
        if self.largest_bytes.is_nan() || self.largest_bytes > MAX_SYNTH_FILE_BYTES as f64 {
            return Err(SizeError::File {
                file: self.largest.clone(),
                would: self.largest_bytes,
            });
        }
        if self.total_bytes.is_nan() || self.total_bytes > MAX_SYNTH_BYTES as f64 {
            return Err(SizeError::Total {
                would: self.total_bytes,
            });
        }
        Ok(())
    }
}

/// Sessions of the standard set measured to estimate a larger one (the set repeats its
/// lengths and kinds every 8).
const MEASURED_SESSIONS: usize = 8;

/// The bytes of `sessions` standard sessions: the first [`MEASURED_SESSIONS`] generated and
/// measured (exact up to 8), the rest at their mean.
pub fn estimate_sessions(sessions: usize, seed: u64) -> Estimate {
    let measured: Vec<SynthFile> = (0..sessions.min(MEASURED_SESSIONS))
        .map(|i| generate_one(seed, i))
        .collect();
    let mut e = Estimate::of(
        measured
            .iter()
            .map(|f| (f.file_name.clone(), f.json.len() as f64)),
    );
    if sessions > measured.len() {
        e.total_bytes *= sessions as f64 / measured.len() as f64;
    }
    e
}

/// Invocations of a long session generated to measure its bytes per invocation.
const MEASURED_INVOCATIONS: usize = 64;

/// The bytes of the long session `shape`, from the bytes of its first
/// [`MEASURED_INVOCATIONS`] invocations (the same generator: every invocation alike).
pub fn estimate_long(seed: u64, shape: LongShape) -> Estimate {
    let n = shape.invocations.min(MEASURED_INVOCATIONS);
    let probe = LongShape {
        invocations: n,
        ..shape
    };
    let bytes = write_long_session(seed, probe, &mut std::io::sink()).unwrap_or(0) as f64;
    let per = if n == 0 { 0.0 } else { bytes / n as f64 };
    Estimate::of([(shape.file_name(), bytes.max(per * shape.invocations as f64))])
}

/// JSON bytes of one generated SWE-agent turn besides its text: two messages' keys, a tool
/// call, ids (measured on generated trajectories, rounded up).
const SWE_TURN_OVERHEAD_BYTES: f64 = 400.0;

/// The bytes of each trajectory of `shape`, by arithmetic on its tokens (generating one to
/// measure it could already be too large): the fixed prose, then per turn the observation,
/// the action's thought written twice (`content` and `thought`), and the JSON around them.
pub fn estimate_swe_agent(shape: &SweShape) -> Estimate {
    let obs = shape.turn_tokens as f64 * shape.obs_share.clamp(0.0, 1.0);
    let act = (shape.turn_tokens as f64 - obs).max(1.0);
    let per_turn = (obs + 2.0 * act) * SWE_CHARS_PER_TOKEN + SWE_TURN_OVERHEAD_BYTES;
    let fixed = shape.fixed_tokens as f64 * PROSE_CHARS_PER_TOKEN;
    Estimate::of(shape.turns.iter().enumerate().map(|(i, &turns)| {
        (
            format!("{:02}-swe-agent-{turns}.traj", i + 1),
            fixed + per_turn * turns as f64,
        )
    }))
}

/// The sample sessions: a checkout's `transcripts/` is exactly `synth --sessions 40 --seed 6`
/// (docs/development.md "Sample transcripts"), and `--samples` generates the same files.
pub const SAMPLE_SESSIONS: usize = 40;
pub const SAMPLE_SEED: u64 = 6;

/// The sample sessions, byte for byte the files of a checkout's `transcripts/`.
pub fn samples() -> Vec<SynthFile> {
    generate(SAMPLE_SESSIONS, SAMPLE_SEED)
}

/// Generates `sessions` sessions from `seed`.
pub fn generate(sessions: usize, seed: u64) -> Vec<SynthFile> {
    (0..sessions).map(|i| generate_one(seed, i)).collect()
}

/// Session `index` of the stream for `seed`.
pub fn generate_one(seed: u64, index: usize) -> SynthFile {
    // Mix the index in through one splitmix step so neighbouring sessions are unrelated.
    let mut mixer = SplitMix64::new(seed ^ (index as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
    let mut rng = SplitMix64::new(mixer.next_u64());
    let kind = if index.is_multiple_of(2) {
        Kind::Support
    } else {
        Kind::Coding
    };
    // Over each 8 sessions: 2 long (one of each kind), 3 short, 3 medium.
    let length = match index % 8 {
        2 | 5 => Length::Long,
        0 | 3 | 6 => Length::Short,
        _ => Length::Medium,
    };
    let invocations = match length {
        Length::Short => rng.range(2, 5),
        Length::Medium => rng.range(6, 14),
        Length::Long if kind == Kind::Coding => rng.range(30, 44),
        Length::Long => rng.range(20, 32),
    } as usize;
    let mut g = Gen::new(rng, kind, length == Length::Long);
    let session = g.session(invocations);
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b" ");
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    // Serialising a `Value` cannot fail.
    let _ = serde::Serialize::serialize(&session, &mut ser);
    buf.push(b'\n');
    SynthFile {
        file_name: format!(
            "{:02}-{}-{}.session.json",
            index + 1,
            kind.name(),
            invocations
        ),
        kind,
        invocations,
        json: String::from_utf8_lossy(&buf).into_owned(),
    }
}

/// The shape of one long session of small events (issue 13's scale benchmark): the
/// "canonical" long session is `invocations` user turns of one user message and one short
/// answer (two events, one model request each); with `tool_rounds`, the agent looks an
/// order up before answering (four events: message, call, response, answer), the response
/// holding a `get_invoice`-sized text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LongShape {
    pub invocations: usize,
    pub tool_rounds: bool,
}

impl LongShape {
    /// Events the session holds.
    pub fn events(&self) -> usize {
        self.invocations * if self.tool_rounds { 4 } else { 2 }
    }

    /// File name (built from the numbers only).
    pub fn file_name(&self) -> String {
        let tools = if self.tool_rounds { "-tools" } else { "" };
        format!("long-{}{tools}.session.json", self.invocations)
    }
}

/// Writes one long session of small events as an ADK session export (one event per line) to
/// `out`, invocation by invocation, so a session of any length is written in constant memory.
/// Deterministic in `(seed, shape)`; returns the bytes written.
pub fn write_long_session(
    seed: u64,
    shape: LongShape,
    out: &mut impl std::io::Write,
) -> std::io::Result<u64> {
    let mut rng = SplitMix64::new(seed ^ 0x4C4F_4E47_5345_5353);
    let id = rng.uuid();
    let user_id = format!("user-{}", rng.range(1000, 9999));
    let mut g = Gen::new(rng, Kind::Support, true);
    let mut bytes = 0u64;
    let mut put = |out: &mut dyn std::io::Write, b: &[u8]| -> std::io::Result<()> {
        bytes += b.len() as u64;
        out.write_all(b)
    };
    let head = json!({"id": id, "app_name": "support_app", "user_id": user_id, "state": {}});
    // The header without its closing brace, then the events array.
    let head = head.to_string();
    put(out, &head.as_bytes()[..head.len() - 1])?;
    put(out, b",\"events\":[\n")?;
    let mut first = true;
    for i in 0..shape.invocations {
        let inv = format!("e-{}", g.rng.uuid());
        let think = if i == 0 {
            0.0
        } else {
            g.rng.log_uniform(4.0, 120.0)
        };
        g.tick(think);
        let text = g.user_text(i == 0);
        g.user(&inv, vec![json!({"text": text})]);
        if shape.tool_rounds {
            let call = g.call_id();
            let order = g.order_id();
            let args = json!({"order_id": order, "format": "text"});
            g.model(
                &inv,
                vec![json!({"function_call": {"id": call, "name": "get_invoice", "args": args}})],
                Map::new(),
            );
            let result = g.tool_output("get_invoice", &args);
            g.tool_response(&inv, &call, "get_invoice", result, Map::new());
        }
        let answer = g.answer_text();
        g.model(&inv, vec![json!({"text": answer})], Map::new());
        for ev in g.events.drain(..) {
            if !first {
                put(out, b",\n")?;
            }
            first = false;
            put(out, ev.to_string().as_bytes())?;
        }
    }
    put(out, b"\n]}\n")?;
    Ok(bytes)
}

/// The JSON-visible size ADK's chars/4 estimate would see for a part (text, call name +
/// args JSON, response name + response JSON, attached text).
fn part_chars(part: &Value) -> usize {
    if let Some(t) = part.get("text").and_then(Value::as_str) {
        return t.chars().count();
    }
    if let Some(fc) = part.get("function_call") {
        let name = fc.get("name").and_then(Value::as_str).unwrap_or("");
        let args = fc.get("args").map(|a| a.to_string()).unwrap_or_default();
        return name.chars().count() + args.chars().count();
    }
    if let Some(fr) = part.get("function_response") {
        let name = fr.get("name").and_then(Value::as_str).unwrap_or("");
        let resp = fr
            .get("response")
            .map(|a| a.to_string())
            .unwrap_or_default();
        return name.chars().count() + resp.chars().count();
    }
    if let Some(d) = part
        .get("inline_data")
        .and_then(|d| d.get("data"))
        .and_then(Value::as_str)
    {
        // base64: 4 chars per 3 bytes of the attached text.
        return d.len() / 4 * 3;
    }
    0
}

fn content_chars(content: &Value) -> usize {
    content
        .get("parts")
        .and_then(Value::as_array)
        .map(|ps| ps.iter().map(part_chars).sum())
        .unwrap_or(0)
}

const FIRST: &[&str] = &[
    "Maria", "Jonas", "Aiko", "Priya", "Tomás", "Lena", "Kwame", "Sofia", "Omar", "Chen",
];
const LAST: &[&str] = &[
    "Keller", "Santos", "Okafor", "Nakamura", "Novak", "Haddad", "Larsen", "Moreau", "Iyer",
    "Byrne",
];
const PRODUCTS: &[&str] = &[
    "Pro plan (annual)",
    "Team plan (monthly)",
    "noise-cancelling headphones",
    "standing desk frame",
    "4K monitor 27\"",
    "ergonomic chair",
    "USB-C dock",
    "extra storage 200 GB",
];
const ISSUES: &[&str] = &[
    "was charged twice",
    "never received the package",
    "got the wrong size",
    "cannot log in after the password reset",
    "sees an invoice in the wrong currency",
    "wants to downgrade the plan",
    "has a broken item on arrival",
    "needs a VAT number on the invoice",
];
const REPOS: &[&str] = &[
    "billing-api",
    "web-frontend",
    "ingest-worker",
    "auth-service",
    "cli-tools",
];
const MODULES: &[&str] = &[
    "handlers", "models", "retry", "config", "storage", "parser", "metrics", "session", "queue",
    "cache",
];
const FUNCS: &[&str] = &[
    "parse_header",
    "load_config",
    "retry_with_backoff",
    "flush_batch",
    "validate_token",
    "render_invoice",
    "open_pool",
    "merge_ranges",
    "apply_discount",
    "schedule_job",
];
const BUGS: &[&str] = &[
    "the retry loop never gives up when the upstream returns 503",
    "timestamps are parsed as local time instead of UTC",
    "the cache key ignores the tenant id",
    "an empty batch makes the worker panic",
    "pagination skips the last page",
    "the config loader ignores the environment override",
    "a rounding error makes invoice totals off by one cent",
];

/// An action the agent asks the user to confirm: the tool, its arguments, the question.
struct Action {
    tool: &'static str,
    args: Value,
    hint: String,
}

struct Gen {
    rng: SplitMix64,
    kind: Kind,
    agent: &'static str,
    t: f64,
    events: Vec<Value>,
    /// Characters of history so far (what the next model request reads besides overhead).
    history_chars: usize,
    overhead_tokens: u64,
    call_seq: u64,
    customer: (String, String),
    repo: &'static str,
    /// Long coding sessions read big files more often: that is how they grow.
    big_read: f64,
    order_ids: Vec<String>,
}

impl Gen {
    fn new(mut rng: SplitMix64, kind: Kind, long: bool) -> Self {
        // Fixed overhead = system instruction + tool declarations; coding agents carry far
        // more (long instructions, many tools).
        let overhead_tokens = match kind {
            Kind::Support => rng.range(1_800, 3_200),
            Kind::Coding => rng.range(9_000, 15_000),
        };
        let first = rng.pick(FIRST).to_string();
        let last = rng.pick(LAST).to_string();
        let repo = *rng.pick(REPOS);
        // Sessions start on different days of December 2026, office hours, UTC.
        let day = rng.range(0, 27) as f64;
        let start = 1_796_083_200.0 + day * 86_400.0 + rng.range(7 * 3600, 17 * 3600) as f64;
        Gen {
            rng,
            kind,
            agent: match kind {
                Kind::Support => "support_agent",
                Kind::Coding => "coding_agent",
            },
            t: start,
            events: Vec::new(),
            history_chars: 0,
            overhead_tokens,
            call_seq: 0,
            customer: (
                format!("{first} {last}"),
                format!(
                    "{}.{}@example.com",
                    first.to_lowercase(),
                    last.to_lowercase()
                ),
            ),
            repo,
            big_read: if long { 0.35 } else { 0.2 },
            order_ids: Vec::new(),
        }
    }

    /// Advances the clock by `secs` (rounded to the millisecond, at least 1 ms) and returns it.
    fn tick(&mut self, secs: f64) -> f64 {
        let ms = (secs * 1000.0).round().max(1.0);
        self.t = ((self.t * 1000.0).round() + ms) / 1000.0;
        self.t
    }

    fn call_id(&mut self) -> String {
        self.call_seq += 1;
        format!("call_{}", self.rng.hex(20))
    }

    fn push(&mut self, inv: &str, author: &str, content: Value, extra: Map<String, Value>) {
        let mut ev = Map::new();
        ev.insert("id".into(), json!(self.rng.uuid()));
        ev.insert("invocation_id".into(), json!(inv));
        ev.insert("author".into(), json!(author));
        ev.insert("timestamp".into(), json!(self.t));
        self.history_chars += content_chars(&content);
        ev.insert("content".into(), content);
        for (k, v) in extra {
            ev.insert(k, v);
        }
        self.events.push(Value::Object(ev));
    }

    /// A model response: one model request, with usage = overhead + history/4 (what the
    /// request read) and candidates = its own output/4.
    fn model(&mut self, inv: &str, parts: Vec<Value>, extra: Map<String, Value>) {
        let latency = self.rng.log_uniform(0.6, 7.0);
        self.tick(latency);
        let prompt = self.overhead_tokens + (self.history_chars / 4) as u64;
        let content = json!({"role": "model", "parts": parts});
        let out = (content_chars(&content) / 4) as u64 + self.rng.range(2, 30);
        let mut extra = extra;
        extra.insert(
            "usage_metadata".into(),
            json!({"prompt_token_count": prompt, "candidates_token_count": out, "total_token_count": prompt + out}),
        );
        self.push(inv, self.agent, content, extra);
    }

    fn user(&mut self, inv: &str, parts: Vec<Value>) {
        self.push(
            inv,
            "user",
            json!({"role": "user", "parts": parts}),
            Map::new(),
        );
    }

    fn tool_response(
        &mut self,
        inv: &str,
        id: &str,
        name: &str,
        response: Value,
        extra: Map<String, Value>,
    ) {
        let latency = self.rng.log_uniform(0.05, 12.0);
        self.tick(latency);
        let content = json!({"role": "user", "parts": [{"function_response": {"id": id, "name": name, "response": response}}]});
        self.push(inv, self.agent, content, extra);
    }

    fn session(&mut self, invocations: usize) -> Value {
        let id = self.rng.uuid();
        let user_id = format!("user-{}", self.rng.range(1000, 9999));
        // Plan which turns carry an attachment and a confirmation so every long session has
        // them and short ones sometimes do.
        let attach_turn = if invocations >= 4 || self.rng.chance(0.4) {
            Some(self.rng.below(invocations as u64) as usize)
        } else {
            None
        };
        let confirm_turns: Vec<usize> = (0..invocations)
            .filter(|&i| {
                i > 0 && (self.rng.chance(0.12) || (invocations >= 8 && i == invocations / 2))
            })
            .collect();
        // Long coding sessions have one turn where the agent loops on a failing test: the
        // growth the guide's `max_llm_calls` alternative caps.
        let loop_turn = if self.kind == Kind::Coding && invocations >= 30 {
            Some(
                self.rng
                    .range(invocations as u64 / 3, invocations as u64 - 2) as usize,
            )
        } else {
            None
        };
        let mut i = 0;
        while i < invocations {
            let inv = format!("e-{}", self.rng.uuid());
            // Think time before the user's turn: seconds to minutes, sometimes a long break.
            let think = if i == 0 {
                0.0
            } else if self.rng.chance(0.08) {
                self.rng.log_uniform(1_800.0, 20_000.0)
            } else {
                self.rng.log_uniform(4.0, 600.0)
            };
            self.tick(think);
            if confirm_turns.contains(&i) && i + 1 < invocations {
                self.confirmation_turn(&inv);
                i += 2; // the reply to the confirmation is the next user turn
                continue;
            }
            if loop_turn == Some(i) {
                self.loop_turn(&inv);
            } else {
                self.turn(&inv, attach_turn == Some(i), i == 0);
            }
            i += 1;
        }
        let app = match self.kind {
            Kind::Support => "support_app",
            Kind::Coding => "coding_app",
        };
        json!({"id": id, "app_name": app, "user_id": user_id, "state": {}, "events": self.events})
    }

    fn order_id(&mut self) -> String {
        if !self.order_ids.is_empty() && self.rng.chance(0.6) {
            return self.rng.pick(&self.order_ids).clone();
        }
        let id = format!("ORD-{}", self.rng.range(10_000, 99_999));
        self.order_ids.push(id.clone());
        id
    }

    fn money(&mut self) -> String {
        format!("{}.{:02}", self.rng.range(9, 480), self.rng.range(0, 99))
    }

    /// One ordinary user turn: a message (maybe naming an attached file), 0-4 tool rounds,
    /// then the agent's answer.
    fn turn(&mut self, inv: &str, attach: bool, first: bool) {
        let mut parts = vec![json!({"text": self.user_text(first)})];
        if attach {
            let (name, mime, body) = self.attachment();
            parts[0] = json!({"text": format!("{} I attached {name}, please take a look.", self.user_text(first))});
            // Half as ADK's `inline_data` (what `adk web` sends for an upload), half as a
            // text part carrying the file (what many clients do with text files).
            if self.rng.chance(0.5) {
                parts.push(json!({"inline_data": {"display_name": name, "mime_type": mime, "data": STANDARD.encode(body.as_bytes())}}));
            } else {
                parts.push(json!({"text": format!("--- attached file: {name} ({mime}) ---\n{body}--- end of {name} ---")}));
            }
        }
        self.user(inv, parts);
        let rounds = match self.rng.below(10) {
            0..=1 => 0,
            2..=5 => 1,
            6..=7 => 2,
            8 => 3,
            _ => 4,
        };
        for _ in 0..rounds {
            self.tool_round(inv);
        }
        let answer = self.answer_text();
        self.model(inv, vec![json!({"text": answer})], Map::new());
    }

    /// A turn where the agent re-runs a failing test 26-34 times before answering.
    fn loop_turn(&mut self, inv: &str) {
        let module = *self.rng.pick(MODULES);
        self.user(
            inv,
            vec![json!({"text": format!("The tests in src/{module}.rs still fail. Keep fixing and re-running them until they pass.")})],
        );
        let rounds = self.rng.range(26, 34);
        for k in 0..rounds {
            let id = self.call_id();
            let mut parts = Vec::new();
            if k % 4 == 1 {
                parts.push(json!({"text": format!("Attempt {}: still failing, trying a different fix.", k + 1)}));
            }
            let args = json!({"filter": module, "verbose": false});
            parts.push(json!({"function_call": {"id": id, "name": "run_tests", "args": args}}));
            self.model(inv, parts, Map::new());
            let lines = self.rng.range(6, 20);
            let mut log = String::new();
            for t in 0..lines {
                log.push_str(&format!("test {module}::tests::case_{t} ... ok\n"));
            }
            let passed = k + 1 == rounds;
            if !passed {
                log.push_str(&format!(
                    "test {module}::tests::retries_are_bounded ... FAILED\n  left: {}\n right: 3\n",
                    self.rng.range(4, 9)
                ));
            }
            self.tool_response(
                inv,
                &id,
                "run_tests",
                json!({"exit_code": if passed { 0 } else { 101 }, "output": log}),
                Map::new(),
            );
        }
        self.model(inv, vec![json!({"text": format!("Fixed after {rounds} runs: the retry counter in src/{module}.rs was reset on every attempt.")})], Map::new());
    }

    fn user_text(&mut self, first: bool) -> String {
        match self.kind {
            Kind::Support => {
                let order = self.order_id();
                let product = *self.rng.pick(PRODUCTS);
                let issue = *self.rng.pick(ISSUES);
                let (name, email) = self.customer.clone();
                if first {
                    format!("Hi, this is {name} ({email}). My order {order} for the {product}: I {issue}. Can you help?")
                } else {
                    let amount = self.money();
                    match self.rng.below(5) {
                        0 => format!("Thanks. What about {order}? The {product} there shows ${amount}."),
                        1 => format!("Also, my colleague {issue}; the order is {order}."),
                        2 => "Ok, and when will that show up on my statement?".to_string(),
                        3 => format!("Can you double-check the address on {order}? It should be \"Hauptstrasse 12, 10115 Berlin\"."),
                        _ => format!("I still see ${amount} pending on my card for {order}. Why?"),
                    }
                }
            }
            Kind::Coding => {
                let module = *self.rng.pick(MODULES);
                let func = *self.rng.pick(FUNCS);
                let bug = *self.rng.pick(BUGS);
                let repo = self.repo;
                if first {
                    format!("In {repo}, {bug}. I think it is in src/{module}.rs, around {func}(). Can you find and fix it?")
                } else {
                    match self.rng.below(6) {
                        0 => format!("Now run the tests for src/{module}.rs again."),
                        1 => format!("Can you also add a test that covers {func} with an empty input?"),
                        2 => format!("Why does {func} take a &mut self here? Explain briefly."),
                        3 => "Looks good. Please also update the CHANGELOG.".to_string(),
                        4 => format!("CI on PR #{} is red, see if it is the same failure.", self.rng.range(100, 999)),
                        _ => format!("Rename {func} to {func}_checked everywhere and keep the old name as a deprecated alias."),
                    }
                }
            }
        }
    }

    fn answer_text(&mut self) -> String {
        let n = self.rng.range(1, 4);
        let mut s = String::new();
        for k in 0..n {
            if k > 0 {
                s.push(' ');
            }
            let sentence = match self.kind {
                Kind::Support => {
                    let order = self.order_id();
                    let amount = self.money();
                    match self.rng.below(6) {
                        0 => format!("I checked {order}: it shipped on 2026-12-{:02} and the tracking number is 1Z{}.", self.rng.range(1, 28), self.rng.range(100_000_000, 999_999_999)),
                        1 => format!("The charge of ${amount} on {order} is an authorisation hold; it drops off within 5-7 business days."),
                        2 => "I've updated the ticket and added a note for the billing team.".to_string(),
                        3 => format!("Your refund of ${amount} was issued to the card ending {}.", self.rng.range(1000, 9999)),
                        4 => "Is there anything else I can help with today?".to_string(),
                        _ => format!("According to policy KB-{} you can return unopened items within 30 days.", self.rng.range(100, 999)),
                    }
                }
                Kind::Coding => {
                    let module = *self.rng.pick(MODULES);
                    let func = *self.rng.pick(FUNCS);
                    match self.rng.below(6) {
                        0 => format!("The bug is in src/{module}.rs: {func} compares the deadline before converting it to UTC."),
                        1 => format!("All {} tests pass now, {} ignored.", self.rng.range(40, 400), self.rng.range(0, 5)),
                        2 => format!("I changed {func} to return early on an empty slice and added a regression test."),
                        3 => format!("The failure on CI is unrelated: a flaky network test in tests/{module}_it.rs."),
                        4 => "Here's a summary of the change: the retry budget is now shared per request, not per attempt.".to_string(),
                        _ => format!("I left the public signature of {func} unchanged, so callers need no update."),
                    }
                }
            };
            s.push_str(&sentence);
        }
        s
    }

    /// One model request with 1-2 tool calls, then their responses.
    fn tool_round(&mut self, inv: &str) {
        let parallel = self.rng.chance(0.15);
        let n = if parallel { 2 } else { 1 };
        let mut calls = Vec::new();
        for _ in 0..n {
            let id = self.call_id();
            let (name, args) = self.tool_call();
            calls.push((id, name, args));
        }
        let mut parts = Vec::new();
        if self.rng.chance(0.35) {
            parts.push(json!({"text": match self.kind {
                Kind::Support => "Let me look that up.",
                Kind::Coding => "Let me check the code first.",
            }}));
        }
        for (id, name, args) in &calls {
            parts.push(json!({"function_call": {"id": id, "name": name, "args": args}}));
        }
        self.model(inv, parts, Map::new());
        // ADK merges parallel calls' responses into one event.
        let mut parts = Vec::new();
        for (id, name, args) in &calls {
            let response = self.tool_output(name, args);
            parts
                .push(json!({"function_response": {"id": id, "name": name, "response": response}}));
        }
        let latency = self.rng.log_uniform(0.05, 12.0);
        self.tick(latency);
        self.push(
            inv,
            self.agent,
            json!({"role": "user", "parts": parts}),
            Map::new(),
        );
    }

    fn tool_call(&mut self) -> (&'static str, Value) {
        match self.kind {
            Kind::Support => match self.rng.below(6) {
                0 | 1 => ("lookup_order", json!({"order_id": self.order_id()})),
                2 => ("get_customer", json!({"email": self.customer.1.clone()})),
                3 => (
                    "search_kb",
                    json!({"query": format!("{} policy", self.rng.pick(ISSUES)), "limit": 10}),
                ),
                4 => (
                    "list_tickets",
                    json!({"email": self.customer.1.clone(), "status": "any"}),
                ),
                _ => (
                    "get_invoice",
                    json!({"order_id": self.order_id(), "format": "text"}),
                ),
            },
            Kind::Coding => {
                let module = *self.rng.pick(MODULES);
                match self.rng.below(6) {
                    0 | 1 => ("read_file", json!({"path": format!("src/{module}.rs")})),
                    2 => (
                        "grep",
                        json!({"pattern": self.rng.pick(FUNCS).to_string(), "path": "src/"}),
                    ),
                    3 => ("run_tests", json!({"filter": module, "verbose": true})),
                    4 => ("list_dir", json!({"path": "src/"})),
                    _ => ("git_diff", json!({"staged": false})),
                }
            }
        }
    }

    /// What a tool call returns: now and then an upstream error, else the tool's own output.
    fn tool_output(&mut self, name: &str, args: &Value) -> Value {
        // Tool errors happen: a critical event the reviewer wants kept.
        if self.rng.chance(0.04) {
            return json!({"error": format!("{name} failed: upstream timeout after 30 s (request id req-{})", self.rng.hex(8))});
        }
        if let Some(out) = self.support_output(name, args) {
            return out;
        }
        if let Some(out) = self.coding_output(name, args) {
            return out;
        }
        match name {
            "issue_refund" | "cancel_subscription" | "apply_patch" | "run_command" => {
                json!({"status": "ok", "reference": format!("REF-{}", self.rng.hex(6).to_uppercase())})
            }
            _ => json!({"status": "ok"}),
        }
    }

    /// A support tool's output (orders, customers, articles, tickets, invoices).
    fn support_output(&mut self, name: &str, args: &Value) -> Option<Value> {
        Some(match name {
            "lookup_order" => {
                let order = args
                    .get("order_id")
                    .and_then(Value::as_str)
                    .unwrap_or("ORD-0")
                    .to_string();
                json!({"order_id": order, "status": self.rng.pick(&["shipped", "delivered", "processing", "refunded"]).to_string(),
                       "total_usd": self.money(), "items": self.rng.range(1, 4), "carrier": "UPS",
                       "placed_at": format!("2026-11-{:02}T{:02}:{:02}:00Z", self.rng.range(1, 30), self.rng.range(0, 23), self.rng.range(0, 59))})
            }
            "get_customer" => {
                json!({"name": self.customer.0.clone(), "email": self.customer.1.clone(),
                                      "tier": self.rng.pick(&["free", "pro", "team"]).to_string(), "since": "2023-04-02",
                                      "open_tickets": self.rng.range(0, 3)})
            }
            "search_kb" => {
                // Large: whole articles come back.
                let n = self.rng.range(3, 8);
                let articles: Vec<Value> = (0..n)
                    .map(|_| {
                        let id = format!("KB-{}", self.rng.range(100, 999));
                        let title =
                            format!("{} ({})", self.rng.pick(ISSUES), self.rng.pick(PRODUCTS));
                        let n = self.rng.range(400, 1_500) as usize;
                        json!({"id": id, "title": title, "body": self.prose(n)})
                    })
                    .collect();
                json!({"results": articles})
            }
            "list_tickets" => {
                let n = self.rng.range(2, 25);
                let tickets: Vec<Value> = (0..n).map(|_| json!({"id": format!("TCK-{}", self.rng.range(1000, 9999)),
                    "subject": self.rng.pick(ISSUES).to_string(), "status": self.rng.pick(&["open", "closed", "pending"]).to_string(),
                    "updated": format!("2026-{:02}-{:02}", self.rng.range(1, 12), self.rng.range(1, 28))})).collect();
                json!({"tickets": tickets})
            }
            "get_invoice" => {
                let lines = self.rng.range(5, 60);
                let mut text = String::from("INVOICE\n");
                for k in 0..lines {
                    text.push_str(&format!(
                        "{:>3}  {:<34} {:>3} x {:>8}\n",
                        k + 1,
                        self.rng.pick(PRODUCTS),
                        self.rng.range(1, 5),
                        self.money()
                    ));
                }
                json!({"text": text})
            }
            _ => return None,
        })
    }

    /// A coding tool's output (files, searches, test runs, listings, diffs).
    fn coding_output(&mut self, name: &str, args: &Value) -> Option<Value> {
        Some(match name {
            "read_file" => {
                let path = args
                    .get("path")
                    .and_then(Value::as_str)
                    .unwrap_or("src/lib.rs")
                    .to_string();
                // Mostly medium files, sometimes a very large one.
                let lines = if self.rng.chance(self.big_read) {
                    self.rng.range(250, 700)
                } else {
                    self.rng.range(30, 150)
                };
                json!({"path": path, "content": self.code(lines as usize)})
            }
            "grep" => {
                let n = self.rng.range(1, 30);
                let pat = args
                    .get("pattern")
                    .and_then(Value::as_str)
                    .unwrap_or("x")
                    .to_string();
                let hits: Vec<String> = (0..n)
                    .map(|_| {
                        format!(
                            "src/{}.rs:{}:    let r = {pat}(&input)?;",
                            self.rng.pick(MODULES),
                            self.rng.range(1, 900)
                        )
                    })
                    .collect();
                json!({"matches": hits})
            }
            "run_tests" => {
                let n = if self.rng.chance(0.25) {
                    self.rng.range(150, 500)
                } else {
                    self.rng.range(10, 60)
                };
                let failed = self.rng.chance(0.4);
                let mut log = String::new();
                for k in 0..n {
                    log.push_str(&format!(
                        "test {}::tests::case_{k} ... ok\n",
                        self.rng.pick(MODULES)
                    ));
                }
                if failed {
                    log.push_str(&format!("test retry::tests::gives_up_after_budget ... FAILED\n\nthread 'main' panicked at src/retry.rs:{}:9:\nassertion `left == right` failed\n  left: 5\n right: 3\n", self.rng.range(10, 400)));
                }
                json!({"exit_code": if failed { 101 } else { 0 }, "output": log})
            }
            "list_dir" => {
                json!({"entries": MODULES.iter().map(|m| format!("{m}.rs")).collect::<Vec<_>>()})
            }
            "git_diff" => json!({"diff": self.diff()}),
            _ => return None,
        })
    }

    fn prose(&mut self, chars: usize) -> String {
        const W: &[&str] = &[
            "the",
            "customer",
            "refund",
            "order",
            "within",
            "days",
            "policy",
            "shipping",
            "invoice",
            "account",
            "card",
            "return",
            "label",
            "warehouse",
            "carrier",
            "must",
            "may",
            "request",
            "original",
            "payment",
            "method",
            "support",
            "team",
            "item",
            "damaged",
            "replacement",
            "credit",
            "billing",
            "cycle",
            "plan",
            "upgrade",
            "downgrade",
            "prorated",
            "tax",
        ];
        let mut s = String::new();
        while s.len() < chars {
            let w = *self.rng.pick(W);
            s.push_str(w);
            s.push(if self.rng.chance(0.08) { '.' } else { ' ' });
            if s.ends_with('.') {
                s.push(' ');
            }
        }
        s
    }

    fn code(&mut self, lines: usize) -> String {
        let mut s = String::new();
        for k in 0..lines {
            let f = *self.rng.pick(FUNCS);
            let line = match self.rng.below(8) {
                0 => format!("pub fn {f}(input: &[u8]) -> Result<Vec<u8>, Error> {{"),
                1 => "    }".to_string(),
                2 => format!(
                    "    let value_{k} = {f}(&buf[..{}])?;",
                    self.rng.range(1, 512)
                ),
                3 => format!("    // {}", self.rng.pick(BUGS)),
                4 => format!(
                    "    if attempts > {} {{ return Err(Error::Budget); }}",
                    self.rng.range(1, 9)
                ),
                5 => String::new(),
                6 => format!("    tracing::debug!(attempt = attempts, \"{f} retry\");"),
                _ => "}".to_string(),
            };
            s.push_str(&line);
            s.push('\n');
        }
        s
    }

    fn diff(&mut self) -> String {
        let module = *self.rng.pick(MODULES);
        let mut s = format!("--- a/src/{module}.rs\n+++ b/src/{module}.rs\n");
        for _ in 0..self.rng.range(1, 6) {
            let line = self.rng.range(10, 800);
            s.push_str(&format!("@@ -{line},6 +{line},7 @@\n"));
            for _ in 0..self.rng.range(2, 10) {
                let f = *self.rng.pick(FUNCS);
                s.push_str(&format!(
                    "{}    let r = {f}(&input)?;\n",
                    self.rng.pick(&["+", "-", " "])
                ));
            }
        }
        s
    }

    /// A file the user attaches: a log, a CSV export or a config, 3-40 KB.
    fn attachment(&mut self) -> (String, &'static str, String) {
        match self.kind {
            Kind::Support => {
                let rows = self.rng.range(30, 300);
                let mut body = String::from("date,description,amount_usd,order_id\n");
                for _ in 0..rows {
                    let order = format!("ORD-{}", self.rng.range(10_000, 99_999));
                    body.push_str(&format!(
                        "2026-11-{:02},{},{},{}\n",
                        self.rng.range(1, 30),
                        self.rng.pick(PRODUCTS).replace(',', " "),
                        self.money(),
                        order
                    ));
                }
                (
                    format!("statement-{}.csv", self.rng.range(1000, 9999)),
                    "text/csv",
                    body,
                )
            }
            Kind::Coding => {
                let lines = self.rng.range(40, 300);
                let mut body = String::new();
                for k in 0..lines {
                    body.push_str(&format!(
                        "2026-12-01T10:{:02}:{:02}.{:03}Z {} {}: {} (attempt {})\n",
                        (k / 60) % 60,
                        k % 60,
                        self.rng.range(0, 999),
                        self.rng.pick(&["INFO", "INFO", "WARN", "ERROR", "DEBUG"]),
                        self.rng.pick(MODULES),
                        self.rng.pick(BUGS),
                        self.rng.range(1, 6)
                    ));
                }
                (
                    format!("crash-{}.log", self.rng.range(100, 999)),
                    "text/plain",
                    body,
                )
            }
        }
    }

    /// Two user turns: the agent asks to confirm an action, the user approves or refuses.
    /// Half use ADK's tool confirmation (`adk_request_confirmation`, the call stays open
    /// across invocations), half a plain question answered "yes"/"no" in text.
    fn confirmation_turn(&mut self, inv: &str) {
        let approve = self.rng.chance(0.6);
        let adk_style = self.rng.chance(0.5);
        let action = self.risky_action();
        let ask = self.user_text(false);
        self.user(inv, vec![json!({"text": ask})]);
        let inv2 = format!("e-{}", self.rng.uuid());
        if adk_style {
            self.confirm_with_adk(inv, &inv2, &action, approve);
        } else {
            self.confirm_in_text(inv, &inv2, &action, approve);
        }
        let text = if approve {
            "Done. I've carried that out and noted it on the ticket."
        } else {
            "Understood, I won't do that. Nothing was changed."
        };
        self.model(&inv2, vec![json!({"text": text})], Map::new());
    }

    /// An action the agent asks to confirm first: a refund or cancellation, a patch or a
    /// command.
    fn risky_action(&mut self) -> Action {
        let (tool, args, hint) = match self.kind {
            Kind::Support => {
                let order = self.order_id();
                let amount = self.money();
                if self.rng.chance(0.6) {
                    (
                        "issue_refund",
                        json!({"order_id": order.clone(), "amount_usd": amount.clone()}),
                        format!("Refund ${amount} for {order} to the original card?"),
                    )
                } else {
                    (
                        "cancel_subscription",
                        json!({"email": self.customer.1.clone(), "effective": "end_of_term"}),
                        "Cancel the subscription at the end of the current term?".to_string(),
                    )
                }
            }
            Kind::Coding => {
                if self.rng.chance(0.5) {
                    let module = *self.rng.pick(MODULES);
                    (
                        "apply_patch",
                        json!({"path": format!("src/{module}.rs"), "diff": self.diff()}),
                        format!("Apply this patch to src/{module}.rs?"),
                    )
                } else {
                    let cmd = *self.rng.pick(&[
                        "git push --force-with-lease origin fix/retry",
                        "rm -rf target/ && cargo build",
                        "cargo publish --dry-run",
                    ]);
                    (
                        "run_command",
                        json!({"command": cmd}),
                        format!("Run `{cmd}`?"),
                    )
                }
            }
        };
        Action { tool, args, hint }
    }

    /// ADK's tool confirmation: the call answered "requires confirmation", the
    /// `adk_request_confirmation` call, the user's answer in the next invocation, the result.
    fn confirm_with_adk(&mut self, inv: &str, inv2: &str, action: &Action, approve: bool) {
        let Action { tool, args, hint } = action;
        let tool = *tool;
        let call = self.call_id();
        self.model(
            inv,
            vec![json!({"function_call": {"id": call, "name": tool, "args": args}})],
            Map::new(),
        );
        let mut actions = Map::new();
        actions.insert(
            "actions".into(),
            json!({"requested_tool_confirmations": {call.clone(): {"hint": hint, "confirmed": false, "payload": null}}}),
        );
        self.tool_response(
            inv,
            &call,
            tool,
            json!({"error": "This tool call requires confirmation, please approve or reject."}),
            actions,
        );
        let confirm_id = format!("adk-{}", self.rng.uuid());
        self.tick(0.002);
        let mut lr = Map::new();
        lr.insert("long_running_tool_ids".into(), json!([confirm_id]));
        self.push(
            inv,
            self.agent,
            // ADK's generate_request_confirmation_event takes the role of the function
            // response event ("user"): it is not a model response.
            json!({"role": "user", "parts": [{"function_call": {"id": confirm_id, "name": "adk_request_confirmation", "args": {
                "originalFunctionCall": {"id": call, "name": tool, "args": args},
                "toolConfirmation": {"hint": hint, "confirmed": false, "payload": null}}}}]}),
            lr,
        );
        let think = self.rng.log_uniform(3.0, 300.0);
        self.tick(think);
        self.user(inv2, vec![json!({"function_response": {"id": confirm_id, "name": "adk_request_confirmation", "response": {"confirmed": approve}}})]);
        let result = if approve {
            self.tool_output(tool, args)
        } else {
            json!({"error": "This tool call is rejected."})
        };
        self.tool_response(inv2, &call, tool, result, Map::new());
    }

    /// A plain question answered "yes" or "no" in text; approved, the call and its result.
    fn confirm_in_text(&mut self, inv: &str, inv2: &str, action: &Action, approve: bool) {
        let Action { tool, args, hint } = action;
        let tool = *tool;
        self.model(
            inv,
            vec![json!({"text": format!("{hint} Please reply yes or no.")})],
            Map::new(),
        );
        let think = self.rng.log_uniform(3.0, 300.0);
        self.tick(think);
        let reply = if approve {
            *self
                .rng
                .pick(&["Yes, go ahead.", "yes", "Yes please, do it."])
        } else {
            *self.rng.pick(&[
                "No, don't do that.",
                "no",
                "No — leave it as it is for now.",
            ])
        };
        self.user(inv2, vec![json!({"text": reply})]);
        if approve {
            let call = self.call_id();
            self.model(
                inv2,
                vec![json!({"function_call": {"id": call, "name": tool, "args": args}})],
                Map::new(),
            );
            let result = self.tool_output(tool, args);
            self.tool_response(inv2, &call, tool, result, Map::new());
        }
    }
}

/// SWE-agent trajectories shaped like The Complexity Trap's raw runs (issue 38,
/// docs/validation.md): one `.traj` per turn count, each turn a thought with one tool call
/// and its observation, the observations `obs_share` of a turn's tokens on average (the
/// paper: about 84 %). Written as SWE-agent writes `history` (function calling), so the
/// same reader and the same sweep run on them as on real runs.
#[derive(Debug, Clone, PartialEq)]
pub struct SweShape {
    pub turns: Vec<usize>,
    /// Mean tokens of one turn (o200k), action and observation together.
    pub turn_tokens: u64,
    pub obs_share: f64,
    /// Tokens of the system prompt and the task together (o200k): what every request
    /// carries whatever the policy.
    pub fixed_tokens: u64,
}

/// Characters per o200k token of the generated listings and thoughts (measured on a
/// generated set: the o200k count of the history over its characters).
const SWE_CHARS_PER_TOKEN: f64 = 3.6;

/// The same for the prose of the system prompt and the task (measured the same way).
const PROSE_CHARS_PER_TOKEN: f64 = 4.36;

/// Observation sizes spread log-uniformly over 0.25-3x of a base; this is the mean of that
/// spread, so that the mean observation is the shape's.
const SWE_SPREAD_MEAN: f64 = 2.75 / 2.484_906_649_788_000_4;

/// One trajectory per entry of `shape.turns`; trajectory `i` depends only on the seed, `i`
/// and its turn count.
pub fn generate_swe_agent(seed: u64, shape: &SweShape) -> Vec<SynthFile> {
    shape
        .turns
        .iter()
        .enumerate()
        .map(|(i, &turns)| swe_agent_one(seed, i, turns, shape))
        .collect()
}

/// Trajectory `index` of `shape`, of `turns` turns (see [`generate_swe_agent`]).
pub fn swe_agent_one(seed: u64, index: usize, turns: usize, shape: &SweShape) -> SynthFile {
    let mut mixer = SplitMix64::new(
        seed ^ 0x5357_4541_4745_4E54 ^ (index as u64).wrapping_mul(0xD1B5_4A32_D192_ED03),
    );
    let mut g = Gen::new(SplitMix64::new(mixer.next_u64()), Kind::Coding, true);
    let obs_tokens = shape.turn_tokens as f64 * shape.obs_share.clamp(0.0, 1.0);
    let act_tokens = (shape.turn_tokens as f64 - obs_tokens).max(1.0);
    let msg = |role: &str, content: String, kind: &str| json!({"role": role, "content": content, "agent": "main", "message_type": kind});
    let fixed = (shape.fixed_tokens as f64 * PROSE_CHARS_PER_TOKEN) as usize;
    let task = format!(
        "We're currently solving the following issue within our repository. Here's the issue text:\nISSUE:\n{}",
        g.prose(fixed.min(6_000))
    );
    let mut history = vec![
        msg(
            "system",
            g.prose(fixed.saturating_sub(6_000).max(400)),
            "system",
        ),
        msg("user", task, "observation"),
    ];
    for k in 0..turns {
        let id = format!("call_{index}_{k}");
        let (thought, command) = g.swe_action(act_tokens);
        let mut a = msg("assistant", thought.clone(), "action");
        a["thought"] = json!(thought);
        a["action"] = json!(command);
        let args = json!({ "command": command }).to_string();
        a["tool_calls"] = json!([{"id": id, "type": "function",
            "function": {"name": "bash", "arguments": args}}]);
        history.push(a);
        let spread = g.rng.log_uniform(0.25, 3.0) / SWE_SPREAD_MEAN;
        let mut o = msg(
            "tool",
            g.swe_observation(obs_tokens * spread),
            "observation",
        );
        o["tool_call_ids"] = json!([id]);
        history.push(o);
    }
    let traj = json!({
        "environment": "synthetic",
        "trajectory": [],
        "history": history,
        "info": {"exit_status": "submitted", "synthetic": "compaction-sim synth --swe-agent-turns"},
    });
    SynthFile {
        file_name: format!("{:02}-swe-agent-{turns}.traj", index + 1),
        kind: Kind::Coding,
        invocations: 1,
        json: format!("{traj}\n"),
    }
}

impl Gen {
    /// A SWE-agent action of about `tokens` tokens: a thought and a shell command.
    fn swe_action(&mut self, tokens: f64) -> (String, String) {
        let module = *self.rng.pick(MODULES);
        let command = match self.rng.below(4) {
            0 => format!("grep -rn \"{}\" src/", self.rng.pick(FUNCS)),
            1 => format!(
                "sed -n {0},{1}p src/{module}.py",
                self.rng.range(1, 400),
                self.rng.range(401, 900)
            ),
            2 => format!("python reproduce_{module}.py"),
            _ => format!("python -m pytest tests/test_{module}.py -x -q"),
        };
        let chars = (tokens * SWE_CHARS_PER_TOKEN) as usize;
        let thought = self.prose(chars.saturating_sub(command.len()).max(20));
        (thought, command)
    }

    /// An observation of about `tokens` tokens: a numbered listing as SWE-agent's tools print.
    fn swe_observation(&mut self, tokens: f64) -> String {
        let chars = (tokens * SWE_CHARS_PER_TOKEN) as usize;
        let module = *self.rng.pick(MODULES);
        let mut s = format!("[File: /repo/src/{module}.py]\n");
        let mut line = self.rng.range(1, 600);
        while s.len() < chars {
            s.push_str(&format!("{line}:{}", self.code(1)));
            line += 1;
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_the_reference_stream() {
        // Reference values of splitmix64 seeded with 1234567 (from the published C code).
        let mut r = SplitMix64::new(1234567);
        assert_eq!(r.next_u64(), 6457827717110365317);
        assert_eq!(r.next_u64(), 3203168211198807973);
    }

    fn check_session(v: &Value) {
        let events = v["events"].as_array().expect("events");
        let mut last = 0.0;
        let mut calls = std::collections::HashSet::new();
        for e in events {
            let t = e["timestamp"].as_f64().expect("timestamp");
            assert!(t > last, "timestamps must strictly increase");
            last = t;
            for p in e["content"]["parts"].as_array().expect("parts") {
                if let Some(fc) = p.get("function_call") {
                    calls.insert(fc["id"].as_str().expect("id").to_string());
                }
                if let Some(fr) = p.get("function_response") {
                    let id = fr["id"].as_str().expect("id");
                    assert!(calls.contains(id), "response {id} has no earlier call");
                }
            }
        }
    }

    /// The scale benchmark's sessions: as many events as the shape says, well formed, the
    /// same bytes for the same seed, and read by the ADK reader as one session.
    #[test]
    fn long_sessions_have_their_shape_and_read_back() {
        for tool_rounds in [false, true] {
            let shape = LongShape {
                invocations: 40,
                tool_rounds,
            };
            let mut a = Vec::new();
            let n = write_long_session(3, shape, &mut a).expect("in memory");
            assert_eq!(n as usize, a.len());
            let mut b = Vec::new();
            write_long_session(3, shape, &mut b).expect("in memory");
            assert_eq!(a, b, "same seed, same bytes");
            let v: Value = serde_json::from_slice(&a).expect("valid json");
            check_session(&v);
            assert_eq!(v["events"].as_array().map(Vec::len), Some(shape.events()));
            let text = String::from_utf8(a).expect("utf-8");
            let sessions = crate::transcript::adk::read("long.json", &text).expect("adk reads it");
            assert_eq!(sessions.len(), 1);
            assert_eq!(sessions[0].events.len(), shape.events());
            let invs: std::collections::HashSet<&str> = sessions[0]
                .events
                .iter()
                .map(|e| e.invocation_id.as_str())
                .collect();
            assert_eq!(invs.len(), 40);
        }
    }

    #[test]
    fn swe_agent_trajectories_read_back_with_their_turns_and_observation_share() {
        let shape = SweShape {
            turns: vec![3, 40],
            turn_tokens: 600,
            obs_share: 0.84,
            fixed_tokens: 2_300,
        };
        let files = generate_swe_agent(5, &shape);
        assert_eq!(files.len(), 2);
        // trajectory i depends only on the seed, i and its turn count
        let again = generate_swe_agent(
            5,
            &SweShape {
                turns: vec![3],
                ..shape.clone()
            },
        );
        assert_eq!(again[0].json, files[0].json);
        for (i, (f, &turns)) in files.iter().zip(&shape.turns).enumerate() {
            assert_eq!(f.file_name, format!("{:02}-swe-agent-{turns}.traj", i + 1));
            let sessions = crate::transcript::swe_agent::read(&f.file_name, &f.json)
                .expect("the SWE-agent reader reads it");
            let ev = &sessions[0].events;
            assert_eq!(ev.iter().filter(|e| e.model_request).count(), turns);
            // every call answered
            let resp = ev
                .iter()
                .flat_map(|e| &e.parts)
                .filter(|p| matches!(p, crate::transcript::Part::ToolResponse { id: Some(_), .. }))
                .count();
            assert_eq!(resp, turns);
        }
        // the observations' share of the turns' characters is near the shape's (the spread
        // is random, 40 turns)
        let v: Value = serde_json::from_str(&files[1].json).unwrap();
        let chars = |role: &str| -> usize {
            v["history"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["role"] == role)
                .map(|m| m["content"].as_str().unwrap().len())
                .sum()
        };
        let (obs, act) = (chars("tool"), chars("assistant"));
        let share = obs as f64 / (obs + act) as f64;
        assert!((0.74..0.92).contains(&share), "{share}");
    }

    #[test]
    fn sessions_are_well_formed_and_prefix_stable() {
        let a = generate(12, 6);
        let b = generate(6, 6);
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.json, y.json);
        }
        for f in &a {
            let v: Value = serde_json::from_str(&f.json).expect("valid json");
            check_session(&v);
        }
        assert_ne!(
            generate(1, 7)[0].json,
            a[0].json,
            "the seed changes the output"
        );
    }

    /// Issue 47 item 2: the size `synth` checks before writing is near what it writes (within
    /// a third either way), for each of its three outputs.
    #[test]
    fn synth_size_estimates_are_near_the_bytes_written() {
        let near = |est: f64, real: usize| {
            let r = est / real as f64;
            assert!((0.67..=1.5).contains(&r), "estimate {est} for {real} bytes");
        };
        let e = estimate_sessions(40, 6);
        near(
            e.total_bytes,
            generate(40, 6).iter().map(|f| f.json.len()).sum(),
        );
        let shape = LongShape {
            invocations: 500,
            tool_rounds: true,
        };
        let mut text = Vec::new();
        write_long_session(3, shape, &mut text).unwrap();
        near(estimate_long(3, shape).total_bytes, text.len());
        let swe = SweShape {
            turns: vec![10, 200],
            turn_tokens: 650,
            obs_share: 0.84,
            fixed_tokens: 2_300,
        };
        let e = estimate_swe_agent(&swe);
        let files = generate_swe_agent(1, &swe);
        near(e.largest_bytes, files[1].json.len());
        near(e.total_bytes, files.iter().map(|f| f.json.len()).sum());
        assert_eq!(e.largest, files[1].file_name);
    }

    #[test]
    fn synth_outputs_past_the_limits_are_refused_with_size_and_limit() {
        let huge = SweShape {
            turns: vec![2_000_000],
            turn_tokens: 650,
            obs_share: 0.84,
            fixed_tokens: 2_300,
        };
        let e = estimate_swe_agent(&huge).check().unwrap_err().to_string();
        assert!(
            e.contains("01-swe-agent-2000000.traj would be about")
                && e.contains(&format!(
                    "over the limit of {MAX_SYNTH_FILE_BYTES} bytes per file"
                )),
            "{e}"
        );
        let max_tokens = SweShape {
            turns: vec![1],
            turn_tokens: u64::MAX,
            ..huge.clone()
        };
        assert!(estimate_swe_agent(&max_tokens).check().is_err());
        let max_fixed = SweShape {
            turns: vec![1],
            fixed_tokens: u64::MAX,
            ..huge
        };
        assert!(estimate_swe_agent(&max_fixed).check().is_err());
        let e = estimate_sessions(100_000_000, 6)
            .check()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!(
                "over the limit of {MAX_SYNTH_BYTES} bytes per run"
            )),
            "{e}"
        );
        assert!(estimate_sessions(40, 6).check().is_ok());
    }
}
