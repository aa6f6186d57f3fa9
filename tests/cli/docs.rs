//! The docs are checked (issue 29, part 4). Every relative link in README.md and docs/*.md
//! resolves to a file of the repository and, with `#anchor`, to a heading of that file. Every
//! `compaction-sim ...`, `cargo run --release -- ...` (or `cargo run -- ...`) command in a
//! ```bash block is checked against the binary:
//!
//! - a usage line (`PATH...`, `[--flag X]`, `a|b`, `...`), and a command written in running
//!   text or a table (`` `compaction-sim merge DIR...` ``), must name a real subcommand, and
//!   each of its flags must appear in that subcommand's `--help`;
//! - a command that needs what the repository does not hold (a database URL, a `live:` or
//!   `python:` summarizer, `--yes`, an input path that is not there) is run with `--help`
//!   appended: clap rejects an unknown subcommand, an unknown flag or a value it cannot parse
//!   before it prints help (exit 2), and its flags are looked up in the help as above;
//! - any other command runs for real, in a temporary folder holding a link to the bundled
//!   `transcripts/`, so what it writes (`--out reports/tune`, `reports/latest`) lands there
//!   and later commands of the same file can read it (`merge` the shards, `report` the run).
//!   It must exit 0, or the code a trailing `# exit N` names.
//!
//! `cargo run --release --bin NAME` commands (the benchmarks) are checked for the binary's
//! source only: those binaries do not use clap.
//!
//! And every `docs/FILE.md "Section"` that a source file, data file, script or test cites
//! names a heading that exists.

use crate::common::{bin, root};
use regex::Regex;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// README.md and every docs/*.md, in a stable order.
fn doc_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    assert!(!docs.is_empty(), "docs/ holds no .md file");
    files.extend(docs);
    files
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

/// The lines outside fenced code blocks, numbered from 1, with inline code spans blanked
/// (a `[x](y)` inside backticks is an example, not a link).
fn prose_lines(text: &str) -> Vec<(usize, String)> {
    let code = Regex::new(r"`[^`]*`").unwrap();
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push((i + 1, code.replace_all(line, "``").into_owned()));
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation dropped (backticks included),
/// spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor a Markdown file offers: its headings' slugs, a repeated one with `-1`, `-2`.
fn anchors(text: &str) -> BTreeSet<String> {
    let heading = Regex::new(r"^#{1,6}\s+(.*?)\s*#*\s*$").unwrap();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = BTreeSet::new();
    for (_, line) in prose_lines_keep_code(text) {
        if let Some(c) = heading.captures(&line) {
            let s = slug(&c[1]);
            let n = seen.entry(s.clone()).or_insert(0);
            out.insert(if *n == 0 {
                s.clone()
            } else {
                format!("{s}-{n}")
            });
            *n += 1;
        }
    }
    out
}

/// Lines outside fenced code blocks, inline code kept (headings keep their words).
fn prose_lines_keep_code(text: &str) -> Vec<(usize, String)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push((i + 1, line.to_string()));
        }
    }
    out
}

/// The relative links of one Markdown file that do not resolve: `FILE:LINE: target: why`.
/// Links with a scheme (`https:`, `mailto:`) are not followed.
fn broken_links(file: &Path, text: &str) -> Vec<String> {
    let link = Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let dir = file.parent().expect("a file has a folder");
    let mut out = Vec::new();
    for (n, line) in prose_lines(text) {
        for c in link.captures_iter(&line) {
            let target = &c[1];
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target, None),
            };
            let where_ = format!("{}:{n}: {target}", rel(file));
            let resolved = if path.is_empty() {
                file.to_path_buf()
            } else {
                dir.join(path)
            };
            if !resolved.exists() {
                out.push(format!("{where_}: {} does not exist", resolved.display()));
                continue;
            }
            if let Some(a) = anchor {
                if resolved.extension().is_none_or(|x| x != "md") {
                    out.push(format!(
                        "{where_}: an anchor into a file that is not Markdown"
                    ));
                    continue;
                }
                let target_text = std::fs::read_to_string(&resolved).unwrap_or_default();
                let offered = anchors(&target_text);
                if !offered.contains(a) {
                    out.push(format!(
                        "{where_}: no heading of {} has the anchor #{a}",
                        rel(&resolved)
                    ));
                }
            }
        }
    }
    out
}

