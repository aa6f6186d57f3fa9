//! The mutation test: damaged versions of real corpus files (truncated, bytes flipped, lines
//! deleted, duplicated or swapped, extreme numbers, deep nesting, invalid UTF-8, a BOM, CRLF
//! line ends, values of the wrong type) must load or fail with one line naming the file;
//! never a panic, never the internal `pyjson` tag; and no damage makes a Claude Code, Codex
//! or OpenHands file readable by two of those readers.
//!
//! Two passes: the library (`detect::load_file` under `catch_unwind`, in parallel) takes the
//! bulk, `COMPACTION_SIM_MUTATIONS` cases (default [`DEFAULT_CASES`]; set it to 1000000 or
//! more for a long run, e.g. `COMPACTION_SIM_MUTATIONS=1000000 cargo test --release --test
//! cli mutations`); then the binary (`inspect` over a folder of a few hundred mutated files)
//! must exit 0 or 2 with every error line naming its file. Inputs are seeded: every run with
//! the same count feeds the same cases, and a failure names the case to replay it.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use compaction_sim::transcript::detect::{detect, expand_paths, load_file};
use compaction_sim::transcript::{
    claude_code, codex, openhands, write_canonical, Format, ReadError,
};
use rayon::prelude::*;

use crate::common::{bin, corpus, read_text};

/// Library-level cases in a plain `cargo test` (debug build: about 20 s on 2 cores).
const DEFAULT_CASES: usize = 3000;
/// Seed files larger than this are left out (each case parses its whole file), unless a
/// format has no smaller file: then its smallest one up to [`MAX_ONLY_SEED_BYTES`] is used.
const MAX_SEED_BYTES: u64 = 160 * 1024;
const MAX_ONLY_SEED_BYTES: u64 = 1024 * 1024;
/// Seed files per format, spread over the sizes available.
const SEEDS_PER_FORMAT: usize = 4;

/// Deterministic generator (SplitMix64): case `i` always gets the same damage.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

/// A real corpus file the mutations start from.
struct Seed {
    name: String,
    format: Format,
    bytes: Vec<u8>,
}

/// Small and medium corpus files of every format the corpus holds, a few per format spread
/// over their sizes, each one that loads as it is; plus the τ-bench file cut to its first
/// two sessions (4 MB whole) and a canonical JSONL file written from a corpus session (the
/// corpus holds none).
fn seeds() -> Vec<Seed> {
    let root = corpus().to_string_lossy().into_owned();
    let (files, _) = expand_paths(&[root]);
    let mut by_format: Vec<(Format, Vec<(u64, PathBuf)>)> = Vec::new();
    for p in files {
        let len = std::fs::metadata(&p).map_or(u64::MAX, |m| m.len());
        if len > MAX_ONLY_SEED_BYTES {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        let Some(f) = detect(&text) else { continue };
        if load_file(&p, None).is_err() {
            continue;
        }
        match by_format.iter_mut().find(|(g, _)| *g == f) {
            Some((_, v)) => v.push((len, p)),
            None => by_format.push((f, vec![(len, p)])),
        }
    }
    let mut out = Vec::new();
    for (format, mut v) in by_format {
        v.sort();
        let small = v.iter().filter(|(len, _)| *len <= MAX_SEED_BYTES).count();
        v.truncate(small.max(1));
        let n = v.len();
        let mut picked: Vec<usize> = (0..SEEDS_PER_FORMAT.min(n))
            .map(|k| (k * (n - 1)) / (SEEDS_PER_FORMAT - 1).max(1))
            .collect();
        picked.dedup();
        for i in picked {
            let p = &v[i].1;
            out.push(Seed {
                name: p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                format,
                bytes: std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
            });
        }
    }
    let tb = corpus().join("tau_bench/historical_trajectories/gpt-4o-airline.json");
    let v: serde_json::Value = serde_json::from_str(&read_text(&tb)).expect("τ-bench parses");
    let few = serde_json::Value::Array(v.as_array().expect("a list")[..2].to_vec());
    let bytes = serde_json::to_vec_pretty(&few).expect("serialises");
    let format = detect(&String::from_utf8_lossy(&bytes)).expect("τ-bench cut detects");
    out.push(Seed {
        name: "tau_bench.json".to_string(),
        format,
        bytes,
    });
    let codex = out
        .iter()
        .find(|s| s.format == Format::Codex)
        .expect("a codex seed");
    let dir = tempfile::tempdir().expect("temp folder");
    let p = dir.path().join(&codex.name);
    std::fs::write(&p, &codex.bytes).expect("written");
    let sessions = load_file(&p, None).expect("the codex seed loads");
    out.push(Seed {
        name: "canonical.jsonl".to_string(),
        format: Format::Canonical,
        bytes: write_canonical(&sessions[0]).into_bytes(),
    });
    out
}

/// Numbers a transcript should never hold, and some it may.
const EXTREME: [&str; 16] = [
    "18446744073709551615",
    "18446744073709551616",
    "9007199254740993",
    "123456789012345678901234567890",
    "-1",
    "-9223372036854775809",
    "NaN",
    "Infinity",
    "-Infinity",
    "1e309",
    "-1e309",
    "1e308",
    "1.5",
    "-0",
    "4.9e-324",
    "0",
];

/// Bytes that break JSON structure.
const NASTY: &[u8] = b"{}[]\",:\\0123456789eE.-+nt \n\r\t\x00\x7f\xff\xc3";

/// Line boundaries of `b`: (start, end without the newline).
fn lines(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        if c == b'\n' {
            out.push((start, i));
            start = i + 1;
        }
    }
    out.push((start, b.len()));
    out
}

