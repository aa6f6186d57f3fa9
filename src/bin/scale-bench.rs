//! Scale benchmark (docs/benchmarks.md "Scale: long sessions"):
//!
//! ```text
//! cargo run --release --bin scale-bench -- [--sizes 1250,2500,5000,10000,20000]
//!                                          [--big-events N]
//!                                          [--reps R] [--min-time SECONDS]
//!                                          [--summarizers agent,terse]
//!                                          [--clients waits,streams] [--kinds token,sliding,both]
//!                                          [--pairs P] [--no-big] [--dir DIR]
//!                                          [--timeout SECONDS]
//! ```
//!
//! How replay cost grows with session length. The sessions are written by `synth`'s long
//! session of small events (`compaction_sim::synth::write_long_session`): the canonical
//! session of N invocations (a user message and a short answer each: 2N events, N model
//! requests) for each N of `--sizes`, and one big ADK export of `--big-events` events
//! (default 200,000; a tool round in every invocation) — nothing is committed, everything is
//! generated into a temporary folder (`--dir` keeps it).
//!
//! Every case runs in its own process (this binary, started again with `--child`), so its
//! peak memory is its own: the child reads the session (ADK reader), counts tokens (o200k, no
//! cache), builds the per-event arrays, then replays it `--reps` times (default 3), and
//! again until the replays after the first add up to `--min-time` seconds (default 1: a
//! replay of a few milliseconds is otherwise measured over a few tens of milliseconds of
//! this shared machine, and one burst of another process's work sets its median), under one
//! setting with the metrics (`cost::evaluate`, as `replay` and `sweep` do) and reports its
//! `VmHWM` (peak resident set) after loading and at the end. Settings: token
//! (`after_tokens` 20,000, `keep_recent_events` 10), sliding (`after_invocations` 5,
//! `overlap` 1) and both; summarizers and client modes as listed (any `--summarizer` value
//! without a comma; `python:` workers are started with `COMPACTION_SIM_PYTHON`;
//! `live:openai/MODEL` calls a local stand-in for the provider, an OpenAI-compatible server
//! the child starts on 127.0.0.1, so every call is a real HTTP request). The first replay of a
//! process also builds the session's setting-independent baseline (cached for later
//! settings); the table shows it and the median of the others.
//!
//! The big session is replayed under the three settings (agent summarizer, waits), by the
//! engine alone (`engine`: the summarizer `evaluate` builds, no metrics) and with the metrics
//! (`metrics`), and read by
//! `inspect` (the library's command, in a child of its own; with `--no-cache`, so the token
//! count is cold).
//!
//! Growth: time per event at one size divided by time per event at a smaller one (1.0 =
//! linear), twice: from 2,500 to 20,000 events (1,250 to 10,000 invocations: issue #13's
//! words, "time per event at 20,000 events within 1.5× of that at 2,500 events"), and from
//! the smallest size to the largest (2,500 to 40,000 events by default); and from 2,500 to
//! 20,000 events again in turns, both sessions replayed alternately in one process
//! (`--child pair`: the same load for both, and neither keeps its data in the core's own cache
//! between replays); and from 2,500 to 20,000 events in separate processes again, `--pairs`
//! times (default 5; 0: not run), the two sizes' processes alternated, with the median and
//! range over the pairs and each size's summarizer calls per event (`Alternated`). A case
//! running longer than `--timeout` (default 600 s) is killed and shown as such.

use compaction_sim::cost::client::ClientMode;
use compaction_sim::cost::compute::{CostModel, FALLBACK_AGENT_MODEL};
use compaction_sim::cost::evaluate::{evaluate, with_summarizer, CostSetting, SessionCostInputs};
use compaction_sim::engine::{self, Config, UsageMode};
use compaction_sim::policy::{self, LcTrigger, PolicySpec};
use compaction_sim::summarize::live;
use compaction_sim::summarize::python;
use compaction_sim::summarize::SummarizerSpec;
use compaction_sim::synth::{write_long_session, LongShape};
use compaction_sim::tokens::sizes::SessionSizes;
use compaction_sim::tokens::{count_sessions, CacheOpts, Tokenizer};
use compaction_sim::transcript::detect;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

const SEED: u64 = 13;
/// Prefix of the one line a child prints for the parent.
const RESULT: &str = "SCALE-BENCH-RESULT";

