//! Reader (not yet implemented).

use super::{ReadError, Session};

/// True when `text` (the file's content) looks like this format.
pub fn sniff(_text: &str) -> bool {
    false
}

/// Parse the whole file. `file` is the path as the user gave it, used in errors and
/// `Session::source`.
pub fn read(file: &str, _text: &str) -> Result<Vec<Session>, ReadError> {
    Err(ReadError::new(file, "", "reader not implemented yet"))
}
