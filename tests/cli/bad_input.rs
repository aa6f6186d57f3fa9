//! Bad numbers and broken JSON (issue #10, input side): each test is named after what it
//! guards. Inputs are real corpus files with one value or byte changed, so the readers see
//! the shapes they read every day.

use std::path::{Path, PathBuf};
use std::time::Duration;

use compaction_sim::transcript::detect::{detect, expand_paths, load_file};
use compaction_sim::transcript::{write_canonical, Format};

use crate::common::{bin, corpus, read_text, root};

/// `text` with the number after every `"key":` replaced by `with`; `None` if there is none.
fn replace_numbers(text: &str, key: &str, with: &str) -> Option<String> {
    let pat = format!("\"{key}\"");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut hits = 0;
    while let Some(i) = rest.find(&pat) {
        let after = &rest[i + pat.len()..];
        let colon = after.len() - after.trim_start().len();
        let value = after.trim_start();
        let Some(v) = value.strip_prefix(':') else {
            out.push_str(&rest[..i + pat.len()]);
            rest = after;
            continue;
        };
        let lead = v.len() - v.trim_start().len();
        let v = v.trim_start();
        let n = v
            .find(|c: char| !(c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E')))
            .unwrap_or(v.len());
        let start = i + pat.len() + colon + 1 + lead;
        out.push_str(&rest[..start]);
        if n == 0 {
            rest = &rest[start..];
            continue;
        }
        out.push_str(with);
        hits += 1;
        rest = &rest[start + n..];
    }
    out.push_str(rest);
    (hits > 0).then_some(out)
}

/// The first corpus file under `folder` of format `f` holding a number under `"key":`.
fn corpus_file_with(folder: &str, f: Format, key: &str) -> (PathBuf, String) {
    let (files, _) = expand_paths(&[corpus().join(folder).to_string_lossy().into_owned()]);
    files
        .into_iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(&p).ok()?;
            (detect(&text) == Some(f) && replace_numbers(&text, key, "0").is_some())
                .then_some((p, text))
        })
        .min_by_key(|(_, t)| t.len())
        .unwrap_or_else(|| panic!("no {} file under {folder} has a `{key}` number", f.name()))
}

/// A canonical JSONL file with recorded usage, written from a Codex corpus session.
fn canonical_text() -> String {
    let (p, _) = corpus_file_with("agentcmd_cli_sessions/codex", Format::Codex, "input_tokens");
    let sessions = load_file(&p, None).unwrap_or_else(|e| panic!("{e}"));
    write_canonical(&sessions[0])
}

/// (format, original text, the usage key to damage) for every format that records usage.
fn usage_inputs() -> Vec<(Format, String, &'static str)> {
    let mut out = Vec::new();
    for (folder, f, key) in [
        ("agentcmd_cli_sessions/codex", Format::Codex, "input_tokens"),
        ("claude_code_spotter", Format::ClaudeCode, "input_tokens"),
        ("openhands", Format::Openhands, "prompt_tokens"),
        ("agentcmd_cli_sessions/gemini", Format::GeminiCli, "input"),
        ("tau2_oscaralvaro_fork", Format::Tau2, "prompt_tokens"),
    ] {
        out.push((f, corpus_file_with(folder, f, key).1, key));
    }
    // The corpus's ADK sessions keep usage inside old response objects the reader does not
    // read; the project's synthetic sessions record it on the events, as ADK writes it.
    let adk = read_text(&root().join("transcripts/15-support-2.session.json"));
    assert_eq!(detect(&adk), Some(Format::Adk));
    out.push((Format::Adk, adk, "prompt_token_count"));
    out.push((Format::Canonical, canonical_text(), "prompt_tokens"));
    out
}

/// Load `text` written to `dir/name`; the error line, which must name the file.
fn load_error(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("written");
    let e = load_file(&p, None)
        .err()
        .unwrap_or_else(|| panic!("{name}: loaded, expected an error"));
    let line = e.to_string();
    assert!(
        line.starts_with(&p.to_string_lossy().into_owned()),
        "does not name the file: {line}"
    );
    assert!(!line.contains('\n'), "not one line: {line}");
    assert!(
        !line.contains('\u{FDD0}') && !line.to_lowercase().contains("fdd0"),
        "shows the internal tag: {line}"
    );
    line
}

