//! Format detection from content, and loading files, folders and globs.
//!
//! Files are read with a streaming guard first, so a huge file or a 1 GB line is refused with
//! a one-line error before it is held in memory ([`MAX_FILE_BYTES`], [`MAX_LINE_BYTES`]). The
//! line limit is for line-per-record files: a file that is one JSON document (a compact
//! one-line ADK export) may have lines of any length within the file limit.

use std::borrow::Cow;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::{
    adk, adk_legacy_eval, canonical, claude_code, codex, db, gemini_cli, openai_chat, openhands,
    openhands_v1, pyjson, readutil, swe_agent, tau2, util, Format, ReadError, Session,
};

/// Largest file read: 512 MiB (the whole corpus is 30 MB; larger inputs are almost surely
/// not transcripts, and each file is held in memory while parsed).
pub const MAX_FILE_BYTES: u64 = 512 * 1024 * 1024;
/// Longest line read in a line-per-record file (JSONL): 64 MiB. A file holding one JSON
/// document is exempt (see [`OneDocument`]); only the file limit applies to it.
pub const MAX_LINE_BYTES: u64 = 64 * 1024 * 1024;

/// Limits used by [`load_file_with_limits`]; [`load_file`] uses the defaults.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_file_bytes: u64,
    pub max_line_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_file_bytes: MAX_FILE_BYTES,
            max_line_bytes: MAX_LINE_BYTES,
        }
    }
}

/// Detection order: the most specific signatures first, so a file matching two sniffers
/// gets the stricter one (canonical has an explicit header; JSONL formats check their first
/// line; JSON formats check top-level keys; bare OpenAI message lists come last). ADK's one
/// sniffer covers session exports and eval sets, told apart by [`adk_kind`]; the legacy eval
/// data lists (`adk_legacy_eval`) are the other `AdkEvalSet` entry, tried after it.
const ORDER: [Format; 10] = [
    Format::Canonical,
    Format::ClaudeCode,
    Format::Codex,
    Format::Openhands,
    Format::GeminiCli,
    Format::Tau2,
    Format::SweAgent,
    Format::Adk,
    Format::AdkEvalSet,
    Format::OpenaiChat,
];

/// The reader's own sniffer. In [`ORDER`], `Adk` stands for everything `adk.rs` reads (its
/// kind is settled by [`adk_kind`]) and `AdkEvalSet` for the legacy eval data lists.
fn reader_sniff(f: Format, text: &str) -> bool {
    match f {
        Format::Adk => adk::sniff(text),
        Format::AdkEvalSet => adk_legacy_eval::sniff(text),
        Format::OpenaiChat => openai_chat::sniff(text),
        Format::ClaudeCode => claude_code::sniff(text),
        Format::Codex => codex::sniff(text),
        Format::GeminiCli => gemini_cli::sniff(text),
        Format::Openhands => openhands::sniff(text),
        Format::SweAgent => swe_agent::sniff(text),
        Format::Tau2 => tau2::sniff(text),
        Format::Canonical => canonical::sniff(text),
    }
}

/// Does `text` look like format `f`?
pub fn sniff(f: Format, text: &str) -> bool {
    match f {
        Format::Adk => adk::sniff(text) && adk_kind(text) == f,
        Format::AdkEvalSet => {
            (adk::sniff(text) && adk_kind(text) == f) || adk_legacy_eval::sniff(text)
        }
        _ => reader_sniff(f, text),
    }
}

/// ADK exports and eval sets share one reader: eval sets have `eval_cases`/`evalCases`.
fn adk_kind(text: &str) -> Format {
    let eval = util::scan::top_keys(text)
        .is_some_and(|keys| keys.iter().any(|k| k == "eval_cases" || k == "evalCases"));
    if eval {
        Format::AdkEvalSet
    } else {
        Format::Adk
    }
}

