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

/// Write `bytes` to `path` atomically, as an ordinary readable file (0644 on Unix: temp
/// files are created 0600, but reports are meant to be shared). The one implementation of
/// atomic writes in the project: every output file goes through here.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), AtomicError> {
    let err = |source| AtomicError {
        path: path.to_path_buf(),
        source,
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .tempfile_in(dir)
        .map_err(err)?;
    tmp.write_all(bytes).map_err(err)?;
    tmp.as_file().sync_all().map_err(err)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))
            .map_err(err)?;
    }
    tmp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
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
