//! Replay benchmark (docs/benchmarks.md "Replay"):
//!
//! ```text
//! cargo run --release --bin replay-bench -- [--corpus DIR] [--longest N] [--python PY]
//!                                           [--oracle-sample FILE,FILE] [--no-oracle]
//! ```
//!
//! The data's path: read the corpus, count tokens once (o200k, the on-disk cache), build the
//! per-event arrays (`SessionSizes`) of the `N` longest sessions (most events; default 10),
//! then replay each of them under a grid of settings (token pair, sliding pair, both) with the
//! engine, on a rayon pool of 1 thread (per core) and of all cores.
//!
//! **Event-steps** of one replay = events in the session × model requests in the session:
//! every model request is a step at which ADK looks at the whole event list (pre-request
//! check, contents), the same count as the ignored test `replay_throughput` in
//! `tests/engine.rs`. The table also gives plain events/s (events per replay, as
//! `sweep-bench` counts its event-steps), so neither definition hides the other.
//!
//! Then the oracle (the real google-adk 2.13.0 code, `shared/oracle/adk_oracle.py`) runs a
//! sample of replays: the longest ADK sessions the repo holds (the oracle goldens t03 and t05,
//! 299 and 241 events, unless `--oracle-sample` names others), each under one token, one
//! sliding and one combined setting. The engine replays the same files with the same settings
//! and ADK's chars/4 sizes (as `conform` does), and the compaction counts are compared as a
//! sanity check. The ratio is oracle time per replay / engine time per replay, in wall time and
//! in CPU time (the oracle reports its own `time.process_time()`), and in CPU time without the
//! interpreter's start-up (importing ADK), measured on its own.
//!
//! Wall and CPU time are both printed: on a loaded machine a thread gets a fraction of a core,
//! so "per core" is best read as per CPU-second (this process's user + system time, 10 ms
//! ticks). Each grid row repeats whole passes for at least `--min-seconds` (default 2) of wall
//! time; each sample replay of the engine too.

use compaction_sim::engine::summarizer::{Deterministic, Policy};
use compaction_sim::engine::{self, Config, UsageMode};
use compaction_sim::tokens::sizes::SessionSizes;
use compaction_sim::tokens::{count_sessions, CacheOpts, Tokenizer};
use compaction_sim::transcript::{load_paths, Session};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

fn repo_or_shared(rel: &str, fallback: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    if p.exists() {
        p
    } else {
        PathBuf::from(fallback)
    }
}

/// The grid, in tokens of the run tokenizer (o200k): 15 token, 12 sliding, 10 combined.
fn grid() -> Vec<(&'static str, Config)> {
    let cfg = |token, sliding| Config {
        token,
        sliding,
        usage: UsageMode::Adjust,
        pre_request: true,
    };
    let mut g = Vec::new();
    let thresholds = [10_000u64, 20_000, 40_000, 80_000, 120_000];
    for t in thresholds {
        for keep in [0u64, 5, 20] {
            g.push(("token", cfg(Some((t, keep)), None)));
        }
    }
    for interval in [1u64, 2, 3, 5] {
        for overlap in [0u64, 1, 2] {
            g.push(("sliding", cfg(None, Some((interval, overlap)))));
        }
    }
    for t in thresholds {
        for interval in [2u64, 5] {
            g.push(("both", cfg(Some((t, 5)), Some((interval, 1)))));
        }
    }
    g
}

/// This process's CPU seconds (user + system, Linux `/proc/self/stat`; 0 elsewhere).
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let f: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks: f64 = f.get(11..13).map_or(0.0, |x| {
        x.iter().filter_map(|v| v.parse::<f64>().ok()).sum()
    });
    ticks / 100.0
}

/// One replay unit: a session's arrays plus what a replay of it is worth.
struct Item {
    sizes: SessionSizes,
    events: u64,
    requests: u64,
}

/// Replays every (item, setting) pair once; returns the compactions fired (a checksum that
/// also keeps the work from being optimised away).
fn pass(items: &[Item], settings: &[&Config], summ: &Deterministic, parallel: bool) -> u64 {
    let one = |(i, c): (usize, usize)| {
        engine::replay(&items[i].sizes, settings[c], summ)
            .totals
            .compactions as u64
    };
    let pairs: Vec<(usize, usize)> = (0..items.len())
        .flat_map(|i| (0..settings.len()).map(move |c| (i, c)))
        .collect();
    if parallel {
        pairs.into_par_iter().map(one).sum()
    } else {
        pairs.into_iter().map(one).sum()
    }
}