/// The format of a file's content, or `None` when no reader recognises it.
pub fn detect(text: &str) -> Option<Format> {
    let found = |text: &str| {
        let f = ORDER.into_iter().find(|&f| reader_sniff(f, text))?;
        Some(if f == Format::Adk { adk_kind(text) } else { f })
    };
    found(text).or_else(|| {
        // NaN / Infinity make a file unparsable for serde; sniff it again as the readers
        // will see it (see `pyjson`).
        match pyjson::normalize("", text) {
            Ok(Cow::Owned(t)) => found(&t),
            _ => None,
        }
    })
}

/// Run format `f`'s reader.
/// Python's NaN / Infinity / big integers are accepted in every format (see `pyjson`).
pub fn read_as(f: Format, file: &str, text: &str) -> Result<Vec<Session>, ReadError> {
    // `adk::read` runs the pre-pass itself (conform calls it directly).
    let normalized = match f {
        Format::Adk | Format::AdkEvalSet => Cow::Borrowed(text),
        _ => pyjson::normalize(file, text)?,
    };
    let text = &*normalized;
    match f {
        Format::Adk => adk::read(file, text),
        // Eval sets are objects (`eval_cases`); the legacy eval data is a list.
        Format::AdkEvalSet if text.trim_start().starts_with('[') => {
            adk_legacy_eval::read(file, &pyjson::normalize(file, text)?)
        }
        Format::AdkEvalSet => adk::read(file, text),
        Format::OpenaiChat => openai_chat::read(file, text),
        Format::ClaudeCode => claude_code::read(file, text),
        Format::Codex => codex::read(file, text),
        Format::GeminiCli => gemini_cli::read(file, text),
        Format::Openhands => openhands::read(file, text),
        Format::SweAgent => swe_agent::read(file, text),
        Format::Tau2 => tau2::read(file, text),
        Format::Canonical => canonical::read(file, text),
    }
}

/// Follows the JSON structure of a file as it streams in, far enough to tell whether the
/// file is one document: a single top-level object or list, then only whitespace. Fed only
/// once a line is over the limit, so ordinary files never pay for it.
#[derive(Debug, Default)]
struct OneDocument {
    depth: u64,
    in_str: bool,
    escaped: bool,
    /// The top-level value has started (at byte 0 after whitespace and a BOM).
    started: bool,
    /// Something besides one object or list is at the top level: not one document.
    other: bool,
    /// Bytes fed so far (a BOM is only skipped at the very start).
    seen: u64,
}

impl OneDocument {
    fn feed(&mut self, chunk: &[u8]) {
        let mut i = 0;
        while i < chunk.len() && !self.other {
            let c = chunk[i];
            i += 1;
            self.seen += 1;
            if self.in_str {
                if self.escaped {
                    self.escaped = false;
                } else if c == b'\\' {
                    self.escaped = true;
                } else if c == b'"' {
                    self.in_str = false;
                }
                continue;
            }
            match c {
                b' ' | b'\t' | b'\r' | b'\n' => {}
                0xEF | 0xBB | 0xBF if self.seen <= 3 => {}
                _ if self.depth == 0 => {
                    if self.started || !matches!(c, b'{' | b'[') {
                        self.other = true;
                    } else {
                        self.started = true;
                        self.depth = 1;
                    }
                }
                b'"' => self.in_str = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => self.depth -= 1,
                _ => {}
            }
        }
    }
}