/// Peak resident memory of this process, MiB (Linux `VmHWM`).
fn peak_mib() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Another framework's policy as a case kind (`policy:FAMILY`, docs/policies.md), with
/// numbers that fire on these sessions: 20,000 tokens where the policy has a token trigger
/// (2 % of the agent model's 1,048,576-token window where it has a share), its defaults
/// otherwise.
fn policy_of(kind: &str) -> Option<PolicySpec> {
    Some(match kind.strip_prefix("policy:")? {
        "clear-tool-results" => PolicySpec::ClearToolResults {
            trigger: 20_000,
            keep: 3,
            clear_at_least: 0,
            exclude_tools: Vec::new(),
        },
        "mask-observations" => PolicySpec::MaskObservations { window: 10 },
        "claude-code" => PolicySpec::ClaudeCode {
            pct: Some(2),
            window: 1_048_576,
        },
        "codex" => PolicySpec::Codex {
            pct: 2,
            retain: 64_000,
        },
        "openhands" => PolicySpec::Openhands {
            max_size: 240,
            keep_first: 2,
            max_tokens: None,
        },
        "langchain" => PolicySpec::Langchain {
            trigger: LcTrigger::Tokens(20_000),
            keep: 20,
            trim: Some(4_000),
        },
        "turn-summary" => PolicySpec::TurnSummary { n: 21, m: 10 },
        "hybrid" => PolicySpec::Hybrid {
            n: 43,
            m: 10,
            window: 10,
        },
        "gemini-cli" => PolicySpec::GeminiCli {
            threshold_pct: 2,
            profile: Default::default(),
        },
        "anthropic-compaction" => PolicySpec::AnthropicCompaction { trigger: 50_000 },
        _ => return None,
    })
}

