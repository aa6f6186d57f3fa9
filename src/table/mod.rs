//! Result frames (polars): per-run rows, per-setting aggregates, Pareto, recommendation.
