//! Sweep benchmark (docs/benchmarks.md "Sweep" and "Scale: many sessions"):
//!
//! ```text
//! cargo run --release --bin sweep-bench -- [--corpus DIR] [--grid FILE.toml] [--settings N] [--out FILE.json]
//! cargo run --release --bin sweep-bench -- --scale 1000,10000,100000 [--sim BIN] [--work DIR] [--max-rss-mib M] [--timeout-s S] [--out FILE.json]
//! ```
//!
//! Corpus mode sweeps a grid of at least 1,000 settings over every session of the corpus and
//! reports settings×sessions per second, event-steps per second, peak memory and the time
//! split over parse, count, replay, rows (streamed into runs.parquet and runs.csv), aggregate
//! (read back from the Parquet) and write; then repeats at half the sessions and half the
//! settings to show how time grows. Token counts are warmed first, so `count` is the cached
//! case.
//!
//! Scale mode (`--scale`) writes N short synthetic sessions per case (synth's short sessions,
//! 2-5 user turns each: the "tiny sessions" of issue 13) and runs `compaction-sim sweep` over
//! them with the default grid (105 settings), each case in its own process, measuring wall
//! time and that process's peak resident memory (`wait4` rusage); `--sim` names the binary
//! (another build, to measure before and after).

use anyhow::{anyhow, bail};
use compaction_sim::run::{Destination, Inputs, Phase, Progress, Summarizers, SweepJob};
use compaction_sim::sweep::grid::{GridSpec, Known};
use compaction_sim::sweep::pipeline::{self, Costing, PrepTimes};
use compaction_sim::sweep::plan::{Alternatives, SweepPlan};
use compaction_sim::sweep::run::SessionInfo;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::Instant;

/// 42 after_tokens × 5 keep_recent_events + 10 after_invocations × 4 overlaps = 250 triggers,
/// × 2 modelled summarizers × 2 client modes = 1,000 compaction settings, + 1 baseline.
/// (`terse` runs the summarizer for real: tokenizing its text and checking facts costs more
/// per replay; measure it with `--grid`.)
const BENCH_GRID: &str = r#"
trigger = ["tokens", "invocations"]
after_tokens = "5k..210k:5k"
keep_recent_events = [0, 2, 5, 10, 20]
after_invocations = [1, 2, 3, 4, 5, 6, 8, 10, 15, 20]
overlap = [0, 1, 2, 3]
summarizer = ["agent", "model:gemini-2.5-flash-lite"]
client = ["waits", "streams"]
"#;

/// Seed of the synthetic sessions (synth's default, so they are the sample transcripts' kin).
const SYNTH_SEED: u64 = 6;

fn corpus_default() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if p.exists() {
        p
    } else {
        PathBuf::from("/work/shared/corpus")
    }
}

/// Peak resident memory of this process, MiB (Linux `VmHWM`; `None` elsewhere).
fn peak_mib() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// CPU seconds (user + system) this process has used so far (Linux `/proc/self/stat`, 100
/// ticks per second); on a shared machine this, divided by the threads, is the wall time
/// the phase would take on idle cores.
fn cpu_s() -> f64 {
    let Ok(s) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the `(comm)`: state is field 3; utime and stime are fields 14 and 15.
    let rest = s.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (tick(11) + tick(12)) / 100.0
}

struct Measure {
    parse_s: f64,
    read_s: f64,
    count_s: f64,
    sessions: usize,
    settings: usize,
    pairs: u64,
    event_steps: u64,
    size_s: f64,
    replay_s: f64,
    replay_cpu_s: f64,
    rows_s: f64,
    aggregate_s: f64,
    write_s: f64,
    report_s: f64,
    publish_s: f64,
}

/// A run's phases timed through the library's progress sink: wall and CPU seconds per
/// phase (a phase met once per window adds up), the windows' read/count/size split, the
/// sessions listed.
#[derive(Default)]
struct Clock {
    open: Mutex<HashMap<Phase, (Instant, f64)>>,
    spent: Mutex<HashMap<Phase, (f64, f64)>>,
    prep: Mutex<PrepTimes>,
    events: Mutex<u64>,
}

