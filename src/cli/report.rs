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
        errln!(
            "error: {}: not a run folder",
            super::term(&args.run_dir.display().to_string())
        );
        return Ok(super::EXIT_BAD_INPUT);
    }
    // Only a folder the tool wrote is rewritten: report.md in any other is the user's.
    if !crate::table::publish::is_ours(&args.run_dir) {
        errln!(
            "error: {}: is a folder compaction-sim did not write (it has no {} file), so its report.md, report.html and charts are not replaced (nothing was touched)",
            super::term(&args.run_dir.display().to_string()),
            crate::table::publish::MARKER
        );
        return Ok(super::EXIT_BAD_INPUT);
    }
    super::install_signal_handler();
    let r = crate::report::render_run(&args.run_dir, &super::CANCEL)?;
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
