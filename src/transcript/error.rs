//! Reader errors: one line naming the file, the line or JSON path, and what is wrong.

use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub struct ReadError {
    /// The file (as given by the user).
    pub file: String,
    /// `line 12`, `$.events[3].content`, or empty when the whole file is at fault.
    pub location: String,
    pub message: String,
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
        }
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
