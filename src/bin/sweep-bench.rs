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
use compaction_sim::sweep::grid::{GridSpec, Known, Setting};
use compaction_sim::sweep::pipeline::{self, Catalog, Costing, Counted};
use compaction_sim::sweep::run::run_windows;
use compaction_sim::table::frames::{
    csv_bytes, parquet_bytes, settings_frame, settings_json, RunsWriter,
};
use compaction_sim::table::rundir::outcome_parquet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
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
}

/// The corpus listed, as `sweep` lists its inputs (the first pass).
fn scan(corpus: &Path, grid: &compaction_sim::sweep::ResolvedGrid) -> anyhow::Result<Catalog> {
    Catalog::scan(
        &[corpus.display().to_string()],
        None,
        &Default::default(),
        &grid.tokenizer,
    )
}

/// One sweep of `settings` over the sessions `which`, through the code `sweep` runs: the
/// inputs listed (parse), then a window at a time read again, counted, sized and replayed,
/// rows streamed into runs.parquet (and runs.csv), the aggregates read back from the Parquet,
/// the settings files written.
#[allow(clippy::too_many_arguments)]
fn measure(
    corpus: &Path,
    which: &[u32],
    settings: &[Setting],
    grid: &compaction_sim::sweep::ResolvedGrid,
    costing: &Costing,
    cache: &pipeline::CacheOpts,
    out: &Path,
) -> anyhow::Result<Measure> {
    let t = Instant::now();
    let catalog = scan(corpus, grid)?;
    let parse_s = t.elapsed().as_secs_f64();
    let infos = catalog.infos.clone();
    let infos = &infos;
    let mut counted = Counted::new(catalog, &grid.tokenizer, costing, cache)?;
    let rows = (which.len() * settings.len()) as u64;
    let mut w = RunsWriter::create(
        out,
        infos,
        settings,
        compaction_sim::table::rundir::wants_runs_csv(rows, false),
    )?;
    let t = Instant::now();
    let c = cpu_s();
    let mut rows_s = 0.0;
    // CPU outside the replays (preparing windows, encoding rows), to leave the replays' own.
    let other_cpu_s = std::cell::Cell::new(0.0);
    let mut failures = Vec::new();
    let events = |s: u32| infos[s as usize].events;
    run_windows::<_, anyhow::Error>(
        which,
        &events,
        settings,
        &mut |win: &[u32]| {
            let c = cpu_s();
            let e = counted.window(win);
            other_cpu_s.set(other_cpu_s.get() + cpu_s() - c);
            e
        },
        &AtomicBool::new(false),
        &|| {},
        &mut |_, r, f| {
            let (t, c) = (Instant::now(), cpu_s());
            w.push(r)?;
            rows_s += t.elapsed().as_secs_f64();
            other_cpu_s.set(other_cpu_s.get() + cpu_s() - c);
            failures.extend(f);
            Ok(())
        },
    )?;
    let t1 = Instant::now();
    w.finish()?;
    rows_s += t1.elapsed().as_secs_f64();
    let total_s = t.elapsed().as_secs_f64();
    let replay_cpu_s = cpu_s() - c - other_cpu_s.get();
    let prep = counted.times;
    let size_s = prep.read_s + prep.count_s + prep.size_s;
    if let Some((s, set, m)) = failures.first() {
        eprintln!(
            "note: {} replays failed (first: session {s}, setting {set}: {m})",
            failures.len()
        );
    }
    let t = Instant::now();
    let o = outcome_parquet(settings, &out.join("runs.parquet"), &grid.budget)?;
    let aggregate_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut set = settings_frame(&o.summaries)?;
    let write = |name: &str, b: Vec<u8>| std::fs::write(out.join(name), b);
    write("settings.parquet", parquet_bytes(&mut set)?)?;
    write("settings.csv", csv_bytes(&mut set)?)?;
    write("settings.json", settings_json(&o.summaries)?.into_bytes())?;
    let write_s = t.elapsed().as_secs_f64();
    let steps_per_pass: u64 = which.iter().map(|&s| infos[s as usize].events).sum();
    Ok(Measure {
        parse_s,
        read_s: prep.read_s,
        count_s: prep.count_s,
        sessions: which.len(),
        settings: settings.len(),
        pairs: rows,
        event_steps: steps_per_pass * settings.len() as u64,
        size_s: prep.size_s,
        replay_s: total_s - rows_s - size_s,
        replay_cpu_s,
        rows_s,
        aggregate_s,
        write_s,
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
    let mut settings = grid.settings.clone();
    if let Some(n) = o.max_settings {
        settings.truncate(n.max(1));
    }

    let cache = pipeline::cache_opts(None, false);
    let (n, count_cold_s) = warm_token_cache(&o.corpus, &grid, &costing, &cache)?;

    let tmp = tempfile::tempdir()?;
    let all: Vec<u32> = (0..n as u32).collect();
    let half_sessions: Vec<u32> = all.iter().copied().filter(|i| i % 2 == 0).collect();
    let half_settings: Vec<Setting> = settings
        .iter()
        .take(settings.len().div_ceil(2))
        .cloned()
        .collect();

    let m = |which: &[u32], set: &[Setting]| {
        measure(&o.corpus, which, set, &grid, &costing, &cache, tmp.path())
    };
    let runs = [
        ("full", m(&all, &settings)?),
        ("half sessions", m(&half_sessions, &settings)?),
        ("half settings", m(&all, &half_settings)?),
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

/// Warms the on-disk token cache once (all sessions), so `count` is the cached case in the
/// measured runs. Returns the number of sessions and the cold count's seconds.
fn warm_token_cache(
    corpus: &Path,
    grid: &compaction_sim::sweep::ResolvedGrid,
    costing: &Costing,
    cache: &pipeline::CacheOpts,
) -> anyhow::Result<(usize, f64)> {
    let t = Instant::now();
    let catalog = scan(corpus, grid)?;
    let n = catalog.len();
    let total_events: u64 = catalog.infos.iter().map(|i| i.events).sum();
    eprintln!(
        "listed {n} sessions ({total_events} events, {} files skipped) in {:.2} s",
        catalog.skipped.len(),
        t.elapsed().as_secs_f64()
    );
    let all: Vec<u32> = (0..n as u32).collect();
    let mut warm = Counted::new(catalog, &grid.tokenizer, costing, cache)?;
    drop(warm.window(&all)?);
    warm.save_counts();
    let count_cold_s = warm.times.count_s;
    drop(warm);
    eprintln!("count (cold): {count_cold_s:.2} s");
    Ok((n, count_cold_s))
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
        + full.write_s;
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
    line("write", full.write_s, "  (settings files)");
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
    println!("growth (read + count + size + replay + rows + aggregate + write):");
    let mut json_runs = Vec::new();
    for (name, m) in runs {
        let t = m.read_s + m.count_s + m.size_s + m.replay_s + m.rows_s + m.aggregate_s + m.write_s;
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
            "write_s": m.write_s,
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