/// Read a file into a string, refusing files over `lim.max_file_bytes`, lines over
/// `lim.max_line_bytes` (unless the file is one JSON document) and invalid UTF-8, without
/// ever holding more than the file limit.
pub fn read_text(path: &Path, file: &str, lim: Limits) -> Result<String, ReadError> {
    let f = std::fs::File::open(path).map_err(|e| ReadError::io(file, "", "cannot open", &e))?;
    let meta = f
        .metadata()
        .map_err(|e| ReadError::io(file, "", "cannot stat", &e))?;
    if meta.is_dir() {
        return Err(ReadError::new(file, "", "is a directory"));
    }
    if meta.len() > lim.max_file_bytes {
        return Err(ReadError::new(
            file,
            "",
            format!(
                "file too large: {} bytes (limit {} bytes)",
                meta.len(),
                lim.max_file_bytes
            ),
        ));
    }
    let mut r = BufReader::with_capacity(1 << 16, f.take(lim.max_file_bytes.saturating_add(1)));
    // Reserve at most 64 MiB up front: the recorded length may be a sparse giant.
    let mut bytes: Vec<u8> = Vec::with_capacity(meta.len().min(64 << 20) as usize);
    let mut line: u64 = 1;
    let mut line_len: u64 = 0;
    // The first line over the limit, and the structure tracker started when it was found.
    let mut long_line: Option<u64> = None;
    let mut shape: Option<OneDocument> = None;
    loop {
        let buf = r
            .fill_buf()
            .map_err(|e| ReadError::io(file, format!("line {line}"), "read error", &e))?;
        if buf.is_empty() {
            break;
        }
        let n = buf.len();
        for (k, seg) in buf.split(|&c| c == b'\n').enumerate() {
            if k > 0 {
                line += 1;
                line_len = 0;
            }
            line_len += seg.len() as u64;
            if line_len > lim.max_line_bytes && long_line.is_none() {
                long_line = Some(line);
            }
        }
        if let Some(long) = long_line {
            let doc = shape.get_or_insert_with(|| {
                let mut d = OneDocument::default();
                d.feed(&bytes);
                d
            });
            doc.feed(buf);
            if doc.other {
                return Err(ReadError::new(
                    file,
                    format!("line {long}"),
                    format!(
                        "line too long: over {} bytes (only a file holding one JSON document \
                         may have longer lines)",
                        lim.max_line_bytes
                    ),
                ));
            }
        }
        if bytes.len() as u64 + n as u64 > lim.max_file_bytes {
            return Err(ReadError::new(
                file,
                "",
                format!("file too large: over {} bytes", lim.max_file_bytes),
            ));
        }
        bytes.extend_from_slice(buf);
        r.consume(n);
    }
    match String::from_utf8(bytes) {
        Ok(mut s) => {
            if s.starts_with('\u{feff}') {
                s.drain(..3);
            }
            Ok(s)
        }
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let b = e.as_bytes();
            let line = 1 + b
                .get(..at)
                .map_or(0, |p| p.iter().filter(|&&c| c == b'\n').count());
            Err(ReadError::new(
                file,
                format!("line {line}"),
                format!("not UTF-8 text (byte {at})"),
            ))
        }
    }
}

/// Load one file: read it (with the size guards), detect its format unless `format` is given,
/// run the reader and check every session's invariants (timestamps in order, tool responses
/// after their calls).
pub fn load_file(
    path: impl AsRef<Path>,
    format: Option<Format>,
) -> Result<Vec<Session>, ReadError> {
    load_file_with_limits(path, format, Limits::default())
}

/// [`load_file`] with explicit size limits (tests use small ones).
pub fn load_file_with_limits(
    path: impl AsRef<Path>,
    format: Option<Format>,
    lim: Limits,
) -> Result<Vec<Session>, ReadError> {
    load_checked(path.as_ref(), format, lim).map_err(util::tidy)
}

fn load_checked(
    path: &Path,
    format: Option<Format>,
    lim: Limits,
) -> Result<Vec<Session>, ReadError> {
    let file = path.to_string_lossy().into_owned();
    if matches!(format, None | Some(Format::Openhands)) {
        if openhands_v1::is_conversation(path) {
            return checked(&file, vec![load_conversation(path, &file, lim)?]);
        }
        if let Some(dir) = openhands_v1::conversation_of(path) {
            return Err(ReadError::new(
                &file,
                "",
                format!(
                    "part of an OpenHands SDK v1 conversation: read its folder {}",
                    dir.display()
                ),
            ));
        }
    }
    let text = read_text(path, &file, lim)?;
    if text.trim().is_empty() {
        return Err(ReadError::new(&file, "", "empty file"));
    }
    let f = match format {
        Some(f) => f,
        None => match detect(&text) {
            Some(f) => f,
            None => return Err(unrecognised(&file, &text)),
        },
    };
    let sessions = read_as(f, &file, &text)?;
    drop(text);
    checked(&file, sessions)
}

