//! Sweep benchmark (README "Benchmark"):
//!
//! ```text
//! cargo run --release --bin sweep-bench -- [--corpus DIR] [--settings N] [--out FILE.json]
//! ```
//!
//! Sweeps a grid of at least 1,000 settings over every session of the corpus and reports
//! settings×sessions per second, event-steps per second, peak memory and the time split over
//! parse, count, replay, frames and write; then repeats at half the sessions and half the
//! settings to show how time grows. Token counts are warmed first, so `count` is the cached
//! case.

use compaction_sim::sweep::grid::{GridSpec, Known, Setting};
use compaction_sim::sweep::pipeline::{self, Costing, PipelineEval};
use compaction_sim::sweep::run::{run_pairs, Evaluator};
use compaction_sim::table::frames::{
    csv_bytes, parquet_bytes, runs_frame, settings_frame, settings_json,
};
use compaction_sim::table::rundir::outcome;
use compaction_sim::transcript::Session;
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
    sessions: usize,
    settings: usize,
    pairs: u64,
    event_steps: u64,
    replay_s: f64,
    replay_cpu_s: f64,
    frames_s: f64,
    write_s: f64,
}

fn measure(
    eval: &PipelineEval,
    sessions: &[u32],
    settings: &[Setting],
    grid: &compaction_sim::sweep::ResolvedGrid,
    infos: &[compaction_sim::sweep::SessionInfo],
    out: &Path,
) -> Result<Measure, String> {
    let t = Instant::now();
    let c = cpu_s();
    let (rows, failed) = run_pairs(eval, sessions, settings, &AtomicBool::new(false), &|| {})
        .map_err(|_| "interrupted".to_string())?;
    let replay_s = t.elapsed().as_secs_f64();
    let replay_cpu_s = cpu_s() - c;
    if let Some((s, set, m)) = failed.first() {
        eprintln!(
            "note: {} replays failed (first: session {s}, setting {set}: {m})",
            failed.len()
        );
    }
    let t = Instant::now();
    let o = outcome(settings, &rows, &grid.budget);
    let mut runs = runs_frame(infos, settings, &rows).map_err(|e| e.to_string())?;
    let mut set = settings_frame(&o.summaries).map_err(|e| e.to_string())?;
    let frames_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let write =
        |name: &str, b: Vec<u8>| std::fs::write(out.join(name), b).map_err(|e| e.to_string());
    write(
        "runs.parquet",
        parquet_bytes(&mut runs).map_err(|e| e.to_string())?,
    )?;
    write("runs.csv", csv_bytes(&mut runs).map_err(|e| e.to_string())?)?;
    write(
        "settings.parquet",
        parquet_bytes(&mut set).map_err(|e| e.to_string())?,
    )?;
    write(
        "settings.csv",
        csv_bytes(&mut set).map_err(|e| e.to_string())?,
    )?;
    write(
        "settings.json",
        settings_json(&o.summaries)
            .map_err(|e| e.to_string())?
            .into_bytes(),
    )?;
    let write_s = t.elapsed().as_secs_f64();
    let steps_per_pass: u64 = sessions.iter().map(|&s| eval.event_steps(s as usize)).sum();
    Ok(Measure {
        sessions: sessions.len(),
        settings: settings.len(),
        pairs: (sessions.len() * settings.len()) as u64,
        event_steps: steps_per_pass * settings.len() as u64,
        replay_s,
        replay_cpu_s,
        frames_s,
        write_s,
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

fn run() -> Result<(), String> {
    let mut corpus = corpus_default();
    let mut max_settings: Option<usize> = None;
    let mut json_out: Option<PathBuf> = None;
    let mut grid_text = BENCH_GRID.to_string();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--corpus" => corpus = PathBuf::from(args.next().ok_or("--corpus needs a folder")?),
            "--settings" => {
                max_settings = Some(
                    args.next()
                        .and_then(|v| v.parse().ok())
                        .ok_or("--settings needs a number")?,
                )
            }
            "--out" => json_out = Some(PathBuf::from(args.next().ok_or("--out needs a file")?)),
            "--grid" => {
                let p = PathBuf::from(args.next().ok_or("--grid needs a file")?);
                grid_text =
                    std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            }
            "-h" | "--help" => {
                println!("sweep-bench [--corpus DIR] [--grid FILE.toml] [--settings N] [--out FILE.json]");
                return Ok(());
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    let threads = rayon::current_num_threads();
    let costing = Costing::load(None, None).map_err(|e| e.to_string())?;
    let known = |m: &str| costing.knows_model(m);
    let toks = pipeline::tokenizer_names();
    let grid = GridSpec::from_toml("bench grid", &grid_text)
        .and_then(|g| {
            g.resolve(&Known {
                model: &known,
                tokenizers: &toks,
            })
        })
        .map_err(|e| e.0)?;
    let mut settings = grid.settings.clone();
    if let Some(n) = max_settings {
        settings.truncate(n.max(1));
    }

    // parse
    let t = Instant::now();
    let loaded = pipeline::load_sessions(&[corpus.display().to_string()], None)
        .map_err(|e| e.to_string())?;
    let parse_s = t.elapsed().as_secs_f64();
    let infos = pipeline::session_infos(&loaded.sessions, &grid.tokenizer);
    let n = loaded.sessions.len();
    let total_events: u64 = infos.iter().map(|i| i.events).sum();
    eprintln!(
        "parsed {n} sessions ({total_events} events, {} files skipped) in {parse_s:.2} s",
        loaded.skipped.len()
    );

    // count: warm the on-disk cache once, then measure the cached case.
    let cache = pipeline::cache_opts(None, false);
    let sessions: Vec<Session> = loaded.sessions;
    let warm: Vec<Option<Session>> = sessions.iter().cloned().map(Some).collect();
    let (_, warm_t) = PipelineEval::build_placed(warm, &grid.tokenizer, &costing, &cache)
        .map_err(|e| e.to_string())?;
    let (eval, prep) = PipelineEval::build_placed(
        sessions.into_iter().map(Some).collect(),
        &grid.tokenizer,
        &costing,
        &cache,
    )
    .map_err(|e| e.to_string())?;
    eprintln!(
        "count: {:.2} s cold, {:.2} s cached; sizing (per-event arrays and summarizer lines): {:.2} s",
        warm_t.count_s, prep.count_s, prep.size_s
    );

    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let all: Vec<u32> = (0..n as u32).collect();
    let half_sessions: Vec<u32> = all.iter().copied().filter(|i| i % 2 == 0).collect();
    let half_settings: Vec<Setting> = settings
        .iter()
        .take(settings.len().div_ceil(2))
        .cloned()
        .collect();

    let runs = [
        (
            "full",
            measure(&eval, &all, &settings, &grid, &infos, tmp.path())?,
        ),
        (
            "half sessions",
            measure(&eval, &half_sessions, &settings, &grid, &infos, tmp.path())?,
        ),
        (
            "half settings",
            measure(&eval, &all, &half_settings, &grid, &infos, tmp.path())?,
        ),
    ];
    let peak = peak_mib();

    let full = &runs[0].1;
    let count_s = prep.count_s + prep.size_s;
    let wall = parse_s + count_s + full.replay_s + full.frames_s + full.write_s;
    println!(
        "sweep-bench: {} settings × {} sessions = {} replays on {threads} threads",
        full.settings, full.sessions, full.pairs
    );
    println!(
        "  parse   {:>8.2} s  {:>5.1}%",
        parse_s,
        100.0 * parse_s / wall
    );
    println!(
        "  count   {:>8.2} s  {:>5.1}%  (tokens cached; includes sizing)",
        count_s,
        100.0 * count_s / wall
    );
    println!(
        "  replay  {:>8.2} s  {:>5.1}%",
        full.replay_s,
        100.0 * full.replay_s / wall
    );
    println!(
        "  frames  {:>8.2} s  {:>5.1}%",
        full.frames_s,
        100.0 * full.frames_s / wall
    );
    println!(
        "  write   {:>8.2} s  {:>5.1}%",
        full.write_s,
        100.0 * full.write_s / wall
    );
    println!("  total   {:>8.2} s", wall);
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
    println!("growth (replay + frames + write):");
    let mut json_runs = Vec::new();
    for (name, m) in &runs {
        let t = m.replay_s + m.frames_s + m.write_s;
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
            "event_steps": m.event_steps, "replay_s": m.replay_s, "replay_cpu_s": m.replay_cpu_s, "frames_s": m.frames_s, "write_s": m.write_s,
        }));
    }
    if let Some(p) = json_out {
        let v = serde_json::json!({
            "threads": threads, "parse_s": parse_s, "count_cold_s": warm_t.count_s, "count_s": prep.count_s,
            "size_s": prep.size_s, "peak_mib": peak, "runs": json_runs,
        });
        std::fs::write(&p, serde_json::to_string_pretty(&v).unwrap_or_default())
            .map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}
