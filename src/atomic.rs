//! Atomic output. Every file compaction-sim writes goes to a temp file in the same folder and
//! is renamed into place, so a failed or interrupted run never leaves half a file behind.

use crate::error::{Classify, ExitKind};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A file that could not be written whole. Always an environment failure (exit 3): the
/// bytes were ready, the machine refused them (full disk, permissions, a device).
#[derive(Debug, thiserror::Error)]
#[error("{}: cannot write: {source}", path.display())]
pub struct AtomicError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

impl Classify for AtomicError {
    fn exit_kind(&self) -> ExitKind {
        ExitKind::Environment
    }
}

/// Largest configuration input read whole (a grid, price or latency file, a manifest): far
/// above any real one, so `/dev/zero` or a mistaken path is refused before memory runs out.
pub const MAX_CONFIG_BYTES: u64 = 16 * 1024 * 1024;

/// `path` read as text, at most `max` bytes: a larger input (or an endless one) is an
/// `InvalidData` error (bad input) after reading one byte past the cap. The one capped read
/// of the crate's small inputs.
pub fn read_capped(path: &Path, max: u64) -> std::io::Result<String> {
    use std::io::Read;
    let mut buf = Vec::new();
    std::fs::File::open(path)?
        .take(max.saturating_add(1))
        .read_to_end(&mut buf)?;
    if buf.len() as u64 > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "larger than {} MiB, more than such a file ever holds",
                max / (1024 * 1024)
            ),
        ));
    }
    String::from_utf8(buf).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

/// Write `bytes` to `path` atomically, as an ordinary readable file (0644 on Unix: temp
/// files are created 0600, but reports are meant to be shared). The one implementation of
/// atomic writes in the project: every output file goes through here or [`AtomicFile`].
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), AtomicError> {
    let mut f = AtomicFile::create(path)?;
    f.file().write_all(bytes).map_err(|e| f.error(e))?;
    f.commit()
}

/// A file written piece by piece (a table streamed row group by row group) and put in place
/// whole by [`AtomicFile::commit`]; dropped uncommitted, it leaves nothing behind.
#[derive(Debug)]
pub struct AtomicFile {
    path: PathBuf,
    tmp: tempfile::NamedTempFile,
}

impl AtomicFile {
    /// A temp file beside `path`.
    pub fn create(path: &Path) -> Result<AtomicFile, AtomicError> {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let tmp = tempfile::Builder::new()
            .prefix(".tmp-")
            .tempfile_in(dir)
            .map_err(|source| AtomicError {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(AtomicFile {
            path: path.to_path_buf(),
            tmp,
        })
    }

    /// The temp file, to write to.
    pub fn file(&mut self) -> &mut std::fs::File {
        self.tmp.as_file_mut()
    }

    /// A second handle on the temp file (for writers that take theirs by value); it shares
    /// the file position, so write through one handle only.
    pub fn handle(&self) -> Result<std::fs::File, AtomicError> {
        self.tmp.as_file().try_clone().map_err(|e| self.error(e))
    }

    /// An I/O failure on this file, named by its final path.
    pub fn error(&self, source: std::io::Error) -> AtomicError {
        AtomicError {
            path: self.path.clone(),
            source,
        }
    }

    /// Flush to disk and rename into place.
    pub fn commit(self) -> Result<(), AtomicError> {
        let err = |source| AtomicError {
            path: self.path.clone(),
            source,
        };
        self.tmp.as_file().sync_all().map_err(err)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            self.tmp
                .as_file()
                .set_permissions(std::fs::Permissions::from_mode(0o644))
                .map_err(err)?;
        }
        let path = self.path.clone();
        self.tmp.persist(&path).map_err(|e| AtomicError {
            path,
            source: e.error,
        })?;
        Ok(())
    }
}

/// Make a finished output folder readable like one made by `mkdir` (temp dirs are 0700).
pub fn make_readable_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_whole_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.csv");
        write_atomic(&p, b"old contents that are longer").unwrap();
        write_atomic(&p, b"new").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o644);
        }
    }

    #[test]
    fn a_missing_folder_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("no/such/folder/out.csv");
        assert!(write_atomic(&p, b"x").is_err());
    }
}
