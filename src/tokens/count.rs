//! Counting what the model sees of each event, once per distinct content, in parallel.
//!
//! What is counted per part (the text the model reads):
//! - text and thought: the text;
//! - tool call: the tool name + the JSON of its args (a string value is counted as the string
//!   itself, since that is what the model wrote; objects as compact JSON, where Python's
//!   `NaN` / `Infinity` / big integers appear as their bare literals, as `json.dumps` writes);
//! - tool response: the tool name + the JSON of the response (same rule for strings);
//! - attachment: its text when recorded; else an image counts [`IMAGE_TOKENS`], anything
//!   else `size_bytes / 4` tokens (no text to count; a token per 4 bytes is the usual rule
//!   of thumb for English-like content).
//!
//! Each piece is tokenized on its own and the counts are summed, so an event's size is the sum
//! of its parts' sizes (API messages carry names and arguments as separate fields too).
//! `adk-chars` counts ADK's characters instead (see [`adk_chars_of_parts`]) and returns
//! `floor(chars / 4)` per event; it is never read from or written to the disk cache.

use super::cache::{key_map, CacheOpts, CountCache, KeyMap};
use super::prefetch_lines;
pub use super::tokenizer::Tokenizer; // moved to `tokens::tokenizer`; kept here for old paths
use crate::transcript::pyjson::{tagged, untag_json_text};
use crate::transcript::{Part, Session};
use rayon::prelude::*;
use serde_json::Value;
use std::borrow::Cow;

/// How many events were tokenized in this run versus served from the on-disk cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CountStats {
    /// Events counted (all sessions).
    pub events: u64,
    /// Distinct event contents actually tokenized in this run (cache misses, deduplicated).
    pub tokenized: u64,
    /// Events whose count came from the on-disk cache.
    pub cached: u64,
}

/// Counts `text` with `tok` (summary texts, summarizer prompts). Not cached: callers count
/// short, generated texts.
pub fn count_text(tok: Tokenizer, text: &str) -> u32 {
    match tok {
        Tokenizer::AdkChars => saturate(text.chars().count() / 4),
        Tokenizer::O200k => fast_count(bpe_openai::o200k_base(), tok, text),
        Tokenizer::Cl100k => fast_count(bpe_openai::cl100k_base(), tok, text),
    }
}

/// The reference count: tiktoken-rs, the same BPE core as Python tiktoken. The hot path
/// ([`count_text`]) uses bpe-openai, which a test proves gives the same counts over the
/// whole corpus.
pub fn count_text_reference(tok: Tokenizer, text: &str) -> u32 {
    match tok {
        Tokenizer::AdkChars => saturate(text.chars().count() / 4),
        Tokenizer::O200k => bpe_count(tiktoken_rs::o200k_base_singleton(), text),
        Tokenizer::Cl100k => bpe_count(tiktoken_rs::cl100k_base_singleton(), text),
    }
}

/// bpe-openai's count (several times faster than tiktoken's encode); should it ever panic
/// on odd input, the reference counter answers instead.
fn fast_count(fast: &bpe_openai::Tokenizer, tok: Tokenizer, text: &str) -> u32 {
    if text.is_empty() {
        return 0;
    }
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fast.count(text))) {
        Ok(n) => saturate(n),
        Err(_) => count_text_reference(tok, text),
    }
}

/// Per session, per event token counts (`result[s][e]` for `sessions[s].events[e]`).
pub fn count_sessions(
    sessions: &[Session],
    tok: Tokenizer,
    cache: &CacheOpts,
) -> anyhow::Result<Vec<Vec<u32>>> {
    Ok(count_sessions_with_stats(sessions, tok, cache)?.0)
}

/// [`count_sessions`], plus how many events were tokenized versus read from the cache.
pub fn count_sessions_with_stats(
    sessions: &[Session],
    tok: Tokenizer,
    cache: &CacheOpts,
) -> anyhow::Result<(Vec<Vec<u32>>, CountStats)> {
    let mut c = Counter::new(tok, cache);
    let r = c.count(sessions);
    c.save();
    Ok(r)
}

