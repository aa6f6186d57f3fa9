//! One Claude Code session split over several files (a resumed session's new file, which
//! repeats the lines before it), joined by its `sessionId` when the files are read together
//! (docs/recorded.md "A session over several files"): the files are read again as one stream,
//! oldest first ([`claude_code::read_joined`]), so a repeated line, compaction records
//! included, counts once. The joined session is one session; its `source` names every file.

use std::collections::BTreeMap;

use super::{claude_code, detect, Format, ReadError, Session};

/// The Claude Code main sessions of `sessions` whose id more than one file holds, replaced by
/// one session each (with the sidechains of those files). A file that cannot be read again
/// or joined keeps its sessions as read, and the reason is added to `skipped`.
pub fn join_split_sessions(sessions: &mut Vec<Session>, skipped: &mut Vec<ReadError>) {
    // session id -> (first timestamp, file), for main sessions only
    let mut files_of: BTreeMap<String, Vec<(f64, String)>> = BTreeMap::new();
    for s in sessions.iter() {
        if s.format != Format::ClaudeCode || s.id.contains("/agent-") {
            continue;
        }
        let file = super::util::source_file(&s.source).to_string();
        let first = s.events.first().map_or(f64::INFINITY, |e| e.timestamp);
        files_of
            .entry(s.id.clone())
            .or_default()
            .push((first, file));
    }
    for (_, mut files) in files_of.into_iter().filter(|(_, f)| f.len() > 1) {
        files.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        files.dedup_by(|a, b| a.1 == b.1);
        if files.len() < 2 {
            continue;
        }
        let names: Vec<String> = files.into_iter().map(|(_, f)| f).collect();
        match read_all(&names) {
            Ok(joined) => {
                let of_these = |s: &Session| {
                    names
                        .iter()
                        .any(|n| n == super::util::source_file(&s.source))
                };
                let at = sessions.iter().position(of_these).unwrap_or(sessions.len());
                sessions.retain(|s| !of_these(s));
                let at = at.min(sessions.len());
                sessions.splice(at..at, joined);
            }
            Err(e) => skipped.push(ReadError::new(
                e.file.clone(),
                e.location.clone(),
                format!(
                    "not joined with the other files of its session: {}",
                    e.message
                ),
            )),
        }
    }
}

/// The files read again and joined, their sessions checked as any file's.
fn read_all(names: &[String]) -> Result<Vec<Session>, ReadError> {
    let mut texts = Vec::with_capacity(names.len());
    for n in names {
        texts.push(detect::read_text(
            std::path::Path::new(n),
            n,
            detect::Limits::default(),
        )?);
    }
    let parts: Vec<(&str, &str)> = names
        .iter()
        .zip(&texts)
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    let sessions = claude_code::read_joined(&parts)?;
    detect::checked(&names[0], sessions)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `split/claude_split_b.jsonl` is the resumed file of `claude_split_a.jsonl`'s session:
    /// it repeats every line of the first (its automatic compaction included), then goes on to
    /// a manual one. Read together they are one session holding each event and each compaction
    /// once, in order; read alone, the second file is the whole session too.
    #[test]
    fn two_files_of_one_session_id_are_joined_and_their_repeated_compaction_counted_once() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/recorded/split");
        let loaded = detect::load_paths(&[dir.to_string()], None);
        assert!(loaded.skipped.is_empty(), "{:?}", loaded.skipped);
        assert_eq!(loaded.sessions.len(), 1, "one session");
        let s = &loaded.sessions[0];
        assert_eq!(s.id, "s-split");
        assert_eq!(
            s.source,
            format!("{dir}/claude_split_a.jsonl#+{dir}/claude_split_b.jsonl")
        );
        let kinds: Vec<(&str, usize)> = s
            .recorded_compactions
            .iter()
            .map(|c| (c.kind_name(), c.at_event))
            .collect();
        assert_eq!(kinds, [("full", 4), ("manual", 8)]);
        let requests = s.events.iter().filter(|e| e.model_request).count();
        assert_eq!(requests, 5, "msg_1 to msg_5, each once");
        let alone = detect::load_file(format!("{dir}/claude_split_b.jsonl"), None)
            .expect("reads")
            .remove(0);
        assert_eq!(alone.events.len(), s.events.len());
        assert_eq!(alone.recorded_compactions.len(), 2);
    }
}
