//! Cost, latency, client modes and the metrics of shared/spec/metrics.md.

pub mod caching;
pub mod calibrate;
pub mod client;
pub mod facts;
pub mod latency;
pub mod metrics;
pub mod pricing;