/// Counts sessions a batch at a time against one loaded cache (a sweep counts each window
/// of sessions as it replays them), saving what was added once, at [`Counter::save`].
pub struct Counter {
    tok: Tokenizer,
    disk: CountCache,
}

impl Counter {
    pub fn new(tok: Tokenizer, cache: &CacheOpts) -> Counter {
        // adk-chars costs no more than hashing and its rules live in `tokens::adk`, which may
        // change without touching the key scheme here: compute it fresh, never from disk.
        let disk = if tok == Tokenizer::AdkChars {
            CountCache::load(&CacheOpts::disabled(), tok)
        } else {
            CountCache::load(cache, tok)
        };
        Counter { tok, disk }
    }

    pub fn tokenizer(&self) -> Tokenizer {
        self.tok
    }

    /// Write the counts added since loading to the cache file (failures are warnings).
    pub fn save(&mut self) {
        self.disk.save();
    }

    /// Per session, per event token counts of `sessions`.
    pub fn count(&mut self, sessions: &[Session]) -> (Vec<Vec<u32>>, CountStats) {
        let refs: Vec<&Session> = sessions.iter().collect();
        count_with(&refs, self.tok, &mut self.disk)
    }

    /// [`Counter::count`] of sessions held elsewhere.
    pub fn count_refs(&mut self, sessions: &[&Session]) -> (Vec<Vec<u32>>, CountStats) {
        count_with(sessions, self.tok, &mut self.disk)
    }
}

fn count_with(
    sessions: &[&Session],
    tok: Tokenizer,
    disk: &mut CountCache,
) -> (Vec<Vec<u32>>, CountStats) {
    // One flat list of every event's parts (session after session), so rayon balances long
    // and short sessions alike.
    let mut flat: Vec<&[Part]> = Vec::with_capacity(sessions.iter().map(|s| s.events.len()).sum());
    flat.extend(
        sessions
            .iter()
            .flat_map(|sess| sess.events.iter().map(|e| e.parts.as_slice())),
    );
    // Every event's key, every run: the cache is only as right as its keys. Chunks of events
    // keep rayon's bookkeeping small against work of a few microseconds per event.
    let mut keys: Vec<u64> = vec![0; flat.len()];
    keys.par_chunks_mut(KEY_CHUNK)
        .zip(flat.par_chunks(KEY_CHUNK))
        .for_each(|(out, events)| keys_into(events, out));

    // One lookup per event: a hit is its count; a miss is filled in below. Distinct missing
    // contents are tokenized once each.
    let mut counts: Vec<u32> = Vec::with_capacity(keys.len());
    let mut missing: Vec<usize> = Vec::new();
    let mut todo: Vec<usize> = Vec::new();
    let mut seen: KeyMap<()> = key_map(0);
    for (i, &k) in keys.iter().enumerate() {
        match disk.get(k) {
            Some(n) => counts.push(n),
            None => {
                counts.push(0);
                missing.push(i);
                if seen.insert(k, ()).is_none() {
                    todo.push(i);
                }
            }
        }
    }
    let cached = (keys.len() - missing.len()) as u64;
    let fresh: Vec<(u64, u32)> = todo
        .par_iter()
        .map(|&i| (keys[i], count_parts(tok, flat[i])))
        .collect();
    let tokenized = fresh.len() as u64;
    if !fresh.is_empty() {
        disk.reserve(fresh.len());
        for &(k, n) in &fresh {
            disk.insert(k, n);
        }
        for &i in &missing {
            // Every missing key was just inserted.
            counts[i] = disk.get(keys[i]).unwrap_or(0);
        }
    }

    let mut out: Vec<Vec<u32>> = Vec::with_capacity(sessions.len());
    let mut rest = counts.as_slice();
    for s in sessions {
        let (head, tail) = rest.split_at(s.events.len().min(rest.len()));
        out.push(head.to_vec());
        rest = tail;
    }
    let stats = CountStats {
        events: keys.len() as u64,
        tokenized,
        cached,
    };
    (out, stats)
}

