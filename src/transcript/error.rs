//! Reader errors: one line naming the file, the line or JSON path, and what is wrong.

use std::fmt;

use crate::error::{io_kind, Classify, ExitKind};

#[derive(Debug, Clone, PartialEq)]
pub struct ReadError {
    /// The file (as given by the user).
    pub file: String,
    /// `line 12`, `$.events[3].content`, or empty when the whole file is at fault.
    pub location: String,
    pub message: String,
    /// Bad input, unless the machine failed the read (permission denied, a device error).
    pub kind: ExitKind,
}

impl ReadError {
    pub fn new(
        file: impl Into<String>,
        location: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        ReadError {
            file: file.into(),
            location: location.into(),
            message: message.into(),
            kind: ExitKind::BadInput,
        }
    }

    /// A failed read: `what` and the I/O error, kind taken from the error (a missing file
    /// is bad input; permission denied or a device error is the environment's).
    pub fn io(
        file: impl Into<String>,
        location: impl Into<String>,
        what: &str,
        e: &std::io::Error,
    ) -> Self {
        ReadError {
            kind: io_kind(e),
            ..ReadError::new(file, location, format!("{what}: {e}"))
        }
    }
}

impl Classify for ReadError {
    fn exit_kind(&self) -> ExitKind {
        self.kind
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.location.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: {}: {}", self.file, self.location, self.message)
        }
    }
}

impl std::error::Error for ReadError {}
