//! Robustness of the Claude Code, Codex and OpenHands readers: truncated and garbled
//! versions of the real corpus files (seeded, so every run feeds the same inputs) must give
//! sessions or a one-line error naming the file, never a panic.

use compaction_sim::transcript::{claude_code, codex, openhands, ReadError, Session};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use crate::common::{corpus, read_text};

/// Files of the three formats, with how many mutations each gets (the 3 MB main sessions
/// get fewer: each read parses the whole file).
fn files() -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let spotter = [
        "short.jsonl",
        "tool_heavy.jsonl",
        "subagent.jsonl",
        "258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-a881341.jsonl",
        "fa812bfe-b295-4cca-9c2f-fdf01028cb46/subagents/agent-acompact-70d8e7.jsonl",
        "4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-a2898e3.jsonl",
    ];
    out.extend(
        spotter
            .iter()
            .map(|f| (format!("claude_code_spotter/{f}"), 40)),
    );
    out.push((
        "claude_code_spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl".to_string(),
        6,
    ));
    for dir in [
        "agentcmd_cli_sessions/claude/full",
        "agentcmd_cli_sessions/codex/full",
    ] {
        let mut names: Vec<String> = std::fs::read_dir(crate::common::corpus_dir(dir))
            .expect("corpus folder readable")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let n = if dir.contains("codex") { 15 } else { 40 };
        out.extend(names.into_iter().map(|f| (format!("{dir}/{f}"), n)));
    }
    for f in [
        "tests/runtime/trajs/basic.json",
        "tests/runtime/trajs/basic_gui_mode.json",
        "tests/runtime/trajs/basic_interactions.json",
        "tests/runtime/trajs/wrong_initial_state.json",
        "evaluation/benchmarks/multi_swe_bench/examples/output.jsonl",
        "tests/unit/resolver/mock_output/output.jsonl",
    ] {
        out.push((format!("openhands/{f}"), 40));
    }
    out
}

/// xorshift64*: a fixed sequence from a fixed seed, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// One mutated version of `text`; `k` picks the kind of damage.
fn mutate(text: &str, rng: &mut Rng, k: usize) -> String {
    const JUNK: [&str; 12] = [
        "{", "}", "[", "]", "\"", ",", ":", "0", "-1", "\\", "\n", "null",
    ];
    match k % 6 {
        // Cut anywhere.
        0 => text[..floor_boundary(text, rng.below(text.len() + 1))].to_string(),
        // Cut at a line end, keeping whole records.
        1 => {
            let cut = floor_boundary(text, rng.below(text.len() + 1));
            let end = text[..cut].rfind('\n').map_or(0, |i| i + 1);
            text[..end].to_string()
        }
        // Overwrite a few bytes with JSON punctuation.
        2 => {
            let mut s = text.to_string();
            for _ in 0..1 + rng.below(4) {
                let at = floor_boundary(&s, rng.below(s.len()));
                let end = floor_boundary(&s, at + 1 + rng.below(3)).max(at);
                s.replace_range(at..end, JUNK[rng.below(JUNK.len())]);
            }
            s
        }
        // Drop, repeat or swap whole lines (orphans results, reorders times).
        3 | 4 => {
            let mut lines: Vec<&str> = text.split('\n').collect();
            let a = rng.below(lines.len());
            let b = rng.below(lines.len());
            match rng.below(3) {
                0 => {
                    lines.remove(a);
                }
                1 => lines.insert(b, lines[a]),
                _ => lines.swap(a, b),
            }
            lines.join("\n")
        }
        // Change a value's type: numbers and strings become objects, arrays, or null.
        _ => {
            let mut s = text.to_string();
            for _ in 0..3 {
                let at = floor_boundary(&s, rng.below(s.len()));
                if let Some(off) = s[at..].find("\":") {
                    let pos = at + off + 2;
                    let end = floor_boundary(&s, pos + 1);
                    s.replace_range(
                        pos..end,
                        ["{", "[", "null,", "1e999,", "\"x\","][rng.below(5)],
                    );
                }
            }
            s
        }
    }
}

type Reader = fn(&str, &str) -> Result<Vec<Session>, ReadError>;
type Sniffer = fn(&str) -> bool;

/// Checks every reader on `text`; returns how many of them refused it.
fn check(file: &str, text: &str, what: &str) -> Result<usize, String> {
    let mut refused = 0;
    let readers: [(&str, Reader, Sniffer); 3] = [
        ("claude_code", claude_code::read, claude_code::sniff),
        ("codex", codex::read, codex::sniff),
        ("openhands", openhands::read, openhands::sniff),
    ];
    for (name, read, sniff) in readers {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let _ = sniff(text);
            read(file, text)
        }));
        match outcome {
            Err(_) => return Err(format!("{name} panicked on {what}")),
            Ok(Ok(sessions)) => {
                if sessions.is_empty() {
                    return Err(format!("{name} returned Ok with no sessions on {what}"));
                }
            }
            Ok(Err(e)) => {
                refused += 1;
                let line = e.to_string();
                if std::env::var_os("READERS_MORE_SHOW").is_some() {
                    eprintln!("{name}: {line}");
                }
                if line.contains('\n') || !line.starts_with(file) || e.message.is_empty() {
                    return Err(format!("{name} gave a bad error on {what}: {line:?}"));
                }
            }
        }
    }
    Ok(refused)
}