/// The setting of a kind (a policy kind replays with the ADK fields unset).
fn config(kind: &str) -> Option<Config> {
    let token = Some((20_000, 10));
    let sliding = Some((5, 1));
    let (token, sliding) = match kind {
        "token" => (token, None),
        "sliding" => (None, sliding),
        "both" => (token, sliding),
        k if policy_of(k).is_some() => (None, None),
        _ => return None,
    };
    Some(Config {
        token,
        sliding,
        usage: UsageMode::Adjust,
        pre_request: true,
    })
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Start what a summarizer spec needs in this process: `python:` workers (as `replay
/// --summarizer python:REF` starts them, with COMPACTION_SIM_PYTHON) and, for
/// `live:openai/...`, a local stand-in for the provider (none is reachable here: every call
/// is a real HTTP request to it, answered at once).
fn start_summarizer(spec: &SummarizerSpec) -> anyhow::Result<()> {
    if let SummarizerSpec::Python(reference) = spec {
        let opts = python::PythonOptions {
            python: python::interpreter(None),
            package: None,
            timeout: Duration::from_secs(60),
        };
        python::start(reference, &opts)?;
    }
    if let SummarizerSpec::Live { provider, model } = spec {
        anyhow::ensure!(
            *provider == live::Provider::OpenAi,
            "scale-bench answers `live:openai/...` only"
        );
        let url = stub_provider()?;
        std::env::set_var("OPENAI_API_KEY", "scale-bench-stub");
        let opts = live::LiveOptions {
            base_url: Some(url),
            cache_dir: None,
            concurrency: 1,
            timeout: Duration::from_secs(60),
        };
        live::start(*provider, model, &opts)?;
    }
    Ok(())
}

/// A session read as `replay` reads it: the ADK reader, an o200k count (no cache), the
/// per-event arrays and the metrics' inputs.
struct Loaded {
    sessions: Vec<compaction_sim::transcript::Session>,
    sizes: SessionSizes,
    inputs: SessionCostInputs,
}

impl Loaded {
    fn read(file: &str) -> anyhow::Result<Loaded> {
        let sessions = detect::load_file(file, None)?;
        let session = sessions
            .first()
            .ok_or_else(|| anyhow::anyhow!("{file}: no session"))?;
        let counts = count_sessions(&sessions, Tokenizer::O200k, &CacheOpts::disabled())?;
        let sizes = SessionSizes::new(session, counts.first().map(Vec::as_slice));
        drop(counts); // as `replay` does: the sizes hold what the replay needs
        let inputs = SessionCostInputs::new(session, Tokenizer::O200k);
        Ok(Loaded {
            sessions,
            sizes,
            inputs,
        })
    }

    /// One replay under `cfg`: (seconds, of them inside `engine::replay`, compactions,
    /// summarizer calls).
    /// `engine_only`: the engine alone, with the summarizer `evaluate` would build (no
    /// metrics); else with the metrics (`cost::evaluate`, as `replay` and `sweep` do).
    fn replay(
        &self,
        (cfg, policy, spec, client, model): &Setup,
        engine_only: bool,
    ) -> anyhow::Result<(f64, f64, usize, usize)> {
        let session = &self.sessions[0];
        let agent = session.model.as_deref().unwrap_or(FALLBACK_AGENT_MODEL);
        let setting = CostSetting::new(spec, Some(agent), *client);
        let ctx = policy::Ctx {
            sizes: &self.sizes,
            session,
            window: model.context_window(Some(agent)),
        };
        let engine_run = |s: &dyn engine::Summarizer| match policy {
            Some(p) => policy::replay_spec(p, &ctx, s),
            None => engine::replay(&self.sizes, cfg, s),
        };
        if engine_only {
            let (el, r) = with_summarizer(session, &self.inputs, model, &setting, |summarizer| {
                let t = Instant::now();
                let r = engine_run(summarizer);
                (t.elapsed().as_secs_f64(), r)
            })
            .map_err(anyhow::Error::msg)?;
            return Ok((el, el, r.compactions.len(), r.calls.len()));
        }
        let t = Instant::now();
        let inner = std::cell::Cell::new(0.0);
        let run = |s: &dyn engine::Summarizer| {
            let t = Instant::now();
            let r = engine_run(s);
            inner.set(inner.get() + t.elapsed().as_secs_f64());
            r
        };
        let e = evaluate(session, &self.sizes, &self.inputs, model, &setting, &run)
            .map_err(anyhow::Error::msg)?;
        let counts = (e.replay.compactions.len(), e.replay.calls.len());
        drop(e);
        Ok((t.elapsed().as_secs_f64(), inner.get(), counts.0, counts.1))
    }
}

/// A case's setup: the setting, the summarizer, the client mode, and the prices and latencies.
type Setup = (
    Config,
    Option<PolicySpec>,
    SummarizerSpec,
    ClientMode,
    CostModel,
);

/// The parsed `KIND SUMMARIZER CLIENT` of a child's arguments (the summarizer started).
fn case_args(kind: &str, summ: &str, client: &str) -> anyhow::Result<Setup> {
    let cfg = config(kind).ok_or_else(|| anyhow::anyhow!("unknown setting kind `{kind}`"))?;
    let spec = SummarizerSpec::parse(summ).map_err(anyhow::Error::msg)?;
    start_summarizer(&spec)?;
    let client: ClientMode = client
        .parse()
        .map_err(|e| anyhow::anyhow!("--client: {e}"))?;
    Ok((cfg, policy_of(kind), spec, client, CostModel::default()))
}

/// `--child replay FILE KIND SUMMARIZER CLIENT REPS MIN_TIME metrics|engine`: one case, one
/// process.
fn child_replay(args: &[String]) -> anyhow::Result<()> {
    let [file, kind, summ, client, reps, min_time, mode] = args else {
        anyhow::bail!("--child replay FILE KIND SUMMARIZER CLIENT REPS MIN_TIME metrics|engine");
    };
    let min_time: f64 = min_time
        .parse()
        .map_err(|_| anyhow::anyhow!("min time `{min_time}`"))?;
    let engine_only = match mode.as_str() {
        "metrics" => false,
        "engine" => true,
        _ => anyhow::bail!("mode `{mode}`: metrics or engine"),
    };
    let case = case_args(kind, summ, client)?;
    let reps: usize = reps.parse().map_err(|_| anyhow::anyhow!("reps `{reps}`"))?;
    let t = Instant::now();
    let loaded = Loaded::read(file)?;
    let load_s = t.elapsed().as_secs_f64();
    let load_mib = peak_mib();
    let mut total = Vec::new();
    let mut engine_s = Vec::new();
    let (mut compactions, mut calls) = (0, 0);
    // at least `reps` replays, and replays after the first until `min_time` seconds of them:
    // a case of a few milliseconds then spans as long a stretch of this shared machine's
    // load as a slow one, so a passing burst does not set its median
    let warm_s = |t: &[f64]| t.iter().skip(1).sum::<f64>();
    while total.len() < reps.max(1) || (reps > 1 && warm_s(&total) < min_time) {
        let (all, inner, c, k) = loaded.replay(&case, engine_only)?;
        total.push(all);
        engine_s.push(inner);
        (compactions, calls) = (c, k);
    }
    let first = total[0];
    let first_engine = engine_s[0];
    let warm = median(&mut total[1..].to_vec());
    let warm_engine = median(&mut engine_s[1..].to_vec());
    // the fastest warm replay: on a shared machine the least disturbed one
    let best = total[1..].iter().copied().fold(f64::NAN, f64::min);
    let best_engine = engine_s[1..].iter().copied().fold(f64::NAN, f64::min);
    let sizes = &loaded.sizes;
    println!(
        "{RESULT} events={} requests={} compactions={compactions} calls={calls} \
         load_s={load_s:.3} \
         load_mib={load_mib:.1} first_s={first:.6} first_engine_s={first_engine:.6} \
         warm_s={warm:.6} warm_engine_s={warm_engine:.6} best_s={best:.6} \
         best_engine_s={best_engine:.6} reps={} peak_mib={:.1}",
        sizes.n,
        sizes.model_request.iter().filter(|&&m| m).count(),
        total.len(),
        peak_mib()
    );
    Ok(())
}

/// `--child pair SMALL LARGE KIND SUMMARIZER CLIENT MIN_TIME`: growth of time per event from
/// one session to a longer one, measured in turns. Both are read, replayed once (the first
/// replay also builds each session's caches), then replayed alternately, small then large,
/// until the turns took `MIN_TIME` seconds in all, and at least 5 turns. A turn's growth is the large
/// replay's time per event over the small one's just before it: the two ran under the same
/// load of this shared machine, and neither kept its data in the core's own cache (the other
/// replay evicted it), where separate processes let the small session (a few hundred kB)
/// stay in the core's 1 MB cache from one replay to the next while the long one (several
/// MB) could not, and another tenant's burst landed on one and not the other. Reports the
/// median growth over the turns and each session's median time.
fn child_pair(args: &[String]) -> anyhow::Result<()> {
    let [small, large, kind, summ, client, min_time] = args else {
        anyhow::bail!("--child pair SMALL LARGE KIND SUMMARIZER CLIENT MIN_TIME");
    };
    let min_time: f64 = min_time
        .parse()
        .map_err(|_| anyhow::anyhow!("min time `{min_time}`"))?;
    let case = case_args(kind, summ, client)?;
    let small = Loaded::read(small)?;
    let large = Loaded::read(large)?;
    small.replay(&case, false)?;
    large.replay(&case, false)?;
    let (mut ts, mut tl, mut growth) = (Vec::new(), Vec::new(), Vec::new());
    let (es, el) = (small.sizes.n as f64, large.sizes.n as f64);
    while ts.len() < 5 || ts.iter().chain(&tl).sum::<f64>() < min_time {
        let (s, ..) = small.replay(&case, false)?;
        let (l, ..) = large.replay(&case, false)?;
        ts.push(s);
        tl.push(l);
        growth.push((l / el) / (s / es));
    }
    println!(
        "{RESULT} small_events={es} large_events={el} turns={} small_s={:.6} large_s={:.6} \
         growth={:.4}",
        ts.len(),
        median(&mut ts),
        median(&mut tl),
        median(&mut growth)
    );
    Ok(())
}

/// An OpenAI-compatible chat-completions server on an ephemeral 127.0.0.1 port, one thread
/// per connection, each answer closing it: the summary is 600 chars made from the prompt's
/// hash (the same prompt, the same summary), usage is prompt bytes / 4 and 150 tokens.
fn stub_provider() -> anyhow::Result<String> {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}", listener.local_addr()?);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let Ok(read) = stream.try_clone() else { return };
                let mut reader = BufReader::new(read);
                let mut len = 0usize;
                let mut line = String::new();
                while reader.read_line(&mut line).unwrap_or(0) > 0 && !line.trim().is_empty() {
                    if let Some((k, v)) = line.split_once(':') {
                        if k.trim().eq_ignore_ascii_case("content-length") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                    }
                    line.clear();
                }
                let mut body = vec![0u8; len];
                if reader.read_exact(&mut body).is_err() {
                    return;
                }
                let h = xxhash_rust::xxh3::xxh3_64(&body);
                let mut text = format!("Summary {h:016x}:");
                while text.len() < 600 {
                    text.push_str(" the user asked, the agent answered");
                }
                text.truncate(600);
                let answer = serde_json::json!({
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": len / 4, "completion_tokens": 150,
                        "total_tokens": len / 4 + 150},
                })
                .to_string();
                let mut out = stream;
                let _ = write!(
                    out,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                    answer.len()
                );
            });
        }
    });
    Ok(url)
}