/// Events per rayon task when computing keys.
const KEY_CHUNK: usize = 64;

/// One thing the model reads: a string to tokenize, or a size already known in tokens.
enum Piece<'a> {
    Text(Cow<'a, str>),
    Tokens(u64),
}

/// Bumped whenever [`pieces`] changes what is counted (or [`keys_into`] how keys are built),
/// so stale cache entries never match.
const SCHEME: &[u8] = b"compaction-sim pieces v5 keys v2";

/// Tokens of an image whose pixels are unknown: OpenAI's high-detail price of a 1024×1024
/// image (85 + 4 tiles × 170). Image bytes say nothing about tokens (a PNG of 89 kB would be
/// 22k tokens by bytes/4, while the Codex rollouts in the corpus show under 1k).
pub const IMAGE_TOKENS: u64 = 765;

/// An attachment known only by type and size: images at [`IMAGE_TOKENS`], anything else at
/// `size_bytes / 4` (a token per 4 bytes, the usual rule of thumb for text).
fn attachment_tokens(mime_type: Option<&str>, size_bytes: Option<u64>) -> u64 {
    // Case-insensitive `image/` prefix, without allocating (this runs for every key).
    if mime_type.is_some_and(|m| m.get(..6).is_some_and(|p| p.eq_ignore_ascii_case("image/"))) {
        IMAGE_TOKENS
    } else {
        size_bytes.unwrap_or(0) / 4
    }
}

/// The text a payload is counted as: a string as itself, other JSON as compact JSON, with
/// Python's NaN / Infinity / big integers (`pyjson` tags) as their bare literals.
pub fn json_text(v: &Value) -> Option<Cow<'_, str>> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(match tagged(s) {
            Some(n) => Cow::Borrowed(n.json()),
            None => Cow::Borrowed(s.as_str()),
        }),
        other => {
            let t = other.to_string();
            Some(Cow::Owned(match untag_json_text(&t) {
                Cow::Borrowed(_) => t,
                Cow::Owned(u) => u,
            }))
        }
    }
}

fn pieces(parts: &[Part]) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    for p in parts {
        match p {
            Part::Text { text } | Part::Thought { text } => {
                out.push(Piece::Text(Cow::Borrowed(text)))
            }
            Part::ToolCall { name, args, .. } => {
                out.push(Piece::Text(Cow::Borrowed(name)));
                if let Some(t) = json_text(args) {
                    out.push(Piece::Text(t));
                }
            }
            Part::ToolResponse { name, response, .. } => {
                out.push(Piece::Text(Cow::Borrowed(name)));
                if let Some(t) = json_text(response) {
                    out.push(Piece::Text(t));
                }
            }
            Part::Attachment { text: Some(t), .. } => out.push(Piece::Text(Cow::Borrowed(t))),
            Part::Attachment {
                text: None,
                size_bytes,
                mime_type,
                ..
            } => out.push(Piece::Tokens(attachment_tokens(
                mime_type.as_deref(),
                *size_bytes,
            ))),
        }
    }
    out
}

/// The exact strings counted for one event, in order (what a BPE counter tokenizes, each on
/// its own). Attachments known only by size have no text and are left out. Public so a
/// benchmark can hand other tokenizers the very same texts.
pub fn counted_texts(parts: &[Part]) -> Vec<Cow<'_, str>> {
    pieces(parts)
        .into_iter()
        .filter_map(|p| match p {
            Piece::Text(t) => Some(t),
            Piece::Tokens(_) => None,
        })
        .collect()
}

/// One event's key (see [`keys_into`]).
#[cfg(test)]
fn content_key(parts: &[Part]) -> u64 {
    let mut key = [0u64];
    keys_into(&[parts], &mut key);
    key[0]
}