#[test]
fn truncated_and_garbled_corpus_files_never_panic() {
    let mut rng = Rng(0x5EED_2026_0002);
    let mut failures = Vec::new();
    let mut fed = 0usize;
    // Every input is someone's format at most: at least two readers refuse it. Some
    // mutations must be accepted by the owner (cut at a line end), so not all three refuse.
    let mut all_refused = 0usize;
    for (rel, n) in files() {
        let path = corpus().join(&rel);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        match check(&rel, &text, "the original") {
            Ok(2) => {}
            other => failures.push(format!(
                "{rel}: the original: {other:?}, expected exactly one reader to accept it"
            )),
        }
        for k in 0..n {
            let bad = mutate(&text, &mut rng, k);
            fed += 1;
            match check(&rel, &bad, &format!("mutation {k} (kind {})", k % 6)) {
                Ok(3) => all_refused += 1,
                Ok(r) if r < 2 => failures.push(format!(
                    "{rel}: mutation {k}: accepted by {} readers",
                    3 - r
                )),
                Ok(_) => {}
                Err(f) => failures.push(format!("{rel}: {f}")),
            }
        }
    }
    assert!(fed > 500, "only {fed} inputs");
    assert!(
        all_refused > fed / 10 && all_refused < fed,
        "{all_refused} of {fed} refused by all readers"
    );
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn each_reader_reads_its_own_corpus_files_and_refuses_the_others() {
    for (rel, _) in files() {
        let text = read_text(&corpus().join(&rel));
        let own: Reader = if rel.starts_with("openhands/") {
            openhands::read
        } else if rel.contains("/codex/") {
            codex::read
        } else {
            claude_code::read
        };
        let sessions = own(&rel, &text).unwrap_or_else(|e| panic!("{e}"));
        assert!(sessions.iter().all(|s| !s.events.is_empty()), "{rel}");
        let sniffed = [
            claude_code::sniff(&text),
            codex::sniff(&text),
            openhands::sniff(&text),
        ];
        assert_eq!(
            sniffed.iter().filter(|b| **b).count(),
            1,
            "{rel}: exactly one format claims it: {sniffed:?}"
        );
    }
}

#[test]
fn huge_lines_and_empty_files_are_one_line_errors() {
    let big = format!(
        "{{\"type\":\"user\",\"x\":\"{}\"}}\n",
        "a".repeat(65 * 1024 * 1024)
    );
    for (name, read) in [
        ("claude_code", claude_code::read as Reader),
        ("codex", codex::read),
        ("openhands", openhands::read),
    ] {
        let e = read("big.jsonl", &big).expect_err(name);
        assert_eq!(e.location, "line 1", "{name}: {e}");
        assert!(e.message.contains("MiB"), "{name}: {e}");
        let e = read("empty.jsonl", "").expect_err(name);
        assert!(e.to_string().starts_with("empty.jsonl"), "{name}: {e}");
    }
}

fn walk(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
    let rd = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out);
        } else if p
            .file_name()
            .is_some_and(|n| n != "SOURCE.md" && n != "README.md" && n != "stats.json")
        {
            out.push(p);
        }
    }
}

/// detect.rs asks every format's `sniff`; ours must not claim the other formats' files,
/// and our readers must refuse them with a one-line error rather than misread them.
#[test]
fn other_formats_are_not_claimed() {
    let mut files = Vec::new();
    for dir in [
        "adk",
        "tau_bench",
        "tau2_oscaralvaro_fork",
        "swe_agent",
        "agentcmd_cli_sessions/gemini",
    ] {
        walk(&corpus().join(dir), &mut files);
    }
    assert!(files.len() > 50, "{} files", files.len());
    for p in files {
        let name = p.display().to_string();
        let text = read_text(&p);
        assert!(!claude_code::sniff(&text), "claude_code claims {name}");
        assert!(!codex::sniff(&text), "codex claims {name}");
        assert!(!openhands::sniff(&text), "openhands claims {name}");
        match check(&name, &text, "a foreign file") {
            Ok(3) => {}
            other => panic!("{name}: {other:?}: one of our readers accepted a foreign file"),
        }
    }
}

/// `inspect --emit jsonl` must carry everything these readers record (per-request
/// latency, approval policies, recorded compactions, post-compaction marks) losslessly.
#[test]
fn canonical_jsonl_round_trips_our_sessions() {
    use compaction_sim::transcript::canonical;
    let mut checked = 0;
    for (rel, _) in files() {
        let text = read_text(&corpus().join(&rel));
        let read: Reader = if rel.starts_with("openhands/") {
            openhands::read
        } else if rel.contains("/codex/") {
            codex::read
        } else {
            claude_code::read
        };
        for s in read(&rel, &text).unwrap_or_else(|e| panic!("{e}")) {
            let out = canonical::write_canonical(&s);
            let back =
                canonical::read("c.jsonl", &out).unwrap_or_else(|e| panic!("{}: {e}", s.source));
            assert_eq!(back.len(), 1, "{}", s.source);
            let mut b = back.into_iter().next().unwrap_or_else(|| unreachable!());
            b.source.clone_from(&s.source);
            assert_eq!(b, s, "{}", s.source);
            checked += 1;
        }
    }
    assert!(checked >= 25, "{checked}");
}
