//! The Claude Code, Codex and OpenHands readers on each other's files: each reads its own
//! corpus files, refuses the others' with a one-line error naming the file, and round-trips
//! through canonical JSONL. Damaged files are the `mutations` module's.

use compaction_sim::transcript::{claude_code, codex, openhands, ReadError, Session};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use crate::common::{corpus, read_text};

/// Files of the three formats.
fn files() -> Vec<String> {
    let mut out = Vec::new();
    let spotter = [
        "short.jsonl",
        "tool_heavy.jsonl",
        "subagent.jsonl",
        "258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-a881341.jsonl",
        "fa812bfe-b295-4cca-9c2f-fdf01028cb46/subagents/agent-acompact-70d8e7.jsonl",
        "4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-a2898e3.jsonl",
    ];
    out.extend(spotter.iter().map(|f| format!("claude_code_spotter/{f}")));
    out.push("claude_code_spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl".to_string());
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
        out.extend(names.into_iter().map(|f| format!("{dir}/{f}")));
    }
    for f in [
        "tests/runtime/trajs/basic.json",
        "tests/runtime/trajs/basic_gui_mode.json",
        "tests/runtime/trajs/basic_interactions.json",
        "tests/runtime/trajs/wrong_initial_state.json",
        "evaluation/benchmarks/multi_swe_bench/examples/output.jsonl",
        "tests/unit/resolver/mock_output/output.jsonl",
    ] {
        out.push(format!("openhands/{f}"));
    }
    out
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
fn each_reader_reads_its_own_corpus_files_and_refuses_the_others() {
    for rel in files() {
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
    for rel in files() {
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
