//! `compaction-sim replay` (not yet implemented).

use clap::Args;

#[derive(Debug, Args)]
pub struct ReplayArgs {}

pub fn run(_args: ReplayArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`replay` is not implemented yet")
}
