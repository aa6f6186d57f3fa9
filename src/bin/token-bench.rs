//! Tokenization benchmark (docs/benchmarks.md "Tokenization"):
//!
//! ```text
//! cargo run --release --bin token-bench -- [--corpus DIR] [--python PY] [--repeat N] \
//!     [--warm-loop SECONDS]
//! ```
//!
//! The data's path: read every session of the corpus, then count tokens (o200k) the way the
//! tool does (`tokens::count_sessions_with_stats`), cold (a fresh temporary cache folder) and
//! warm (the same folder again: it must tokenize nothing), on a rayon pool of 1 thread (per
//! core) and of all cores. Then the raw counter alone (`tokens::count_text`) over the exact
//! strings counted (`tokens::counted_texts` of every event), against Python tiktoken's
//! `encode_ordinary` on the SAME strings (written once to a temporary JSON file). The totals
//! must be identical (exit 1 otherwise).
//!
//! Python tiktoken would download its rank file at first use; this machine cannot reach that
//! host. The embedded Python script seeds a temporary `TIKTOKEN_CACHE_DIR` with the
//! `o200k_base.tiktoken` that ships inside the tiktoken-rs crate, named as tiktoken names it
//! (sha1 hex of the download URL), before importing tiktoken. `--python` points at a venv's
//! interpreter with `pip install tiktoken` (default `/work/venv/bench/bin/python`); without
//! it the Python part is skipped with a note.
//!
//! MB/s = UTF-8 megabytes (10^6 bytes) of every counted string of every event (duplicates
//! included: the text the corpus holds) / seconds. "CPU s" is the time this process's threads
//! ran (`/proc/self/task/*/schedstat`, in ns), which a loaded machine distorts less than wall
//! time. Each figure is
//! the fastest wall time and the mean CPU time of `--repeat` runs (default 3; the warm cache
//! run 10 × that, since it is short; Python's batch call once).

use compaction_sim::tokens::{
    count_sessions_with_stats, count_text, counted_texts, CacheOpts, CountStats, Tokenizer,
};
use compaction_sim::transcript::load_paths;
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

const TOK: Tokenizer = Tokenizer::O200k;
const O200K_URL: &str = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken";

/// Run by `--python`: seed the cache, load o200k_base, time the loop (per core) and the batch
/// call (all cores), print one JSON line. Load time is outside both timings, as in ours.
const PY_SCRIPT: &str = r#"
import hashlib, json, os, shutil, sys, time
texts_path, rank_file, url, threads = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
cache = os.environ["TIKTOKEN_CACHE_DIR"]
shutil.copyfile(rank_file, os.path.join(cache, hashlib.sha1(url.encode()).hexdigest()))
import tiktoken
enc = tiktoken.get_encoding("o200k_base")
with open(texts_path, encoding="utf-8") as f:
    texts = json.load(f)
repeat = int(sys.argv[5])
runs = []
for _ in range(repeat):
    w, c = time.perf_counter(), time.process_time()
    n = 0
    for t in texts:
        n += len(enc.encode_ordinary(t))
    runs.append((time.perf_counter() - w, time.process_time() - c, n))
best = (min(r[0] for r in runs), sum(r[1] for r in runs) / repeat, runs[0][2])
w, c = time.perf_counter(), time.process_time()
nb = sum(len(x) for x in enc.encode_ordinary_batch(texts, num_threads=threads))
bw, bc = time.perf_counter() - w, time.process_time() - c
print(json.dumps({"version": tiktoken.__version__, "loop_s": best[0], "loop_cpu_s": best[1],
                  "loop_tokens": best[2], "batch_s": bw, "batch_cpu_s": bc, "batch_tokens": nb}))
"#;

fn corpus_default() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if p.exists() {
        p
    } else {
        PathBuf::from("/work/shared/corpus")
    }
}

/// This process's CPU seconds: the sum over its threads of the nanoseconds each ran
/// (Linux `/proc/self/task/*/schedstat`), else user + system time from `/proc/self/stat` (in
/// 10 ms ticks, too coarse for a run of a few milliseconds); 0 elsewhere.
fn cpu_s() -> f64 {
    let mut ns = 0u64;
    let mut any = false;
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for t in tasks.flatten() {
            let stat = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
            if let Some(v) = stat
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
            {
                ns += v;
                any = true;
            }
        }
    }
    if any {
        return ns as f64 / 1e9;
    }
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

/// Wall and CPU seconds of `f`.
fn timed<T>(f: impl FnOnce() -> T) -> (T, f64, f64) {
    let (w, c) = (Instant::now(), cpu_s());
    let out = f();
    (out, w.elapsed().as_secs_f64(), cpu_s() - c)
}

