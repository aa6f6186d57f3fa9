//! `compaction-sim sweep` (not yet implemented).

use clap::Args;

#[derive(Debug, Args)]
pub struct SweepArgs {}

pub fn run(_args: SweepArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`sweep` is not implemented yet")
}
