//! `compaction-sim report RUN_DIR`: re-render the charts, report.md and report.html of a run
//! folder from its data files alone (no replay).

use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run folder holding settings.json, runs.csv, run.json (and timelines.json).
    pub run_dir: PathBuf,
}

pub fn run(args: ReportArgs) -> anyhow::Result<u8> {
    if !args.run_dir.is_dir() {
        eprintln!("error: {}: not a run folder", args.run_dir.display());
        return Ok(super::EXIT_BAD_INPUT);
    }
    match crate::report::render_run(&args.run_dir) {
        Ok(r) => {
            for (stem, reason) in &r.charts_skipped {
                eprintln!("note: chart {stem} not drawn: {reason}");
            }
            println!(
                "wrote {} (and report.md, {} charts as SVG and PNG)",
                args.run_dir.join("report.html").display(),
                r.charts_drawn
            );
            Ok(super::EXIT_OK)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Ok(super::EXIT_BAD_INPUT)
        }
    }
}