/// The o200k rank file inside the tiktoken-rs crate sources (cargo's registry).
fn rank_file() -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))?;
    let pat = home.join("registry/src/*/tiktoken-rs-*/assets/o200k_base.tiktoken");
    let mut found: Vec<PathBuf> = glob::glob(&pat.to_string_lossy())
        .ok()?
        .filter_map(Result::ok)
        .collect();
    found.sort();
    found.pop()
}

/// Per session, per event counts and the run's counters.
type Counted = (Vec<Vec<u32>>, CountStats);
/// A result with its wall and CPU seconds.
type Timed<T> = (T, f64, f64);

struct Row {
    what: String,
    threads: usize,
    wall_s: f64,
    cpu_s: f64,
    stats: Option<CountStats>,
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// `Ok(false)`: counts differ, or the warm run tokenized something.
fn run() -> Result<bool, String> {
    let mut corpus = corpus_default();
    let mut python = PathBuf::from("/work/venv/bench/bin/python");
    let mut repeat = 3usize;
    let mut warm_loop: Option<f64> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--corpus" => corpus = PathBuf::from(args.next().ok_or("--corpus needs a folder")?),
            "--python" => python = PathBuf::from(args.next().ok_or("--python needs a path")?),
            "--repeat" => {
                repeat = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--repeat needs a number > 0")?
            }
            "--warm-loop" => {
                warm_loop = Some(
                    args.next()
                        .and_then(|v| v.parse().ok())
                        .filter(|&s: &f64| s > 0.0)
                        .ok_or("--warm-loop needs seconds > 0")?,
                )
            }
            "-h" | "--help" => {
                println!(
                    "token-bench [--corpus DIR] [--python PY] [--repeat N] [--warm-loop SECONDS]"
                );
                return Ok(true);
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pool = |n: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map_err(|e| e.to_string())
    };
    // Both pools live to the end: the CPU clock sums the threads alive, so a pool's thread
    // exiting in the middle of a measurement would take its time out of it.
    let pools = [(1, pool(1)?), (cores, pool(cores)?)];

    // 1. Sessions, and the exact strings counted for every event.
    let loaded = load_paths(&[corpus.display().to_string()], None);
    let sessions = loaded.sessions;
    if sessions.is_empty() {
        return Err(format!("{}: no sessions read", corpus.display()));
    }
    let events: usize = sessions.iter().map(|s| s.events.len()).sum();
    let texts: Vec<_> = sessions
        .iter()
        .flat_map(|s| s.events.iter())
        .flat_map(|e| counted_texts(&e.parts))
        .collect();
    let mb = texts.iter().map(|t| t.len()).sum::<usize>() as f64 / 1e6;
    let (_, load_s, _) = timed(|| count_text(TOK, "load the o200k ranks once"));
    if let Some(secs) = warm_loop {
        return warm_loop_only(&sessions, secs);
    }

    // 2. The tool's counting path, cold then warm, per core and on all cores.
    let mut rows = Vec::new();
    let mut ok = true;
    let mut cold_warm = Vec::new();
    for (threads, p) in &pools {
        let threads = *threads;
        let count = |cache: &CacheOpts| {
            timed(|| p.install(|| count_sessions_with_stats(&sessions, TOK, cache)))
        };
        // Cold: `repeat` runs, each on a fresh cache dir; warm: 10 × `repeat` runs over the
        // last of them (it is quick).
        let mut cold = Vec::new();
        let mut dir = None;
        for _ in 0..repeat {
            let d = tempfile::tempdir().map_err(|e| e.to_string())?;
            let (r, w, c) = count(&CacheOpts::at(d.path()));
            cold.push((r.map_err(|e| e.to_string())?, w, c));
            dir = Some(d);
        }
        let dir = dir.ok_or("no cold run")?;
        let mut warm = Vec::new();
        for _ in 0..10 * repeat {
            let (r, w, c) = count(&CacheOpts::at(dir.path()));
            warm.push((r.map_err(|e| e.to_string())?, w, c));
        }
        let cold_counts = &cold[0].0 .0;
        if warm
            .iter()
            .chain(&cold)
            .any(|((counts, _), _, _)| counts != cold_counts)
            || warm.iter().any(|((_, st), _, _)| st.tokenized != 0)
        {
            eprintln!("FAIL: a warm run tokenized something, or counts differ between runs");
            ok = false;
        }
        let summary = |runs: &[Timed<Counted>]| {
            let wall = runs.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
            let cpu = runs.iter().map(|r| r.2).sum::<f64>() / runs.len() as f64;
            (wall, cpu, runs.last().map(|r| r.0 .1))
        };
        let (cw, cc, cs) = summary(&cold);
        let (ww, wc, ws) = summary(&warm);
        for (what, wall_s, cpu_s, stats) in [
            ("count_sessions cold (fresh cache dir)", cw, cc, cs),
            ("count_sessions warm (same cache dir)", ww, wc, ws),
        ] {
            rows.push(Row {
                what: what.into(),
                threads,
                wall_s,
                cpu_s,
                stats,
            });
        }
        cold_warm.push((threads, cw / ww, cc / wc.max(1e-6)));
    }

    // 3. The counter alone over the same strings Python gets (best of `repeat`).
    let best = |f: &dyn Fn() -> u64| {
        let runs: Vec<(u64, f64, f64)> = (0..repeat).map(|_| timed(f)).collect();
        let wall = runs.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
        let cpu = runs.iter().map(|r| r.2).sum::<f64>() / runs.len() as f64;
        (runs.first().map_or(0, |r| r.0), wall, cpu)
    };
    let (ours, w1, c1) = best(&|| texts.iter().map(|t| count_text(TOK, t) as u64).sum());
    rows.push(Row {
        what: "count_text loop (no cache)".into(),
        threads: 1,
        wall_s: w1,
        cpu_s: c1,
        stats: None,
    });
    let p = &pools[1].1;
    let (ours_par, wn, cn) =
        best(&|| p.install(|| texts.par_iter().map(|t| count_text(TOK, t) as u64).sum()));
    rows.push(Row {
        what: "count_text par_iter (no cache)".into(),
        threads: cores,
        wall_s: wn,
        cpu_s: cn,
        stats: None,
    });

    // 4. Python tiktoken on the same strings.
    let py = python_tiktoken(&python, &texts, cores, repeat)?;
    if let Some(py) = &py {
        rows.push(Row {
            what: format!("python tiktoken {} encode_ordinary loop", py.version),
            threads: 1,
            wall_s: py.loop_s,
            cpu_s: py.loop_cpu_s,
            stats: None,
        });
        rows.push(Row {
            what: format!("python tiktoken {} encode_ordinary_batch", py.version),
            threads: cores,
            wall_s: py.batch_s,
            cpu_s: py.batch_cpu_s,
            stats: None,
        });
    }

    // 5. The table.
    println!(
        "token-bench: {} — {} sessions ({} files skipped), {events} events, {} strings, {mb:.2} MB of text; tokenizer o200k; {cores} cores; BPE load {load_s:.2} s (not timed below)",
        corpus.display(),
        sessions.len(),
        loaded.skipped.len(),
        texts.len()
    );
    println!(
        "{:<48} {:>7} {:>9} {:>9} {:>9} {:>9} {:>10} {:>8}",
        "what", "threads", "wall s", "CPU s", "MB/s", "MB/CPU-s", "tokenized", "cached"
    );
    for r in &rows {
        let (tk, ca) = r.stats.map_or(("-".into(), "-".into()), |s| {
            (s.tokenized.to_string(), s.cached.to_string())
        });
        println!(
            "{:<48} {:>7} {:>9.4} {:>9.4} {:>9.2} {:>9.2} {:>10} {:>8}",
            r.what,
            r.threads,
            r.wall_s,
            r.cpu_s,
            mb / r.wall_s,
            mb / r.cpu_s.max(1e-6),
            tk,
            ca
        );
    }
    for (threads, xw, xc) in &cold_warm {
        let verdict = if xw.min(*xc) > 50.0 {
            "met"
        } else if xw.max(*xc) > 50.0 {
            "met by one measure"
        } else {
            "MISSED"
        };
        println!(
            "warm cache vs cold, {threads} thread(s): {xw:.1}x faster (wall), {xc:.1}x (CPU) (goal > 50x: {verdict})"
        );
    }
    println!("tokens (o200k, all strings): ours {ours} (loop), {ours_par} (parallel)");
    match &py {
        None => println!("python tiktoken: skipped (see note above)"),
        Some(py) => {
            let same = ours == py.loop_tokens && ours == py.batch_tokens && ours == ours_par;
            println!(
                "tokens: python loop {}, python batch {}: {}",
                py.loop_tokens,
                py.batch_tokens,
                if same { "IDENTICAL" } else { "DIFFERENT" }
            );
            ok &= same;
            let rw = py.loop_s / w1;
            let rc = py.loop_cpu_s / c1.max(1e-6);
            let verdict = if rw.min(rc) >= 1.5 {
                "met"
            } else if rw.max(rc) >= 1.5 {
                "met by one measure"
            } else {
                "MISSED"
            };
            println!(
                "ours per core vs python per core: {rw:.2}x (wall), {rc:.2}x (CPU) (goal >= 1.5x: {verdict}); all cores: {:.2}x (wall)",
                py.batch_s / wn
            );
        }
    }
    Ok(ok)
}

/// `--warm-loop SECONDS`: one cold run into a fresh cache folder, then warm runs on the
/// current rayon pool for that long (for `perf record`); prints the mean warm time.
fn warm_loop_only(
    sessions: &[compaction_sim::transcript::Session],
    secs: f64,
) -> Result<bool, String> {
    let d = tempfile::tempdir().map_err(|e| e.to_string())?;
    let cache = CacheOpts::at(d.path());
    let (cold, cold_s, _) = timed(|| count_sessions_with_stats(sessions, TOK, &cache));
    let cold = cold.map_err(|e| e.to_string())?;
    let start = Instant::now();
    let cpu0 = cpu_s();
    let mut runs = 0u64;
    let mut best = f64::INFINITY;
    let mut ok = true;
    while start.elapsed().as_secs_f64() < secs {
        let t = Instant::now();
        let (counts, st) =
            count_sessions_with_stats(sessions, TOK, &cache).map_err(|e| e.to_string())?;
        best = best.min(t.elapsed().as_secs_f64());
        ok &= st.tokenized == 0 && counts == cold.0;
        runs += 1;
    }
    let mean = start.elapsed().as_secs_f64() / runs.max(1) as f64;
    let cpu = (cpu_s() - cpu0) / runs.max(1) as f64;
    println!(
        "cold {:.1} ms; {runs} warm runs: mean {:.3} ms (CPU {:.3} ms), best {:.3} ms; cold/best-warm {:.1}x{}",
        cold_s * 1e3,
        mean * 1e3,
        cpu * 1e3,
        best * 1e3,
        cold_s / best,
        if ok {
            ""
        } else {
            "; FAIL: a warm run tokenized or counts differ"
        }
    );
    Ok(ok)
}

struct PyResult {
    version: String,
    loop_s: f64,
    loop_cpu_s: f64,
    loop_tokens: u64,
    batch_s: f64,
    batch_cpu_s: f64,
    batch_tokens: u64,
}

/// Runs [`PY_SCRIPT`] on the strings; `None` (with a note) when the interpreter is missing.
fn python_tiktoken(
    python: &Path,
    texts: &[std::borrow::Cow<'_, str>],
    threads: usize,
    repeat: usize,
) -> Result<Option<PyResult>, String> {
    if !python.exists() {
        eprintln!(
            "note: {} not found; Python tiktoken skipped. Set it up with: python3 -m venv /work/venv/bench && /work/venv/bench/bin/pip install tiktoken",
            python.display()
        );
        return Ok(None);
    }
    let ranks = rank_file().ok_or(
        "o200k_base.tiktoken not found under $CARGO_HOME/registry/src/*/tiktoken-rs-*/assets/",
    )?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let texts_path = tmp.path().join("texts.json");
    let script = tmp.path().join("tiktoken_bench.py");
    let cache = tmp.path().join("tiktoken-cache");
    let strings: Vec<&str> = texts.iter().map(|t| t.as_ref()).collect();
    let json = serde_json::to_vec(&strings).map_err(|e| e.to_string())?;
    std::fs::write(&texts_path, json).map_err(|e| format!("{}: {e}", texts_path.display()))?;
    std::fs::write(&script, PY_SCRIPT).map_err(|e| format!("{}: {e}", script.display()))?;
    std::fs::create_dir_all(&cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    let out = Command::new(python)
        .arg(&script)
        .arg(&texts_path)
        .arg(&ranks)
        .arg(O200K_URL)
        .arg(threads.to_string())
        .arg(repeat.to_string())
        .env("TIKTOKEN_CACHE_DIR", &cache)
        .output()
        .map_err(|e| format!("{}: {e}", python.display()))?;
    if !out.status.success() {
        return Err(format!(
            "python tiktoken failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| format!("python tiktoken printed no result: {stdout}"))?;
    let f = |k: &str| v.get(k).and_then(|x| x.as_f64()).unwrap_or(f64::NAN);
    let n = |k: &str| v.get(k).and_then(|x| x.as_u64()).unwrap_or(u64::MAX);
    Ok(Some(PyResult {
        version: v
            .get("version")
            .and_then(|x| x.as_str())
            .unwrap_or("?")
            .to_string(),
        loop_s: f("loop_s"),
        loop_cpu_s: f("loop_cpu_s"),
        loop_tokens: n("loop_tokens"),
        batch_s: f("batch_s"),
        batch_cpu_s: f("batch_cpu_s"),
        batch_tokens: n("batch_tokens"),
    }))
}
