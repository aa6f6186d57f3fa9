//! `compaction-sim check SPEC [--manifest FILE.py] [--package DIR]`: validate a
//! `Compaction(...)` setting the way the platform manifest does
//! (shared/spec/platform-compaction-guide.txt), and import its `summarizer` path the way the
//! pod would (with google-adk, in a Python worker). Exit 0 when accepted, 1 when refused, 2
//! when the text is not a setting at all.

use anyhow::{Context, Result};
use clap::Args;

use crate::settings::{self, ManifestCompaction};
use crate::summarize::python::{self, PythonError, PythonOptions};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// A `Compaction(...)` expression as written in a manifest, e.g.
    /// 'Compaction(after_tokens=80_000, keep_recent_events=20)'.
    #[arg(value_name = "SPEC", required_unless_present = "manifest")]
    pub spec: Option<String>,
    /// Read the `compaction=Compaction(...)` of a manifest file instead.
    #[arg(long, value_name = "FILE.py", conflicts_with = "spec")]
    pub manifest: Option<String>,
    /// The target's package folder, which a leading-dot `summarizer` path is relative to
    /// (default: the manifest's folder).
    #[arg(long, value_name = "DIR")]
    pub package: Option<PathBuf>,
    /// Python with google-adk to import the summarizer path with (default:
    /// $COMPACTION_SIM_PYTHON, else python3).
    #[arg(long, value_name = "PY")]
    pub python: Option<String>,
}

pub fn run(args: CheckArgs) -> Result<u8> {
    let (text, origin) = match (&args.spec, &args.manifest) {
        (_, Some(path)) => {
            let src = crate::atomic::read_capped(path.as_ref(), crate::atomic::MAX_CONFIG_BYTES)
                .with_context(|| format!("reading {path}"))?;
            match settings::find_in_manifest(&src) {
                ManifestCompaction::Found(t) => (t, format!("{}: ", super::term(path))),
                ManifestCompaction::OnWorkflow => {
                    outln!(
                        "refused: {}: compaction: {}",
                        super::term(path),
                        settings::WORKFLOW_REFUSAL
                    );
                    return Ok(super::EXIT_REFUSED);
                }
                ManifestCompaction::Absent => {
                    outln!(
                        "{}: no compaction=Compaction(...) in this manifest: compaction is off",
                        super::term(path)
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
            let Some(reference) = &c.summarizer else {
                outln!("ok: {origin}{}", super::term(&c.normalised()));
                outln!("    ADK: {}", super::term(&c.adk()));
                return Ok(super::EXIT_OK);
            };
            let package = args.package.clone().or_else(|| {
                args.manifest.as_ref().map(|m| {
                    let dir = std::path::Path::new(m)
                        .parent()
                        .unwrap_or(std::path::Path::new(""));
                    if dir.as_os_str().is_empty() {
                        PathBuf::from(".")
                    } else {
                        dir.to_path_buf()
                    }
                })
            });
            let opts = PythonOptions {
                python: python::interpreter(args.python.as_deref()),
                package,
                timeout: crate::summarize::DEFAULT_COMMAND_TIMEOUT,
            };
            if reference.starts_with('.') && opts.package.is_none() {
                outln!("ok: {origin}{}", super::term(&c.normalised()));
                outln!("    ADK: {}", super::term(&c.adk()));
                outln!(
                    "    summarizer path not checked: `{}` is relative to the target's package: give --package DIR",
                    super::term(reference)
                );
                return Ok(super::EXIT_OK);
            }
            match python::Pool::start(reference, opts) {
                Ok(pool) => {
                    outln!("ok: {origin}{}", super::term(&c.normalised()));
                    outln!("    ADK: {}", super::term(&c.adk()));
                    outln!(
                        "    summarizer: `{}` imports: {}, a BaseEventsSummarizer (google-adk {})",
                        super::term(reference),
                        super::term(&pool.handshake.summarizer),
                        super::term(&pool.handshake.adk_version)
                    );
                    Ok(super::EXIT_OK)
                }
                Err(PythonError::Reference { detail, .. }) => {
                    outln!(
                        "refused: {origin}summarizer: {}: it would fail when the pod starts",
                        super::term(&detail)
                    );
                    Ok(super::EXIT_REFUSED)
                }
                Err(e) => {
                    outln!("ok: {origin}{}", super::term(&c.normalised()));
                    outln!("    ADK: {}", super::term(&c.adk()));
                    outln!(
                        "    summarizer path not checked: {}",
                        crate::transcript::util::one_line(&e.to_string(), 2000)
                    );
                    Ok(super::EXIT_OK)
                }
            }
        }
        Err(r) => {
            outln!("refused: {origin}{}: {}", r.field, super::term(&r.message));
            Ok(super::EXIT_REFUSED)
        }
    }
}