impl Clock {
    /// Wall and CPU seconds spent in `phase`.
    fn spent(&self, phase: Phase) -> (f64, f64) {
        let spent = self.spent.lock().map(|s| s.get(&phase).copied());
        spent.ok().flatten().unwrap_or((0.0, 0.0))
    }
}

impl Progress for Clock {
    fn listed(&self, sessions: &[SessionInfo]) {
        if let Ok(mut e) = self.events.lock() {
            *e = sessions.iter().map(|i| i.events).sum();
        }
    }

    fn prepared(&self, times: PrepTimes) {
        if let Ok(mut p) = self.prep.lock() {
            *p = times;
        }
    }

    fn began(&self, phase: Phase) {
        if let Ok(mut o) = self.open.lock() {
            o.insert(phase, (Instant::now(), cpu_s()));
        }
    }

    fn ended(&self, phase: Phase) {
        let Some((t, c)) = self.open.lock().ok().and_then(|mut o| o.remove(&phase)) else {
            return;
        };
        if let Ok(mut s) = self.spent.lock() {
            let e = s.entry(phase).or_default();
            e.0 += t.elapsed().as_secs_f64();
            e.1 += cpu_s() - c;
        }
    }
}

/// One sweep of `plan` over the corpus (`sample` sessions of it when given), through the
/// library's [`compaction_sim::run::sweep`], the call `sweep` makes: the inputs listed
/// (parse), then a window at a time read again, counted, sized and replayed, rows streamed
/// into runs.parquet (and runs.csv), the aggregates read back from the Parquet, the run's
/// files, timelines and report written and the folder published at `out`.
fn measure(
    corpus: &Path,
    sample: Option<u64>,
    plan: &SweepPlan,
    costing: &Costing,
    cache: &pipeline::CacheOpts,
    out: &Path,
) -> anyhow::Result<Measure> {
    let clock = Clock::default();
    let job = SweepJob {
        plan: plan.clone(),
        costing,
        inputs: Inputs {
            paths: vec![corpus.display().to_string()],
            sample,
            ..Inputs::default()
        },
        destination: Destination {
            out: Some(out.to_path_buf()),
            reports: out.with_extension("reports"),
            force: true,
        },
        shard: None,
        runs_csv: false,
        cache: cache.clone(),
        summarizers: Summarizers {
            timeout: compaction_sim::summarize::DEFAULT_COMMAND_TIMEOUT,
            live: Vec::new(),
            live_concurrency: 1,
        },
        cancel: &AtomicBool::new(false),
    };
    let run = compaction_sim::run::sweep(job, &clock).map_err(|e| e.into_inner())?;
    if let Some(f) = run
        .finished
        .as_ref()
        .and_then(|f| f.report_refused.as_ref())
    {
        eprintln!("note: {f}");
    }
    let prep = clock.prep.lock().map(|p| *p).unwrap_or_default();
    let (window, window_cpu) = clock.spent(Phase::Window);
    let (rows_s, rows_cpu) = clock.spent(Phase::Rows);
    let (replay, replay_cpu) = clock.spent(Phase::Replay);
    let events = clock.events.lock().map(|e| *e).unwrap_or(0);
    Ok(Measure {
        parse_s: clock.spent(Phase::List).0,
        read_s: prep.read_s,
        count_s: prep.count_s,
        sessions: run.sessions,
        settings: run.settings,
        pairs: run.sessions as u64 * run.settings as u64,
        event_steps: events * run.settings as u64,
        size_s: prep.size_s,
        replay_s: replay - window - rows_s,
        // CPU outside the replays (preparing windows, encoding rows) left out.
        replay_cpu_s: replay_cpu - window_cpu - rows_cpu,
        rows_s,
        aggregate_s: clock.spent(Phase::Aggregate).0,
        write_s: clock.spent(Phase::Write).0,
        report_s: clock.spent(Phase::Report).0,
        publish_s: clock.spent(Phase::Publish).0,
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = if args.iter().any(|a| a == "--scale") {
        scale(&args)
    } else {
        run(&args)
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The bench's command line (the default mode, not `--scale`).
struct Options {
    corpus: PathBuf,
    max_settings: Option<usize>,
    json_out: Option<PathBuf>,
    grid_text: String,
}

/// `Ok(None)`: `--help` was printed.
fn parse_options(argv: &[String]) -> anyhow::Result<Option<Options>> {
    let mut o = Options {
        corpus: corpus_default(),
        max_settings: None,
        json_out: None,
        grid_text: BENCH_GRID.to_string(),
    };
    let mut args = argv.iter().cloned();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--corpus" => {
                o.corpus = PathBuf::from(
                    args.next()
                        .ok_or_else(|| anyhow!("--corpus needs a folder"))?,
                )
            }
            "--settings" => {
                o.max_settings = Some(
                    args.next()
                        .and_then(|v| v.parse().ok())
                        .ok_or_else(|| anyhow!("--settings needs a number"))?,
                )
            }
            "--out" => {
                o.json_out = Some(PathBuf::from(
                    args.next().ok_or_else(|| anyhow!("--out needs a file"))?,
                ))
            }
            "--grid" => {
                let p = PathBuf::from(args.next().ok_or_else(|| anyhow!("--grid needs a file"))?);
                o.grid_text =
                    std::fs::read_to_string(&p).map_err(|e| anyhow!("{}: {e}", p.display()))?;
            }
            "-h" | "--help" => {
                println!("sweep-bench [--corpus DIR] [--grid FILE.toml] [--settings N] [--out FILE.json]");
                println!("sweep-bench --scale N,N,... [--sim BIN] [--work DIR] [--max-rss-mib M] [--timeout-s S] [--out FILE.json]");
                return Ok(None);
            }
            other => bail!("unknown argument `{other}`"),
        }
    }
    Ok(Some(o))
}

fn run(argv: &[String]) -> anyhow::Result<()> {
    let Some(o) = parse_options(argv)? else {
        return Ok(());
    };
    let threads = rayon::current_num_threads();
    let costing = Costing::load(None, None)?;
    let known = |m: &str| costing.knows_model(m);
    let toks = pipeline::tokenizer_names();
    let grid = GridSpec::from_toml("bench grid", &o.grid_text)
        .and_then(|g| {
            g.resolve(&Known {
                model: &known,
                tokenizers: &toks,
            })
        })
        .map_err(|e| anyhow!(e.0))?;
    // The bench grid as it is: no alternatives added from the data.
    let mut plan = SweepPlan {
        grid,
        alternatives: Alternatives::None,
        max_settings: u64::MAX,
    };
    if let Some(n) = o.max_settings {
        plan.grid.settings.truncate(n.max(1));
    }
    let cache = pipeline::cache_opts(None, false);
    let tmp = tempfile::tempdir()?;
    let (n, count_cold_s) = warm_token_cache(&o.corpus, &plan, &costing, &cache, tmp.path())?;
    let mut half_settings = plan.clone();
    half_settings
        .grid
        .settings
        .truncate(plan.grid.settings.len().div_ceil(2));
    let m = |sample: Option<u64>, plan: &SweepPlan, name: &str| {
        measure(
            &o.corpus,
            sample,
            plan,
            &costing,
            &cache,
            &tmp.path().join(name),
        )
    };
    let half = Some((n as u64).div_ceil(2));
    let runs = [
        ("full", m(None, &plan, "full")?),
        ("half sessions", m(half, &plan, "half-sessions")?),
        ("half settings", m(None, &half_settings, "half-settings")?),
    ];
    let peak = peak_mib();

    let full = &runs[0].1;
    print_phases(full, threads, peak);
    let json_runs = print_growth(&runs);
    if let Some(p) = o.json_out {
        let v = serde_json::json!({
            "threads": threads, "parse_s": full.parse_s, "count_cold_s": count_cold_s,
            "count_s": full.count_s, "peak_mib": peak, "runs": json_runs,
        });
        std::fs::write(&p, serde_json::to_string_pretty(&v).unwrap_or_default())
            .map_err(|e| anyhow!("{}: {e}", p.display()))?;
    }
    Ok(())
}

/// Warms the on-disk token cache once (all sessions, through a sweep of the first setting
/// alone), so `count` is the cached case in the measured runs. Returns the number of
/// sessions and the cold count's seconds.
fn warm_token_cache(
    corpus: &Path,
    plan: &SweepPlan,
    costing: &Costing,
    cache: &pipeline::CacheOpts,
    tmp: &Path,
) -> anyhow::Result<(usize, f64)> {
    let t = Instant::now();
    let mut one = plan.clone();
    one.grid.settings.truncate(1);
    let warm = measure(corpus, None, &one, costing, cache, &tmp.join("warm"))?;
    eprintln!(
        "listed and counted {} sessions ({} events) in {:.2} s",
        warm.sessions,
        warm.event_steps,
        t.elapsed().as_secs_f64()
    );
    eprintln!("count (cold): {:.2} s", warm.count_s);
    Ok((warm.sessions, warm.count_s))
}

/// The full run's time per phase, its replay CPU and rates, and the process's peak memory.
fn print_phases(full: &Measure, threads: usize, peak: Option<f64>) {
    let (parse_s, read_s, count_s) = (full.parse_s, full.read_s, full.count_s);
    let wall = parse_s
        + read_s
        + count_s
        + full.size_s
        + full.replay_s
        + full.rows_s
        + full.aggregate_s
        + full.write_s
        + full.report_s
        + full.publish_s;
    println!(
        "sweep-bench: {} settings × {} sessions = {} replays on {threads} threads",
        full.settings, full.sessions, full.pairs
    );
    let line = |name: &str, s: f64, note: &str| {
        println!("  {name:<9} {:>8.2} s  {:>5.1}%{note}", s, 100.0 * s / wall)
    };
    line("parse", parse_s, "  (first pass: every input listed)");
    line("read", read_s, "  (each window's sessions read again)");
    line("count", count_s, "  (tokens cached)");
    line(
        "size",
        full.size_s,
        "  (per window: per-event arrays, cost inputs)",
    );
    line("replay", full.replay_s, "");
    line(
        "rows",
        full.rows_s,
        "  (frames, runs.parquet + runs.csv, streamed)",
    );
    line(
        "aggregate",
        full.aggregate_s,
        "  (read back from runs.parquet)",
    );
    line(
        "write",
        full.write_s,
        "  (timelines and the run's data files)",
    );
    line(
        "report",
        full.report_s,
        "  (charts, report.md, report.html)",
    );
    line("publish", full.publish_s, "  (the folder moved into place)");
    println!("  total     {:>8.2} s", wall);
    println!(
        "  replay CPU {:.2} s = {:.2} s on {threads} idle cores (load average now: {})",
        full.replay_cpu_s,
        full.replay_cpu_s / threads as f64,
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split_whitespace()
            .next()
            .unwrap_or("?")
    );
    println!(
        "  {:.0} settings×sessions/s, {:.0} event-steps/s (replay phase)",
        full.pairs as f64 / full.replay_s,
        full.event_steps as f64 / full.replay_s
    );
    println!(
        "  peak memory {}",
        peak.map_or("unknown".to_string(), |m| format!("{m:.0} MiB (VmHWM)"))
    );
}

/// The three runs side by side (full, half the sessions, half the settings); returns them
/// for `--out`.
fn print_growth(runs: &[(&str, Measure)]) -> Vec<serde_json::Value> {
    println!(
        "growth (read + count + size + replay + rows + aggregate + write + report + publish):"
    );
    let mut json_runs = Vec::new();
    for (name, m) in runs {
        let t = m.read_s
            + m.count_s
            + m.size_s
            + m.replay_s
            + m.rows_s
            + m.aggregate_s
            + m.write_s
            + m.report_s
            + m.publish_s;
        println!(
            "  {name:<14} {:>5} settings × {:>4} sessions: {:>7.2} s ({:>7.2} replay CPU-s), {:>8.0} replays/s, {:>10.0} event-steps/s",
            m.settings,
            m.sessions,
            t,
            m.replay_cpu_s,
            m.pairs as f64 / m.replay_s,
            m.event_steps as f64 / m.replay_s
        );
        json_runs.push(serde_json::json!({
            "name": name, "settings": m.settings, "sessions": m.sessions, "replays": m.pairs,
            "event_steps": m.event_steps, "parse_s": m.parse_s, "read_s": m.read_s,
            "count_s": m.count_s, "size_s": m.size_s, "replay_s": m.replay_s,
            "replay_cpu_s": m.replay_cpu_s, "rows_s": m.rows_s, "aggregate_s": m.aggregate_s,
            "write_s": m.write_s, "report_s": m.report_s, "publish_s": m.publish_s,
        }));
    }
    json_runs
}

/// Synth index of the `k`-th short session (synth makes 3 short sessions in every 8).
fn short_index(k: usize) -> usize {
    8 * (k / 3) + [0, 3, 6][k % 3]
}

/// `dir` holding `n` short synthetic sessions, written unless a complete earlier copy is there.
fn synthetic(dir: &Path, n: usize) -> anyhow::Result<()> {
    use rayon::prelude::*;
    let done = dir.join(".complete");
    if std::fs::read_to_string(&done).ok().as_deref() == Some(&n.to_string()) {
        return Ok(());
    }
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| anyhow!("{}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| anyhow!("{}: {e}", dir.display()))?;
    let t = Instant::now();
    let bytes: u64 = (0..n)
        .into_par_iter()
        .map(|k| {
            let f = compaction_sim::synth::generate_one(SYNTH_SEED, short_index(k));
            std::fs::write(dir.join(&f.file_name), &f.json)
                .map(|_| f.json.len() as u64)
                .map_err(|e| anyhow!("{}: {e}", dir.display()))
        })
        .try_reduce(|| 0, |a, b| Ok(a + b))?;
    std::fs::write(&done, n.to_string()).map_err(|e| anyhow!("{}: {e}", done.display()))?;
    eprintln!(
        "wrote {n} short synthetic sessions ({:.1} MB) to {} in {:.1} s",
        bytes as f64 / 1e6,
        dir.display(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// How one child process ended.
struct Child {
    wall_s: f64,
    /// Peak resident set, MiB (the kernel's `ru_maxrss`).
    peak_mib: f64,
    /// `None`: finished (with this exit code); `Some(why)`: stopped by the benchmark.
    stopped: Option<String>,
    code: i32,
}

/// Run `cmd` to its end (or stop it past `max_rss_mib` resident or `timeout_s`), measuring
/// its wall time and peak memory on its own (`wait4` gives that child's rusage).
fn run_child(
    mut cmd: std::process::Command,
    max_rss_mib: f64,
    timeout_s: f64,
) -> anyhow::Result<Child> {
    let t = Instant::now();
    let mut child = cmd.spawn().map_err(|e| anyhow!("cannot start: {e}"))?;
    let pid = child.id() as libc::pid_t;
    let mut stopped = None;
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: an all-zero rusage is a valid value for the kernel to fill in.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let flags = if stopped.is_some() { 0 } else { libc::WNOHANG };
        // SAFETY: wait4 on our own child with valid pointers to locals.
        let r = unsafe { libc::wait4(pid, &mut status, flags, &mut usage) };
        if r == pid {
            let code = if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                -1
            };
            return Ok(Child {
                wall_s: t.elapsed().as_secs_f64(),
                peak_mib: usage.ru_maxrss as f64 / 1024.0,
                stopped,
                code,
            });
        }
        if r < 0 {
            bail!("wait4: {}", std::io::Error::last_os_error());
        }
        let rss = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|v| v.parse::<f64>().ok())
            })
            .map_or(0.0, |kb| kb / 1024.0);
        let secs = t.elapsed().as_secs_f64();
        if rss > max_rss_mib || secs > timeout_s {
            stopped = Some(format!(
                "stopped at {rss:.0} MiB resident after {secs:.0} s (limits {max_rss_mib:.0} MiB, {timeout_s:.0} s)"
            ));
            let _ = child.kill();
            continue;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// `--scale`'s command line.
struct ScaleOptions {
    cases: Vec<usize>,
    sim: PathBuf,
    work: Option<PathBuf>,
    max_rss_mib: f64,
    timeout_s: f64,
    json_out: Option<PathBuf>,
}

fn parse_scale_options(argv: &[String]) -> anyhow::Result<ScaleOptions> {
    let mut cases: Vec<usize> = Vec::new();
    let mut sim: Option<PathBuf> = None;
    let mut work: Option<PathBuf> = None;
    let mut max_rss_mib = 8192.0;
    let mut timeout_s = 1800.0;
    let mut json_out: Option<PathBuf> = None;
    let mut args = argv.iter().cloned();
    let num = |v: Option<String>, what: &str| -> anyhow::Result<f64> {
        v.and_then(|v| v.replace('_', "").parse().ok())
            .ok_or_else(|| anyhow!("{what} needs a number"))
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--scale" => {
                let v = args
                    .next()
                    .ok_or_else(|| anyhow!("--scale needs N,N,..."))?;
                for n in v.split(',') {
                    cases.push(
                        n.trim()
                            .replace('_', "")
                            .parse()
                            .map_err(|_| anyhow!("--scale: `{n}` is not a count"))?,
                    );
                }
            }
            "--sim" => {
                sim = Some(PathBuf::from(
                    args.next().ok_or_else(|| anyhow!("--sim needs a binary"))?,
                ))
            }
            "--work" => {
                work = Some(PathBuf::from(
                    args.next()
                        .ok_or_else(|| anyhow!("--work needs a folder"))?,
                ))
            }
            "--max-rss-mib" => max_rss_mib = num(args.next(), "--max-rss-mib")?,
            "--timeout-s" => timeout_s = num(args.next(), "--timeout-s")?,
            "--out" => {
                json_out = Some(PathBuf::from(
                    args.next().ok_or_else(|| anyhow!("--out needs a file"))?,
                ))
            }
            other => bail!("unknown argument `{other}`"),
        }
    }
    let sim = match sim {
        Some(s) => s,
        None => std::env::current_exe()?.with_file_name("compaction-sim"),
    };
    Ok(ScaleOptions {
        cases,
        sim,
        work,
        max_rss_mib,
        timeout_s,
        json_out,
    })
}

/// `--scale`: `compaction-sim sweep` over ever more short synthetic sessions, each case in
/// its own process, with its wall time and peak memory against the previous case's.
fn scale(argv: &[String]) -> anyhow::Result<()> {
    let ScaleOptions {
        cases,
        sim,
        work,
        max_rss_mib,
        timeout_s,
        json_out,
    } = parse_scale_options(argv)?;
    let tmp = tempfile::tempdir()?;
    let work = work.unwrap_or_else(|| tmp.path().to_path_buf());
    println!(
        "sweep-bench --scale: `{} sweep` over short synthetic sessions, default grid (105 settings), --no-cache, each case in its own process",
        sim.display()
    );
    println!(
        "  {:>8} {:>10} {:>9} {:>10} {:>8} {:>8}  note",
        "sessions", "rows", "wall s", "peak MiB", "time ×", "mem ×"
    );
    let mut prev: Option<(usize, f64, f64)> = None;
    let mut json = Vec::new();
    for &n in &cases {
        let dir = work.join(format!("short-{n}"));
        synthetic(&dir, n)?;
        let out = work.join(format!("run-{n}"));
        let mut cmd = std::process::Command::new(&sim);
        cmd.arg("sweep")
            .arg(&dir)
            .args(["--quiet", "--no-cache", "--force", "--out"])
            .arg(&out)
            .stdout(std::process::Stdio::null());
        let c = run_child(cmd, max_rss_mib, timeout_s)?;
        let rows = n as u64 * 105;
        let (tx, mx) = match prev {
            Some((pn, pt, pm)) if c.stopped.is_none() => (
                format!("{:.2}", c.wall_s / pt / (n as f64 / pn as f64)),
                format!("{:.2}", c.peak_mib / pm),
            ),
            _ => ("".into(), "".into()),
        };
        let note = match (&c.stopped, c.code) {
            (Some(why), _) => why.clone(),
            (None, 0) | (None, 1) => String::new(),
            (None, code) => format!("exit code {code}"),
        };
        println!(
            "  {n:>8} {rows:>10} {:>9.1} {:>10.0} {tx:>8} {mx:>8}  {note}",
            c.wall_s, c.peak_mib
        );
        json.push(serde_json::json!({
            "sessions": n, "rows": rows, "wall_s": c.wall_s, "peak_mib": c.peak_mib,
            "stopped": c.stopped, "exit_code": c.code,
        }));
        if c.stopped.is_none() {
            prev = Some((n, c.wall_s, c.peak_mib));
        }
        let _ = std::fs::remove_dir_all(&out);
    }
    println!("  time × = (wall time / previous wall time) / (sessions / previous sessions): 1.00 is linear");
    if let Some(p) = json_out {
        std::fs::write(&p, serde_json::to_string_pretty(&json).unwrap_or_default())
            .map_err(|e| anyhow!("{}: {e}", p.display()))?;
    }
    Ok(())
}