/// How many events ahead [`keys_into`] fetches an event's strings (and, twice as far, its
/// part array, which must arrive before its strings can be found). 1 to 3 measured alike.
const AHEAD: usize = 2;

/// The cache key of each event into `out` (same length): xxh3 of exactly what is counted (so
/// two events with the same content share one entry, and a change of counting rules changes
/// every key). It is built from the parts' structure without building the counted strings,
/// and long strings enter it as their own xxh3 digest, hashed where they lie: a warm run
/// reads every byte of text once and copies little of it (it is mostly this function).
///
/// The text is scattered over the heap, so a warm run waits on memory more than it hashes:
/// while one event is hashed, the strings of the events just ahead and the part arrays of
/// those after them are already being fetched (about a quarter less CPU time per warm run
/// over the corpus).
fn keys_into(events: &[&[Part]], out: &mut [u64]) {
    let mut buf = Vec::new();
    for (i, (parts, key)) in events.iter().zip(out.iter_mut()).enumerate() {
        if let Some(later) = events.get(i + 2 * AHEAD) {
            prefetch_lines(later.as_ptr(), 2);
        }
        if let Some(next) = events.get(i + AHEAD) {
            next.iter().for_each(prefetch_part);
        }
        buf.clear();
        let mut h = KeyHasher { h: Buf(&mut buf) };
        key_bytes(&mut h, parts);
        *key = xxhash_rust::xxh3::xxh3_64(&buf);
    }
}

/// Starts fetching the strings (or first JSON entry) a part's key will read.
fn prefetch_part(p: &Part) {
    match p {
        Part::Text { text } | Part::Thought { text } => prefetch_str(text),
        Part::ToolCall { name, args: v, .. }
        | Part::ToolResponse {
            name, response: v, ..
        } => {
            prefetch_lines(name.as_ptr(), 1);
            prefetch_value(v);
        }
        Part::Attachment { text: Some(t), .. } => prefetch_str(t),
        Part::Attachment { .. } => {}
    }
}

/// The start of a string: its first 512 bytes at most (the hardware streams the rest once
/// hashing reaches it).
fn prefetch_str(s: &str) {
    prefetch_lines(s.as_ptr(), s.len().div_ceil(64).min(8));
}

fn prefetch_value(v: &Value) {
    match v {
        Value::String(s) => prefetch_str(s),
        Value::Array(a) => prefetch_lines(a.as_ptr(), 2),
        Value::Object(o) => {
            if let Some((k, _)) = o.iter().next() {
                prefetch_lines(k as *const String, 2);
            }
        }
        _ => {}
    }
}

/// Appends bytes to the key buffer (same call shape as a streaming hasher).
struct Buf<'a>(&'a mut Vec<u8>);

impl Buf<'_> {
    fn update(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }
}

fn key_bytes(h: &mut KeyHasher<'_>, parts: &[Part]) {
    h.h.update(SCHEME);
    for p in parts {
        // Part kinds are hashed too: ADK's rules depend on which parts carry names versus
        // text, and on whether a payload was a JSON string or the same text as structured JSON.
        match p {
            Part::Text { text } => h.text(b't', text),
            Part::Thought { text } => h.text(b'h', text),
            Part::ToolCall { name, args, .. } => {
                h.text(b'c', name);
                h.json(args);
            }
            Part::ToolResponse { name, response, .. } => {
                h.text(b'r', name);
                h.json(response);
            }
            Part::Attachment { text: Some(t), .. } => h.text(b'a', t),
            Part::Attachment {
                text: None,
                size_bytes,
                mime_type,
                ..
            } => {
                h.h.update(b"A");
                h.h.update(&attachment_tokens(mime_type.as_deref(), *size_bytes).to_le_bytes());
            }
        }
    }
}

/// Strings of this many bytes or more enter a key as their xxh3 digest, not their bytes.
const INLINE_MAX: usize = 64;

/// The parts' structure as key bytes: what is counted, without building the counted strings.
struct KeyHasher<'a> {
    h: Buf<'a>,
}

