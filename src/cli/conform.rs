//! `compaction-sim conform ORACLE_JSON_OR_DIR...`: replay each oracle output's transcript with
//! its setting, summary policy, failing calls and usage mode, and compare every field
//! shared/oracle/goldens/README.md ("What a simulator must match") lists.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use serde_json::Value;

use crate::conform::{check_case, Diff};

#[derive(Debug, Args)]
pub struct ConformArgs {
    /// Oracle output JSON files, or folders holding them (every `*.json` with a `compactions` key).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Also count differences in the secondary fields (before_event_index, seeded, input
    /// events, invocations in range, summary JSON chars, retained flags, uncompacted sizes).
    #[arg(long)]
    pub strict: bool,
    /// Print only failures and the summary line.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Oracle output files under the given paths (folders: every `*.json` that is an oracle output).
fn collect(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(p)
                .with_context(|| format!("reading folder {}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|x| x == "json"))
                .collect();
            files.sort();
            for f in files {
                let Ok(text) = std::fs::read_to_string(&f) else {
                    continue;
                };
                // cheap filter: oracle outputs have these keys
                if text.contains("\"compactions\"") && text.contains("\"summary_policy\"") {
                    out.push(f);
                }
            }
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

pub fn run(args: ConformArgs) -> Result<u8> {
    let files = collect(&args.paths)?;
    if files.is_empty() {
        anyhow::bail!("no oracle outputs found in {:?}", args.paths);
    }
    let mut agree = 0usize;
    let mut secondary_cases = 0usize;
    for f in &files {
        let name = f.display().to_string();
        let result = std::fs::read_to_string(f)
            .with_context(|| format!("reading {name}"))
            .and_then(|t| {
                serde_json::from_str::<Value>(&t).with_context(|| format!("{name}: invalid JSON"))
            })
            .and_then(|v| {
                check_case(&v, f.parent().unwrap_or(Path::new("."))).with_context(|| name.clone())
            });
        match result {
            Err(e) => outln!("ERROR {name}: {e:#}"),
            Ok(diffs) => {
                let primary: Vec<&Diff> = diffs
                    .iter()
                    .filter(|d| !d.secondary || args.strict)
                    .collect();
                let secondary = diffs.iter().filter(|d| d.secondary).count();
                if secondary > 0 {
                    secondary_cases += 1;
                }
                if let Some(d) = primary.first() {
                    outln!(
                        "FAIL {name}: {} (+{} more): oracle {} engine {}",
                        d.path,
                        primary.len() - 1,
                        d.oracle,
                        d.engine
                    );
                } else {
                    agree += 1;
                    if !args.quiet {
                        match diffs.iter().find(|d| d.secondary) {
                            Some(d) => {
                                outln!(
                                "ok   {name} (secondary: {} differs: oracle {} engine {}, {} such)",
                                d.path, d.oracle, d.engine, secondary
                            )
                            }
                            None => outln!("ok   {name}"),
                        }
                    }
                }
            }
        }
    }
    outln!("{agree}/{} agree", files.len());
    if !args.strict && secondary_cases > 0 {
        outln!("({secondary_cases} cases differ only in secondary fields; --strict counts them)");
    }
    Ok(if agree == files.len() { 0 } else { 1 })
}
