//! Cost, latency, client modes and the metrics of shared/spec/metrics.md.

pub mod metrics;
