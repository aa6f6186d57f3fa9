//! Extra oracle cases (tests/fixtures/oracle-extra/): edge cases found or targeted by the
//! conformance fuzzing (new generator seeds and hand-made transcripts, each run through the real
//! google-adk 2.13.0 by shared/oracle/adk_oracle.py). Every case goes through the same public
//! comparison the `conform` command uses; any disagreement in a field
//! shared/oracle/goldens/README.md says must match fails the test, with the case and field named.

use std::path::{Path, PathBuf};

use serde_json::Value;

use compaction_sim::conform::{check_case, compare, replay_case};

fn extra_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oracle-extra")
}

/// Every oracle output (`*.json` holding `compactions`) under the fixture folder, sorted.
fn oracle_cases(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            oracle_cases(&p, out);
        } else if p.extension().is_some_and(|x| x == "json")
            && !p.to_string_lossy().ends_with(".session.json")
        {
            out.push(p);
        }
    }
}

fn load(p: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let v: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: bad JSON: {e}", p.display()));
    v.get("compactions").is_some().then_some(v)
}

/// Cases the engine is known to get wrong, by file-name prefix, with the class from the
/// conformance triage. Each needs an input the oracle's transcript generator never writes
/// (real ADK exports can hold them). The test is strict both ways: a case listed here must
/// still disagree, so fixing a class fails the test until its entry is removed.
const KNOWN_DISAGREEMENTS: &[(&str, &str)] = &[];

fn known(name: &str) -> Option<&'static str> {
    let file = name.rsplit('/').next().unwrap_or(name);
    KNOWN_DISAGREEMENTS
        .iter()
        .find(|(prefix, _)| file.starts_with(prefix))
        .map(|(_, why)| *why)
}

