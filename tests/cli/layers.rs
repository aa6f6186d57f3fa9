//! The house's rooms in the data's order (docs/development.md "Rooms"): each module of the
//! library may use only the rooms to its left, so no two rooms import each other and nothing
//! below the command line knows about the rooms above it. Read from the source text, so a new
//! upward `use crate::...` fails here before it becomes a cycle.

use crate::common::root;
use std::collections::BTreeSet;
use std::path::Path;

/// Every room of `src/`, leftmost first. A room is a folder or a top-level file; a room may use
/// any room before it in this list and none after it.
const ROOMS: &[&str] = &[
    "error",
    "stats",
    "search",
    "atomic",
    "settings",
    "transcript",
    "synth",
    "tokens",
    "engine",
    "policy",
    "summarize",
    "detail",
    "cost",
    "conform",
    "backtest",
    "sweep",
    "table",
    "chart",
    "report",
    "run",
    "cli",
];

/// The rooms named by `crate::ROOM` paths in `text`, `use crate::{a, b::c}` groups included.
fn rooms_named(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            found.extend(group_heads(group));
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            found.insert(name);
        }
    }
    found
}

/// The first path segment of each item of a `{...}` group (nested groups skipped).
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let (mut depth, mut at_item) = (0usize, true);
    let mut word = String::new();
    for c in group.chars() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => at_item = true,
            c if at_item && (c.is_ascii_alphanumeric() || c == '_') => word.push(c),
            _ if at_item && !word.is_empty() => {
                heads.push(std::mem::take(&mut word));
                at_item = false;
            }
            _ => {}
        }
    }
    if !word.is_empty() {
        heads.push(word);
    }
    heads
}

/// The room a source file belongs to: its top folder under `src/`, or its own name.
fn room_of(rel: &Path) -> String {
    let first = rel.components().next().expect("a path under src/");
    let first = first.as_os_str().to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).expect("src/ is readable") {
        let p = e.expect("a directory entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every `(file, room it names)` pair that points to the right of the file's own room.
fn upward_imports() -> Vec<String> {
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let rank = |r: &str| ROOMS.iter().position(|x| *x == r);
    let mut bad = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&src).expect("under src/").to_path_buf();
        let room = room_of(&rel);
        if matches!(room.as_str(), "bin" | "lib" | "main") {
            continue;
        }
        let mine =
            rank(&room).unwrap_or_else(|| panic!("{}: room {room} is not in ROOMS", rel.display()));
        let text = std::fs::read_to_string(&f).expect("a readable source file");
        for named in rooms_named(&text) {
            match rank(&named) {
                Some(theirs) if theirs > mine => {
                    bad.push(format!("{}: {room} uses {named}", rel.display()))
                }
                _ => {}
            }
        }
    }
    bad
}

#[test]
fn no_room_uses_one_to_its_right() {
    let bad = upward_imports();
    assert!(
        bad.is_empty(),
        "imports against the data's order (tests/cli/layers.rs ROOMS):\n{}",
        bad.join("\n")
    );
}

#[test]
fn every_room_in_src_is_placed() {
    let mut seen = BTreeSet::new();
    for e in std::fs::read_dir(root().join("src")).expect("src/ is readable") {
        let name = e
            .expect("an entry")
            .file_name()
            .to_string_lossy()
            .to_string();
        let room = name.trim_end_matches(".rs").to_string();
        // `data/` holds the built-in tables and fonts, no code.
        if !matches!(room.as_str(), "bin" | "lib" | "main" | "data") {
            seen.insert(room);
        }
    }
    let unplaced: Vec<_> = seen
        .iter()
        .filter(|r| !ROOMS.contains(&r.as_str()))
        .collect();
    assert!(
        unplaced.is_empty(),
        "rooms missing from ROOMS: {unplaced:?}"
    );
}

#[test]
fn the_reader_sees_grouped_and_plain_paths() {
    let text = "use crate::{engine::Replay, tokens::{a, b}, cost};\nlet x = crate::sweep::run();";
    let got: Vec<String> = rooms_named(text).into_iter().collect();
    assert_eq!(got, ["cost", "engine", "sweep", "tokens"]);
}

/// Rooms whose files import one another without a circle: a file of these may use a
/// sibling only when that sibling does not (through others) use it back. A room's `mod.rs`
/// (which declares its files and re-exports what they share) is not one of the files.
const ACYCLIC_ROOMS: &[&str] = &["summarize", "detail", "cost"];

/// The sibling modules `text` (a file of a room, not its `mod.rs`) names: `super::NAME`,
/// `crate::ROOM::NAME`, each once; comment lines (doc links included) are left out.
fn siblings_named(text: &str, room: &str, siblings: &BTreeSet<String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let prefixes = ["super::".to_string(), format!("crate::{room}::")];
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        for prefix in &prefixes {
            for (at, _) in line.match_indices(prefix.as_str()) {
                let rest = &line[at + prefix.len()..];
                let heads = match rest.strip_prefix('{') {
                    Some(group) => group_heads(group),
                    None => vec![rest
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect()],
                };
                found.extend(heads.into_iter().filter(|h| siblings.contains(h)));
            }
        }
    }
    found
}

/// A circle of imports among the files of `room` (`a -> b -> ... -> a`), if there is one.
fn circle_in(room: &str) -> Option<Vec<String>> {
    let dir = root().join("src").join(room);
    let mut files = Vec::new();
    for e in std::fs::read_dir(&dir).expect("the room's folder is readable") {
        let p = e.expect("a directory entry").path();
        if p.extension().is_some_and(|x| x == "rs") && !p.ends_with("mod.rs") {
            files.push(p);
        }
    }
    let stem = |p: &Path| p.file_stem().unwrap().to_string_lossy().to_string();
    let siblings: BTreeSet<String> = files.iter().map(|p| stem(p)).collect();
    let mut uses = std::collections::BTreeMap::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("a readable source file");
        let mut named = siblings_named(&text, room, &siblings);
        named.remove(&stem(f));
        uses.insert(stem(f), named);
    }
    // Depth-first search with the path kept: a name met again on the path closes a circle.
    fn visit(
        at: &str,
        uses: &std::collections::BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == at) {
            let mut circle = path[i..].to_vec();
            circle.push(at.to_string());
            return Some(circle);
        }
        if done.contains(at) {
            return None;
        }
        path.push(at.to_string());
        for next in &uses[at] {
            if let Some(c) = visit(next, uses, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(at.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for start in uses.keys() {
        if let Some(c) = visit(start, &uses, &mut Vec::new(), &mut done) {
            return Some(c);
        }
    }
    None
}

#[test]
fn no_circle_of_imports_inside_summarize_detail_and_cost() {
    for room in ACYCLIC_ROOMS {
        if let Some(c) = circle_in(room) {
            panic!("src/{room}/: a circle of imports: {}", c.join(" -> "));
        }
    }
}

#[test]
fn the_circle_check_reads_sibling_paths() {
    let siblings: BTreeSet<String> = ["live", "modelled", "pricing"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let text =
        "use super::{modelled::X, pricing};\n/// [`super::live`]\nlet y = crate::cost::live::f();";
    let got: Vec<String> = siblings_named(text, "cost", &siblings)
        .into_iter()
        .collect();
    assert_eq!(got, ["live", "modelled", "pricing"]);
}
