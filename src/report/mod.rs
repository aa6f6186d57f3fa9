//! report.md and self-contained report.html from a run folder.