/// Sessions as read, completed by [`recorded`], their invariants checked.
pub(crate) fn checked(file: &str, mut sessions: Vec<Session>) -> Result<Vec<Session>, ReadError> {
    sessions.iter_mut().for_each(recorded);
    for s in &sessions {
        util::validate_events(file, &s.events, |i| {
            let frag = s
                .source
                .split_once('#')
                .map(|(_, f)| format!("#{f} "))
                .unwrap_or_default();
            format!("{frag}event {i}")
        })?;
    }
    Ok(sessions)
}

/// Shrink a session as read and complete what it records of its framework's compaction:
/// request numbers, and for ADK the setting its compaction events imply.
fn recorded(s: &mut Session) {
    s.shrink();
    s.index_recorded();
    if matches!(s.format, Format::Adk | Format::AdkEvalSet) && s.recorded_policy.is_none() {
        s.recorded_policy = s.implied_adk_policy();
    }
}

/// An OpenHands SDK v1 conversation folder (see [`openhands_v1`]): its state and every
/// `events/event-NNNNN-*.json`, each read with the size guards.
fn load_conversation(dir: &Path, name: &str, lim: Limits) -> Result<Session, ReadError> {
    let state_path = dir.join(openhands_v1::BASE_STATE);
    let state = read_text(&state_path, &state_path.to_string_lossy(), lim)?;
    let events_dir = dir.join(openhands_v1::EVENTS_DIR);
    let rd = std::fs::read_dir(&events_dir)
        .map_err(|e| ReadError::io(events_dir.to_string_lossy(), "", "cannot read folder", &e))?;
    let mut events = Vec::new();
    for entry in rd.filter_map(|e| e.ok()) {
        let p = entry.path();
        let Some(index) = p
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(openhands_v1::event_index)
        else {
            continue;
        };
        let file = p.to_string_lossy().into_owned();
        let text = read_text(&p, &file, lim)?;
        events.push(openhands_v1::EventFile { index, file, text });
    }
    openhands_v1::read(name, &state, events)
}

/// Why no reader recognised `text`. A damaged file of a known format usually fails its
/// sniffer, so JSON that does not parse gets its line and column (truncated, or the first
/// bad JSONL line); only well-formed JSON, or text that is not JSON at all, is an
/// "unknown format".
fn unrecognised(file: &str, text: &str) -> ReadError {
    let unknown = || {
        let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
        ReadError::new(
            file,
            "",
            format!(
                "unknown format (not one of: {}; use --format)",
                names.join(", ")
            ),
        )
    };
    if !text.trim_start().starts_with(['{', '[']) {
        return unknown();
    }
    let text = match pyjson::normalize(file, text) {
        Ok(t) => t,
        Err(e) => return e,
    };
    let whole = match serde_json::from_str::<serde::de::IgnoredAny>(&text) {
        Ok(_) => return unknown(),
        Err(e) => e,
    };
    let lines = match readutil::lines(file, &text) {
        Ok(l) => l,
        Err(e) => return e,
    };
    let alone = |l: &str| serde_json::from_str::<serde::de::IgnoredAny>(l);
    // JSONL: a first line that is a JSON value by itself, and more lines after it.
    if lines.len() > 1 && lines.first().is_some_and(|(_, l)| alone(l).is_ok()) {
        for (n, l) in &lines {
            if let Err(e) = alone(l) {
                return ReadError::new(file, format!("line {n}"), readutil::json_error(&e));
            }
        }
        return unknown();
    }
    util::json_error(file, &whole)
}

/// Sessions loaded from many paths, plus the files that could not be read.
#[derive(Debug, Default)]
pub struct Loaded {
    pub sessions: Vec<Session>,
    /// Bad files, in input order; never silently dropped.
    pub skipped: Vec<ReadError>,
    /// Spellings of one file read once (said, never silent).
    pub merged: Vec<Merged>,
}

/// Extensions tried when walking a folder; other files there (SOURCE.md, README.md, …) are
/// silently passed over. Files named explicitly are always tried.
pub const TRANSCRIPT_EXTENSIONS: [&str; 3] = ["json", "jsonl", "traj"];

fn is_transcript_name(p: &Path) -> bool {
    p.extension().and_then(|e| e.to_str()).is_some_and(|e| {
        TRANSCRIPT_EXTENSIONS
            .iter()
            .any(|t| t.eq_ignore_ascii_case(e))
    })
}

