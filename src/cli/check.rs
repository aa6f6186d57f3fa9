//! `compaction-sim check` (not yet implemented).

use clap::Args;

#[derive(Debug, Args)]
pub struct CheckArgs {}

pub fn run(_args: CheckArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`check` is not implemented yet")
}
