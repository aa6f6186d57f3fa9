//! What kind of failure an error is, so the command line can map it to an exit code
//! (docs/cli.md "Exit codes"): 1 a refused setting or a disagreement, 2 bad input or usage,
//! 3 an I/O or environment failure (disk full, permission denied), 130 interrupted by a
//! signal.
//!
//! Each module keeps its own `thiserror` enum; this module only knows how to ask an error
//! (and every error in its source chain) which kind it is. A full disk must never read as
//! "bad input", so I/O errors are sorted by their `ErrorKind`, and errors that wrap one say
//! which side of the tool it came from through [`Classify`].

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
/// in kind; anything else in a chain is sorted by [`kind_of`].
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

/// Walk `err`'s chain and return the first kind any link knows; plain I/O errors are sorted
/// by [`io_kind`]; anything else is bad input (a message about what the user gave).
pub fn kind_of(err: &(dyn std::error::Error + 'static)) -> ExitKind {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(k) = classify_one(e) {
            return k;
        }
        cur = e.source();
    }
    ExitKind::BadInput
}

/// The registry of module errors that carry a kind. A module that adds a [`Classify`] enum
/// lists it here, once. Each link is asked directly, because a `#[error(transparent)]`
/// wrapper hides its inner error from the source chain.
fn classify_one(e: &(dyn std::error::Error + 'static)) -> Option<ExitKind> {
    if e.downcast_ref::<crate::sweep::run::Cancelled>().is_some() {
        return Some(ExitKind::Interrupted);
    }
    if let Some(x) = e.downcast_ref::<crate::table::publish::PublishError>() {
        return Some(x.exit_kind());
    }
    if let Some(x) = e.downcast_ref::<crate::report::ReportError>() {
        return Some(x.exit_kind());
    }
    if let Some(x) = e.downcast_ref::<crate::chart::ChartError>() {
        return Some(x.exit_kind());
    }
    if let Some(x) = e.downcast_ref::<crate::table::TableError>() {
        return Some(x.exit_kind());
    }
    if let Some(x) = e.downcast_ref::<crate::cost::python::PythonError>() {
        return Some(x.exit_kind());
    }
    if let Some(x) = e.downcast_ref::<crate::cost::live::LiveError>() {
        return Some(x.exit_kind());
    }
    if let Some(x) = e.downcast_ref::<crate::atomic::AtomicError>() {
        return Some(x.exit_kind());
    }
    if let Some(x) = e.downcast_ref::<crate::transcript::ReadError>() {
        return Some(x.exit_kind());
    }
    if let Some(x) = e.downcast_ref::<crate::transcript::db::DbError>() {
        return Some(x.exit_kind());
    }
    if let Some(x) = e.downcast_ref::<std::io::Error>() {
        return Some(io_kind(x));
    }
    None
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
        // Through anyhow context, as the CLI edge sees it.
        let e = anyhow::Error::new(crate::atomic::AtomicError {
            path: "x".into(),
            source: missing,
        })
        .context("writing the run folder");
        assert_eq!(kind_of(e.as_ref()), ExitKind::Environment);
        let e = anyhow::Error::new(full).context("reading");
        assert_eq!(kind_of(e.as_ref()), ExitKind::Environment);
        let e = anyhow::anyhow!("a.json: line 3: not JSON");
        assert_eq!(kind_of(e.as_ref()), ExitKind::BadInput);
    }

    #[test]
    fn codes_are_the_documented_ones() {
        assert_eq!(ExitKind::Refused.code(), 1);
        assert_eq!(ExitKind::BadInput.code(), 2);
        assert_eq!(ExitKind::Environment.code(), 3);
        assert_eq!(ExitKind::Interrupted.code(), 130);
    }
}
