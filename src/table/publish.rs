//! Where an output folder may go, and how it is put in place without ever touching what the
//! user did not ask the tool to touch (docs/cli.md "Where outputs go").
//!
//! - `--out` takes a new path, an empty folder, or a folder compaction-sim wrote (it holds the
//!   [`MARKER`] file), the last only with `--force` (or when it is the default run name, which
//!   only a rerun of the same inputs on the same day can reach). A file, a device, a link to
//!   anything else, a folder the tool did not write, an input of the run or a folder holding
//!   one is refused before any work, and nothing is touched.
//! - The folder is built in a hidden `.building-<pid>-*` folder beside its final place and
//!   renamed into place only when every file in it is complete; on any failure or signal the
//!   build folder is removed and the previous state stays as it was. A build folder left by a
//!   killed process (SIGKILL, power loss) is removed by the next run once that process is gone;
//!   a publish it cut short (a `.publishing-` record) is finished or rolled back.
//! - A run whose output another live run is building is refused before any work.
//! - `latest` moves last, and only when it is a link (never a real folder).

use crate::error::{Classify, ExitKind};
use std::path::{Path, PathBuf};

/// The file that marks a folder as written by compaction-sim (and so replaceable by it).
pub const MARKER: &str = ".compaction-sim-run";
const MARKER_TEXT: &str =
    "This folder was written by compaction-sim; `--force` may replace it as a whole.\n";
/// Inside a build folder only: `<host> <pid>` of the process building it, so a later run
/// removes it only when that process is gone from this very machine (a shared filesystem may
/// hold other machines' live builds). Removed before the folder is published.
const OWNER: &str = ".compaction-sim-owner";
const BUILDING: &str = ".building-";
const REPLACED: &str = ".replaced-";
const LATEST_TMP: &str = ".latest-";
/// `.publishing-<pid>-<name>`, beside the run folder `<name>` while it is being published:
/// `<host> <pid>` and the build folder's name, so a run that finds it after a kill can finish
/// the publish or roll it back ([`recover_publish`]).
const PUBLISHING: &str = ".publishing-";

#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error("{}: exists and is not a folder; give a new path for the output (nothing was touched)", .0.display())]
    NotAFolder(PathBuf),
    #[error("{}: is a folder compaction-sim did not write and is not empty; give a new path for the output (nothing was touched)", .0.display())]
    Foreign(PathBuf),
    #[error("{}: holds an earlier compaction-sim output; add --force to replace it (nothing was touched)", .0.display())]
    NeedsForce(PathBuf),
    #[error("{}: is an input of this run or holds one ({}); give another output path (nothing was touched)", .out.display(), .input.display())]
    HoldsInput { out: PathBuf, input: PathBuf },
    #[error("{}: names no folder of its own (`.`, `..` or a root); give a new folder such as reports/my-run (nothing was touched)", .0.display())]
    NoName(PathBuf),
    #[error("{}: is a file compaction-sim did not write; give a new path for the output (nothing was touched)", .0.display())]
    ForeignFile(PathBuf),
    #[error("{}: another compaction-sim run (pid {pid}) is writing this folder now; wait for it to finish or give another output path (nothing was touched; if no such run is going, remove its record {})", .path.display(), .record.display())]
    Busy {
        path: PathBuf,
        pid: u32,
        record: PathBuf,
    },
    #[error("{}: another compaction-sim run wrote this folder while this one was working; this run's output was not published (nothing was touched; rerun with --force to replace it)", .0.display())]
    Raced(PathBuf),
    #[error("{}: is a real folder, not a link; remove or rename it so it can point at the newest run (nothing was touched)", .0.display())]
    LatestIsFolder(PathBuf),
    #[error("{}: {what}", path.display())]
    Io {
        path: PathBuf,
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
}

impl Classify for PublishError {
    fn exit_kind(&self) -> ExitKind {
        match self {
            PublishError::Io { source, .. } => match source.kind() {
                // A path component that is a file (`--out notes.txt/run`) is the user's path.
                std::io::ErrorKind::NotADirectory => ExitKind::BadInput,
                _ => ExitKind::Environment,
            },
            _ => ExitKind::BadInput,
        }
    }
}

fn io(path: &Path, what: &'static str) -> impl FnOnce(std::io::Error) -> PublishError {
    let path = path.to_path_buf();
    move |source| PublishError::Io { path, what, source }
}

/// Where an output will go, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The final folder (a link given as `--out` resolved to the folder it points at).
    pub dir: PathBuf,
    /// An existing folder (an earlier run, or an empty folder) will be replaced whole.
    pub replaces: bool,
}

/// How an output path was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chosen {
    /// Given by the user (`--out`): replacing an earlier run needs `--force`.
    ByUser { force: bool },
    /// The tool's own default name (`reports/<date>-<hash>`): a same-day rerun of the same
    /// inputs replaces its own earlier run.
    Default,
}