/// Collect files under `dir` (recursively, sorted by path, hidden entries and symlinked
/// folders skipped); an OpenHands SDK v1 conversation folder is collected whole.
fn walk(dir: &Path, out: &mut Vec<PathBuf>, skipped: &mut Vec<ReadError>) {
    if openhands_v1::is_conversation(dir) {
        // One session, not one transcript per event file.
        out.push(dir.to_path_buf());
        return;
    }
    if let Some(conv) = openhands_v1::conversation_without_state(dir) {
        skipped.push(ReadError::new(
            conv.to_string_lossy(),
            "",
            format!(
                "an OpenHands SDK v1 conversation folder (events/event-NNNNN-*.json) without its \
                 {0}: expected {1}",
                openhands_v1::BASE_STATE,
                conv.join(openhands_v1::BASE_STATE).display()
            ),
        ));
        return;
    }
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => {
            skipped.push(ReadError::io(
                dir.to_string_lossy(),
                "",
                "cannot read folder",
                &e,
            ));
            return;
        }
    };
    let mut entries: Vec<(PathBuf, std::fs::FileType)> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_type().ok().map(|t| (e.path(), t)))
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (p, t) in entries {
        if p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.'))
        {
            continue;
        }
        if t.is_dir() {
            walk(&p, out, skipped);
        } else if (t.is_file() || (t.is_symlink() && p.is_file())) && is_transcript_name(&p) {
            out.push(p);
        }
    }
}

/// Expand files, folders (recursively) and glob patterns into a sorted, de-duplicated file
/// list per argument; arguments keep their order.
pub fn expand_paths(paths: &[String]) -> (Vec<PathBuf>, Vec<ReadError>) {
    let e = expand_inputs(paths);
    (e.files, e.skipped)
}

/// Two spellings of one file (same device and inode: `./x` and `x`, a link and its target):
/// the file is read once, under `kept`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    pub kept: PathBuf,
    pub also: PathBuf,
}

impl std::fmt::Display for Merged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} and {} are the same file; read once, as {}",
            self.kept.display(),
            self.also.display(),
            self.kept.display()
        )
    }
}

/// The files the arguments name, what could not be listed, and the spellings merged.
#[derive(Debug, Default)]
pub struct Expanded {
    pub files: Vec<PathBuf>,
    pub skipped: Vec<ReadError>,
    pub merged: Vec<Merged>,
}

/// Keep the first spelling of each file (by device and inode; a path whose identity cannot
/// be read is kept by its spelling, its reader reports it).
fn merge_spellings(files: &mut Vec<PathBuf>) -> Vec<Merged> {
    use std::os::unix::fs::MetadataExt;
    let mut first: std::collections::HashMap<(u64, u64), PathBuf> = Default::default();
    let mut spelled = std::collections::HashSet::new();
    let mut merged = Vec::new();
    files.retain(|f| {
        if !spelled.insert(f.clone()) {
            return false;
        }
        let Ok(m) = std::fs::metadata(f) else {
            return true;
        };
        match first.entry((m.dev(), m.ino())) {
            std::collections::hash_map::Entry::Occupied(o) => {
                merged.push(Merged {
                    kept: o.get().clone(),
                    also: f.clone(),
                });
                false
            }
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(f.clone());
                true
            }
        }
    });
    merged
}