struct Measured {
    replays: u64,
    event_steps: u64,
    events: u64,
    wall_s: f64,
    cpu_s: f64,
    compactions: u64,
}

/// Repeats whole passes until `min_s` of wall time has gone by (at least one pass).
fn measure(
    items: &[Item],
    settings: &[&Config],
    summ: &Deterministic,
    threads: usize,
    min_s: f64,
) -> Result<Measured, String> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| e.to_string())?;
    let per_pass_steps: u64 =
        items.iter().map(|it| it.events * it.requests).sum::<u64>() * settings.len() as u64;
    let per_pass_events: u64 =
        items.iter().map(|it| it.events).sum::<u64>() * settings.len() as u64;
    let (w, c) = (Instant::now(), cpu_s());
    let mut passes = 0u64;
    let mut compactions = 0;
    while passes == 0 || w.elapsed().as_secs_f64() < min_s {
        compactions = pool.install(|| pass(items, settings, summ, threads > 1));
        passes += 1;
    }
    Ok(Measured {
        replays: passes * (items.len() * settings.len()) as u64,
        event_steps: passes * per_pass_steps,
        events: passes * per_pass_events,
        wall_s: w.elapsed().as_secs_f64(),
        cpu_s: cpu_s() - c,
        compactions,
    })
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// The bench's command line.
struct Options {
    corpus: PathBuf,
    python: PathBuf,
    oracle: PathBuf,
    sample: Vec<PathBuf>,
    longest: usize,
    min_s: f64,
    with_oracle: bool,
}