/// Check `out` before any work: see the module doc for the rules. `inputs` are the paths the
/// run reads (files, folders, globs already expanded or not: missing ones are ignored).
pub fn check_target(
    out: &Path,
    inputs: &[PathBuf],
    chosen: Chosen,
) -> Result<Target, PublishError> {
    if out.as_os_str().is_empty()
        || !matches!(
            out.components().next_back(),
            Some(std::path::Component::Normal(_))
        )
    {
        return Err(PublishError::NoName(out.to_path_buf()));
    }
    if let Some((pid, record)) = live_builder(out) {
        return Err(PublishError::Busy {
            path: out.to_path_buf(),
            pid,
            record,
        });
    }
    let meta = match std::fs::symlink_metadata(out) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Target {
                dir: out.to_path_buf(),
                replaces: false,
            })
        }
        Err(e) => return Err(io(out, "cannot look at the output path")(e)),
    };
    // A link is followed once: the folder it names is what would be replaced, and the link
    // keeps pointing at the new run.
    let dir = if meta.file_type().is_symlink() {
        match std::fs::canonicalize(out) {
            Ok(p) if p.is_dir() => p,
            _ => return Err(PublishError::NotAFolder(out.to_path_buf())),
        }
    } else if meta.is_dir() {
        out.to_path_buf()
    } else {
        return Err(PublishError::NotAFolder(out.to_path_buf()));
    };
    if dir.parent().is_none() {
        return Err(PublishError::NoName(out.to_path_buf()));
    }
    if let Some(input) = input_inside(&dir, inputs) {
        return Err(PublishError::HoldsInput {
            out: out.to_path_buf(),
            input,
        });
    }
    if is_ours(&dir) {
        return match chosen {
            Chosen::ByUser { force: false } => Err(PublishError::NeedsForce(out.to_path_buf())),
            _ => Ok(Target {
                dir,
                replaces: true,
            }),
        };
    }
    let empty = std::fs::read_dir(&dir)
        .map_err(io(&dir, "cannot read the output folder"))?
        .next()
        .is_none();
    if empty {
        Ok(Target {
            dir,
            replaces: true,
        })
    } else {
        Err(PublishError::Foreign(out.to_path_buf()))
    }
}

/// Check an output *file* (`calibrate --out`) by the same rules: a new path, or a regular
/// file whose first bytes say compaction-sim wrote it (`ours`), replaced only with `--force`
/// or at the default path. Written with [`crate::atomic::write_atomic`].
pub fn check_file_target(
    out: &Path,
    chosen: Chosen,
    ours: impl Fn(&[u8]) -> bool,
) -> Result<(), PublishError> {
    if out.file_name().is_none() {
        return Err(PublishError::NoName(out.to_path_buf()));
    }
    let meta = match std::fs::metadata(out) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return match std::fs::symlink_metadata(out) {
                // A dangling link: writing would replace the link, not a file.
                Ok(_) => Err(PublishError::NotAFolder(out.to_path_buf())),
                Err(_) => Ok(()),
            };
        }
        Err(e) => return Err(io(out, "cannot look at the output path")(e)),
    };
    if !meta.is_file() || std::fs::symlink_metadata(out).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(PublishError::ForeignFile(out.to_path_buf()));
    }
    let mut head = [0u8; 256];
    let n = {
        use std::io::Read;
        std::fs::File::open(out)
            .and_then(|mut f| f.read(&mut head))
            .map_err(io(out, "cannot read"))?
    };
    if !ours(&head[..n]) {
        return Err(PublishError::ForeignFile(out.to_path_buf()));
    }
    match chosen {
        Chosen::ByUser { force: false } => Err(PublishError::NeedsForce(out.to_path_buf())),
        _ => Ok(()),
    }
}

/// The first input that is `dir` or lies inside it.
fn input_inside(dir: &Path, inputs: &[PathBuf]) -> Option<PathBuf> {
    let dir = std::fs::canonicalize(dir).ok()?;
    inputs.iter().find_map(|i| {
        let c = std::fs::canonicalize(i).ok()?;
        c.starts_with(&dir).then(|| i.clone())
    })
}

/// A folder compaction-sim wrote: it holds the marker file (a regular file, not a link).
pub fn is_ours(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join(MARKER)).is_ok_and(|m| m.is_file())
}

/// Mark a folder as the tool's (written first, so a build folder is recognisable as ours even
/// when the process dies before anything else is written).
pub fn mark(dir: &Path) -> Result<(), PublishError> {
    crate::atomic::write_atomic(&dir.join(MARKER), MARKER_TEXT.as_bytes()).map_err(|e| {
        PublishError::Io {
            path: e.path,
            what: "cannot write",
            source: e.source,
        }
    })
}

/// The hidden folder a run is built in, next to its final place. Dropping it (an error, a
/// signal) removes it with everything in it.
#[derive(Debug)]
pub struct BuildDir {
    tmp: tempfile::TempDir,
}

impl BuildDir {
    pub fn path(&self) -> &Path {
        self.tmp.path()
    }
}

