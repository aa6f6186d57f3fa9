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

/// The bench's command line.
struct Options {
    corpus: PathBuf,
    python: PathBuf,
    repeat: usize,
    warm_loop: Option<f64>,
}

/// `Ok(None)`: `--help` was printed.
fn parse_options() -> Result<Option<Options>, String> {
    let mut o = Options {
        corpus: corpus_default(),
        python: PathBuf::from("/work/venv/bench/bin/python"),
        repeat: 3,
        warm_loop: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--corpus" => o.corpus = PathBuf::from(args.next().ok_or("--corpus needs a folder")?),
            "--python" => o.python = PathBuf::from(args.next().ok_or("--python needs a path")?),
            "--repeat" => {
                o.repeat = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--repeat needs a number > 0")?
            }
            "--warm-loop" => {
                o.warm_loop = Some(
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
                return Ok(None);
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(Some(o))
}

/// `Ok(false)`: counts differ, or the warm run tokenized something.
fn run() -> Result<bool, String> {
    let Some(o) = parse_options()? else {
        return Ok(true);
    };
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
    let loaded = load_paths(&[o.corpus.display().to_string()], None);
    let sessions = loaded.sessions;
    if sessions.is_empty() {
        return Err(format!("{}: no sessions read", o.corpus.display()));
    }
    let events: usize = sessions.iter().map(|s| s.events.len()).sum();
    let texts: Vec<_> = sessions
        .iter()
        .flat_map(|s| s.events.iter())
        .flat_map(|e| counted_texts(&e.parts))
        .collect();
    let mb = texts.iter().map(|t| t.len()).sum::<usize>() as f64 / 1e6;
    let (_, load_s, _) = timed(|| count_text(TOK, "load the o200k ranks once"));
    if let Some(secs) = o.warm_loop {
        return warm_loop_only(&sessions, secs);
    }

    // 2. The tool's counting path, cold then warm, per core and on all cores.
    let mut rows = Vec::new();
    let mut ok = true;
    let mut cold_warm = Vec::new();
    for (threads, p) in &pools {
        let (cold_and_warm, same) = count_cold_then_warm(*threads, p, &sessions, o.repeat)?;
        ok &= same;
        rows.extend(cold_and_warm);
        let (cold, warm) = (&rows[rows.len() - 2], &rows[rows.len() - 1]);
        cold_warm.push((
            *threads,
            cold.wall_s / warm.wall_s,
            cold.cpu_s / warm.cpu_s.max(1e-6),
        ));
    }

    // 3. The counter alone over the same strings Python gets (best of `repeat`).
    let ours = count_text_alone(&texts, &pools[1].1, o.repeat);
    rows.extend(ours.rows(cores));

    // 4. Python tiktoken on the same strings.
    let py = python_tiktoken(&o.python, &texts, cores, o.repeat)?;
    if let Some(py) = &py {
        rows.extend(py.rows(cores));
    }

    // 5. The table.
    println!(
        "token-bench: {} — {} sessions ({} files skipped), {events} events, {} strings, {mb:.2} MB of text; tokenizer o200k; {cores} cores; BPE load {load_s:.2} s (not timed below)",
        o.corpus.display(),
        sessions.len(),
        loaded.skipped.len(),
        texts.len()
    );
    print_rows(&rows, mb);
    print_cold_warm(&cold_warm);
    ok &= print_against_python(&ours, py.as_ref());
    Ok(ok)
}

/// `count_sessions` on one pool: `repeat` cold runs, each on a fresh cache dir, then
/// 10 × `repeat` warm runs over the last of them (it is quick). Returns the cold row and the
/// warm row, and whether every run counted the same and no warm run tokenized.
fn count_cold_then_warm(
    threads: usize,
    p: &rayon::ThreadPool,
    sessions: &[compaction_sim::transcript::Session],
    repeat: usize,
) -> Result<(Vec<Row>, bool), String> {
    let count =
        |cache: &CacheOpts| timed(|| p.install(|| count_sessions_with_stats(sessions, TOK, cache)));
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
    let mut ok = true;
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
    let row = |what: &str, runs: &[Timed<Counted>]| Row {
        what: what.into(),
        threads,
        wall_s: runs.iter().map(|r| r.1).fold(f64::INFINITY, f64::min),
        cpu_s: runs.iter().map(|r| r.2).sum::<f64>() / runs.len() as f64,
        stats: runs.last().map(|r| r.0 .1),
    };
    let rows = vec![
        row("count_sessions cold (fresh cache dir)", &cold),
        row("count_sessions warm (same cache dir)", &warm),
    ];
    Ok((rows, ok))
}

/// `count_text` alone over every string, in a loop and with `par_iter` on `pool`.
struct CountTextAlone {
    loop_tokens: u64,
    loop_wall_s: f64,
    loop_cpu_s: f64,
    par_tokens: u64,
    par_wall_s: f64,
    par_cpu_s: f64,
}

impl CountTextAlone {
    fn rows(&self, cores: usize) -> [Row; 2] {
        [
            Row {
                what: "count_text loop (no cache)".into(),
                threads: 1,
                wall_s: self.loop_wall_s,
                cpu_s: self.loop_cpu_s,
                stats: None,
            },
            Row {
                what: "count_text par_iter (no cache)".into(),
                threads: cores,
                wall_s: self.par_wall_s,
                cpu_s: self.par_cpu_s,
                stats: None,
            },
        ]
    }
}

/// The counter alone: the best wall time and the mean CPU time of `repeat` runs each way.
fn count_text_alone(
    texts: &[std::borrow::Cow<'_, str>],
    pool: &rayon::ThreadPool,
    repeat: usize,
) -> CountTextAlone {
    let best = |f: &dyn Fn() -> u64| {
        let runs: Vec<(u64, f64, f64)> = (0..repeat).map(|_| timed(f)).collect();
        let wall = runs.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
        let cpu = runs.iter().map(|r| r.2).sum::<f64>() / runs.len() as f64;
        (runs.first().map_or(0, |r| r.0), wall, cpu)
    };
    let (loop_tokens, loop_wall_s, loop_cpu_s) =
        best(&|| texts.iter().map(|t| count_text(TOK, t) as u64).sum());
    let (par_tokens, par_wall_s, par_cpu_s) =
        best(&|| pool.install(|| texts.par_iter().map(|t| count_text(TOK, t) as u64).sum()));
    CountTextAlone {
        loop_tokens,
        loop_wall_s,
        loop_cpu_s,
        par_tokens,
        par_wall_s,
        par_cpu_s,
    }
}

/// The measurements' table, MB/s over `mb` megabytes of text.
fn print_rows(rows: &[Row], mb: f64) {
    println!(
        "{:<48} {:>7} {:>9} {:>9} {:>9} {:>9} {:>10} {:>8}",
        "what", "threads", "wall s", "CPU s", "MB/s", "MB/CPU-s", "tokenized", "cached"
    );
    for r in rows {
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
}

/// Warm over cold per pool, against the goal (> 50×).
fn print_cold_warm(cold_warm: &[(usize, f64, f64)]) {
    for (threads, xw, xc) in cold_warm {
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
}

/// Token totals and speed against Python's tiktoken (goal ≥ 1.5× per core); `false` when the
/// totals differ.
fn print_against_python(ours: &CountTextAlone, py: Option<&PyResult>) -> bool {
    println!(
        "tokens (o200k, all strings): ours {} (loop), {} (parallel)",
        ours.loop_tokens, ours.par_tokens
    );
    let Some(py) = py else {
        println!("python tiktoken: skipped (see note above)");
        return true;
    };
    let same = ours.loop_tokens == py.loop_tokens
        && ours.loop_tokens == py.batch_tokens
        && ours.loop_tokens == ours.par_tokens;
    println!(
        "tokens: python loop {}, python batch {}: {}",
        py.loop_tokens,
        py.batch_tokens,
        if same { "IDENTICAL" } else { "DIFFERENT" }
    );
    let rw = py.loop_s / ours.loop_wall_s;
    let rc = py.loop_cpu_s / ours.loop_cpu_s.max(1e-6);
    let verdict = if rw.min(rc) >= 1.5 {
        "met"
    } else if rw.max(rc) >= 1.5 {
        "met by one measure"
    } else {
        "MISSED"
    };
    println!(
        "ours per core vs python per core: {rw:.2}x (wall), {rc:.2}x (CPU) (goal >= 1.5x: {verdict}); all cores: {:.2}x (wall)",
        py.batch_s / ours.par_wall_s
    );
    same
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

impl PyResult {
    fn rows(&self, cores: usize) -> [Row; 2] {
        [
            Row {
                what: format!("python tiktoken {} encode_ordinary loop", self.version),
                threads: 1,
                wall_s: self.loop_s,
                cpu_s: self.loop_cpu_s,
                stats: None,
            },
            Row {
                what: format!("python tiktoken {} encode_ordinary_batch", self.version),
                threads: cores,
                wall_s: self.batch_s,
                cpu_s: self.batch_cpu_s,
                stats: None,
            },
        ]
    }
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