/// `Ok(None)`: `--help` was printed.
fn parse_options() -> Result<Option<Options>, String> {
    let goldens = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oracle/goldens");
    let mut o = Options {
        corpus: repo_or_shared("../shared/corpus", "/work/shared/corpus"),
        python: PathBuf::from("/work/venv/adk/bin/python"),
        oracle: repo_or_shared(
            "../shared/oracle/adk_oracle.py",
            "/work/shared/oracle/adk_oracle.py",
        ),
        sample: vec![
            goldens.join("t03.session.json"),
            goldens.join("t05.session.json"),
        ],
        longest: 10,
        min_s: 2.0,
        with_oracle: true,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--corpus" => o.corpus = PathBuf::from(args.next().ok_or("--corpus needs a folder")?),
            "--python" => o.python = PathBuf::from(args.next().ok_or("--python needs a path")?),
            "--oracle-sample" => {
                o.sample = args
                    .next()
                    .ok_or("--oracle-sample needs FILE[,FILE...]")?
                    .split(',')
                    .map(PathBuf::from)
                    .collect()
            }
            "--no-oracle" => o.with_oracle = false,
            "--longest" => {
                o.longest = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--longest needs a number > 0")?
            }
            "--min-seconds" => {
                o.min_s = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .ok_or("--min-seconds needs a number")?
            }
            "-h" | "--help" => {
                println!("replay-bench [--corpus DIR] [--longest N] [--python PY] [--oracle-sample FILE,FILE] [--no-oracle] [--min-seconds S]");
                return Ok(None);
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(Some(o))
}

fn run() -> Result<(), String> {
    let Some(o) = parse_options()? else {
        return Ok(());
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());

    // 1. The longest sessions, counted once, as the engine's per-event arrays.
    let (sessions, items) = longest_sessions(&o.corpus, o.longest)?;
    print_header(&o.corpus, &sessions, &items, cores);
    replay_grid(&items, cores, o.min_s)?;

    // 2. The oracle on a sample of replays.
    if o.with_oracle {
        oracle_sample(&o.python, &o.oracle, &o.sample, o.min_s)?;
    }
    Ok(())
}

/// The `longest` sessions of the corpus (most events first), and their replay units.
fn longest_sessions(corpus: &Path, longest: usize) -> Result<(Vec<Session>, Vec<Item>), String> {
    let loaded = load_paths(&[corpus.display().to_string()], None);
    let mut sessions: Vec<Session> = loaded.sessions;
    sessions.sort_by(|a, b| {
        b.events
            .len()
            .cmp(&a.events.len())
            .then(a.source.cmp(&b.source))
    });
    sessions.truncate(longest);
    if sessions.is_empty() {
        return Err(format!("{}: no sessions read", corpus.display()));
    }
    let counts = count_sessions(
        &sessions,
        Tokenizer::O200k,
        &CacheOpts::resolve(None, false),
    )
    .map_err(|e| e.to_string())?;
    let items: Vec<Item> = sessions
        .iter()
        .zip(&counts)
        .map(|(s, c)| Item {
            sizes: SessionSizes::new(s, Some(c)),
            events: s.events.len() as u64,
            requests: s.events.iter().filter(|e| e.model_request).count() as u64,
        })
        .collect();
    Ok((sessions, items))
}

/// What was read (sessions, formats, sizes) and the replay table's heading.
fn print_header(corpus: &Path, sessions: &[Session], items: &[Item], cores: usize) {
    let mut formats: Vec<&str> = sessions.iter().map(|s| s.format.name()).collect();
    formats.sort_unstable();
    formats.dedup();
    let formats: Vec<String> = formats
        .iter()
        .map(|f| {
            let n = sessions.iter().filter(|s| s.format.name() == *f).count();
            format!("{f} ×{n}")
        })
        .collect();

    println!(
        "replay-bench: the {} longest sessions of {} ({}–{} events, {} model requests in all); summarizer fixed:400; usage adjust; tokenizer o200k; {cores} cores",
        items.len(),
        corpus.display(),
        items.last().map_or(0, |i| i.events),
        items.first().map_or(0, |i| i.events),
        items.iter().map(|i| i.requests).sum::<u64>()
    );
    println!("formats: {}", formats.join(", "));
    println!("event-steps = events × model requests of the session, per replay");
    println!(
        "{:<8} {:>8} {:>7} {:>9} {:>9} {:>9} {:>14} {:>16} {:>12} {:>11}",
        "settings",
        "count",
        "threads",
        "replays",
        "wall s",
        "CPU s",
        "M steps/s",
        "M steps/CPU-s",
        "M events/s",
        "µs/replay"
    );
}

/// The grid's replays per kind of setting on one thread, then all of them on one thread and
/// on every core; checks the thread counts fire the same compactions and prints the per-core
/// rate against the goal (>= 50 M event-steps/s).
fn replay_grid(items: &[Item], cores: usize, min_s: f64) -> Result<(), String> {
    let summ = Deterministic::new(Policy::Fixed(400), vec![], vec![]);
    let grid = grid();
    let (mut per_core_wall, mut per_core_cpu) = (0.0, 0.0);
    let mut checks = Vec::new();
    for kind in ["token", "sliding", "both", "all"] {
        let settings: Vec<&Config> = grid
            .iter()
            .filter(|(k, _)| kind == "all" || *k == kind)
            .map(|(_, c)| c)
            .collect();
        let threads_list: &[usize] = if kind == "all" { &[1, cores] } else { &[1] };
        for &threads in threads_list {
            let m = measure(items, &settings, &summ, threads, min_s)?;
            println!(
                "{:<8} {:>8} {:>7} {:>9} {:>9.3} {:>9.3} {:>14.1} {:>16.1} {:>12.2} {:>11.1}",
                kind,
                settings.len(),
                threads,
                m.replays,
                m.wall_s,
                m.cpu_s,
                m.event_steps as f64 / m.wall_s / 1e6,
                m.event_steps as f64 / m.cpu_s.max(0.01) / 1e6,
                m.events as f64 / m.wall_s / 1e6,
                m.wall_s / m.replays as f64 * 1e6
            );
            if kind == "all" {
                checks.push(m.compactions);
                if threads == 1 {
                    per_core_wall = m.event_steps as f64 / m.wall_s;
                    per_core_cpu = m.event_steps as f64 / m.cpu_s.max(0.01);
                }
            }
        }
    }
    if checks.windows(2).any(|w| w[0] != w[1]) {
        return Err(format!(
            "compactions differ between thread counts: {checks:?}"
        ));
    }
    let verdict = if per_core_wall >= 50e6 {
        "met"
    } else if per_core_cpu >= 50e6 {
        "met per CPU-second, not per wall second"
    } else {
        "MISSED"
    };
    println!(
        "per core (all {} settings, 1 thread): {:.1} M event-steps/s wall, {:.1} M per CPU-second (goal >= 50 M: {verdict}); {} compactions per pass on every thread count",
        grid.len(),
        per_core_wall / 1e6,
        per_core_cpu / 1e6,
        checks.first().copied().unwrap_or(0)
    );
    Ok(())
}

/// One token, one sliding and one combined setting, in ADK's chars/4 tokens (the oracle's
/// measure), with the oracle's flags.
fn oracle_settings() -> Vec<(&'static str, Config, Vec<&'static str>)> {
    let cfg = |token, sliding| Config {
        token,
        sliding,
        usage: UsageMode::Adjust,
        pre_request: true,
    };
    vec![
        (
            "token",
            cfg(Some((20_000, 5)), None),
            vec!["--token-threshold", "20000", "--retention", "5"],
        ),
        (
            "sliding",
            cfg(None, Some((4, 1))),
            vec!["--interval", "4", "--overlap", "1"],
        ),
        (
            "both",
            cfg(Some((20_000, 5)), Some((4, 1))),
            vec![
                "--token-threshold",
                "20000",
                "--retention",
                "5",
                "--interval",
                "4",
                "--overlap",
                "1",
            ],
        ),
    ]
}

/// Runs a Python program (`-c` code or a script) and returns its stdout, wall seconds and
/// CPU seconds (the interpreter reports its own `time.process_time()` at exit, start-up and
/// imports included, on stderr's last line).
fn python_timed(python: &Path, target: &[&std::ffi::OsStr]) -> Result<(Vec<u8>, f64, f64), String> {
    const WRAP: &str = "import atexit, runpy, sys, time\n\
        atexit.register(lambda: sys.stderr.write('\\nCPU_S %.6f\\n' % time.process_time()))\n\
        sys.argv = sys.argv[1:]\n\
        runpy.run_path(sys.argv[0], run_name='__main__')\n";
    let t = Instant::now();
    let out = Command::new(python)
        .arg("-c")
        .arg(WRAP)
        .args(target)
        .output()
        .map_err(|e| format!("{}: {e}", python.display()))?;
    let wall = t.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!(
            "{} failed ({}): {}",
            python.display(),
            out.status,
            stderr.trim()
        ));
    }
    let cpu = stderr
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("CPU_S ").and_then(|v| v.trim().parse().ok()))
        .unwrap_or(f64::NAN);
    Ok((out.stdout, wall, cpu))
}

