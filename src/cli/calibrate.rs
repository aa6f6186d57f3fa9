//! `compaction-sim calibrate` (not yet implemented).

use clap::Args;

#[derive(Debug, Args)]
pub struct CalibrateArgs {}

pub fn run(_args: CalibrateArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`calibrate` is not implemented yet")
}
