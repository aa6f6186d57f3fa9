//! `compaction-sim synth` (not yet implemented).

use clap::Args;

#[derive(Debug, Args)]
pub struct SynthArgs {}

pub fn run(_args: SynthArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`synth` is not implemented yet")
}
