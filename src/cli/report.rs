//! `compaction-sim report RUN_DIR`: re-render the charts, report.md and report.html of a run
//! folder from its data files alone (no replay), through [`crate::run::rerender`].

use crate::run::RerenderError;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run folder holding settings.json, runs.csv, run.json (and timelines.json).
    pub run_dir: PathBuf,
}

pub fn run(args: ReportArgs) -> anyhow::Result<u8> {
    super::install_signal_handler();
    let r = match crate::run::rerender(&args.run_dir, &super::CANCEL) {
        Ok(r) => r,
        Err(RerenderError::Report(e)) => return Err(e.into()),
        Err(e) => {
            errln!("error: {}", super::term(&e.to_string()));
            return Ok(super::EXIT_BAD_INPUT);
        }
    };
    for (stem, reason) in &r.charts_skipped {
        errln!("note: chart {stem} not drawn: {}", super::term(reason));
    }
    outln!(
        "wrote {} (and report.md, {} charts as SVG and PNG)",
        super::term(&args.run_dir.join("report.html").display().to_string()),
        r.charts_drawn
    );
    Ok(super::EXIT_OK)
}
