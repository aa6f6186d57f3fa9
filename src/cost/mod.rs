//! Cost, latency, client modes and the metrics of shared/spec/metrics.md.

pub mod caching;
pub mod calibrate;
pub mod client;
pub mod compute;
pub mod evaluate;
pub mod import;
pub mod latency;
pub mod metrics;
pub mod pricing;

pub use compute::{
    compute_metrics, render_metrics, replay_with_client, CostModel, MetricsSetting, ReplayLog,
};
pub use evaluate::{evaluate, CostSetting, Evaluation, SessionCostInputs};
