//! `compaction-sim merge` (not yet implemented).

use clap::Args;

#[derive(Debug, Args)]
pub struct MergeArgs {}

pub fn run(_args: MergeArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`merge` is not implemented yet")
}