/// `--child inspect FILE`: `compaction-sim inspect --no-cache FILE`, in this process.
fn child_inspect(args: &[String]) -> anyhow::Result<()> {
    use clap::Parser;
    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        a: compaction_sim::cli::inspect::InspectArgs,
    }
    let [file] = args else {
        anyhow::bail!("--child inspect FILE");
    };
    let w = Wrap::try_parse_from(["inspect", "--no-cache", file.as_str()])?;
    let t = Instant::now();
    let code = compaction_sim::cli::inspect::run(w.a)?;
    let s = t.elapsed().as_secs_f64();
    if code != 0 {
        anyhow::bail!("inspect exited {code}");
    }
    println!("{RESULT} inspect_s={s:.3} peak_mib={:.1}", peak_mib());
    Ok(())
}

/// Per (setting kind, summarizer, client): (events, median s, first s, engine s) per size.
/// Per (setting kind, summarizer, client): per size, (invocations, events, warm s, first s,
/// warm engine s, fastest s, fastest engine s).
type Growth = Vec<(
    (String, String, String),
    Vec<(usize, f64, f64, f64, f64, f64, f64)>,
)>;

/// The growth table from `from` to `to` invocations: time per event at `to` over time per
/// event at `from` (1.0 = linear), for every case that ran at both.
fn print_growth(growth: &Growth, from: usize, to: usize, title: &str) {
    println!();
    println!("{title}");
    println!();
    println!(
        "| setting | summarizer | client | replay (median) | replay (fastest) | first replay | engine part (median) | engine part (fastest) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for ((kind, summ, client), v) in growth {
        let at = |n: usize| v.iter().find(|r| r.0 == n);
        // only when both ends ran (a killed case has no time)
        let (Some(a), Some(b)) = (at(from), at(to)) else {
            println!("| {kind} | {summ} | {client} | n/a (a case was killed) | | | | |");
            continue;
        };
        let g = |x: f64, y: f64| (y / b.1) / (x / a.1);
        println!(
            "| {kind} | {summ} | {client} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
            g(a.2, b.2),
            g(a.5, b.5),
            g(a.3, b.3),
            g(a.4, b.4),
            g(a.6, b.6)
        );
    }
}