impl KeyHasher<'_> {
    /// Tag, length, then the bytes, or their xxh3 digest from [`INLINE_MAX`] bytes on
    /// (the length says which): unambiguous whatever the strings hold.
    fn text(&mut self, tag: u8, s: &str) {
        self.h.update(&[tag]);
        self.h.update(&(s.len() as u64).to_le_bytes());
        if s.len() < INLINE_MAX {
            self.h.update(s.as_bytes());
        } else {
            self.h
                .update(&xxhash_rust::xxh3::xxh3_64(s.as_bytes()).to_le_bytes());
        }
    }

    /// The same text [`json_text`] counts: a string as itself, other JSON by its structure
    /// (equal structure means equal compact JSON text, so equal keys mean equal counts),
    /// hashed without serialising it.
    fn json(&mut self, v: &Value) {
        match v {
            Value::Null => self.h.update(b"n"),
            Value::String(s) => self.text(b's', s),
            other => {
                self.h.update(b"j");
                self.value(other);
            }
        }
    }

    fn value(&mut self, v: &Value) {
        match v {
            Value::Null => self.h.update(b"N"),
            Value::Bool(b) => self.h.update(if *b { b"T" } else { b"F" }),
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    self.h.update(b"i");
                    self.h.update(&i.to_le_bytes());
                } else if let Some(u) = n.as_u64() {
                    self.h.update(b"u");
                    self.h.update(&u.to_le_bytes());
                } else {
                    self.h.update(b"f");
                    self.h
                        .update(&n.as_f64().unwrap_or(f64::NAN).to_bits().to_le_bytes());
                }
            }
            Value::String(s) => self.text(b'S', s),
            Value::Array(a) => {
                self.h.update(b"[");
                self.h.update(&(a.len() as u64).to_le_bytes());
                a.iter().for_each(prefetch_value);
                for x in a {
                    self.value(x);
                }
            }
            Value::Object(o) => {
                self.h.update(b"{");
                self.h.update(&(o.len() as u64).to_le_bytes());
                // Fetch every key and string value at once, rather than one miss at a time.
                for (k, x) in o {
                    prefetch_lines(k.as_ptr(), 1);
                    prefetch_value(x);
                }
                for (k, x) in o {
                    self.text(b'K', k);
                    self.value(x);
                }
            }
        }
    }
}

/// Counts one event's parts (no cache).
pub fn count_parts(tok: Tokenizer, parts: &[Part]) -> u32 {
    if tok == Tokenizer::AdkChars {
        return saturate((adk_chars_of_parts(parts) / 4) as usize);
    }
    let mut n: u64 = 0;
    for p in pieces(parts) {
        // Saturating: an attachment's recorded size is the file's word, not a bounded count.
        n = n.saturating_add(match p {
            Piece::Text(t) => count_text(tok, &t) as u64,
            Piece::Tokens(k) => k,
        });
    }
    saturate(n.min(u32::MAX as u64) as usize)
}

/// ADK's `_count_chars_in_content` over one event's parts (adk-compaction.md §5), with the
/// engine's character rules (`tokens::adk`), so `inspect --tokenizer adk-chars` and the replay
/// agree to the character.
pub fn adk_chars_of_parts(parts: &[Part]) -> u64 {
    parts.iter().map(super::adk::part_adk_chars).sum()
}

fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// BPE count. tiktoken-rs unwraps regex errors (fancy-regex backtrack limits on pathological
/// input), so a panic is caught and the text counted in smaller pieces, then by chars/4.
fn bpe_count(bpe: &tiktoken_rs::CoreBPE, text: &str) -> u32 {
    if text.is_empty() {
        return 0;
    }
    let whole = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        bpe.encode_ordinary(text).len()
    }));
    match whole {
        Ok(n) => saturate(n),
        Err(_) => {
            let mut n = 0usize;
            for chunk in char_chunks(text, 4096) {
                n += std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    bpe.encode_ordinary(chunk).len()
                }))
                .unwrap_or_else(|_| chunk.chars().count() / 4);
            }
            saturate(n)
        }
    }
}