#[test]
fn extra_oracle_cases_agree_with_the_engine() {
    let mut cases = Vec::new();
    oracle_cases(&extra_dir(), &mut cases);
    let cases: Vec<(PathBuf, Value)> = cases
        .into_iter()
        .filter_map(|p| load(&p).map(|v| (p, v)))
        .collect();
    assert!(
        cases.len() >= 10,
        "expected the extra oracle cases, found {}",
        cases.len()
    );
    let mut failures = Vec::new();
    let mut fixed = Vec::new();
    for (p, v) in &cases {
        let dir = p.parent().expect("case has a folder");
        let name = p
            .strip_prefix(extra_dir())
            .unwrap_or(p)
            .display()
            .to_string();
        let disagreement = match check_case(v, dir) {
            Err(e) => Some(format!("{name}: engine error: {e:#}")),
            Ok(diffs) => {
                let primary: Vec<_> = diffs.iter().filter(|d| !d.secondary).collect();
                primary.first().map(|d| {
                    format!(
                        "{name}: {} differ(s); first {}: oracle {} engine {}",
                        primary.len(),
                        d.path,
                        d.oracle,
                        d.engine
                    )
                })
            }
        };
        match (disagreement, known(&name)) {
            (Some(d), None) => failures.push(d),
            (None, Some(why)) => fixed.push(format!("{name} ({why})")),
            // A refused class must be refused with the reader's one-line reason, not replayed.
            (Some(d), Some(why)) if why.contains("refused") && !d.contains("not supported") => {
                failures.push(format!(
                    "{name}: expected a 'not supported' refusal, got {d}"
                ))
            }
            _ => {}
        }
    }
    assert!(
        fixed.is_empty(),
        "these cases now agree: remove them from KNOWN_DISAGREEMENTS:\n{}",
        fixed.join("\n")
    );
    assert!(
        failures.is_empty(),
        "{} of {} extra oracle cases disagree:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// `conform --strict` over every extra case: secondary fields too (the post-invocation
/// `measured_prompt_tokens` among them), so a case may not agree only on the primary ones.
#[test]
fn conform_strict_agrees_with_every_extra_case() {
    let mut cases = Vec::new();
    oracle_cases(&extra_dir(), &mut cases);
    let n = cases.iter().filter(|p| load(p).is_some()).count();
    assert!(n >= 10, "expected the extra oracle cases, found {n}");
    // `conform` reads the folders it is given, not their subfolders: name each one.
    let dirs: std::collections::BTreeSet<PathBuf> = cases
        .iter()
        .filter_map(|p| p.parent().map(Path::to_path_buf))
        .collect();
    let out = crate::common::bin()
        .args(["conform", "--strict", "--quiet"])
        .args(&dirs)
        .output()
        .expect("run conform");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(&format!("{n}/{n} agree")),
        "{stdout}"
    );
}

/// Issue #16: in sessions with rewinds and recorded usage, the prompt size ADK's token check
/// reads (`_latest_prompt_token_count` over `_apply_rewinds(events)`) differs from the one
/// over the raw events. The engine reports the one ADK reads, pre-request and
/// post-invocation, at every check the manifest lists (thresholds below, between and above
/// the two readings), with every field of every case agreeing.
#[test]
fn rewound_sessions_report_the_prompt_size_adk_reads() {
    let dir = extra_dir().join("rewind-usage");
    let manifest: Value =
        serde_json::from_str(&crate::common::read_text(&dir.join("manifest.json")))
            .expect("manifest.json");
    let entries = manifest.as_array().expect("manifest is a list");
    assert!(entries.len() >= 20, "expected the rewind-usage cases");
    let mut sides = std::collections::BTreeSet::new();
    let mut checked = 0usize;
    let mut failures = Vec::new();
    for e in entries {
        let name = e["case"].as_str().expect("case name");
        let p = dir.join(name);
        let v = load(&p).unwrap_or_else(|| panic!("{name}: not an oracle case"));
        let (cfg, r) = match replay_case(&v, &dir) {
            Ok(x) => x,
            Err(err) => {
                failures.push(format!("{name}: engine error: {err:#}"));
                continue;
            }
        };
        let diffs = compare(&v, &r, cfg.token.is_some());
        if let Some(d) = diffs.first() {
            failures.push(format!(
                "{name}: {} differ(s); first {}: oracle {} engine {}",
                diffs.len(),
                d.path,
                d.oracle,
                d.engine
            ));
        }
        let differ = e["differing_checks"].as_array().expect("differing_checks");
        assert!(
            !differ.is_empty(),
            "{name}: no check where the readings differ"
        );
        for d in differ {
            let at = d["at"].as_u64().expect("at") as u32;
            let engine = match d["check"].as_str() {
                Some("pre_request") => r
                    .requests
                    .iter()
                    .find(|q| q.event_index == at)
                    .and_then(|q| q.measured_prompt_tokens),
                Some("post_invocation") => r
                    .invocations
                    .get(at as usize)
                    .and_then(|i| i.post_measured_prompt_tokens),
                other => panic!("{name}: unknown check {other:?}"),
            };
            let want = d["adk"].as_u64();
            if engine != want {
                failures.push(format!(
                    "{name}: {} at {at}: engine reports {engine:?}, ADK reads {want:?} \
                     (raw events: {})",
                    d["check"], d["raw_events"]
                ));
            }
            sides.insert(d["side"].as_str().unwrap_or("").to_string());
            checked += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{} disagreement(s) over {} cases:\n{}",
        failures.len(),
        entries.len(),
        failures.join("\n")
    );
    assert!(checked >= 40, "only {checked} differing checks");
    for s in ["below", "between", "above"] {
        assert!(
            sides.contains(s),
            "no case with the threshold {s} both readings"
        );
    }
}

/// Issue #30: sessions holding tool responses without their calls (y01-y03 here) are read, as
/// ADK reads them, by every command that loads sessions; each command says so once per
/// session with the count ADK's rule gives, and still exits 0.
#[test]
fn responses_without_their_calls_are_read_and_warned_once_per_session() {
    use compaction_sim::transcript::detect::load_file;
    use compaction_sim::transcript::util::orphan_responses;
    let cases = [
        "y01_confirmation_at_start.session.json",
        "y02_response_without_call.session.json",
        "y03_late_and_unmatched_responses.session.json",
    ];
    let out = tempfile::tempdir().unwrap();
    for case in cases {
        let path = extra_dir().join(case);
        let sessions = load_file(&path, None).unwrap_or_else(|e| panic!("{case}: {e}"));
        let n = orphan_responses(&sessions[0].events);
        assert!(
            n >= 2,
            "{case}: expected responses without calls, found {n}"
        );
        let p = path.to_str().unwrap();
        let sweep_out = out.path().join(case);
        let runs: [Vec<&str>; 3] = [
            vec!["inspect", p],
            vec![
                "replay",
                p,
                "--after-tokens",
                "100",
                "--keep-recent-events",
                "2",
                "--json",
            ],
            vec![
                "sweep",
                p,
                "--no-cache",
                "--quiet",
                "--out",
                sweep_out.to_str().unwrap(),
            ],
        ];
        for args in runs {
            let o = crate::common::bin().args(&args).output().expect("runs");
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
            let warned: Vec<&str> = err
                .lines()
                .filter(|l| l.contains("without their call"))
                .collect();
            assert_eq!(warned.len(), 1, "{args:?}: one warning per session:\n{err}");
            assert!(
                warned[0].starts_with("warning: ")
                    && warned[0].contains(case)
                    && warned[0].contains(&format!(": {n} tool responses without")),
                "{args:?}: {}",
                warned[0]
            );
        }
    }
}
