//! Result frames (polars): per-run rows, per-setting aggregates, Pareto, recommendation.

pub mod columns;
pub mod folder;
pub mod format;
pub mod frames;
pub mod publish;
pub mod rundir;
pub mod summary;

use std::path::PathBuf;

/// Errors of the result tables and run folders.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// A run or partial folder the user gave is not what it should be (message names it).
    #[error("{0}")]
    Input(String),
    #[error("{file}: {what}")]
    Bad { file: String, what: String },
    #[error("{}: cannot read (is this a partial folder from `sweep --shard`?)", path.display())]
    NotAPartial {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: cannot read", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("a row refers to unknown setting_id {0}")]
    UnknownSetting(u32),
    /// Building or encoding a frame in memory failed: the tool's failure, not the input's.
    #[error("{what}")]
    Polars {
        what: &'static str,
        #[source]
        source: polars::error::PolarsError,
    },
    #[error("writing JSON")]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Write(#[from] crate::atomic::AtomicError),
    #[error(transparent)]
    Interrupted(#[from] crate::sweep::run::Cancelled),
}

impl crate::error::Classify for TableError {
    fn exit_kind(&self) -> crate::error::ExitKind {
        use crate::error::{io_kind, ExitKind};
        match self {
            TableError::Input(_) | TableError::Bad { .. } => ExitKind::BadInput,
            TableError::NotAPartial { source, .. } | TableError::Read { source, .. } => {
                io_kind(source)
            }
            TableError::UnknownSetting(_) | TableError::Polars { .. } | TableError::Json(_) => {
                ExitKind::Environment
            }
            TableError::Write(_) => ExitKind::Environment,
            TableError::Interrupted(_) => ExitKind::Interrupted,
        }
    }
}

pub type Result<T, E = TableError> = std::result::Result<T, E>;

fn bad(file: &str, what: impl Into<String>) -> TableError {
    TableError::Bad {
        file: file.to_string(),
        what: what.into(),
    }
}