/// Split a command line as a POSIX shell would for plain words and quotes; a `#` starting a
/// word ends the line (its text is returned as the comment).
fn shell_words(line: &str) -> (Vec<String>, String) {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    cur.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => cur.extend(chars.next()),
                        _ => cur.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                cur.extend(chars.next());
            }
            '#' if !in_word => return (words, chars.collect::<String>().trim().to_string()),
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    (words, String::new())
}

/// One command found in a ```bash block.
#[derive(Debug, Clone)]
struct DocCommand {
    /// `FILE:LINE`, for messages.
    at: String,
    /// The line as written (continuations joined).
    text: String,
    /// The words after `compaction-sim` / `cargo run --release --`.
    args: Vec<String>,
    /// The exit code a trailing `# exit N` names, else 0.
    exit: i32,
    /// Written in running text (`compaction-sim x ...` in backticks): checked as a usage line.
    inline: bool,
}

/// What a ```bash block line runs, if it is one of ours.
enum Found {
    Ours(DocCommand),
    /// `cargo run [--release] --bin NAME`: a benchmark binary.
    Bench(String, String),
}

/// The commands of every ```bash block of one Markdown file, in order.
fn commands(file: &Path, text: &str) -> Vec<Found> {
    let mut out = Vec::new();
    let mut in_bash = false;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with("```") {
            in_bash = !in_bash && t == "```bash";
            continue;
        }
        if !in_bash {
            continue;
        }
        let (start, joined) = match pending.take() {
            Some((s, mut acc)) => {
                acc.push(' ');
                acc.push_str(t);
                (s, acc)
            }
            None => (i + 1, t.to_string()),
        };
        if let Some(head) = joined.strip_suffix('\\') {
            pending = Some((start, head.trim_end().to_string()));
            continue;
        }
        let at = format!("{}:{start}", rel(file));
        let (words, comment) = shell_words(&joined);
        let exit = comment
            .strip_prefix("exit ")
            .and_then(|n| n.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        let w: Vec<&str> = words.iter().map(String::as_str).collect();
        let args = match w.as_slice() {
            ["compaction-sim", rest @ ..] => rest,
            ["cargo", "run", "--release", "--", rest @ ..] | ["cargo", "run", "--", rest @ ..] => {
                rest
            }
            ["cargo", "run", "--release", "--bin", name, ..]
            | ["cargo", "run", "--bin", name, ..] => {
                out.push(Found::Bench(at, name.to_string()));
                continue;
            }
            _ => continue,
        };
        out.push(Found::Ours(DocCommand {
            at,
            text: joined.clone(),
            args: args.iter().map(|s| s.to_string()).collect(),
            exit,
            inline: false,
        }));
    }
    // Commands named in running text and tables, up to a pipe into another program.
    let span = Regex::new(r"`(?:compaction-sim|cargo run --release --) ([^`]*)`").unwrap();
    for (n, line) in prose_lines_keep_code(text) {
        for c in span.captures_iter(&line) {
            let text = c[1].split(" \\| ").next().unwrap_or_default();
            out.push(Found::Ours(DocCommand {
                at: format!("{}:{n}", rel(file)),
                text: text.to_string(),
                args: shell_words(text).0,
                exit: 0,
                inline: true,
            }));
        }
    }
    out
}

/// Names the sandbox links to the repository's own folder of that name.
const LINKED: &[&str] = &["transcripts"];

/// Flags whose value is written, not read.
const OUTPUT_FLAGS: &[&str] = &["--out", "--reports", "--cache-dir", "--live-cache"];

/// A usage line rather than a command: placeholders, optional parts, alternatives.
fn is_usage_line(args: &[String]) -> bool {
    let placeholder = Regex::new(r"^[A-Z][A-Z0-9_./]*$").unwrap();
    args.iter().any(|a| {
        let value = a.split_once('=').map_or(a.as_str(), |(_, v)| v);
        a == "..."
            || a.ends_with("...")
            || a.starts_with('[')
            || a.ends_with(']')
            || (a.contains('|') && !a.contains('\''))
            || placeholder.is_match(value)
    })
}

