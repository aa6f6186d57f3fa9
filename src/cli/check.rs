//! `compaction-sim check SPEC [--manifest FILE.py]`: validate a `Compaction(...)` setting the
//! way the platform manifest does (shared/spec/platform-compaction-guide.txt). Exit 0 when
//! accepted, 1 when refused, 2 when the text is not a setting at all.

use anyhow::{Context, Result};
use clap::Args;

use crate::settings::{self, ManifestCompaction};

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// A `Compaction(...)` expression as written in a manifest, e.g.
    /// 'Compaction(after_tokens=80_000, keep_recent_events=20)'.
    #[arg(value_name = "SPEC", required_unless_present = "manifest")]
    pub spec: Option<String>,
    /// Read the `compaction=Compaction(...)` of a manifest file instead.
    #[arg(long, value_name = "FILE.py", conflicts_with = "spec")]
    pub manifest: Option<String>,
}

pub fn run(args: CheckArgs) -> Result<u8> {
    let (text, origin) = match (&args.spec, &args.manifest) {
        (_, Some(path)) => {
            let src = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
            match settings::find_in_manifest(&src) {
                ManifestCompaction::Found(t) => (t, format!("{path}: ")),
                ManifestCompaction::OnWorkflow => {
                    outln!(
                        "refused: {path}: compaction: {}",
                        settings::WORKFLOW_REFUSAL
                    );
                    return Ok(super::EXIT_REFUSED);
                }
                ManifestCompaction::Absent => {
                    outln!(
                        "{path}: no compaction=Compaction(...) in this manifest: compaction is off"
                    );
                    return Ok(super::EXIT_OK);
                }
            }
        }
        (Some(spec), None) => (spec.clone(), String::new()),
        (None, None) => anyhow::bail!("give a SPEC or --manifest FILE.py"),
    };
    let written = settings::parse(&text).map_err(|e| anyhow::anyhow!("{origin}{e}"))?;
    match written.validate() {
        Ok(c) => {
            outln!("ok: {origin}{}", c.normalised());
            outln!("    ADK: {}", c.adk());
            Ok(super::EXIT_OK)
        }
        Err(r) => {
            outln!("refused: {origin}{}: {}", r.field, r.message);
            Ok(super::EXIT_REFUSED)
        }
    }
}