fn char_chunks(text: &str, max_bytes: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + max_bytes).min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        if end == start {
            // A single char wider than max_bytes cannot happen (max 4 bytes), but never loop.
            end = text.len();
        }
        out.push(&text[start..end]);
        start = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn known_tiktoken_counts() {
        // Reference values from Python tiktoken: "hello world" is 2 tokens in both encodings;
        // "tiktoken is great!" is 6 tokens in cl100k_base (the tiktoken README example).
        assert_eq!(count_text(Tokenizer::O200k, "hello world"), 2);
        assert_eq!(count_text(Tokenizer::Cl100k, "hello world"), 2);
        assert_eq!(count_text(Tokenizer::Cl100k, "tiktoken is great!"), 6);
        assert_eq!(count_text(Tokenizer::O200k, ""), 0);
        // Special-token text is ordinary text for counting, never an error.
        assert!(count_text(Tokenizer::O200k, "<|endoftext|>") > 1);
    }

    #[test]
    fn adk_chars_is_floor_of_code_points() {
        assert_eq!(count_text(Tokenizer::AdkChars, "abcdefg"), 1);
        assert_eq!(count_text(Tokenizer::AdkChars, "ééééé ééé"), 2); // 9 code points
    }

    #[test]
    fn adk_json_lengths_follow_python() {
        use super::super::adk::py_json_dumps_len;
        // Lengths of Python's json.dumps(...) output, worked out by hand:
        // {"a": 1, "b": [true, null]} -> 27; "é" -> "\u00e9" quoted: 8;
        // "😀" -> surrogate pair quoted: 14; [1.5, 100.0] -> 12.
        assert_eq!(py_json_dumps_len(&json!({"a": 1, "b": [true, null]})), 27);
        assert_eq!(py_json_dumps_len(&json!("é")), 8);
        assert_eq!(py_json_dumps_len(&json!("😀")), 14);
        assert_eq!(py_json_dumps_len(&json!([1.5, 100.0])), 12);
    }

    /// A tokenizer reads NaN / Infinity / big integers as the literals Python wrote, not as
    /// tagged strings or floats.
    #[test]
    fn python_only_numbers_are_counted_as_their_literals() {
        let raw =
            r#"{"r": {"x": NaN, "y": [-Infinity, 123456789012345678901234567890]}, "s": Infinity}"#;
        let t = crate::transcript::pyjson::normalize("t", raw).unwrap();
        let v: Value = serde_json::from_str(&t).unwrap();
        let parts = vec![
            Part::ToolResponse {
                id: None,
                name: "f".into(),
                response: v["r"].clone(),
            },
            Part::ToolCall {
                id: None,
                name: "g".into(),
                args: v["s"].clone(),
            },
        ];
        let texts = counted_texts(&parts);
        assert_eq!(
            texts,
            vec![
                "f",
                r#"{"x":NaN,"y":[-Infinity,123456789012345678901234567890]}"#,
                "g",
                "Infinity"
            ]
        );
        let direct: u32 = texts.iter().map(|t| count_text(Tokenizer::O200k, t)).sum();
        assert_eq!(count_parts(Tokenizer::O200k, &parts), direct);
    }

    #[test]
    fn adk_chars_rules() {
        let parts = vec![
            Part::Text {
                text: "hi there".into(),
            },
            Part::ToolCall {
                id: None,
                name: "get".into(),
                args: json!({"q": "x"}),
            },
            Part::ToolResponse {
                id: None,
                name: "get".into(),
                response: json!({}),
            },
        ];
        // 8 + 3 + len('{"q": "x"}')=10 + 3 + 0 (empty response skipped)
        assert_eq!(adk_chars_of_parts(&parts), 24);
        assert_eq!(count_parts(Tokenizer::AdkChars, &parts), 6);
    }

    #[test]
    fn event_count_is_sum_of_pieces() {
        let parts = vec![
            Part::Text {
                text: "hello world".into(),
            },
            Part::ToolCall {
                id: None,
                name: "search".into(),
                args: json!({"query": "hello world"}),
            },
            Part::Attachment {
                name: "a.png".into(),
                mime_type: None,
                text: None,
                size_bytes: Some(4000),
            },
        ];
        let tok = Tokenizer::O200k;
        let expected = count_text(tok, "hello world")
            + count_text(tok, "search")
            + count_text(tok, r#"{"query":"hello world"}"#)
            + 1000;
        assert_eq!(count_parts(tok, &parts), expected);
        // An image known only by size is priced as an image, not by its bytes.
        let img = vec![Part::Attachment {
            name: "shot".into(),
            mime_type: Some("image/png".into()),
            text: None,
            size_bytes: Some(88_907),
        }];
        assert_eq!(count_parts(tok, &img), 765);
        // A string response is counted as the string itself, not its quoted JSON.
        let s = vec![Part::ToolResponse {
            id: None,
            name: "sh".into(),
            response: json!("a \"b\"\n"),
        }];
        assert_eq!(
            count_parts(tok, &s),
            count_text(tok, "sh") + count_text(tok, "a \"b\"\n")
        );
    }

    #[test]
    fn keys_follow_content_not_metadata() {
        let a = vec![Part::Text {
            text: "same".into(),
        }];
        let b = vec![Part::Thought {
            text: "same".into(),
        }];
        assert_ne!(content_key(&a), content_key(&b));
        assert_eq!(
            content_key(&a),
            content_key(&[Part::Text {
                text: "same".into()
            }])
        );
        assert_ne!(
            content_key(&a),
            content_key(&[Part::Text {
                text: "same!".into()
            }])
        );
        // Long strings enter as digests: still every byte counts, at either end, in text
        // and in JSON string values alike.
        let text = |t: String| content_key(&[Part::Text { text: t }]);
        let call = |t: String| {
            content_key(&[Part::ToolCall {
                id: None,
                name: "f".into(),
                args: json!({ "k": t }),
            }])
        };
        let long = "x".repeat(200);
        for key in [text, call] {
            let base = key(long.clone());
            assert_eq!(base, key(long.clone()));
            assert_ne!(base, key(format!("{long}y")));
            assert_ne!(base, key(format!("y{}", &long[1..])));
            assert_ne!(base, key(format!("{}y", &long[1..])));
            // Either side of the inline limit.
            assert_ne!(key("x".repeat(INLINE_MAX - 1)), key("x".repeat(INLINE_MAX)));
        }
    }

    fn session(texts: &[&str]) -> Session {
        let events = texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut e = crate::transcript::Event::new(
                    "user",
                    crate::transcript::Role::User,
                    "inv",
                    i as f64,
                );
                e.parts.push(Part::Text {
                    text: t.to_string(),
                });
                e.parts.push(Part::ToolCall {
                    id: None,
                    name: "f".into(),
                    args: json!({"q": t.repeat(40), "ok": true}),
                });
                e
            })
            .collect();
        Session::new("s", "test", crate::transcript::Format::Adk, events)
    }

    /// Whatever happens to the cache file (truncated, garbled, emptied), the counts are the
    /// uncached counts: a damaged file is ignored (and rewritten), never trusted.
    #[test]
    fn damaged_cache_never_changes_counts() {
        let sessions = vec![
            session(&[
                "hello there",
                "a longer text that is more than sixty-four bytes long, so it is hashed apart",
                "hello there",
            ]),
            session(&["", "x"]),
        ];
        let tok = Tokenizer::O200k;
        let (truth, _) = count_sessions_with_stats(&sessions, tok, &CacheOpts::disabled()).unwrap();
        let expect: Vec<Vec<u32>> = sessions
            .iter()
            .map(|s| {
                s.events
                    .iter()
                    .map(|e| count_parts(tok, &e.parts))
                    .collect()
            })
            .collect();
        assert_eq!(truth, expect);
        let dir = tempfile::tempdir().unwrap();
        let opts = CacheOpts::at(dir.path());
        let file = opts.file(tok).unwrap();
        let (first, st) = count_sessions_with_stats(&sessions, tok, &opts).unwrap();
        assert_eq!((first, st.tokenized, st.cached), (truth.clone(), 4, 0));
        let good = std::fs::read(&file).unwrap();
        let (warm, st) = count_sessions_with_stats(&sessions, tok, &opts).unwrap();
        assert_eq!((warm, st.tokenized, st.cached), (truth.clone(), 0, 5));
        let mut flipped = good.clone();
        flipped[30] ^= 0x40;
        for bad in [
            good[..good.len() - 5].to_vec(),
            good[..20].to_vec(),
            flipped,
            Vec::new(),
        ] {
            std::fs::write(&file, &bad).unwrap();
            let (counts, st) = count_sessions_with_stats(&sessions, tok, &opts).unwrap();
            assert_eq!((counts, st.tokenized), (truth.clone(), 4));
            // Rebuilt whole.
            assert_eq!(std::fs::read(&file).unwrap(), good);
        }
    }

    #[test]
    fn pathological_whitespace_never_panics() {
        let s = " ".repeat(200_000) + "x";
        assert!(count_text(Tokenizer::O200k, &s) >= 1);
    }

    #[test]
    fn counted_texts_are_what_count_parts_counts() {
        let parts = vec![
            Part::Text {
                text: "hello there".into(),
            },
            Part::ToolCall {
                id: None,
                name: "get".into(),
                args: json!({"q": "x", "n": 2}),
            },
            Part::ToolResponse {
                id: None,
                name: "get".into(),
                response: json!("plain result"),
            },
            Part::Attachment {
                name: "a.png".into(),
                mime_type: Some("image/png".into()),
                text: None,
                size_bytes: Some(9),
            },
        ];
        let texts = counted_texts(&parts);
        // String payloads are counted as the string itself, objects as compact JSON; an
        // attachment known only by size has no text.
        assert_eq!(
            texts,
            vec![
                "hello there",
                "get",
                r#"{"q":"x","n":2}"#,
                "get",
                "plain result"
            ]
        );
        let by_text: u32 = texts.iter().map(|t| count_text(Tokenizer::O200k, t)).sum();
        assert_eq!(
            count_parts(Tokenizer::O200k, &parts),
            by_text + IMAGE_TOKENS as u32
        );
    }

    /// The fast counter must agree with tiktoken (the reference, equal to Python tiktoken)
    /// on every string the tool counts over the recorded corpus, for both tokenizers.
    #[test]
    fn fast_counter_equals_tiktoken_over_the_corpus() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus");
        assert!(
            std::path::Path::new(root).join("stats.json").is_file(),
            "the recorded corpus is missing at {root}: this test needs ../shared/corpus"
        );
        let loaded = crate::transcript::load_paths(&[root.to_string()], None);
        assert!(
            loaded.sessions.len() > 400,
            "{} sessions",
            loaded.sessions.len()
        );
        let texts: Vec<String> = loaded
            .sessions
            .iter()
            .flat_map(|s| s.events.iter())
            .flat_map(|e| counted_texts(&e.parts).into_iter().map(|t| t.into_owned()))
            .collect();
        for tok in [Tokenizer::O200k, Tokenizer::Cl100k] {
            let diffs: Vec<String> = texts
                .par_iter()
                .filter_map(|t| {
                    let (a, b) = (count_text(tok, t), count_text_reference(tok, t));
                    (a != b).then(|| {
                        format!("{a} vs {b}: {:?}", t.chars().take(80).collect::<String>())
                    })
                })
                .collect();
            assert!(
                diffs.is_empty(),
                "{tok}: {} strings differ, e.g. {:?}",
                diffs.len(),
                diffs.first()
            );
        }
    }
}