/// Create the build folder for `target` (creating the parent folders it needs), after
/// removing the leftovers of killed runs beside it.
pub fn build_dir_for(target: &Target) -> Result<BuildDir, PublishError> {
    let parent = parent_of(&target.dir);
    std::fs::create_dir_all(parent).map_err(io(parent, "cannot create folder"))?;
    remove_stale(parent);
    let tmp = tempfile::Builder::new()
        .prefix(&format!("{BUILDING}{}-", std::process::id()))
        .tempdir_in(parent)
        .map_err(io(parent, "cannot create a build folder"))?;
    let b = BuildDir { tmp };
    mark(b.path())?;
    crate::atomic::write_atomic(
        &b.path().join(OWNER),
        format!(
            "{} {} {} {}\n",
            host(),
            std::process::id(),
            file_name_of(&target.dir),
            boot_id()
        )
        .as_bytes(),
    )
    .map_err(|e| PublishError::Io {
        path: e.path,
        what: "cannot write",
        source: e.source,
    })?;
    Ok(b)
}

/// The last component of a run folder's path (`run` when it has none, which
/// [`check_target`] refuses anyway).
fn file_name_of(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".to_string())
}

/// The pid of another live run of this tool on this machine building the run folder `out`
/// (its build folder's owner file names the folder), with the record saying so: two runs
/// racing on one `--out`.
fn live_builder(out: &Path) -> Option<(u32, PathBuf)> {
    let name = file_name_of(out);
    let here = host();
    let rd = std::fs::read_dir(parent_of(out)).ok()?;
    rd.flatten().find_map(|e| {
        let entry = e.file_name();
        let (pid, kind) = leftover_pid(entry.to_str()?)?;
        let record = match kind {
            BUILDING => e.path().join(OWNER),
            PUBLISHING => e.path(),
            _ => return None,
        };
        let owner = read_record(&record)?;
        let first = owner.lines().next()?;
        let mut it = first.split_whitespace();
        let (h, p) = (it.next()?, it.next()?.parse::<u32>().ok()?);
        let named = match kind {
            BUILDING => it.next() == Some(name.as_str()),
            _ => entry.to_str()? == format!("{PUBLISHING}{pid}-{name}"),
        };
        let boot = recorded_boot(first, kind);
        (named
            && !here.is_empty()
            && h == here
            && p == pid
            && p != std::process::id()
            && alive(p, boot))
        .then_some((p, record))
    })
}

/// Largest publish record or owner file read: they hold a host name, a pid, a boot id and a
/// folder name. A larger one is not ours.
const MAX_RECORD_BYTES: u64 = 4096;

/// A publish record or owner file's text: read only when it is a regular file (not a link, a
/// FIFO or a device, opened without following links and without blocking), at most
/// [`MAX_RECORD_BYTES`]; anything else is no record of ours.
fn read_record(path: &Path) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > MAX_RECORD_BYTES {
        return None;
    }
    let mut text = String::new();
    file.take(MAX_RECORD_BYTES).read_to_string(&mut text).ok()?;
    Some(text)
}

/// The boot id a publish record names.
fn record_boot(journal: &Path) -> Option<String> {
    let text = read_record(journal)?;
    recorded_boot(text.lines().next()?, PUBLISHING).map(str::to_string)
}

/// The boot id a build folder's owner file names.
fn owner_boot(dir: &Path) -> Option<String> {
    let text = read_record(&dir.join(OWNER))?;
    recorded_boot(text.lines().next()?, BUILDING).map(str::to_string)
}

/// This boot of this machine (`/proc/sys/kernel/random/boot_id`; `-` where it cannot be read):
/// a pid recorded before a reboot names nothing of ours.
fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|b| b.trim().to_string())
        .ok()
        .filter(|b| !b.is_empty() && !b.contains(char::is_whitespace))
        .unwrap_or_else(|| "-".to_string())
}

/// The boot id on a record's first line (`host pid name boot` in an owner file, `host pid
/// boot` in a publish record); `None` in a record written before boot ids were.
fn recorded_boot<'a>(first_line: &'a str, kind: &str) -> Option<&'a str> {
    let at = if kind == BUILDING { 3 } else { 2 };
    first_line.split_whitespace().nth(at).filter(|b| *b != "-")
}

/// This machine's name ("" where it cannot be read: then no leftover is ever judged dead).
fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

/// Whether the build folder `dir` was made on this machine by a process that is gone.
fn owner_gone(dir: &Path) -> bool {
    let Some(text) = read_record(&dir.join(OWNER)) else {
        return false;
    };
    let first = text.lines().next().unwrap_or("");
    let mut it = first.split_whitespace();
    let (Some(h), Some(pid)) = (it.next(), it.next().and_then(|p| p.parse::<u32>().ok())) else {
        return false;
    };
    let here = host();
    !here.is_empty()
        && h == here
        && pid != std::process::id()
        && !alive(pid, recorded_boot(first, BUILDING))
}