/// [`expand_paths`], saying which spellings of one file were merged.
pub fn expand_inputs(paths: &[String]) -> Expanded {
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    for arg in paths {
        let p = Path::new(arg);
        if p.is_dir() {
            walk(p, &mut files, &mut skipped);
        } else if p.exists() {
            files.push(p.to_path_buf());
        } else if arg.contains(['*', '?', '[']) {
            match glob::glob(arg) {
                Ok(it) => {
                    let mut hits: Vec<PathBuf> = it.filter_map(|r| r.ok()).collect();
                    hits.sort();
                    if hits.is_empty() {
                        skipped.push(ReadError::new(arg, "", "no file matches this pattern"));
                    }
                    // Like a folder, `dir/*` passes over SOURCE.md and friends; a pattern
                    // that matches only other files (`*.txt`) means them, so they are tried.
                    if hits.iter().any(|h| h.is_dir() || is_transcript_name(h)) {
                        hits.retain(|h| h.is_dir() || is_transcript_name(h));
                    }
                    for h in hits {
                        if h.is_dir() {
                            walk(&h, &mut files, &mut skipped);
                        } else {
                            files.push(h);
                        }
                    }
                }
                Err(e) => skipped.push(ReadError::new(arg, "", format!("bad glob pattern: {e}"))),
            }
        } else {
            skipped.push(ReadError::new(arg, "", "no such file or folder"));
        }
    }
    let merged = merge_spellings(&mut files);
    Expanded {
        files,
        skipped,
        merged,
    }
}

/// Load every session under `paths` (files, folders, globs, and database URLs, which are
/// read whole), in a deterministic order (the expanded file order, then each file's own
/// session order), reading files in parallel.
pub fn load_paths(paths: &[String], format: Option<Format>) -> Loaded {
    load_inputs(paths, format, &db::DbFilter::default())
}

/// [`load_paths`] with the sessions of database URLs (`sqlite:///…`, `postgresql://…`, see
/// [`db`]) selected by `filter`. Database sessions come after the files', in argument order;
/// `format` applies to files only (a database holds ADK sessions).
pub fn load_inputs(paths: &[String], format: Option<Format>, filter: &db::DbFilter) -> Loaded {
    let (urls, paths): (Vec<String>, Vec<String>) =
        paths.iter().cloned().partition(|p| db::is_db_url(p));
    let mut loaded = load_files(&paths, format);
    for u in &urls {
        let (mut sessions, skipped) = db::load_arg(u, filter);
        sessions.iter_mut().for_each(recorded);
        loaded.sessions.extend(sessions);
        loaded.skipped.extend(skipped);
    }
    loaded
}