#[test]
fn u64_max_usage_is_refused() {
    let dir = tempfile::tempdir().expect("temp folder");
    for (f, text, key) in usage_inputs() {
        let bad = replace_numbers(&text, key, "18446744073709551615").expect("has the key");
        let name = format!("{}.json", f.name());
        let e = load_error(dir.path(), &name, &bad);
        assert!(
            e.contains(key) && e.contains("18446744073709551615") && e.contains("2^53"),
            "{}: {e}",
            f.name()
        );
    }
}

#[test]
fn negative_nan_and_overflowing_usage_is_refused_in_every_reader() {
    let dir = tempfile::tempdir().expect("temp folder");
    for (f, text, key) in usage_inputs() {
        for (value, says) in [
            ("-1", "-1"),
            ("NaN", "NaN"),
            ("1e309", "1e309"),
            ("18446744073709551616", "18446744073709551616"),
            ("9007199254740993", "9007199254740993"),
            ("12.5", "12.5"),
        ] {
            let bad = replace_numbers(&text, key, value).expect("has the key");
            let name = format!("{}.json", f.name());
            let e = load_error(dir.path(), &name, &bad);
            assert!(
                e.contains(key) && e.contains(says),
                "{} with {value}: {e}",
                f.name()
            );
            // A number is never reported as a string (tags are internal).
            assert!(!e.contains("a string"), "{} with {value}: {e}", f.name());
        }
        // In range: still read.
        let ok = replace_numbers(&text, key, "1000000000").expect("has the key");
        let p = dir.path().join(format!("ok-{}.json", f.name()));
        std::fs::write(&p, ok).expect("written");
        assert!(load_file(&p, None).is_ok(), "{}", f.name());
    }
}

/// Issue 47 item 4: counts each within 2^53 whose session sum the run folder could not hold
/// are refused where they are read (naming the file and request), not after the replays.
#[test]
fn session_token_sums_past_what_a_run_folder_holds_are_refused_at_read() {
    let dir = tempfile::tempdir().expect("temp folder");
    for (f, text, key) in usage_inputs() {
        let bad = replace_numbers(&text, key, "4503599627370496").expect("has the key");
        let name = format!("big-{}.json", f.name());
        let e = load_error(dir.path(), &name, &bad);
        assert!(
            e.contains("over the limit of 10^12 tokens a session may record"),
            "{}: {e}",
            f.name()
        );
    }
}

#[test]
fn truncated_json_names_line_and_column() {
    let dir = tempfile::tempdir().expect("temp folder");
    // One JSON document: where the file ends.
    let (_, text) = corpus_file_with("openhands", Format::Openhands, "prompt_tokens");
    assert!(text.trim_start().starts_with('['));
    let cut = &text[..text.len() / 2];
    let cut = &cut[..cut.rfind('\n').map_or(cut.len(), |i| i + 40).min(cut.len())];
    let e = load_error(dir.path(), "cut.json", cut);
    let lines = cut.split('\n').count();
    let col = cut.rsplit('\n').next().map_or(0, |l| l.chars().count());
    assert!(
        e.contains(&format!("truncated at line {lines} column {col}")),
        "{e}"
    );
    assert!(!e.contains("unknown format"), "{e}");
    // JSONL: the cut line and its column.
    let (_, text) = corpus_file_with("claude_code_spotter", Format::ClaudeCode, "input_tokens");
    let line_end: Vec<usize> = text.match_indices('\n').map(|(i, _)| i).collect();
    let cut_at = line_end[2] + 30;
    let e = load_error(dir.path(), "cut.jsonl", &text[..cut_at]);
    assert!(e.contains("line 4: truncated at column "), "{e}");
}

#[test]
fn broken_json_gets_its_line_and_column_not_unknown_format() {
    let dir = tempfile::tempdir().expect("temp folder");
    let (_, text) = corpus_file_with("agentcmd_cli_sessions/gemini", Format::GeminiCli, "input");
    // A stray byte on line 3 breaks the document before any sniffer can see its keys.
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    lines[2].insert(0, '@');
    let e = load_error(dir.path(), "broken.json", &lines.join("\n"));
    assert!(e.contains("line 3 column 1"), "{e}");
    assert!(!e.contains("unknown format"), "{e}");
    // Well-formed JSON of no known shape is still an unknown format.
    let e = load_error(dir.path(), "odd.json", "{\"hello\": [1, 2]}\n");
    assert!(e.contains("unknown format"), "{e}");
    // A JSONL file whose line 2 is broken names line 2.
    let e = load_error(
        dir.path(),
        "odd.jsonl",
        "{\"a\": 1}\n{\"b\": }\n{\"c\": 3}\n",
    );
    assert!(e.contains("line 2"), "{e}");
}

