//! Result frames (polars): per-run rows, per-setting aggregates, Pareto, recommendation.

pub mod columns;
pub mod frames;
pub mod publish;
pub mod rundir;
pub mod summary;