/// Growth between two sizes in separate processes, `pairs` times: each pair runs the small
/// session's case in a process, then the large one's (as the table above does once). One
/// pair's growth swings with what else this shared machine runs at the moment (the same
/// binary gave 1.38 and 2.35 for one case in two runs), so the median over alternated pairs
/// is reported, with the range.
struct Alternated<'a> {
    small: &'a str,
    large: &'a str,
    /// 2, or 4 with `--tool-rounds` (a tool call and its result in every invocation).
    events_per_invocation: usize,
    reps: usize,
    min_time: f64,
    pairs: usize,
    timeout: Duration,
}

impl Alternated<'_> {
    fn print<'c>(
        &self,
        from: usize,
        to: usize,
        cases: impl Iterator<Item = (&'c String, &'c String, &'c String)>,
    ) -> anyhow::Result<()> {
        println!();
        println!(
            "Growth from {} to {} events ({from} to {to} invocations), time per event, in \
             separate processes: {} pairs per case, alternated (the small session's process, \
             then the large one's); per pair, the large process's median replay per event over \
             the small one's (1.0 = linear). Summarizer calls per event: how much more \
             summarizing the setting asks of the large session, per event, than of the small \
             one.",
            self.events_per_invocation * from,
            self.events_per_invocation * to,
            self.pairs
        );
        println!();
        println!(
            "| setting | summarizer | client | pairs | growth (median over pairs) | growth (range) \
             | growth of the fastest replays (median) | summarizer calls per event (small; large) |"
        );
        println!("|---|---|---|---|---|---|---|---|");
        for (kind, summ, client) in cases {
            let (mut median_growth, mut best_growth) = (Vec::new(), Vec::new());
            let mut per_event = (f64::NAN, f64::NAN);
            for _ in 0..self.pairs {
                let one = |file: &str| {
                    let args = [
                        "replay",
                        file,
                        kind,
                        summ,
                        client,
                        &self.reps.to_string(),
                        &self.min_time.to_string(),
                        "metrics",
                    ];
                    spawn(&args, self.timeout)
                };
                let (Some(a), Some(b)) = (one(self.small)?, one(self.large)?) else {
                    break;
                };
                let per = |c: &Case, k: &str| c.get(k) / c.get("events");
                median_growth.push(per(&b, "warm_s") / per(&a, "warm_s"));
                best_growth.push(per(&b, "best_s") / per(&a, "best_s"));
                per_event = (per(&a, "calls"), per(&b, "calls"));
            }
            if median_growth.is_empty() {
                println!("| {kind} | {summ} | {client} | killed | | | | |");
                continue;
            }
            let lo = median_growth.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = median_growth.iter().copied().fold(0.0, f64::max);
            println!(
                "| {kind} | {summ} | {client} | {} | {:.2} | {lo:.2}–{hi:.2} | {:.2} | {:.3}; {:.3} |",
                median_growth.len(),
                median(&mut median_growth),
                median(&mut best_growth),
                per_event.0,
                per_event.1
            );
        }
        Ok(())
    }
}

/// One case's numbers, parsed from the child's result line.
struct Case(Vec<(String, f64)>);

impl Case {
    fn get(&self, k: &str) -> f64 {
        self.0
            .iter()
            .find(|(n, _)| n == k)
            .map_or(f64::NAN, |(_, v)| *v)
    }
}