#[test]
fn canonical_nan_errors_show_nan_not_the_internal_tag() {
    let dir = tempfile::tempdir().expect("temp folder");
    let text = canonical_text();
    let bad = replace_numbers(&text, "timestamp", "NaN").expect("events have timestamps");
    let e = load_error(dir.path(), "nan.jsonl", &bad);
    assert!(e.contains("NaN"), "{e}");
    let bad = replace_numbers(&text, "prompt_tokens", "NaN").expect("usage");
    let e = load_error(dir.path(), "nan-usage.jsonl", &bad);
    assert!(
        e.contains("NaN") && e.contains("usage.prompt_tokens"),
        "{e}"
    );
}

#[test]
fn a_single_bad_file_is_one_line() {
    let dir = tempfile::tempdir().expect("temp folder");
    let p = dir.path().join("bad.json");
    std::fs::write(&p, "[{\"id\": 1,").expect("written");
    let out = bin()
        .args(["inspect", "--no-cache"])
        .arg(&p)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].starts_with(&format!("error: {}: ", p.display())),
        "{stderr}"
    );
}

#[test]
fn summarizer_timeout_1e20_is_a_usage_error() {
    let (p, _) = corpus_file_with("claude_code_spotter", Format::ClaudeCode, "input_tokens");
    for bad in ["1e20", "NaN", "0", "-5", "86401"] {
        let out = bin()
            .arg("replay")
            .arg(&p)
            .arg(format!("--summarizer-timeout={bad}"))
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {stderr}");
        assert!(!stderr.contains("panicked"), "{bad}: {stderr}");
        let first = stderr.lines().next().unwrap_or_default();
        assert!(
            first.contains("--summarizer-timeout") && first.contains(bad),
            "{bad}: {stderr}"
        );
    }
}

