//! `compaction-sim inspect` (not yet implemented).

use clap::Args;

#[derive(Debug, Args)]
pub struct InspectArgs {}

pub fn run(_args: InspectArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`inspect` is not implemented yet")
}
