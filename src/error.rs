//! What kind of failure an error is, so the command line can map it to an exit code
//! (docs/cli.md "Exit codes"): 1 a refused setting or a disagreement, 2 bad input or usage,
//! 3 an I/O or environment failure (disk full, permission denied), 130 interrupted by a
//! signal.
//!
//! Each module keeps its own `thiserror` enum and says its kind through [`Classify`]; the
//! command line (`cli::exit`) walks an error's chain and asks each link. This module names
//! no other: every module may use it. A full disk must never read as "bad input", so I/O
//! errors are sorted by their `ErrorKind` ([`io_kind`]).

/// The kinds of failure, each with its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ExitKind {
    /// A setting the platform would refuse, budgets that rule out every setting, or a
    /// disagreement with the oracle.
    Refused,
    /// The user's input or flags are wrong: fixing them fixes the run.
    BadInput,
    /// The machine failed the run: disk full, permission denied, a device error.
    Environment,
    /// SIGINT, SIGTERM or SIGHUP stopped the run (the shell convention for SIGINT).
    Interrupted,
}

impl ExitKind {
    pub const fn code(self) -> u8 {
        match self {
            ExitKind::Refused => 1,
            ExitKind::BadInput => 2,
            ExitKind::Environment => 3,
            ExitKind::Interrupted => 130,
        }
    }
}

/// Errors that know their kind. Implemented by the module error enums whose variants differ
/// in kind; the command line sorts anything else in a chain.
pub trait Classify {
    fn exit_kind(&self) -> ExitKind;
}

/// The kind of an I/O error, read from its `ErrorKind`: what the machine did to the run
/// (full disk, permissions, device errors) is an environment failure; a missing or malformed
/// file is bad input.
pub fn io_kind(e: &std::io::Error) -> ExitKind {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::NotFound
        | K::InvalidData
        | K::InvalidInput
        | K::UnexpectedEof
        | K::AlreadyExists
        | K::NotADirectory
        | K::IsADirectory
        | K::DirectoryNotEmpty => ExitKind::BadInput,
        _ => ExitKind::Environment,
    }
}

/// Ctrl-C, SIGTERM or SIGHUP: the run stopped early and nothing is written. Here, below
/// every phase that can stop, so each can say so without naming the sweep.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("interrupted: no run folder written")]
pub struct Cancelled;

impl Classify for Cancelled {
    fn exit_kind(&self) -> ExitKind {
        ExitKind::Interrupted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_is_never_bad_input() {
        let full = std::io::Error::new(std::io::ErrorKind::StorageFull, "No space left");
        assert_eq!(io_kind(&full), ExitKind::Environment);
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert_eq!(io_kind(&denied), ExitKind::Environment);
        let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
        assert_eq!(io_kind(&missing), ExitKind::BadInput);
    }

    #[test]
    fn codes_are_the_documented_ones() {
        assert_eq!(ExitKind::Refused.code(), 1);
        assert_eq!(ExitKind::BadInput.code(), 2);
        assert_eq!(ExitKind::Environment.code(), 3);
        assert_eq!(ExitKind::Interrupted.code(), 130);
    }
}
