//! `compaction-sim pricing import`: regenerate the built-in price table from LiteLLM's file
//! (the derivation lives in `cost::import`; this file reads and writes).

use crate::cost::import::{import, Overlay, BUILTIN_OVERLAY};
use anyhow::Context;
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct PricingArgs {
    #[command(subcommand)]
    pub command: PricingCommand,
}

#[derive(Debug, Subcommand)]
pub enum PricingCommand {
    /// Derive the price table from LiteLLM's model_prices_and_context_window.json (as the PyPI
    /// wheel of the pinned version ships it) and the overlay; writes TOML.
    Import(ImportArgs),
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// LiteLLM's `litellm/model_prices_and_context_window_backup.json` (from
    /// `pip download litellm==VERSION --no-deps`), or a filtered copy of it.
    pub litellm_json: PathBuf,
    /// Overlay with the pin, the kept providers, caching rules and per-model judgement
    /// (default: the built-in src/data/pricing-overlay.toml).
    #[arg(long, value_name = "FILE")]
    pub overlay: Option<PathBuf>,
    /// Where to write the table (default: standard output).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Also write the kept LiteLLM entries, verbatim, to FILE (the test fixture).
    #[arg(long, value_name = "FILE")]
    pub write_filtered: Option<PathBuf>,
}

pub fn run(args: PricingArgs) -> anyhow::Result<u8> {
    match args.command {
        PricingCommand::Import(a) => run_import(a),
    }
}

fn run_import(a: ImportArgs) -> anyhow::Result<u8> {
    let read = |p: &PathBuf| {
        std::fs::read_to_string(p).with_context(|| format!("{}: cannot read", p.display()))
    };
    let json_name = a.litellm_json.display().to_string();
    let json = read(&a.litellm_json)?;
    let (overlay_name, overlay_text) = match &a.overlay {
        Some(p) => (p.display().to_string(), read(p)?),
        None => (
            "<builtin pricing-overlay.toml>".to_string(),
            BUILTIN_OVERLAY.to_string(),
        ),
    };
    let overlay = Overlay::parse(&overlay_name, &overlay_text)?;
    let got = import(&json_name, &json, &overlay_name, &overlay)?;
    for w in &got.warnings {
        eprintln!("warning: {w}");
    }
    if let Some(p) = &a.write_filtered {
        crate::atomic::write_atomic(p, got.filtered_json.as_bytes())?;
    }
    match &a.out {
        Some(p) => {
            crate::atomic::write_atomic(p, got.toml.as_bytes())?;
            eprintln!(
                "wrote {} models (LiteLLM {}, {}) to {}",
                got.models,
                overlay.litellm_version,
                overlay.file_date,
                p.display()
            );
        }
        None => print!("{}", got.toml),
    }
    Ok(super::EXIT_OK)
}