/// The position just after a `":` (a value start) at or after `from`, if any.
fn value_start(b: &[u8], from: usize) -> Option<usize> {
    let at = b.get(from..)?.windows(2).position(|w| w == b"\":")? + from + 2;
    let skip = b[at..].iter().take_while(|c| **c == b' ').count();
    Some(at + skip)
}

/// The end of the JSON scalar starting at `i` (a number, literal or string; else `i`).
fn scalar_end(b: &[u8], i: usize) -> usize {
    match b.get(i) {
        Some(b'"') => {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            (j + 1).min(b.len())
        }
        Some(_) => {
            let n = b[i..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'+' | b'.'))
                .count();
            i + n
        }
        None => i,
    }
}

/// A value position: after a key holding "token" (usage counts) half the time, else anywhere.
fn some_value(b: &[u8], rng: &mut Rng) -> Option<usize> {
    if rng.below(2) == 0 {
        let keys: Vec<usize> = b
            .windows(6)
            .enumerate()
            .filter(|(_, w)| w.eq_ignore_ascii_case(b"tokens") || w.eq_ignore_ascii_case(b"_count"))
            .map(|(i, _)| i)
            .collect();
        if !keys.is_empty() {
            let k = *rng.pick(&keys);
            if let Some(v) = value_start(b, k) {
                return Some(v);
            }
        }
    }
    let from = rng.below(b.len());
    value_start(b, from).or_else(|| value_start(b, 0))
}

fn splice(b: &[u8], at: usize, end: usize, with: &[u8]) -> Vec<u8> {
    let (at, end) = (at.min(b.len()), end.min(b.len()).max(at.min(b.len())));
    let mut out = Vec::with_capacity(b.len() + with.len());
    out.extend_from_slice(&b[..at]);
    out.extend_from_slice(with);
    out.extend_from_slice(&b[end..]);
    out
}

/// Kinds of damage, by number.
const KINDS: [&str; 13] = [
    "cut anywhere",
    "cut at a line end",
    "flip bytes",
    "delete a line",
    "duplicate a line",
    "swap two lines",
    "extreme number",
    "deep nesting",
    "invalid UTF-8",
    "BOM",
    "CRLF",
    "wrong value type",
    "two of the above",
];