/// Runs one case in a child process; `None` when it ran out of `timeout` (killed).
fn spawn(args: &[&str], timeout: Duration) -> anyhow::Result<Option<Case>> {
    use std::io::Read;
    use wait_timeout::ChildExt;
    let exe = std::env::current_exe()?;
    let mut child = Command::new(exe)
        .arg("--child")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let Some(status) = child.wait_timeout(timeout)? else {
        let _ = child.kill();
        let _ = child.wait();
        return Ok(None);
    };
    let mut text = String::new();
    if let Some(mut out) = child.stdout.take() {
        out.read_to_string(&mut text)?;
    }
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(RESULT))
        .ok_or_else(|| anyhow::anyhow!("case {args:?} failed ({status})"))?;
    let kv = line
        .split_whitespace()
        .filter_map(|p| p.split_once('='))
        .filter_map(|(k, v)| Some((k.to_string(), v.parse().ok()?)))
        .collect();
    Ok(Some(Case(kv)))
}

fn write_session(dir: &Path, shape: LongShape) -> anyhow::Result<PathBuf> {
    let path = dir.join(shape.file_name());
    if path.exists() {
        return Ok(path);
    }
    let f = std::fs::File::create(&path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let mut w = std::io::BufWriter::new(f);
    write_long_session(SEED, shape, &mut w)?;
    std::io::Write::flush(&mut w)?;
    Ok(path)
}

fn list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(String::from)
        .collect()
}

fn ms(s: f64) -> String {
    format!("{:.1}", s * 1e3)
}

/// The bench's command line (everything but `--child`).
struct Options {
    sizes: Vec<usize>,
    big_events: usize,
    reps: usize,
    min_time: f64,
    summarizers: Vec<String>,
    clients: Vec<String>,
    kinds: Vec<String>,
    big: bool,
    tool_rounds: bool,
    pairs: usize,
    dir: Option<PathBuf>,
    timeout: Duration,
}

impl Options {
    fn parse(argv: Vec<String>) -> anyhow::Result<Self> {
        let mut o = Options {
            sizes: vec![1_250, 2_500, 5_000, 10_000, 20_000],
            big_events: 200_000,
            reps: 3,
            min_time: 1.0,
            summarizers: list("agent,terse"),
            clients: list("waits,streams"),
            kinds: list("token,sliding,both"),
            big: true,
            tool_rounds: false,
            pairs: 5,
            dir: None,
            timeout: Duration::from_secs(600),
        };
        let mut it = argv.into_iter();
        while let Some(a) = it.next() {
            let mut val = || {
                it.next()
                    .ok_or_else(|| anyhow::anyhow!("{a} needs a value"))
            };
            match a.as_str() {
                "--sizes" => {
                    o.sizes = list(&val()?)
                        .iter()
                        .map(|x| x.parse().map_err(|_| anyhow::anyhow!("--sizes: `{x}`")))
                        .collect::<Result<_, _>>()?
                }
                "--big-events" => {
                    o.big_events = val()?
                        .parse()
                        .map_err(|_| anyhow::anyhow!("--big-events: a number"))?
                }
                "--reps" => {
                    o.reps = val()?
                        .parse()
                        .map_err(|_| anyhow::anyhow!("--reps: a number"))?
                }
                "--min-time" => {
                    o.min_time = val()?
                        .parse()
                        .map_err(|_| anyhow::anyhow!("--min-time: seconds"))?
                }
                "--summarizers" => o.summarizers = list(&val()?),
                "--clients" => o.clients = list(&val()?),
                "--kinds" => {
                    o.kinds = list(&val()?);
                    if let Some(k) = o.kinds.iter().find(|k| config(k).is_none()) {
                        anyhow::bail!(
                            "--kinds: `{k}` is not token, sliding, both or policy:FAMILY ({})",
                            policy::FAMILIES.join(", ")
                        );
                    }
                }
                "--no-big" => o.big = false,
                // a tool round in every invocation of the sized sessions (what the policies that
                // clear tool results act on)
                "--tool-rounds" => o.tool_rounds = true,
                "--pairs" => {
                    o.pairs = val()?
                        .parse()
                        .map_err(|_| anyhow::anyhow!("--pairs: a number"))?
                }
                "--dir" => o.dir = Some(PathBuf::from(val()?)),
                "--timeout" => {
                    o.timeout = Duration::from_secs(
                        val()?
                            .parse()
                            .map_err(|_| anyhow::anyhow!("--timeout: seconds"))?,
                    )
                }
                _ => anyhow::bail!("unknown argument `{a}`"),
            }
        }
        Ok(o)
    }

    /// Every (setting kind, summarizer, client) case, in the tables' order.
    fn cases(&self) -> impl Iterator<Item = (&String, &String, &String)> {
        let (summarizers, clients) = (&self.summarizers, &self.clients);
        self.kinds.iter().flat_map(move |k| {
            summarizers
                .iter()
                .flat_map(move |s| clients.iter().map(move |c| (k, s, c)))
        })
    }

