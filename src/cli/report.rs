//! `compaction-sim report` (not yet implemented).

use clap::Args;

#[derive(Debug, Args)]
pub struct ReportArgs {}

pub fn run(_args: ReportArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`report` is not implemented yet")
}
