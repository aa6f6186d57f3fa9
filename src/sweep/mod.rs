//! Sweeps: grid axes, the work list over (session, setting), rayon, shards.

pub mod alternatives;
pub mod grid;
pub mod pipeline;
pub mod plan;
pub mod policy_axes;
pub mod run;
pub mod shard;

pub use grid::{ClientMode, GridError, GridSpec, ResolvedGrid, Setting, TriggerKind};
pub use run::{Evaluator, RunRow, SessionInfo, Timeline};
pub use shard::Shard;
