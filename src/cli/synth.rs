//! `compaction-sim synth`: write realistic sample sessions as ADK session JSON.

use anyhow::Context;
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct SynthArgs {
    /// How many sessions to write (session i depends only on the seed and i).
    #[arg(long, default_value_t = 40)]
    pub sessions: usize,
    /// PRNG seed; the same seed always writes the same bytes.
    #[arg(long, default_value_t = 6)]
    pub seed: u64,
    /// Folder to write `NN-kind-INVOCATIONS.session.json` files into (created if missing).
    #[arg(long)]
    pub out: PathBuf,
}

pub fn run(args: SynthArgs) -> anyhow::Result<u8> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("{}: cannot create folder", args.out.display()))?;
    let files = crate::synth::generate(args.sessions, args.seed);
    let mut bytes = 0usize;
    for f in &files {
        write_atomic(&args.out.join(&f.file_name), f.json.as_bytes())?;
        bytes += f.json.len();
    }
    eprintln!(
        "wrote {} sessions ({:.2} MB) to {}",
        files.len(),
        bytes as f64 / 1e6,
        args.out.display()
    );
    Ok(super::EXIT_OK)
}

/// Temp file in the same folder, then rename: readers never see half a file.
fn write_atomic(path: &Path, data: &[u8]) -> anyhow::Result<()> {
    crate::atomic::write_atomic(path, data)
        .with_context(|| format!("{}: write failed", path.display()))
}