/// One damaged version of `b`.
fn mutate(b: &[u8], rng: &mut Rng, kind: usize) -> Vec<u8> {
    let ls = lines(b);
    match kind {
        0 => b[..rng.below(b.len() + 1)].to_vec(),
        1 => {
            let (_, end) = *rng.pick(&ls);
            b[..(end + 1).min(b.len())].to_vec()
        }
        2 => {
            let mut v = b.to_vec();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(v.len());
                if let Some(c) = v.get_mut(at) {
                    *c = if rng.below(2) == 0 {
                        *rng.pick(NASTY)
                    } else {
                        rng.next() as u8
                    };
                }
            }
            v
        }
        3..=5 => {
            let mut parts: Vec<&[u8]> = ls.iter().map(|&(s, e)| &b[s..e]).collect();
            let a = rng.below(parts.len());
            let c = rng.below(parts.len());
            match kind {
                3 => {
                    parts.remove(a);
                }
                4 => parts.insert(c, parts[a]),
                _ => parts.swap(a, c),
            }
            parts.join(&b'\n')
        }
        6 => match some_value(b, rng) {
            Some(at) => splice(b, at, scalar_end(b, at), rng.pick(&EXTREME).as_bytes()),
            None => b.to_vec(),
        },
        7 => {
            let depth = *rng.pick(&[64usize, 127, 128, 129, 1000, 100_000]);
            let nest = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
            match some_value(b, rng) {
                Some(at) => splice(b, at, scalar_end(b, at), nest.as_bytes()),
                None => nest.into_bytes(),
            }
        }
        8 => {
            let bad: &[u8] = rng.pick::<&[u8]>(&[
                &b"\xff"[..],
                &b"\xc3"[..],
                &b"\xed\xa0\x80"[..],
                &b"\xf4\x90\x80\x80"[..],
            ]);
            let at = rng.below(b.len() + 1);
            splice(b, at, at, bad)
        }
        9 => {
            let bom = "\u{feff}".as_bytes();
            match rng.below(3) {
                0 => splice(b, 0, 0, bom),
                1 => splice(b, 0, 0, &[bom, bom].concat()),
                // A BOM at a later line start (an appended file).
                _ => {
                    let (s, _) = *rng.pick(&ls);
                    splice(b, s, s, bom)
                }
            }
        }
        10 => match rng.below(3) {
            0 => b
                .split(|&c| c == b'\n')
                .collect::<Vec<_>>()
                .join(&b"\r\n"[..]),
            1 => b
                .split(|&c| c == b'\n')
                .collect::<Vec<_>>()
                .join(&b"\r"[..]),
            _ => {
                let at = rng.below(b.len() + 1);
                splice(b, at, at, b"\r")
            }
        },
        11 => {
            let mut v = b.to_vec();
            for _ in 0..1 + rng.below(3) {
                if let Some(at) = some_value(&v, rng) {
                    let with = *rng.pick(&["{}", "[]", "null", "\"x\"", "true", "{\"a\":1}"]);
                    v = splice(&v, at, scalar_end(&v, at), with.as_bytes());
                }
            }
            v
        }
        _ => {
            let first = rng.below(KINDS.len() - 1);
            let second = rng.below(KINDS.len() - 1);
            let once = mutate(b, rng, first);
            mutate(&once, rng, second)
        }
    }
}

/// How a case went; `Err` describes a failure.
fn outcome(path: &Path, format: Option<Format>) -> Result<bool, String> {
    let shown = path.to_string_lossy().into_owned();
    match catch_unwind(AssertUnwindSafe(|| load_file(path, format))) {
        Err(p) => {
            let why = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(format!("panicked: {why}"))
        }
        Ok(Ok(sessions)) if sessions.is_empty() => Err("Ok with no sessions".to_string()),
        Ok(Ok(_)) => Ok(true),
        Ok(Err(e)) => {
            let line = e.to_string();
            if !line.starts_with(&shown) {
                Err(format!("error does not name the file: {line:?}"))
            } else if line.contains('\n') || line.contains('\r') {
                Err(format!("error is not one line: {line:?}"))
            } else if line.contains('\u{FDD0}') || line.to_lowercase().contains("fdd0}") {
                Err(format!("error shows the internal tag: {line:?}"))
            } else if e.message.trim().is_empty() {
                Err(format!("error says nothing: {line:?}"))
            } else {
                Ok(false)
            }
        }
    }
}

/// How many of the Claude Code, Codex and OpenHands readers accept `text` (their formats
/// are all JSONL-ish, so damage must never make a file readable by two of them); `Err` if
/// one panics.
fn jsonl_readers_accepting(name: &str, text: &str) -> Result<usize, String> {
    type Reader = fn(&str, &str) -> Result<Vec<compaction_sim::transcript::Session>, ReadError>;
    let readers: [(&str, Reader); 3] = [
        ("claude-code", claude_code::read),
        ("codex", codex::read),
        ("openhands", openhands::read),
    ];
    let mut n = 0;
    for (what, read) in readers {
        match catch_unwind(AssertUnwindSafe(|| read(name, text))) {
            Err(_) => return Err(format!("the {what} reader panicked")),
            Ok(Ok(_)) => n += 1,
            Ok(Err(_)) => {}
        }
    }
    Ok(n)
}