fn parent_of(p: &Path) -> &Path {
    p.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Whether process `pid` is a run of this tool still going: the record's boot is this boot
/// (when it names one), the process exists, and its program is this tool (`/proc/PID/exe`,
/// or where that cannot be read its command line). Where that cannot be told, it is taken
/// as running, so nothing of a live run is ever removed.
fn alive(pid: u32, boot: Option<&str>) -> bool {
    if !cfg!(target_os = "linux") {
        return true;
    }
    if boot.is_some_and(|b| b != boot_id()) {
        return false;
    }
    let proc_dir = Path::new("/proc").join(pid.to_string());
    if !proc_dir.exists() {
        return false;
    }
    let program = std::fs::read_link(proc_dir.join("exe"))
        .ok()
        .map(|p| {
            p.to_string_lossy()
                .trim_end_matches(" (deleted)")
                .to_string()
        })
        .or_else(|| {
            let cmdline = std::fs::read(proc_dir.join("cmdline")).ok()?;
            let argv0 = cmdline.split(|b| *b == 0).next()?;
            Some(String::from_utf8_lossy(argv0).into_owned())
        });
    match program {
        Some(p) => is_this_tool(&p),
        None => true,
    }
}

/// Whether a program path is this tool: the same file name as the running program, or a
/// compaction-sim binary (the command, its benchmarks, its tests).
fn is_this_tool(program: &str) -> bool {
    let name = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let theirs = name(Path::new(program));
    let ours = std::env::current_exe()
        .map(|p| name(&p))
        .unwrap_or_default();
    (!theirs.is_empty() && theirs == ours)
        || theirs.contains("compaction-sim")
        || theirs.contains("compaction_sim")
}

/// The pid in `.building-<pid>-…`, `.replaced-<pid>-…`, `.latest-<pid>` or
/// `.publishing-<pid>-…`.
fn leftover_pid(name: &str) -> Option<(u32, &'static str)> {
    for prefix in [BUILDING, REPLACED, LATEST_TMP, PUBLISHING] {
        if let Some(rest) = name.strip_prefix(prefix) {
            let digits: &str = rest.split('-').next().unwrap_or("");
            return digits.parse().ok().map(|p| (p, prefix));
        }
    }
    None
}

/// Remove what killed runs left in `parent`: build and replaced folders that hold the
/// marker, and `latest` temp links, whose process is gone. Anything else is left alone.
pub fn remove_stale(parent: &Path) {
    // Publishes cut short first: they say which `.replaced-` folder is still wanted.
    if let Ok(rd) = std::fs::read_dir(parent) {
        for entry in rd.flatten() {
            let name = entry.file_name();
            if let Some((pid, PUBLISHING)) = name.to_str().and_then(leftover_pid) {
                if pid != std::process::id() && !alive(pid, record_boot(&entry.path()).as_deref()) {
                    recover_publish(parent, &entry.path(), pid);
                }
            }
        }
    }
    let Ok(rd) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in rd.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some((pid, kind)) = leftover_pid(name) else {
            continue;
        };
        let p = entry.path();
        let boot = match kind {
            BUILDING => owner_boot(&p),
            _ => None,
        };
        if pid == std::process::id() || alive(pid, boot.as_deref()) {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        if kind == PUBLISHING {
            continue;
        }
        if kind == LATEST_TMP {
            if meta.file_type().is_symlink() {
                let _ = std::fs::remove_file(&p);
            }
        } else if kind == BUILDING {
            if meta.is_dir() && is_ours(&p) && owner_gone(&p) {
                let _ = std::fs::remove_dir_all(&p);
            }
        } else if meta.is_dir() && is_ours(&p) && !journal_for(parent, name, pid) {
            // `.replaced-<pid>-…`: an earlier run moved aside by a process that died before
            // removing it; its pid is only ever of this machine's processes at rename time.
            // While a publish record names it, it may be the only copy: left for the record.
            let _ = std::fs::remove_dir_all(&p);
        }
    }
}

/// Move the finished build folder into place, replacing the earlier folder when the target
/// says so. If anything fails, the earlier folder is put back and the build folder removed.
/// Returns the names of what the earlier folder held and the new one does not (a file the
/// user added to a run folder, or one this run did not write): replacing the folder whole
/// removed them, and the caller names them.
pub fn publish(build: BuildDir, target: &Target) -> Result<Vec<String>, PublishError> {
    let fin = &target.dir;
    let name = file_name_of(fin);
    let journal = parent_of(fin).join(format!("{PUBLISHING}{}-{name}", std::process::id()));
    let build_name = file_name_of(build.path());
    // Written before the owner file goes, so a kill at any point below leaves either the
    // owner file (the build folder is removed) or this record (the publish is finished or
    // rolled back by the next run, see `recover_publish`).
    crate::atomic::write_atomic(
        &journal,
        format!(
            "{} {} {}\n{build_name}\n",
            host(),
            std::process::id(),
            boot_id()
        )
        .as_bytes(),
    )
    .map_err(|e| PublishError::Io {
        path: e.path,
        what: "cannot write",
        source: e.source,
    })?;
    let result = move_into_place(build, target);
    let _ = std::fs::remove_file(&journal);
    result
}

/// [`publish`]'s renames: the earlier folder aside, the build folder into place, the earlier
/// folder removed.
fn move_into_place(build: BuildDir, target: &Target) -> Result<Vec<String>, PublishError> {
    std::fs::remove_file(build.path().join(OWNER))
        .map_err(io(build.path(), "cannot finish the build folder"))?;
    crate::atomic::make_readable_dir(build.path())
        .map_err(io(build.path(), "cannot set permissions"))?;
    let fin = &target.dir;
    let mut dropped = Vec::new();
    let exists = std::fs::symlink_metadata(fin).is_ok();
    if target.replaces && exists && is_ours(fin) {
        let old = replaced_path(fin, std::process::id());
        dropped = names_only_in(fin, build.path());
        std::fs::rename(fin, &old).map_err(io(fin, "cannot move the earlier folder aside"))?;
        if let Err(e) = std::fs::rename(build.path(), fin) {
            let _ = std::fs::rename(&old, fin);
            return Err(io(fin, "cannot move the new folder into place")(e));
        }
        let _ = build.tmp.keep();
        let _ = std::fs::remove_dir_all(&old);
    } else if exists && !(target.replaces && is_empty_dir(fin)) {
        // Something appeared at the path while the run was working: leave it alone, and say
        // whether it is another run's output or the user's.
        return Err(match is_ours(fin) {
            true => PublishError::Raced(fin.clone()),
            false => PublishError::Foreign(fin.clone()),
        });
    } else {
        // A new path, or an empty folder (which rename replaces atomically).
        std::fs::rename(build.path(), fin)
            .map_err(io(fin, "cannot move the new folder into place"))?;
        let _ = build.tmp.keep();
    }
    Ok(dropped)
}

/// Where process `pid` moves the earlier run folder `fin` while publishing over it.
fn replaced_path(fin: &Path, pid: u32) -> PathBuf {
    fin.with_file_name(format!("{REPLACED}{pid}-{}", file_name_of(fin)))
}

/// Whether a publish record of process `pid` names the `.replaced-<pid>-<name>` entry
/// `replaced` of `parent`.
fn journal_for(parent: &Path, replaced: &str, pid: u32) -> bool {
    let name = replaced
        .strip_prefix(&format!("{REPLACED}{pid}-"))
        .unwrap_or_default();
    std::fs::symlink_metadata(parent.join(format!("{PUBLISHING}{pid}-{name}"))).is_ok()
}

/// Finish or roll back the publish of a process `pid` that is gone, from its record
/// `journal` (`.publishing-<pid>-<name>`): a complete build folder whose run folder is
/// absent (the earlier one was moved aside, or there was none) is moved into place; one
/// whose run folder is still the earlier run is removed; an earlier run moved aside is
/// removed once the new one is in place. Another machine's record is left alone.
fn recover_publish(parent: &Path, journal: &Path, pid: u32) {
    let Some(name) = journal
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix(&format!("{PUBLISHING}{pid}-")))
    else {
        return;
    };
    let Some(text) = read_record(journal) else {
        return;
    };
    let mut lines = text.lines();
    let owner: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
    let here = host();
    if here.is_empty() || owner.first() != Some(&here.as_str()) {
        return;
    }
    let fin = parent.join(name);
    let old = replaced_path(&fin, pid);
    let build = lines
        .next()
        .filter(|b| b.starts_with(&format!("{BUILDING}{pid}-")) && !b.contains('/'))
        .map(|b| parent.join(b));
    if let Some(build) = build.filter(|b| b.is_dir() && is_ours(b)) {
        if std::fs::symlink_metadata(&fin).is_err() {
            // Complete and wanted: the kill came between the two renames, or before the
            // only one. Finish it (the owner file goes first when the kill came before).
            let _ = std::fs::remove_file(build.join(OWNER));
            if std::fs::rename(&build, &fin).is_err() {
                return;
            }
        } else {
            // The earlier run is still in place: roll back.
            let _ = std::fs::remove_dir_all(&build);
        }
    }
    if is_ours(&fin) && old.is_dir() && is_ours(&old) {
        let _ = std::fs::remove_dir_all(&old);
    }
    let _ = std::fs::remove_file(journal);
}

