//! Extra oracle cases (tests/fixtures/oracle-extra/): edge cases found or targeted by the
//! conformance fuzzing (new generator seeds and hand-made transcripts, each run through the real
//! google-adk 2.13.0 by shared/oracle/adk_oracle.py). Every case goes through the same public
//! comparison the `conform` command uses; any disagreement in a field
//! shared/oracle/goldens/README.md says must match fails the test, with the case and field named.

use std::path::{Path, PathBuf};

use serde_json::Value;

use compaction_sim::cli::conform::check_case;

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