/// The oracle against the engine on a sample of sessions, each under the three
/// [`oracle_settings`]: per replay, the oracle's process (wall and CPU) over the engine's
/// replay, with the oracle's start-up measured apart.
fn oracle_sample(
    python: &Path,
    oracle: &Path,
    sample: &[PathBuf],
    min_s: f64,
) -> Result<(), String> {
    if !python.exists() || !oracle.exists() {
        println!(
            "oracle: skipped ({} or {} missing; set up with `python3 -m venv /work/venv/adk && /work/venv/adk/bin/pip install google-adk==2.13.0`)",
            python.display(),
            oracle.display()
        );
        return Ok(());
    }
    let startup = oracle_startup(python, oracle)?;

    println!(
        "oracle sample: {} (real google-adk 2.13.0 via {}); summary fixed:400, usage adjust; engine on ADK chars/4 sizes, 1 thread",
        oracle.display(),
        python.display()
    );
    println!(
        "{:<18} {:>6} {:>8} {:>9} {:>11} {:>11} {:>13} {:>10} {:>10} {:>12}",
        "session",
        "events",
        "setting",
        "oracle s",
        "oracle CPU s",
        "engine µs",
        "engine CPU µs",
        "ratio",
        "ratio CPU",
        "compactions"
    );
    let mut tot = [0.0f64; 4]; // oracle wall, oracle CPU, engine wall, engine CPU (per replay)
    let mut n = 0u32;
    let mut disagree = 0;
    for file in sample {
        let loaded = load_paths(&[file.display().to_string()], None);
        let s = loaded
            .sessions
            .into_iter()
            .next()
            .ok_or_else(|| format!("{}: no session read", file.display()))?;
        let sizes = SessionSizes::new(&s, None);
        let summ = Deterministic::new(
            Policy::Fixed(400),
            vec![],
            compaction_sim::summarize::echo_texts(&s),
        );
        let name = file
            .file_name()
            .map_or(String::new(), |f| f.to_string_lossy().into_owned());
        for (kind, cfg, flags) in oracle_settings() {
            let target = OracleRun {
                python,
                oracle,
                file,
                name: &name,
                kind,
                flags: &flags,
            };
            let (theirs, o_wall, o_cpu) = target.compactions()?;
            let (ours, e_wall, e_cpu) = engine_timed(&sizes, &cfg, &summ, min_s);
            let same = theirs == Some(ours);
            disagree += usize::from(!same);
            println!(
                "{:<18} {:>6} {:>8} {:>9.3} {:>11.3} {:>11.1} {:>13.1} {:>9.0}x {:>9.0}x {:>12}",
                name,
                s.events.len(),
                kind,
                o_wall,
                o_cpu,
                e_wall * 1e6,
                e_cpu * 1e6,
                o_wall / e_wall,
                o_cpu / e_cpu.max(1e-9),
                if same {
                    format!("{ours} both")
                } else {
                    format!("{ours} vs {theirs:?}")
                }
            );
            for (acc, x) in tot.iter_mut().zip([o_wall, o_cpu, e_wall, e_cpu]) {
                *acc += x;
            }
            n += 1;
        }
    }
    print_oracle_ratio(tot.map(|x| x / f64::from(n.max(1))), startup, disagree);
    Ok(())
}