fn cases() -> usize {
    std::env::var("COMPACTION_SIM_MUTATIONS")
        .ok()
        .and_then(|v| v.trim().replace('_', "").parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

#[test]
fn mutated_corpus_files_load_or_fail_with_one_line_naming_the_file() {
    let seeds = seeds();
    let formats: std::collections::BTreeSet<&str> = seeds.iter().map(|s| s.format.name()).collect();
    assert!(
        formats.len() >= 9 && seeds.len() >= 30,
        "too few seed files: {} over {formats:?}",
        seeds.len()
    );
    let n = cases();
    let dir = tempfile::tempdir().expect("temp folder");
    let (oks, errs) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let failures: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let threads = rayon::current_num_threads().max(1);
    (0..threads).into_par_iter().for_each(|t| {
        // One file per worker, rewritten for each of its cases.
        for i in (t..n).step_by(threads) {
            let mut rng = Rng::new(0x5EED_0010_0000 ^ (i as u64).wrapping_mul(0x9E37_79B9));
            let seed = &seeds[i % seeds.len()];
            let kind = rng.below(KINDS.len());
            let bytes = mutate(&seed.bytes, &mut rng, kind);
            let path = dir.path().join(format!("w{t}-{}", seed.name));
            std::fs::write(&path, &bytes).expect("temp file written");
            // Detected, and every fourth case also read as the seed's own format.
            let mut runs = vec![None];
            if i % 4 == 0 {
                runs.push(Some(seed.format));
            }
            // Every fourth case of the three JSONL formats: at most one of them reads it.
            let jsonl = [Format::ClaudeCode, Format::Codex, Format::Openhands];
            if i % 4 == 1 && jsonl.contains(&seed.format) {
                let text = String::from_utf8_lossy(&bytes);
                let verdict = match jsonl_readers_accepting(&seed.name, &text) {
                    Ok(n) if n > 1 => Some(format!("read by {n} of the JSONL readers")),
                    Ok(_) => None,
                    Err(why) => Some(why),
                };
                if let Some(why) = verdict {
                    let mut fl = failures.lock().unwrap_or_else(|p| p.into_inner());
                    fl.push(format!("case {i} ({}, {}): {why}", seed.name, KINDS[kind]));
                }
            }
            for f in runs {
                match outcome(&path, f) {
                    Ok(true) => oks.fetch_add(1, Ordering::Relaxed),
                    Ok(false) => errs.fetch_add(1, Ordering::Relaxed),
                    Err(why) => {
                        let mut fl = failures.lock().unwrap_or_else(|p| p.into_inner());
                        fl.push(format!(
                            "case {i} ({}, {}, format {f:?}): {why}",
                            seed.name, KINDS[kind]
                        ));
                        0
                    }
                };
            }
        }
    });
    let failures = failures.into_inner().unwrap_or_else(|p| p.into_inner());
    assert!(
        failures.is_empty(),
        "{} of {n} cases failed:\n{}",
        failures.len(),
        failures
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    let (oks, errs) = (oks.into_inner(), errs.into_inner());
    eprintln!(
        "mutations: {n} cases over {} seed files ({formats:?}): {oks} loaded, {errs} refused",
        seeds.len()
    );
    // Both outcomes occur: the damage reaches the error paths and the readers behind them.
    assert!(
        oks > n / 20 && errs > n / 5,
        "{oks} loaded, {errs} refused of {n} cases"
    );
}

/// The same damage through the command line: `inspect` over a folder of mutated files exits
/// 0 (bad files listed and skipped) or 2, never panics, and every error line names its file.
#[test]
fn inspect_over_mutated_files_exits_0_or_2_naming_each_bad_file() {
    let seeds = seeds();
    let dir = tempfile::tempdir().expect("temp folder");
    let mut rng = Rng::new(0x5EED_0010_B1A5);
    let mut written = Vec::new();
    for i in 0..300 {
        let seed = &seeds[i % seeds.len()];
        let kind = rng.below(KINDS.len());
        let bytes = mutate(&seed.bytes, &mut rng, kind);
        let ext = Path::new(&seed.name)
            .extension()
            .map_or("json".to_string(), |e| e.to_string_lossy().into_owned());
        let name = format!("m{i:03}-{}.{ext}", KINDS[kind].replace(' ', "_"));
        std::fs::write(dir.path().join(&name), &bytes).expect("temp file written");
        written.push(name);
    }
    let out = bin()
        .args(["inspect", "--tokenizer", "adk-chars", "--no-cache"])
        .arg(dir.path())
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0 | 2)),
        "exit {:?}: {stderr}",
        out.status.code()
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains('\u{FDD0}'), "{stderr}");
    let shown = dir.path().to_string_lossy().into_owned();
    let mut bad = 0;
    for line in stderr.lines() {
        let Some(rest) = line
            .strip_prefix("skipped: ")
            .or_else(|| line.strip_prefix("error: "))
        else {
            continue;
        };
        if rest.ends_with("bad files") {
            continue;
        }
        // Past the first 20 the bad files are counted, not listed (issue 47 item 7).
        if let Some(more) = rest
            .strip_prefix("and ")
            .and_then(|r| r.strip_suffix(" more unreadable inputs not listed (the first 20 are)"))
        {
            bad += more.parse::<usize>().expect("a count");
            continue;
        }
        bad += 1;
        assert!(
            rest.starts_with(&shown),
            "an error line without its file: {line}"
        );
        assert!(
            written
                .iter()
                .any(|w| rest[shown.len()..].starts_with(&format!("/{w}"))),
            "names no file written: {line}"
        );
    }
    assert!(
        bad > 30 && bad < written.len(),
        "{bad} bad of {}: {stderr}",
        written.len()
    );
}