/// Why a command cannot run offline here (then only `--help` is run), or None.
fn needs_outside(args: &[String], sandbox: &Path) -> Option<String> {
    let mut prev: Option<&str> = None;
    for a in args {
        if a.contains("://") {
            return Some(format!("{a} is a database"));
        }
        if a.contains("live:") || a.contains("python:") {
            return Some(format!("{a} calls outside the repository"));
        }
        if matches!(a.as_str(), "--yes" | "--python" | "--package") {
            return Some(format!("{a} needs outside resources"));
        }
        let is_flag = a.starts_with('-');
        if !is_flag {
            let output = prev.is_some_and(|p| OUTPUT_FLAGS.contains(&p));
            let looks_like_path = a.contains('/')
                || [".json", ".jsonl", ".py", ".toml", ".db", ".traj"]
                    .iter()
                    .any(|x| a.ends_with(x));
            if output {
                let p = Path::new(a);
                let first = p.components().next().map(|c| c.as_os_str().to_owned());
                if p.is_absolute()
                    || a.contains("..")
                    || first.is_some_and(|f| LINKED.iter().any(|l| f == *l))
                {
                    return Some(format!("writes to {a}, outside the sandbox"));
                }
            } else if looks_like_path
                && prev != Some("--shard")
                && !a.contains('(')
                && !sandbox.join(a).exists()
            {
                return Some(format!("reads {a}, which the repository does not hold"));
            }
        }
        prev = Some(a.as_str());
    }
    None
}

/// `compaction-sim SUB [SUB2] --help`, cached; the subcommand path is the first word, and the
/// second too when the first has subcommands of its own.
fn help_of(
    args: &[String],
    cache: &mut HashMap<Vec<String>, Result<String, String>>,
) -> Result<String, String> {
    let first = args.first().ok_or("no subcommand")?;
    let mut path = vec![first.clone()];
    let mut help = run_help(&path, cache)?;
    if help.contains("\nCommands:\n") {
        let second = args.get(1).ok_or(format!("`{first}` needs a subcommand"))?;
        path.push(second.clone());
        help = run_help(&path, cache)?;
    }
    Ok(help)
}

fn run_help(
    path: &[String],
    cache: &mut HashMap<Vec<String>, Result<String, String>>,
) -> Result<String, String> {
    cache
        .entry(path.to_vec())
        .or_insert_with(|| {
            let out = bin()
                .args(path)
                .arg("--help")
                .timeout(Duration::from_secs(30))
                .output()
                .expect("the binary runs");
            if out.status.success() {
                Ok(String::from_utf8_lossy(&out.stdout).into_owned())
            } else {
                Err(format!(
                    "`compaction-sim {} --help` fails: {}",
                    path.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                ))
            }
        })
        .clone()
}

/// The flags a command line names (`--x`, `--x=v`, `-q`), brackets and alternatives removed.
fn flags_of(args: &[String]) -> Vec<String> {
    args.iter()
        .flat_map(|a| a.split('|'))
        .map(|a| a.trim_matches(|c| c == '[' || c == ']'))
        .filter(|a| a.starts_with('-') && a.len() > 1 && a != &"--")
        .map(|a| a.split_once('=').map_or(a, |(f, _)| f).to_string())
        .collect()
}

fn flag_in_help(flag: &str, help: &str) -> bool {
    let pat = Regex::new(&format!(r"(^|[\s,\[]){}([\s,=\]]|$)", regex::escape(flag))).unwrap();
    help.lines().any(|l| pat.is_match(l))
}

/// How a command was checked.
#[derive(Debug, PartialEq)]
enum Checked {
    Usage,
    Help(String),
    Ran,
}