/// Start-up alone: the interpreter plus importing the oracle (and so ADK), no replay; wall
/// and CPU seconds.
fn oracle_startup(python: &Path, oracle: &Path) -> Result<(f64, f64), String> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let import_only = tmp.path().join("import_oracle.py");
    let dir = oracle.parent().unwrap_or(Path::new("."));
    std::fs::write(
        &import_only,
        format!(
            "import sys\nsys.path.insert(0, {:?})\nimport adk_oracle\n",
            dir.display().to_string()
        ),
    )
    .map_err(|e| format!("{}: {e}", import_only.display()))?;
    let (_, startup_wall, startup_cpu) = python_timed(python, &[import_only.as_os_str()])?;
    Ok((startup_wall, startup_cpu))
}

/// One oracle process: a sample session under one of [`oracle_settings`].
struct OracleRun<'a> {
    python: &'a Path,
    oracle: &'a Path,
    file: &'a Path,
    name: &'a str,
    kind: &'a str,
    flags: &'a [&'a str],
}

impl OracleRun<'_> {
    /// The compactions the oracle fired (`None` when its output has none), its wall and CPU
    /// seconds.
    fn compactions(&self) -> Result<(Option<u64>, f64, f64), String> {
        let (name, kind) = (self.name, self.kind);
        let mut target: Vec<&std::ffi::OsStr> =
            vec![self.oracle.as_os_str(), self.file.as_os_str()];
        target.extend(self.flags.iter().map(std::ffi::OsStr::new));
        target.extend(
            ["--summary", "fixed:400", "--usage", "adjust", "--compact"].map(std::ffi::OsStr::new),
        );
        let (stdout, o_wall, o_cpu) = python_timed(self.python, &target)
            .map_err(|e| format!("oracle on {name} {kind}: {e}"))?;
        let v: serde_json::Value =
            serde_json::from_slice(&stdout).map_err(|e| format!("oracle output on {name}: {e}"))?;
        let theirs = v.pointer("/totals/compactions").and_then(|x| x.as_u64());
        Ok((theirs, o_wall, o_cpu))
    }
}

/// The engine's replay of the same session and setting, repeated for `min_s` (at least
/// once): the compactions fired, wall and CPU seconds per replay.
fn engine_timed(
    sizes: &SessionSizes,
    cfg: &Config,
    summ: &Deterministic,
    min_s: f64,
) -> (u64, f64, f64) {
    let (t, c) = (Instant::now(), cpu_s());
    let mut reps = 0u64;
    let mut ours = 0u64;
    while reps == 0 || t.elapsed().as_secs_f64() < min_s {
        ours = engine::replay(sizes, cfg, summ).totals.compactions as u64;
        reps += 1;
    }
    let e_wall = t.elapsed().as_secs_f64() / reps as f64;
    let e_cpu = (cpu_s() - c) / reps as f64;
    (ours, e_wall, e_cpu)
}

/// The mean per replay (oracle wall, oracle CPU, engine wall, engine CPU) and the oracle's
/// ratio to the engine against the goal (>= 10,000×), with and without its start-up.
fn print_oracle_ratio(mean: [f64; 4], startup: (f64, f64), disagree: usize) {
    let [ow, oc, ew, ec] = mean;
    let (startup_wall, startup_cpu) = startup;
    let ratio_cpu = oc / ec.max(1e-9);
    let without = (oc - startup_cpu).max(0.0) / ec.max(1e-9);
    let verdict = if without >= 10_000.0 {
        "met"
    } else if ratio_cpu >= 10_000.0 {
        "met only with start-up counted"
    } else {
        "MISSED"
    };
    println!(
        "per replay: oracle {ow:.3} s wall, {oc:.3} s CPU (start-up and ADK import alone: {startup_wall:.3} s wall, {startup_cpu:.3} s CPU); engine {:.1} µs wall, {:.1} µs CPU",
        ew * 1e6,
        ec * 1e6
    );
    println!(
        "oracle / engine per replay: {:.0}x (wall), {ratio_cpu:.0}x (CPU), {without:.0}x (CPU, oracle start-up subtracted) (goal >= 10,000x: {verdict})",
        ow / ew
    );
    if disagree > 0 {
        println!(
            "note: {disagree} sample replays fired a different number of compactions than the oracle"
        );
    }
}
