//! `compaction-sim conform` (not yet implemented).

use clap::Args;

#[derive(Debug, Args)]
pub struct ConformArgs {}

pub fn run(_args: ConformArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`conform` is not implemented yet")
}
