//! Session-database read benchmark (docs/benchmarks.md "Session databases"):
//!
//! ```text
//! cargo run --release --bin db-bench -- [--sessions N] [--from DIR] [--repeat R] [--keep DIR [--reuse]]
//! ```
//!
//! Builds N sessions (default 10,000) by cycling the ADK session exports in `--from`
//! (default `transcripts/`, each copy with its own session id) and writes them twice into a
//! scratch folder: as N JSON files (each the original export's text, only the id changed), and
//! as one SQLite database in `SqliteSessionService`'s schema (`event_data` = the event as
//! compact JSON, as pydantic's `model_dump_json` writes it). Then it times reading all N
//! sessions both ways through the library (`load_paths` on the folder, `load_paths` on the
//! `sqlite:///` URL), best of R runs (default 3) after one warm-up each (so both read from the
//! page cache), and checks that both give the same sessions (ids, event counts). `--keep DIR`
//! writes the inputs there and leaves them; `--reuse` reads the ones a `--keep` run left.

use compaction_sim::transcript::load_paths;
use rusqlite::params;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

struct Sample {
    text: String,
    id: String,
    app: String,
    user: String,
    events: Vec<Value>,
}

fn samples(dir: &Path) -> Result<Vec<Sample>, String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".session.json"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", f.display()))?;
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let (Some(id), Some(app), Some(user)) = (s("id"), s("app_name"), s("user_id")) else {
            continue;
        };
        let events = v
            .get("events")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        out.push(Sample {
            text,
            id,
            app,
            user,
            events,
        });
    }
    if out.is_empty() {
        return Err(format!(
            "{}: no ADK session exports (*.session.json)",
            dir.display()
        ));
    }
    Ok(out)
}

fn write_inputs(samples: &[Sample], n: usize, dir: &Path) -> Result<(u64, u64), String> {
    let err = |e: rusqlite::Error| e.to_string();
    let json_dir = dir.join("json");
    std::fs::create_dir_all(&json_dir).map_err(|e| e.to_string())?;
    let db = dir.join("sessions.db");
    let mut conn = rusqlite::Connection::open(&db).map_err(err)?;
    conn.execute_batch(
        "CREATE TABLE sessions (app_name TEXT NOT NULL, user_id TEXT NOT NULL, id TEXT NOT NULL,
           state TEXT NOT NULL, create_time REAL NOT NULL, update_time REAL NOT NULL,
           PRIMARY KEY (app_name, user_id, id));
         CREATE TABLE events (id TEXT NOT NULL, app_name TEXT NOT NULL, user_id TEXT NOT NULL,
           session_id TEXT NOT NULL, invocation_id TEXT NOT NULL, timestamp REAL NOT NULL,
           event_data TEXT NOT NULL, PRIMARY KEY (app_name, user_id, session_id, id));",
    )
    .map_err(err)?;
    let tx = conn.transaction().map_err(err)?;
    let mut json_bytes = 0u64;
    for i in 0..n {
        let s = &samples[i % samples.len()];
        let id = format!("{}-{i:05}", s.id);
        let text = s.text.replacen(&s.id, &id, 1);
        json_bytes += text.len() as u64;
        std::fs::write(json_dir.join(format!("{id}.session.json")), &text)
            .map_err(|e| e.to_string())?;
        let last = s
            .events
            .last()
            .and_then(|e| e.get("timestamp"))
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        tx.execute(
            "INSERT INTO sessions VALUES (?1, ?2, ?3, '{}', ?4, ?4)",
            params![s.app, s.user, id, last],
        )
        .map_err(err)?;
        for e in &s.events {
            let g = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default();
            let ts = e.get("timestamp").and_then(Value::as_f64).unwrap_or(0.0);
            tx.execute(
                "INSERT INTO events VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    g("id"),
                    s.app,
                    s.user,
                    id,
                    g("invocation_id"),
                    ts,
                    serde_json::to_string(e).map_err(|e| e.to_string())?
                ],
            )
            .map_err(err)?;
        }
    }
    tx.commit().map_err(err)?;
    drop(conn);
    let db_bytes = std::fs::metadata(&db).map_err(|e| e.to_string())?.len();
    Ok((json_bytes, db_bytes))
}

/// Best wall time of `repeat` reads after one warm-up, and what the read gave.
fn time_read(input: &str, repeat: usize) -> (f64, Vec<(String, usize)>, usize) {
    let _ = load_paths(&[input.to_string()], None);
    let mut best = f64::INFINITY;
    let mut got = Vec::new();
    let mut bad = 0;
    for _ in 0..repeat {
        let t = Instant::now();
        let l = load_paths(&[input.to_string()], None);
        best = best.min(t.elapsed().as_secs_f64());
        got = l
            .sessions
            .iter()
            .map(|s| (s.id.clone(), s.events.len()))
            .collect();
        bad = l.skipped.len();
    }
    got.sort();
    (best, got, bad)
}

fn run() -> Result<(), String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut n = 10_000usize;
    let mut from = root.join("transcripts");
    let mut repeat = 3usize;
    let mut keep: Option<PathBuf> = None;
    let mut reuse = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--sessions" => {
                n = val("--sessions")?
                    .parse()
                    .map_err(|_| "--sessions: a number")?
            }
            "--from" => from = PathBuf::from(val("--from")?),
            "--repeat" => repeat = val("--repeat")?.parse().map_err(|_| "--repeat: a number")?,
            "--keep" => keep = Some(PathBuf::from(val("--keep")?)),
            "--reuse" => reuse = true,
            "-h" | "--help" => {
                println!(
                    "db-bench [--sessions N] [--from DIR] [--repeat R] [--keep DIR [--reuse]]"
                );
                return Ok(());
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    let samples = samples(&from)?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    if reuse && keep.is_none() {
        return Err("--reuse needs --keep DIR".into());
    }
    let dir = keep.unwrap_or_else(|| tmp.path().to_path_buf());
    let t = Instant::now();
    if !reuse {
        let (json_bytes, db_bytes) = write_inputs(&samples, n, &dir)?;
        eprintln!(
        "wrote {n} sessions from {} exports in {:.1} s: JSON {:.1} MB in {n} files, SQLite {:.1} MB",
        samples.len(),
        t.elapsed().as_secs_f64(),
        json_bytes as f64 / 1e6,
        db_bytes as f64 / 1e6
        );
    }
    let json_in = dir.join("json").display().to_string();
    let db_in = format!("sqlite:///{}", dir.join("sessions.db").display());
    let (tj, gj, bj) = time_read(&json_in, repeat.max(1));
    let (td, gd, bd) = time_read(&db_in, repeat.max(1));
    if gj.len() != n || gd != gj || bj + bd > 0 {
        return Err(format!(
            "the two reads differ: JSON {} sessions ({bj} bad), SQLite {} sessions ({bd} bad)",
            gj.len(),
            gd.len()
        ));
    }
    let events: usize = gj.iter().map(|g| g.1).sum();
    let threads = rayon::current_num_threads();
    println!("read {n} sessions ({events} events), best of {repeat}, {threads} rayon threads:");
    println!(
        "  JSON files : {tj:>7.3} s  {:>8.0} sessions/s",
        n as f64 / tj
    );
    println!(
        "  SQLite     : {td:>7.3} s  {:>8.0} sessions/s  ({:.2}x the JSON time)",
        n as f64 / td,
        td / tj
    );
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("db-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