/// A copy of the report fixture run folder with `key` of the second settings row set.
fn run_with(key: &str, value: f64) -> (tempfile::TempDir, PathBuf) {
    let (tmp, dir) = crate::common::report_fixture_copy();
    let p = dir.join("settings.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&read_text(&p)).expect("settings.json parses");
    let rows = match v.get_mut("settings") {
        Some(s) => s,
        None => &mut v,
    };
    rows[1][key] = serde_json::json!(value);
    std::fs::write(&p, serde_json::to_string(&v).expect("serialises")).expect("written");
    (tmp, dir)
}

#[test]
fn report_with_huge_detail_lost_terminates() {
    // A share of 1e308 is refused, naming the file and the field.
    let (_tmp, dir) = run_with("detail_lost_mean", 1e308);
    let out = bin()
        .arg("report")
        .arg(&dir)
        .timeout(Duration::from_secs(120))
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("settings.json: $[1].detail_lost_mean: 1e308"),
        "{stderr}"
    );
    // The largest cost a table may hold still renders, and ends.
    let (_tmp, dir) = run_with("cost_usd_sum", 1e15);
    let out = bin()
        .arg("report")
        .arg(&dir)
        .timeout(Duration::from_secs(120))
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Issue 39 item 18: a negative value is told the least its axis accepts (1 where 0 is
/// refused, not "0 or more").
#[test]
fn a_negative_value_is_told_the_least_its_axis_accepts() {
    for (flag, least) in [
        ("--after-tokens=-5", "after_tokens accepts 1 or more"),
        ("--max-llm-calls=-5", "max_llm_calls accepts 1 or more"),
        (
            "--keep-recent-events=-5",
            "keep_recent_events accepts 0 or more",
        ),
    ] {
        let out = bin().args(["sweep", flag, "--show-grid"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {err}");
        assert!(err.contains(least), "{flag}: {err}");
    }
}

/// Issue 39 item 18: calibrate whose only input cannot be read ends with why, not with
/// "nothing found".
#[test]
fn calibrate_on_an_unreachable_database_ends_with_the_connection_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = bin()
        .current_dir(dir.path())
        .args(["calibrate", "postgresql://u@127.0.0.1:1/db"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    let last = err.lines().last().unwrap_or("");
    assert!(last.starts_with("error:"), "{err}");
    assert!(last.contains("127.0.0.1:1"), "{last}");
    assert!(!last.contains("in the given paths"), "{last}");
}

/// Issue 47 item 1: `check` and `--manifest` read integers as Python does: `1_000_000` and
/// `overlap=1_0` are accepted, `007` (a syntax error in Python) is refused.
#[test]
fn check_reads_integers_with_one_digit_first_group_and_refuses_leading_zeros() {
    bin()
        .args([
            "check",
            "Compaction(after_tokens=1_000_000, keep_recent_events=20, after_invocations=5_000, overlap=1_0)",
        ])
        .assert()
        .success()
        .stdout(predicates::str::contains(
            "Compaction(after_tokens=1_000_000, keep_recent_events=20, after_invocations=5000, overlap=10)",
        ));
    let tmp = tempfile::tempdir().expect("tempdir");
    let agent = tmp.path().join("agent.py");
    std::fs::write(
        &agent,
        "MANIFEST = AgentManifest(\n    name=\"bot\",\n    compaction=Compaction(after_tokens=1_500, keep_recent_events=2),\n)\n",
    )
    .expect("write");
    bin()
        .args(["check", "--manifest"])
        .arg(&agent)
        .assert()
        .success()
        .stdout(predicates::str::contains("after_tokens=1500"));
    bin()
        .args([
            "check",
            "Compaction(after_tokens=007, keep_recent_events=2)",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "`after_tokens=007`: not a valid integer",
        ));
}

/// Issue 47 item 7: an SDK v1 conversation folder without its `base_state.json` is one bad
/// input named by its missing file, not one error per event file.
#[test]
fn a_v1_conversation_without_base_state_is_one_line_naming_the_missing_file() {
    let src = root().join("tests/fixtures/recorded/openhands_v1/conv-1");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("conv-1");
    std::fs::create_dir_all(dir.join("events")).unwrap();
    for e in std::fs::read_dir(src.join("events")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join("events").join(e.file_name())).unwrap();
    }
    for arg in [tmp.path().to_path_buf(), dir.clone(), dir.join("events")] {
        let out = bin()
            .args(["inspect", "--no-cache"])
            .arg(&arg)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("error:") || l.contains("skipped"))
            .collect();
        assert_eq!(lines.len(), 1, "{}: {err}", arg.display());
        assert!(
            lines[0].contains(&format!(
                "expected {}",
                dir.join("base_state.json").display()
            )),
            "{err}"
        );
    }
}

/// Issue 47 item 7: `backtest` on a folder holding no session names it; it takes the
/// database filters the other readers take.
#[test]
fn backtest_names_an_empty_input_and_takes_the_database_filters() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("nothing-here");
    std::fs::create_dir(&empty).unwrap();
    let out = bin().arg("backtest").arg(&empty).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("no session read from {}", empty.display())),
        "{err}"
    );
    let db = root().join("tests/fixtures/db/database_service.db");
    let url = format!("sqlite:///{}", db.display());
    let backtest = |extra: &[&str]| {
        let out = bin()
            .args(["backtest", "--json", "--tokenizer", "adk-chars", &url])
            .args(extra)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = backtest(&["--app", "support_app", "--user", "user-2089"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = backtest(&["--app", "nope"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no session matches --app nope"), "{err}");
    // As in the other readers, a database filter without a database input is refused.
    let out = bin()
        .args(["backtest", "--app", "x"])
        .arg(&empty)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--app"));
}

/// Issue 47 item 7: a folder of many unreadable files lists the first 20 and counts the rest.
#[test]
fn a_long_list_of_unreadable_files_is_capped_and_the_rest_counted() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..45 {
        std::fs::write(tmp.path().join(format!("bad-{i:02}.json")), "{not json").unwrap();
    }
    std::fs::copy(
        root().join("transcripts/15-support-2.session.json"),
        tmp.path().join("good.session.json"),
    )
    .unwrap();
    let out = bin()
        .args(["inspect", "--no-cache"])
        .arg(tmp.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.lines()
            .filter(|l| l.starts_with("skipped: ") && l.contains("bad-"))
            .count(),
        20,
        "{err}"
    );
    assert!(
        err.contains("skipped: and 25 more unreadable inputs not listed"),
        "{err}"
    );
}

/// Issue 47 item 7: a `durationMs` out of range is called a duration, not a token count.
#[test]
fn an_out_of_range_duration_is_named_a_duration_not_a_token_count() {
    let text = read_text(&root().join("tests/fixtures/recorded/claude_two_compactions.jsonl"));
    let bad = text.replacen(
        "\"preTokens\":1200",
        "\"preTokens\":1200,\"durationMs\":100000000000",
        1,
    );
    assert_ne!(bad, text);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("cc.jsonl");
    std::fs::write(&p, bad).unwrap();
    let e = load_file(&p, None).unwrap_err().to_string();
    assert!(
        e.contains("compactMetadata.durationMs: expected a duration in milliseconds")
            && !e.contains("token count"),
        "{e}"
    );
}