    /// A sized session's shape: `n` invocations, with a tool round each under `--tool-rounds`.
    fn shape(&self, n: usize) -> LongShape {
        LongShape {
            invocations: n,
            tool_rounds: self.tool_rounds,
        }
    }

    /// 2, or 4 with `--tool-rounds` (a tool call and its result in every invocation).
    fn events_per_invocation(&self) -> usize {
        self.shape(1).events()
    }

    /// The sized session of `n` invocations, written once into `dir`.
    fn sized_session(&self, dir: &Path, n: usize) -> anyhow::Result<String> {
        Ok(write_session(dir, self.shape(n))?
            .to_string_lossy()
            .into_owned())
    }
}

/// The main table: every case at every size, one process each; returns the numbers the
/// growth tables compare.
fn sized_cases(o: &Options, dir: &Path) -> anyhow::Result<Growth> {
    println!(
        "Per case: own process; at least {} replays with metrics, and more until the \
         replays after the first took {} s; times in ms per replay, memory = peak RSS \
         of the process (MiB).",
        o.reps, o.min_time
    );
    println!();
    println!(
        "| invocations | events | setting | summarizer | client | compactions | first replay (ms) \
         | replay (ms, median) | replay (ms, fastest) | engine part (ms, median) | µs per event (median) | peak RSS (MiB) | of it loading (MiB) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    // (kind, summarizer, client) -> (events, warm s) per size, for the growth ratios
    let mut growth: Growth = Vec::new();
    for &n in &o.sizes {
        let f = o.sized_session(dir, n)?;
        for (kind, summ, client) in o.cases() {
            let args = [
                "replay",
                &f,
                kind,
                summ,
                client,
                &o.reps.to_string(),
                &o.min_time.to_string(),
                "metrics",
            ];
            let Some(c) = spawn(&args, o.timeout)? else {
                let events = o.shape(n).events();
                println!("| {n} | {events} | {kind} | {summ} | {client} | - | > {} s (killed) | | | | | | |", o.timeout.as_secs());
                continue;
            };
            let row = sized_row(n, kind, summ, client, &c);
            let key = (kind.clone(), summ.clone(), client.clone());
            match growth.iter_mut().find(|(k, _)| *k == key) {
                Some((_, v)) => v.push(row),
                None => growth.push((key, vec![row])),
            }
        }
    }
    Ok(growth)
}

/// Prints one case's row of the main table; returns its numbers for the growth tables.
fn sized_row(
    n: usize,
    kind: &str,
    summ: &str,
    client: &str,
    c: &Case,
) -> (usize, f64, f64, f64, f64, f64, f64) {
    let ev = c.get("events");
    let warm = c.get("warm_s");
    println!(
        "| {n} | {ev} | {kind} | {summ} | {client} | {} | {} | {} | {} | {} | {:.2} | {:.0} | {:.0} |",
        c.get("compactions"),
        ms(c.get("first_s")),
        ms(warm),
        ms(c.get("best_s")),
        ms(c.get("warm_engine_s")),
        warm / ev * 1e6,
        c.get("peak_mib"),
        c.get("load_mib"),
    );
    (
        n,
        ev,
        warm,
        c.get("first_s"),
        c.get("warm_engine_s"),
        c.get("best_s"),
        c.get("best_engine_s"),
    )
}

/// The issue's measure (time per event at 20,000 events over 2,500 events: 1,250 and
/// 10,000 invocations), then the bench's widest span, from its smallest size to its largest.
fn print_growths(o: &Options, growth: &Growth) {
    let epi = o.events_per_invocation();
    let sizes = &o.sizes;
    if sizes.contains(&1_250) && sizes.contains(&10_000) {
        print_growth(
            growth,
            1_250,
            10_000,
            &format!(
                "Growth from {} to {} events (1,250 to 10,000 invocations), time per event \
                 (1.0 = linear):",
                epi * 1_250,
                epi * 10_000
            ),
        );
    }
    if let (Some(&from), Some(&to)) = (sizes.iter().min(), sizes.iter().max()) {
        if from < to && (from, to) != (1_250, 10_000) {
            print_growth(
                growth,
                from,
                to,
                &format!(
                    "Growth from {from} to {to} invocations ({} to {} events), time per \
                     event (1.0 = linear):",
                    epi * from,
                    epi * to
                ),
            );
        }
    }
}

/// The same growth measured in separate processes alternated, then in turns, one process
/// per case (see `child_pair`): between 1,250 and 10,000 invocations when both ran, else
/// between the smallest and largest size.
fn growth_in_turns(o: &Options, dir: &Path) -> anyhow::Result<()> {
    let sizes = &o.sizes;
    let pair = if sizes.contains(&1_250) && sizes.contains(&10_000) {
        Some((1_250, 10_000))
    } else {
        sizes
            .iter()
            .min()
            .zip(sizes.iter().max())
            .map(|(a, b)| (*a, *b))
    };
    let Some((from, to)) = pair.filter(|(a, b)| a < b) else {
        return Ok(());
    };
    let (small, large) = (o.sized_session(dir, from)?, o.sized_session(dir, to)?);
    let epi = o.events_per_invocation();
    if o.pairs > 0 {
        let run = Alternated {
            small: &small,
            large: &large,
            events_per_invocation: epi,
            reps: o.reps,
            min_time: o.min_time,
            pairs: o.pairs,
            timeout: o.timeout,
        };
        run.print(from, to, o.cases())?;
    }
    println!();
    println!(
        "Growth from {} to {} events ({from} to {to} invocations), time per event, the two \
         sessions replayed in turns in one process (each turn: the small one, then the \
         large one; at least {} s of turns; 1.0 = linear):",
        epi * from,
        epi * to,
        o.min_time
    );
    println!();
    println!(
        "| setting | summarizer | client | turns | small: replay (ms, median) | large: replay (ms, median) | growth (median over turns) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (kind, summ, client) in o.cases() {
        let args = [
            "pair",
            &small,
            &large,
            kind,
            summ,
            client,
            &o.min_time.to_string(),
        ];
        match spawn(&args, o.timeout)? {
            Some(c) => println!(
                "| {kind} | {summ} | {client} | {} | {:.3} | {:.3} | {:.2} |",
                c.get("turns"),
                c.get("small_s") * 1e3,
                c.get("large_s") * 1e3,
                c.get("growth")
            ),
            None => println!(
                "| {kind} | {summ} | {client} | > {} s (killed) | | | |",
                o.timeout.as_secs()
            ),
        }
    }
    Ok(())
}

/// The big session (`--big-events`, a tool round in every invocation): a replay per setting
/// kind with and without metrics, and `inspect --no-cache`.
fn big_session(o: &Options, dir: &Path) -> anyhow::Result<()> {
    let shape = LongShape {
        invocations: o.big_events.div_ceil(4),
        tool_rounds: true,
    };
    let file = write_session(dir, shape)?;
    let mb = std::fs::metadata(&file).map_or(0, |m| m.len()) as f64 / 1e6;
    let f = file.to_string_lossy().into_owned();
    let timeout = o.timeout;
    println!();
    println!(
        "Big session: {} events, {} invocations with a tool round each, {mb:.0} MB (ADK \
         export, one event per line).",
        shape.events(),
        shape.invocations
    );
    println!();
    println!(
        "| case | compactions | time (s) | peak RSS (MiB) | of it loading (MiB) | loading (s) |"
    );
    println!("|---|---|---|---|---|---|");
    for (kind, mode) in o
        .kinds
        .iter()
        .flat_map(|k| [(k.as_str(), "engine"), (k.as_str(), "metrics")])
    {
        let Some(c) = spawn(
            &["replay", &f, kind, "agent", "waits", "2", "0", mode],
            timeout,
        )?
        else {
            println!(
                "| replay ({mode}), {kind} | - | > {} s (killed) | | | |",
                timeout.as_secs()
            );
            continue;
        };
        println!(
            "| replay ({mode}), {kind} (first; second) | {} | {:.2}; {:.2} | {:.0} | {:.0} | {:.1} |",
            c.get("compactions"),
            c.get("first_s"),
            c.get("warm_s"),
            c.get("peak_mib"),
            c.get("load_mib"),
            c.get("load_s"),
        );
    }
    match spawn(&["inspect", &f], timeout)? {
        Some(c) => println!(
            "| inspect --no-cache | - | {:.2} | {:.0} | - | - |",
            c.get("inspect_s"),
            c.get("peak_mib")
        ),
        None => println!(
            "| inspect --no-cache | - | > {} s (killed) | | | |",
            timeout.as_secs()
        ),
    }
    Ok(())
}

fn run() -> anyhow::Result<()> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some("--child") {
        return match argv.get(1).map(String::as_str) {
            Some("replay") => child_replay(&argv[2..]),
            Some("pair") => child_pair(&argv[2..]),
            Some("inspect") => child_inspect(&argv[2..]),
            _ => Err(anyhow::anyhow!("--child replay|pair|inspect ...")),
        };
    }
    let o = Options::parse(argv)?;
    let tmp = tempfile::tempdir()?;
    let dir = o.dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir)?;
    let growth = sized_cases(&o, &dir)?;
    print_growths(&o, &growth);
    growth_in_turns(&o, &dir)?;
    if o.big {
        big_session(&o, &dir)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