/// Check one command (see the module's comment), running it in `sandbox`.
fn check_command(
    cmd: &DocCommand,
    sandbox: &Path,
    cache: &mut HashMap<Vec<String>, Result<String, String>>,
) -> Result<Checked, String> {
    let fail = |why: String| Err(format!("{}: `{}`: {why}", cmd.at, cmd.text));
    let help = match help_of(&cmd.args, cache) {
        Ok(h) => h,
        Err(e) => return fail(e),
    };
    let unknown: Vec<String> = flags_of(&cmd.args)
        .into_iter()
        .filter(|f| !flag_in_help(f, &help))
        .collect();
    if !unknown.is_empty() {
        return fail(format!("not in its --help: {}", unknown.join(", ")));
    }
    if cmd.inline || is_usage_line(&cmd.args) {
        return Ok(Checked::Usage);
    }
    if let Some(why) = needs_outside(&cmd.args, sandbox) {
        let out = bin()
            .args(&cmd.args)
            .arg("--help")
            .current_dir(sandbox)
            .timeout(Duration::from_secs(30))
            .output()
            .expect("the binary runs");
        if !out.status.success() {
            return fail(format!(
                "rejected by the argument parser: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        return Ok(Checked::Help(why));
    }
    let out = bin()
        .args(&cmd.args)
        .current_dir(sandbox)
        .env("COMPACTION_SIM_CACHE", sandbox.join(".cache"))
        .timeout(Duration::from_secs(300))
        .output()
        .expect("the binary runs");
    let code = out.status.code().unwrap_or(-1);
    if code != cmd.exit {
        return fail(format!(
            "exit {code}, expected {}: {}",
            cmd.exit,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(Checked::Ran)
}

/// A fresh sandbox: a temporary folder with links to the repository's inputs.
fn sandbox() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary folder");
    for name in LINKED {
        std::os::unix::fs::symlink(root().join(name), dir.path().join(name))
            .expect("link the bundled inputs");
    }
    dir
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for f in doc_files() {
        let text = std::fs::read_to_string(&f).expect("read the doc");
        checked += prose_lines(&text)
            .iter()
            .filter(|(_, l)| l.contains("]("))
            .count();
        broken.extend(broken_links(&f, &text));
    }
    assert!(checked > 20, "only {checked} lines with links found");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_command_in_the_docs_parses_and_the_offline_ones_run() {
    let mut cache = HashMap::new();
    let mut errors = Vec::new();
    let mut ran = Vec::new();
    let mut total = 0;
    for f in doc_files() {
        let text = std::fs::read_to_string(&f).expect("read the doc");
        // One sandbox per file: a later command may read what an earlier one wrote.
        let sb = sandbox();
        for found in commands(&f, &text) {
            total += 1;
            match found {
                Found::Bench(at, name) => {
                    if !root().join(format!("src/bin/{name}.rs")).is_file() {
                        errors.push(format!("{at}: no binary {name} (src/bin/{name}.rs)"));
                    }
                }
                Found::Ours(cmd) => match check_command(&cmd, sb.path(), &mut cache) {
                    Ok(Checked::Ran) => ran.push(cmd.text),
                    Ok(Checked::Usage) | Ok(Checked::Help(_)) => {}
                    Err(e) => errors.push(e),
                },
            }
        }
    }
    eprintln!(
        "{} commands checked; run for real:\n  {}",
        total,
        ran.join("\n  ")
    );
    assert!(
        errors.is_empty(),
        "commands in the docs:\n{}",
        errors.join("\n")
    );
    // The README's own examples on the bundled transcripts must stay runnable, not slip into
    // help-only checking unnoticed.
    for must in [
        "compaction-sim inspect transcripts/",
        "compaction-sim check 'Compaction(after_tokens=80_000, keep_recent_events=20)'",
        "compaction-sim merge parts/shard-1/run parts/shard-2/run --out reports/merged",
        "compaction-sim report reports/tune",
    ] {
        assert!(
            ran.iter().any(|r| r.starts_with(must)),
            "`{must}` was not run for real; run: {ran:#?}"
        );
    }
}

#[test]
fn slugs_are_githubs() {
    assert_eq!(slug("Settings and `check`"), "settings-and-check");
    assert_eq!(slug("`replay` and `conform`"), "replay-and-conform");
    assert_eq!(slug("Scale: many sessions"), "scale-many-sessions");
    assert_eq!(
        slug("Cost, pricing and latency"),
        "cost-pricing-and-latency"
    );
    let a = anchors("# A\n## Notes\n```\n# not a heading\n```\n## Notes\n");
    let want: BTreeSet<String> = ["a", "notes", "notes-1"].map(String::from).into();
    assert_eq!(a, want);
}

#[test]
fn a_link_to_a_missing_file_or_heading_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("b.md"), "# Real heading\n").unwrap();
    let a = dir.path().join("a.md");
    let text = "[ok](b.md#real-heading) [gone](missing.md) [bad](b.md#no-such) \
                [self](#top) `[code](not-a-link.md)` [web](https://example.com/x)\n# Top\n";
    std::fs::write(&a, text).unwrap();
    let broken = broken_links(&a, text);
    assert_eq!(broken.len(), 2, "{broken:#?}");
    assert!(broken[0].contains("missing.md") && broken[0].contains("does not exist"));
    assert!(broken[1].contains("#no-such"), "{broken:#?}");
}

#[test]
fn an_unknown_flag_or_subcommand_in_the_docs_is_reported() {
    let sb = sandbox();
    let mut cache = HashMap::new();
    let text = "```bash\n\
                compaction-sim sweep transcripts/ --no-such-flag 3 --out r\n\
                compaction-sim sweep sqlite:///x.db --sample 0\n\
                compaction-sim inspect PATH... [--no-such-flag]\n\
                compaction-sim no-such-command transcripts/\n\
                cargo run --release -- replay transcripts/01-support-3.session.json --after-tokens lots\n\
                compaction-sim check 'Compaction(after_tokens=80_000, keep_recent_events=20)'   # exit 1\n\
                cargo run --release --bin no-such-bench -- --x\n\
                ```\n\
                Then `compaction-sim merge DIR... --no-such-flag` merges.\n";
    let found = commands(Path::new("doc.md"), text);
    assert_eq!(found.len(), 8);
    let mut results = Vec::new();
    for f in &found {
        match f {
            Found::Ours(c) => results.push(check_command(c, sb.path(), &mut cache)),
            Found::Bench(_, name) => assert_eq!(name, "no-such-bench"),
        }
    }
    for (i, r) in results.iter().enumerate() {
        assert!(r.is_err(), "command {i} passed: {r:?}");
    }
    let msgs: Vec<&String> = results.iter().map(|r| r.as_ref().unwrap_err()).collect();
    assert!(msgs[0].contains("--no-such-flag"), "{}", msgs[0]);
    // `--sample` is a real flag, 0 is out of its range: clap says so before printing help.
    assert!(
        msgs[1].contains("rejected by the argument parser"),
        "{}",
        msgs[1]
    );
    assert!(msgs[2].contains("--no-such-flag"), "{}", msgs[2]);
    assert!(msgs[3].contains("no-such-command"), "{}", msgs[3]);
    // A value clap cannot parse is caught by running it; a wrong exit code by the `# exit`.
    assert!(msgs[5].contains("exit 0, expected 1"), "{}", msgs[5]);
    assert!(msgs[6].contains("--no-such-flag"), "{}", msgs[6]);
}

/// The headings of a Markdown file as written (inline code marks dropped).
fn headings(text: &str) -> BTreeSet<String> {
    let heading = Regex::new(r"^#{1,6}\s+(.*?)\s*$").unwrap();
    prose_lines_keep_code(text)
        .iter()
        .filter_map(|(_, l)| heading.captures(l).map(|c| c[1].replace('`', "")))
        .collect()
}

/// Every `docs/FILE.md "Section"` a source file, a data file or a test names: `FILE:LINE:
/// what is missing`.
fn missing_sections(file: &Path, text: &str) -> Vec<String> {
    let cite = Regex::new(r#"docs/([a-z-]+\.md)((?:(?:,| and)? ?\\?"[^"\\]+\\?")*)"#).unwrap();
    let quoted = Regex::new(r#"\\?"([^"\\]+)\\?""#).unwrap();
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for c in cite.captures_iter(line) {
            let doc = root().join("docs").join(&c[1]);
            let at = format!("{}:{}", rel(file), n + 1);
            let Ok(doc_text) = std::fs::read_to_string(&doc) else {
                out.push(format!("{at}: docs/{} does not exist", &c[1]));
                continue;
            };
            let offered = headings(&doc_text);
            for q in quoted.captures_iter(&c[2]) {
                if !offered.contains(&q[1]) {
                    out.push(format!("{at}: docs/{} has no section \"{}\"", &c[1], &q[1]));
                }
            }
        }
    }
    out
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read the folder") {
        let p = e.expect("folder entry").path();
        if p.is_dir() {
            files_under(&p, out);
        } else if p
            .extension()
            .is_some_and(|x| ["rs", "toml", "sh", "py"].iter().any(|y| x == *y))
        {
            out.push(p);
        }
    }
}

#[test]
fn every_docs_section_the_code_names_exists() {
    let mut files = vec![root().join("Cargo.toml")];
    for d in ["src", "tests/cli", "scripts"] {
        files_under(&root().join(d), &mut files);
    }
    let mut missing = Vec::new();
    let mut cited = 0;
    // This file cites missing sections on purpose, to show the check fails on them.
    files.retain(|f| !f.ends_with("tests/cli/docs.rs"));
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        cited += text.matches("docs/").count();
        missing.extend(missing_sections(f, &text));
    }
    assert!(cited > 10, "only {cited} citations of docs/ found");
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn a_citation_of_a_missing_docs_section_is_reported() {
    let text = "//! (docs/cli.md \"Where outputs go\", \"No such part\")\n\
                # (docs/pricing.md \\\"Prices\\\") and docs/nothing.md \"X\"\n";
    let missing = missing_sections(Path::new("x.rs"), text);
    assert_eq!(missing.len(), 2, "{missing:#?}");
    assert!(missing[0].contains("\"No such part\""), "{}", missing[0]);
    assert!(
        missing[1].contains("docs/nothing.md does not exist"),
        "{}",
        missing[1]
    );
}
