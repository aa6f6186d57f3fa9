//! What a setting is, at the bottom of the house: the manifest's `Compaction(...)` and its
//! refusals ([`manifest`]), a sweep's setting ([`setting`]), other frameworks' policies as
//! settings ([`policy`]) and how numbers are written ([`number`]). It uses nothing else of the
//! crate, so every layer above may name a setting.

pub mod manifest;
pub mod number;
pub mod policy;
pub mod setting;

pub use manifest::*;
pub use number::{parse_number, NumberError};
pub use policy::{adk_expressible, LcTrigger, PolicySpec, AS_RECORDED, FAMILIES};
pub use setting::{
    Alternative, Budgets, ClientMode, Setting, TriggerKind, UnknownAlternative, UnknownClientMode,
};
