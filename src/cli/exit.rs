//! Errors to exit codes, at the edge (docs/cli.md "Exit codes"): the one place that knows
//! every module's error type. Each module says its own kind through
//! [`crate::error::Classify`]; here an error's chain is walked and each link asked, so no
//! module below has to name the ones above it.

use super::{StdoutError, EXIT_ENVIRONMENT, EXIT_OK};
use crate::error::{io_kind, Cancelled, Classify, ExitKind};

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

/// The kind `e` itself knows, if its type is one of `T`.
fn known<T: Classify + std::error::Error + 'static>(
    e: &(dyn std::error::Error + 'static),
) -> Option<ExitKind> {
    e.downcast_ref::<T>().map(Classify::exit_kind)
}

/// The registry of module errors that carry a kind. A module that adds a [`Classify`] type
/// lists it here, once. Each link is asked directly, because a `#[error(transparent)]`
/// wrapper hides its inner error from the source chain.
fn classify_one(e: &(dyn std::error::Error + 'static)) -> Option<ExitKind> {
    known::<Cancelled>(e)
        .or_else(|| known::<crate::table::publish::PublishError>(e))
        .or_else(|| known::<crate::report::ReportError>(e))
        .or_else(|| known::<crate::chart::ChartError>(e))
        .or_else(|| known::<crate::table::TableError>(e))
        .or_else(|| known::<crate::summarize::python::PythonError>(e))
        .or_else(|| known::<crate::summarize::live::LiveError>(e))
        .or_else(|| known::<crate::atomic::AtomicError>(e))
        .or_else(|| known::<crate::transcript::ReadError>(e))
        .or_else(|| known::<crate::transcript::db::DbError>(e))
        .or_else(|| known::<super::samples::SamplesError>(e))
        .or_else(|| e.downcast_ref::<std::io::Error>().map(io_kind))
}

/// The exit code for an error that reached the edge, and whether to say anything: a closed
/// pipe on stdout ends quietly with 0.
pub fn exit_for(e: &anyhow::Error) -> (u8, bool) {
    for cause in e.chain() {
        if let Some(StdoutError(io)) = cause.downcast_ref::<StdoutError>() {
            if io.kind() == std::io::ErrorKind::BrokenPipe {
                return (EXIT_OK, false);
            }
            return (EXIT_ENVIRONMENT, true);
        }
    }
    (kind_of(e.as_ref()).code(), true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::EXIT_INTERRUPTED;

    #[test]
    fn kinds_are_read_through_the_chain() {
        let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
        // Through anyhow context, as the CLI edge sees it.
        let e = anyhow::Error::new(crate::atomic::AtomicError {
            path: "x".into(),
            source: missing,
        })
        .context("writing the run folder");
        assert_eq!(kind_of(e.as_ref()), ExitKind::Environment);
        let full = std::io::Error::new(std::io::ErrorKind::StorageFull, "No space left");
        let e = anyhow::Error::new(full).context("reading");
        assert_eq!(kind_of(e.as_ref()), ExitKind::Environment);
        let e = anyhow::anyhow!("a.json: line 3: not JSON");
        assert_eq!(kind_of(e.as_ref()), ExitKind::BadInput);
    }

    #[test]
    fn a_closed_pipe_is_quiet_and_a_full_stdout_is_an_environment_failure() {
        let pipe = anyhow::Error::new(StdoutError(std::io::ErrorKind::BrokenPipe.into()));
        assert_eq!(exit_for(&pipe), (EXIT_OK, false));
        let full = anyhow::Error::new(StdoutError(std::io::ErrorKind::StorageFull.into()));
        assert_eq!(exit_for(&full), (EXIT_ENVIRONMENT, true));
        let cancelled = anyhow::Error::new(Cancelled);
        assert_eq!(exit_for(&cancelled).0, EXIT_INTERRUPTED);
    }
}