/// The entries of folder `a` that folder `b` has no entry of that name for, sorted.
fn names_only_in(a: &Path, b: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(a) else {
        return Vec::new();
    };
    let mut names: Vec<String> = rd
        .flatten()
        .filter(|e| std::fs::symlink_metadata(b.join(e.file_name())).is_err())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn is_empty_dir(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir())
        && std::fs::read_dir(p).is_ok_and(|mut rd| rd.next().is_none())
}

/// Check before a run that `<reports>/latest` can be pointed at it: absent, or a link.
pub fn check_latest(reports: &Path) -> Result<(), PublishError> {
    let latest = reports.join("latest");
    match std::fs::symlink_metadata(&latest) {
        Ok(m) if m.file_type().is_symlink() => Ok(()),
        Ok(m) if m.is_dir() => Err(PublishError::LatestIsFolder(latest)),
        Ok(_) => Err(PublishError::NotAFolder(latest)),
        Err(_) => Ok(()),
    }
}

/// Point `<reports>/latest` at `run_name` (a relative link), replacing the old link in one
/// rename. Refuses, touching nothing, when `latest` is anything but a link.
pub fn update_latest(reports: &Path, run_name: &str) -> Result<(), PublishError> {
    check_latest(reports)?;
    let latest = reports.join("latest");
    let tmp = reports.join(format!("{LATEST_TMP}{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    #[cfg(unix)]
    std::os::unix::fs::symlink(run_name, &tmp).map_err(io(&tmp, "cannot create a link"))?;
    #[cfg(not(unix))]
    std::fs::write(&tmp, format!("{run_name}\n")).map_err(io(&tmp, "cannot write"))?;
    std::fs::rename(&tmp, &latest).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(&latest, "cannot update")(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(force: bool) -> Chosen {
        Chosen::ByUser { force }
    }

    #[test]
    fn a_folder_the_tool_did_not_write_is_refused_and_kept() {
        let root = tempfile::tempdir().unwrap();
        let keep = root.path().join("keep");
        std::fs::create_dir(&keep).unwrap();
        std::fs::write(keep.join("notes.txt"), "p").unwrap();
        for force in [false, true] {
            let e = check_target(&keep, &[], user(force)).unwrap_err();
            assert!(matches!(e, PublishError::Foreign(_)), "{e}");
        }
        assert_eq!(
            std::fs::read_to_string(keep.join("notes.txt")).unwrap(),
            "p"
        );
    }

    #[test]
    fn files_devices_and_dot_paths_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let f = root.path().join("file");
        std::fs::write(&f, "x").unwrap();
        assert!(matches!(
            check_target(&f, &[], user(true)),
            Err(PublishError::NotAFolder(_))
        ));
        if Path::new("/dev/full").exists() {
            assert!(matches!(
                check_target(Path::new("/dev/full"), &[], user(true)),
                Err(PublishError::NotAFolder(_))
            ));
        }
        for p in [".", "..", "../..", "/", "a/.."] {
            assert!(
                matches!(
                    check_target(Path::new(p), &[], user(true)),
                    Err(PublishError::NoName(_))
                ),
                "{p}"
            );
        }
    }

    #[test]
    fn an_earlier_run_needs_force_and_inputs_are_never_outputs() {
        let root = tempfile::tempdir().unwrap();
        let run = root.path().join("run");
        std::fs::create_dir(&run).unwrap();
        mark(&run).unwrap();
        assert!(matches!(
            check_target(&run, &[], user(false)),
            Err(PublishError::NeedsForce(_))
        ));
        let t = check_target(&run, &[], user(true)).unwrap();
        assert!(t.replaces);
        assert!(check_target(&run, &[], Chosen::Default).unwrap().replaces);
        let input = run.join("in.json");
        std::fs::write(&input, "{}").unwrap();
        assert!(matches!(
            check_target(&run, std::slice::from_ref(&input), user(true)),
            Err(PublishError::HoldsInput { .. })
        ));
        assert!(matches!(
            check_target(root.path(), &[input], user(true)),
            Err(PublishError::Foreign(_) | PublishError::HoldsInput { .. })
        ));
    }

    #[test]
    fn publish_replaces_an_earlier_run_whole_and_leaves_nothing_behind() {
        let root = tempfile::tempdir().unwrap();
        let fin = root.path().join("r1");
        for round in 0..2 {
            let target = check_target(&fin, &[], user(true)).unwrap();
            let b = build_dir_for(&target).unwrap();
            std::fs::write(b.path().join("x"), format!("{round}")).unwrap();
            publish(b, &target).unwrap();
            update_latest(root.path(), "r1").unwrap();
        }
        assert_eq!(
            std::fs::read_to_string(root.path().join("latest/x")).unwrap(),
            "1"
        );
        let hidden: Vec<_> = std::fs::read_dir(root.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(hidden.is_empty(), "{hidden:?}");
    }

    #[test]
    fn a_dropped_build_folder_is_removed() {
        let root = tempfile::tempdir().unwrap();
        let target = check_target(&root.path().join("r"), &[], user(false)).unwrap();
        let b = build_dir_for(&target).unwrap();
        let p = b.path().to_path_buf();
        std::fs::write(p.join("big"), vec![0u8; 1024]).unwrap();
        drop(b);
        assert!(!p.exists());
        assert!(!root.path().join("r").exists());
    }

    #[test]
    fn leftovers_of_dead_processes_are_removed_and_foreign_ones_kept() {
        let root = tempfile::tempdir().unwrap();
        // No process has a pid this large (Linux caps them at 2^22).
        let dead = root.path().join(".building-4000000000-abc");
        std::fs::create_dir(&dead).unwrap();
        mark(&dead).unwrap();
        std::fs::write(dead.join(OWNER), format!("{} 4000000000\n", host())).unwrap();
        // Another machine's build on a shared filesystem: never judged from here.
        let remote = root.path().join(".building-4000000000-remote");
        std::fs::create_dir(&remote).unwrap();
        mark(&remote).unwrap();
        std::fs::write(remote.join(OWNER), "some-other-host 4000000000\n").unwrap();
        let foreign = root.path().join(".building-4000000000-user");
        std::fs::create_dir(&foreign).unwrap();
        std::fs::write(foreign.join("mine.txt"), "x").unwrap();
        let live = root
            .path()
            .join(format!(".building-{}-x", std::process::id()));
        std::fs::create_dir(&live).unwrap();
        mark(&live).unwrap();
        remove_stale(root.path());
        if cfg!(target_os = "linux") {
            assert!(!dead.exists());
        }
        assert!(remote.exists(), "another machine's live build was removed");
        assert!(foreign.join("mine.txt").exists());
        assert!(live.exists());
    }

    /// A dead process's publish, cut at `step`, over an earlier run (`replacing`) or a new
    /// path: what its kill leaves on disk, built by hand.
    fn cut_publish(parent: &Path, replacing: bool, step: usize) {
        const P: u32 = 4_000_000_000;
        let fin = parent.join("run");
        if replacing {
            std::fs::create_dir(&fin).unwrap();
            mark(&fin).unwrap();
            std::fs::write(fin.join("x"), "old").unwrap();
            std::fs::write(fin.join("old-only"), "o").unwrap();
        }
        let build = parent.join(format!("{BUILDING}{P}-abc"));
        std::fs::create_dir(&build).unwrap();
        mark(&build).unwrap();
        std::fs::write(build.join("x"), "new").unwrap();
        std::fs::write(build.join(OWNER), format!("{} {P} run\n", host())).unwrap();
        let journal = parent.join(format!("{PUBLISHING}{P}-run"));
        std::fs::write(&journal, format!("{} {P}\n{BUILDING}{P}-abc\n", host())).unwrap();
        if step >= 1 {
            std::fs::remove_file(build.join(OWNER)).unwrap();
        }
        if step >= 2 && replacing {
            std::fs::rename(&fin, replaced_path(&fin, P)).unwrap();
        }
        if step >= 3 {
            std::fs::rename(&build, &fin).unwrap();
        }
        if step >= 4 && replacing {
            std::fs::remove_dir_all(replaced_path(&fin, P)).unwrap();
        }
    }

    /// Issue 39 item 13: a publish killed at any point (before, between or after its two
    /// renames) is finished or rolled back by the next run in the same folder: one run folder,
    /// the earlier or the new one whole, and nothing hidden left beside it.
    #[test]
    fn a_publish_cut_at_any_point_is_finished_or_rolled_back() {
        if !cfg!(target_os = "linux") || host().is_empty() {
            return;
        }
        for replacing in [true, false] {
            for step in 0..=4 {
                let root = tempfile::tempdir().unwrap();
                cut_publish(root.path(), replacing, step);
                remove_stale(root.path());
                let case = format!("replacing {replacing}, cut after step {step}");
                let x = std::fs::read_to_string(root.path().join("run/x"));
                // Before the first rename the earlier run is kept (none: the new one, whole).
                let want = match (replacing, step) {
                    (true, 0 | 1) => "old",
                    _ => "new",
                };
                assert_eq!(x.ok().as_deref(), Some(want), "{case}");
                assert!(is_ours(&root.path().join("run")), "{case}");
                assert!(!root.path().join("run").join(OWNER).exists(), "{case}");
                assert_eq!(
                    root.path().join("run/old-only").exists(),
                    want == "old",
                    "{case}: a mix of both runs"
                );
                let names: Vec<String> = std::fs::read_dir(root.path())
                    .unwrap()
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect();
                assert_eq!(names, vec!["run".to_string()], "{case}");
            }
        }
    }

    /// Issue 39 item 15: a run whose `--out` another live run is building is told so before
    /// any work; one that finds the other's output in place at publish time is told that it
    /// is another run's, not a folder the tool did not write.
    #[test]
    fn a_second_run_on_one_out_is_told_another_run_is_writing_it() {
        if !cfg!(target_os = "linux") || host().is_empty() {
            return;
        }
        let root = tempfile::tempdir().unwrap();
        let fin = root.path().join("run");
        let target = check_target(&fin, &[], user(false)).unwrap();
        // Another live run of this tool (a program named like it) building the same folder.
        let (mut live, pid) = live_namesake(root.path());
        let other = root.path().join(format!("{BUILDING}{pid}-zz"));
        std::fs::create_dir(&other).unwrap();
        mark(&other).unwrap();
        std::fs::write(
            other.join(OWNER),
            format!("{} {pid} run {}\n", host(), boot_id()),
        )
        .unwrap();
        let e = check_target(&fin, &[], user(true));
        let _ = live.kill();
        let _ = live.wait();
        let e = e.unwrap_err();
        assert!(
            matches!(e, PublishError::Busy { pid: p, .. } if p == pid),
            "{e}"
        );
        assert!(e.to_string().contains("another compaction-sim run"), "{e}");
        assert!(
            e.to_string().contains(&format!(
                "remove its record {}",
                other.join(OWNER).display()
            )),
            "{e}"
        );
        // Another folder name is not busy.
        assert!(check_target(&root.path().join("run2"), &[], user(false)).is_ok());
        std::fs::remove_dir_all(&other).unwrap();
        // The other run published first: this one is told so, and touches nothing.
        let b = build_dir_for(&target).unwrap();
        std::fs::create_dir(&fin).unwrap();
        mark(&fin).unwrap();
        std::fs::write(fin.join("x"), "theirs").unwrap();
        let e = publish(b, &target).unwrap_err();
        assert!(matches!(e, PublishError::Raced(_)), "{e}");
        assert!(!e.to_string().contains("did not write"), "{e}");
        assert_eq!(std::fs::read_to_string(fin.join("x")).unwrap(), "theirs");
    }

    #[test]
    fn an_output_file_is_replaced_only_when_ours_and_forced() {
        let root = tempfile::tempdir().unwrap();
        let ours = |b: &[u8]| b.starts_with(b"# ours");
        let f = root.path().join("lat.toml");
        assert!(check_file_target(&f, user(false), ours).is_ok());
        std::fs::write(&f, "# ours\n").unwrap();
        assert!(matches!(
            check_file_target(&f, user(false), ours),
            Err(PublishError::NeedsForce(_))
        ));
        assert!(check_file_target(&f, user(true), ours).is_ok());
        assert!(check_file_target(&f, Chosen::Default, ours).is_ok());
        std::fs::write(&f, "user notes").unwrap();
        for c in [user(true), Chosen::Default] {
            assert!(matches!(
                check_file_target(&f, c, ours),
                Err(PublishError::ForeignFile(_))
            ));
        }
        assert!(check_file_target(root.path(), user(true), ours).is_err());
    }

    #[test]
    fn a_real_latest_folder_is_refused_without_leftovers() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("latest")).unwrap();
        assert!(matches!(
            update_latest(root.path(), "r1"),
            Err(PublishError::LatestIsFolder(_))
        ));
        let names: Vec<_> = std::fs::read_dir(root.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().to_string())
            .collect();
        assert_eq!(names, vec!["latest".to_string()]);
    }

    /// A live process whose program is named like this tool (a copy of `sleep`), and its pid.
    fn live_namesake(dir: &Path) -> (std::process::Child, u32) {
        let prog = dir.join("compaction-sim-namesake");
        std::fs::copy("/bin/sleep", &prog).expect("a copy of /bin/sleep");
        let child = std::process::Command::new(&prog).arg("60").spawn().unwrap();
        let pid = child.id();
        (child, pid)
    }

    /// Issue 47 item 3: a record naming a live pid that is not this tool (pid 1), a record of
    /// another boot, a FIFO and a link to /dev/zero are no run of ours: the folder is not
    /// busy, and no run hangs on them.
    #[test]
    fn publish_records_of_other_programs_boots_fifos_and_links_block_nothing() {
        if !cfg!(target_os = "linux") || host().is_empty() {
            return;
        }
        let root = tempfile::tempdir().unwrap();
        let fin = root.path().join("run");
        let (mut live, pid) = live_namesake(root.path());
        let records = [
            (
                format!("{PUBLISHING}1-run"),
                format!("{} 1 {}\n.building-1-x\n", host(), boot_id()),
            ),
            (
                format!("{PUBLISHING}{pid}-run"),
                format!("{} {pid} not-this-boot\n.building-{pid}-x\n", host()),
            ),
        ];
        for (name, text) in &records {
            std::fs::write(root.path().join(name), text).unwrap();
        }
        let fifo = root.path().join(format!("{PUBLISHING}{}-run", pid + 1));
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        std::os::unix::fs::symlink(
            "/dev/zero",
            root.path().join(format!("{PUBLISHING}{}-run", pid + 2)),
        )
        .unwrap();
        let fifo_owner = root.path().join(format!("{BUILDING}{}-q", pid + 3));
        std::fs::create_dir(&fifo_owner).unwrap();
        mark(&fifo_owner).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(fifo_owner.join(OWNER))
            .status()
            .unwrap();
        assert!(made.success());
        let checked = check_target(&fin, &[], user(false));
        let built = checked.as_ref().ok().map(build_dir_for);
        let _ = live.kill();
        let _ = live.wait();
        let target = checked.unwrap_or_else(|e| panic!("{e}"));
        let b = built.unwrap().unwrap();
        publish(b, &target).unwrap();
        assert!(is_ours(&fin));
        assert_eq!(read_record(&fifo), None);
        assert_eq!(
            read_record(&root.path().join(format!("{PUBLISHING}{}-run", pid + 2))),
            None
        );
    }
}