fn load_files(paths: &[String], format: Option<Format>) -> Loaded {
    if paths.is_empty() {
        return Loaded::default();
    }
    let Expanded {
        files,
        skipped,
        merged,
    } = expand_inputs(paths);
    let mut skipped: Vec<ReadError> = skipped.into_iter().map(util::tidy).collect();
    let results: Vec<Result<Vec<Session>, ReadError>> =
        files.par_iter().map(|f| load_file(f, format)).collect();
    let mut sessions = Vec::new();
    for r in results {
        match r {
            Ok(s) => sessions.extend(s),
            Err(e) => skipped.push(e),
        }
    }
    super::join::join_split_sessions(&mut sessions, &mut skipped);
    super::claude_code_settings::share(&mut sessions);
    Loaded {
        sessions,
        skipped,
        merged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn empty_and_unknown_files_get_one_line_errors() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.json");
        std::fs::write(&empty, "  \n").unwrap();
        let e = load_file(&empty, None).unwrap_err();
        assert!(e.to_string().ends_with("empty.json: empty file"), "{e}");
        let odd = dir.path().join("odd.json");
        std::fs::write(&odd, r#"{"hello": "world"}"#).unwrap();
        let e = load_file(&odd, None).unwrap_err();
        assert!(e.to_string().contains("odd.json: unknown format"), "{e}");
        assert!(!e.to_string().contains('\n'));
    }

    #[test]
    fn unreadable_files_are_the_environments_fault_missing_ones_bad_input() {
        use crate::error::{Classify, ExitKind};
        let dir = tempfile::tempdir().unwrap();
        let e = load_file(dir.path().join("missing.json"), None).unwrap_err();
        assert_eq!(e.exit_kind(), ExitKind::BadInput, "{e}");
        let e = load_file(dir.path(), None).unwrap_err();
        assert_eq!(e.exit_kind(), ExitKind::BadInput, "{e}");
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let e = ReadError::io("f.json", "", "cannot open", &denied);
        assert_eq!(util::tidy(e).exit_kind(), ExitKind::Environment);
        let e = ReadError::new("f.json", "line 2", "malformed JSON");
        assert_eq!(e.exit_kind(), ExitKind::BadInput);
    }

    #[test]
    fn long_lines_and_large_files_are_refused_without_reading_them() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("long.jsonl");
        let mut f = std::fs::File::create(&p).unwrap();
        writeln!(f, "{{}}").unwrap();
        writeln!(f, "{}", "x".repeat(200)).unwrap();
        drop(f);
        let lim = Limits {
            max_file_bytes: 10_000,
            max_line_bytes: 100,
        };
        let e = load_file_with_limits(&p, None, lim).unwrap_err();
        assert_eq!(e.location, "line 2");
        assert!(e.message.contains("line too long"), "{e}");
        let lim = Limits {
            max_file_bytes: 50,
            max_line_bytes: 1000,
        };
        let e = load_file_with_limits(&p, None, lim).unwrap_err();
        assert!(e.message.contains("file too large"), "{e}");
    }

    /// Issue 13: a compact one-line ADK export over the line limit was refused as "line too
    /// long". One JSON document may have lines of any length; JSONL may not.
    #[test]
    fn one_json_document_is_read_whatever_its_line_lengths() {
        let dir = tempfile::tempdir().unwrap();
        let event = |i: usize| {
            format!(
                r#"{{"author": "user", "invocation_id": "inv-{i}", "content": {{"role": "user", "parts": [{{"text": "turn {i} with \"quotes\" and }}] brackets"}}]}}}}"#
            )
        };
        let events: Vec<String> = (0..40).map(event).collect();
        let compact = format!(
            "\u{feff}{{\"id\": \"s1\", \"app_name\": \"a\", \"events\": [{}]}}\n\n",
            events.join(", ")
        );
        let lim = Limits {
            max_file_bytes: 1 << 20,
            max_line_bytes: 1000,
        };
        assert!(
            compact.len() > 4 * 1000,
            "the test line must be over the limit"
        );
        let p = dir.path().join("compact.json");
        std::fs::write(&p, &compact).unwrap();
        let s = load_file_with_limits(&p, None, lim).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].events.len(), 40);
        // A long line inside a pretty-printed document is no different.
        let pretty = format!(
            "{{\n  \"id\": \"s1\",\n  \"events\": [\n    {}\n  ]\n}}\n",
            events.join(", ")
        );
        std::fs::write(&p, &pretty).unwrap();
        let s = load_file_with_limits(&p, None, lim).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s[0].events.len(), 40);
        // JSONL whose first record is over the limit: refused, naming that line, though the
        // second record is what shows it is not one document.
        let jsonl = format!(
            "{}\n{}\n",
            compact.trim().trim_start_matches('\u{feff}'),
            event(1)
        );
        std::fs::write(&p, &jsonl).unwrap();
        let e = load_file_with_limits(&p, None, lim).unwrap_err();
        assert_eq!(e.location, "line 1", "{e}");
        assert!(
            e.message.starts_with("line too long: over 1000 bytes"),
            "{e}"
        );
        // Anything after the document (here a stray `]`) makes the long line refused too.
        std::fs::write(&p, format!("{}]\n", compact.trim_end())).unwrap();
        let e = load_file_with_limits(&p, None, lim).unwrap_err();
        assert_eq!(e.location, "line 1", "{e}");
        // A long line of something else than JSON is refused as before.
        std::fs::write(&p, format!("hello {}\n", "x".repeat(2000))).unwrap();
        let e = load_file_with_limits(&p, None, lim).unwrap_err();
        assert!(e.message.contains("line too long"), "{e}");
    }

    #[test]
    fn a_sparse_one_gigabyte_line_is_refused_quickly() {
        // A sparse file: 1 GiB of NUL bytes on one line, costing no disk space.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("huge.jsonl");
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(1 << 30).unwrap();
        drop(f);
        let e = load_file(&p, None).unwrap_err();
        assert!(
            e.to_string().starts_with(&p.to_string_lossy().into_owned()),
            "{e}"
        );
        assert!(
            e.message.contains("too large") || e.message.contains("too long"),
            "{e}"
        );
        // With a file limit above 1 GiB the line limit still stops it after 64 MiB.
        let lim = Limits {
            max_file_bytes: 2 << 30,
            max_line_bytes: MAX_LINE_BYTES,
        };
        let e = load_file_with_limits(&p, None, lim).unwrap_err();
        assert_eq!(e.location, "line 1");
        assert!(e.message.contains("line too long"), "{e}");
    }

    #[test]
    fn invalid_utf8_names_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.jsonl");
        std::fs::write(&p, b"{}\n{\"a\": \"\xff\"}\n").unwrap();
        let e = load_file(&p, None).unwrap_err();
        assert_eq!(e.location, "line 2");
        assert!(e.message.contains("UTF-8"), "{e}");
    }

    #[test]
    fn folders_skip_non_transcripts_and_report_bad_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("SOURCE.md"), "# not a transcript").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/b.json"), "{not json").unwrap();
        std::fs::write(dir.path().join("a.jsonl"), "").unwrap();
        let l = load_paths(&[dir.path().to_string_lossy().into_owned()], None);
        assert!(l.sessions.is_empty());
        let names: Vec<String> = l.skipped.iter().map(|e| e.file.clone()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(
            names[0].ends_with("a.jsonl") && names[1].ends_with("b.json"),
            "{names:?}"
        );
        let l = load_paths(&["/definitely/not/here".to_string()], None);
        assert_eq!(l.skipped.len(), 1);
        // A glob passes over non-transcripts unless they are all it matches.
        let pat = format!("{}/*", dir.path().display());
        let (files, errs) = expand_paths(&[pat]);
        assert!(errs.is_empty());
        let names: Vec<String> = files
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.jsonl", "b.json"]);
        let (files, _) = expand_paths(&[format!("{}/*.md", dir.path().display())]);
        assert_eq!(files.len(), 1);
    }

    /// Python-written NaN / Infinity / big integers load in any JSON format (here Claude Code,
    /// auto-detected), as tagged values the size functions print the Python way (`pyjson`).
    #[test]
    fn python_only_numbers_load_in_other_formats() {
        use crate::transcript::pyjson::{tagged_value, PyNumber};
        use crate::transcript::Part;
        let good = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/readers2/claude_usage.jsonl"
        ))
        .unwrap();
        let text = good.replace(
            r#""input":{"command":"ls"}"#,
            r#""input":{"command":"ls","limit":NaN,"seed":123456789012345678901234567890}"#,
        );
        assert_ne!(text, good, "the fixture has the tool_use this test edits");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cc.jsonl");
        std::fs::write(&path, &text).unwrap();
        assert_eq!(detect(&text), Some(Format::ClaudeCode));
        let s = load_file(&path, None).unwrap_or_else(|e| panic!("{e}"));
        let args: Vec<&serde_json::Value> = s[0]
            .events
            .iter()
            .flat_map(|e| &e.parts)
            .filter_map(|p| match p {
                Part::ToolCall { args, .. } => Some(args),
                _ => None,
            })
            .collect();
        assert!(args.iter().any(|a| {
            tagged_value(&a["limit"]) == Some(PyNumber::NaN)
                && tagged_value(&a["seed"]) == Some(PyNumber::Int("123456789012345678901234567890"))
        }));
        // A malformed literal is still a one-line error naming the line.
        let bad = text.replacen("NaN", "nan", 1);
        let line = bad.lines().position(|l| l.contains(":nan")).unwrap() + 1;
        std::fs::write(&path, &bad).unwrap();
        let e = load_file(&path, Some(Format::ClaudeCode)).unwrap_err();
        assert_eq!(e.location, format!("line {line}"), "{e}");
        // An ADK event time of NaN is refused (Python would replay with a NaN clock).
        let adk = "{\"events\": [{\"author\": \"user\", \"invocation_id\": \"i\", \"timestamp\": NaN, \"content\": {\"role\": \"user\", \"parts\": [{\"text\": \"hi\"}]}}]}";
        let path = dir.path().join("nan.session.json");
        std::fs::write(&path, adk).unwrap();
        let e = load_file(&path, None).unwrap_err();
        assert!(e.message.contains("not a finite number"), "{e}");
    }
}
