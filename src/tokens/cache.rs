//! The on-disk count cache: event content hash → token count, one file per tokenizer.
//!
//! File `counts-v1-<tokenizer>.bin`: an 8-byte magic, then records of (u64 key, u32 count)
//! little-endian, then an xxh3-64 checksum of everything before it. A file that fails any
//! check is ignored with a one-line warning and rebuilt; reading never panics.
//!
//! Saving re-reads the file, merges, writes a temp file in the same directory and renames it
//! over the old one: a reader sees either the old or the new file, never a torn one. Two
//! processes saving at once cannot corrupt the file; the later rename wins, and the entries
//! only the other one added are tokenized again next time.

use super::count::Tokenizer;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"CSTKC\x01\n\0";
const RECORD: usize = 12;

/// Where (and whether) counts are cached.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CacheOpts {
    /// `None`: no cache (nothing read, nothing written).
    pub dir: Option<PathBuf>,
}

impl CacheOpts {
    /// No on-disk cache.
    pub fn disabled() -> Self {
        CacheOpts { dir: None }
    }

    /// Cache in this directory (created when first written).
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        CacheOpts {
            dir: Some(dir.into()),
        }
    }

    /// The directory the command line chooses: `--no-cache` wins, then `--cache-dir`, then env
    /// `COMPACTION_SIM_CACHE`, then `$XDG_CACHE_HOME/compaction-sim`, then
    /// `~/.cache/compaction-sim`; no cache when none of them is known.
    pub fn resolve(cache_dir: Option<PathBuf>, no_cache: bool) -> Self {
        if no_cache {
            return Self::disabled();
        }
        let nonempty = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let dir = cache_dir
            .or_else(|| nonempty("COMPACTION_SIM_CACHE"))
            .or_else(|| nonempty("XDG_CACHE_HOME").map(|d| d.join("compaction-sim")))
            .or_else(|| nonempty("HOME").map(|d| d.join(".cache").join("compaction-sim")));
        CacheOpts { dir }
    }

    /// The cache file of one tokenizer.
    pub fn file(&self, tok: Tokenizer) -> Option<PathBuf> {
        self.dir
            .as_ref()
            .map(|d| d.join(format!("counts-v1-{}.bin", tok.name())))
    }
}

/// The loaded counts of one tokenizer, plus what this run added.
pub(crate) struct CountCache {
    path: Option<PathBuf>,
    map: HashMap<u64, u32>,
    added: Vec<(u64, u32)>,
}

impl CountCache {
    pub(crate) fn load(opts: &CacheOpts, tok: Tokenizer) -> Self {
        let path = opts.file(tok);
        let map = path.as_deref().map(read_file_or_warn).unwrap_or_default();
        CountCache {
            path,
            map,
            added: Vec::new(),
        }
    }

    pub(crate) fn get(&self, key: u64) -> Option<u32> {
        self.map.get(&key).copied()
    }

    pub(crate) fn insert(&mut self, key: u64, count: u32) {
        if self.map.insert(key, count).is_none() {
            self.added.push((key, count));
        }
    }

    /// Writes the merged cache; failures are warnings (the counts are still right).
    pub(crate) fn save(&mut self) {
        let Some(path) = self.path.clone() else {
            return;
        };
        if self.added.is_empty() {
            return;
        }
        if let Err(e) = self.save_to(&path) {
            eprintln!("warning: token cache {}: not saved: {e}", path.display());
        }
    }

    fn save_to(&mut self, path: &Path) -> std::io::Result<()> {
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        // Merge what another process may have saved since we loaded.
        let mut merged = match std::fs::read(path) {
            Ok(bytes) => decode(&bytes).unwrap_or_default(),
            Err(_) => HashMap::new(),
        };
        merged.extend(self.map.iter().map(|(k, v)| (*k, *v)));
        let bytes = encode(&merged);
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        tmp.write_all(&bytes)?;
        tmp.as_file().sync_all()?;
        tmp.persist(path).map_err(|e| e.error)?;
        self.added.clear();
        Ok(())
    }
}

fn read_file_or_warn(path: &Path) -> HashMap<u64, u32> {
    match std::fs::read(path) {
        Ok(bytes) => match decode(&bytes) {
            Ok(m) => m,
            Err(why) => {
                eprintln!(
                    "warning: token cache {}: {why}; ignoring it and rebuilding",
                    path.display()
                );
                HashMap::new()
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => HashMap::new(),
        Err(e) => {
            eprintln!(
                "warning: token cache {}: unreadable ({e}); counting without it",
                path.display()
            );
            HashMap::new()
        }
    }
}

/// Sorted by key so the same counts always give the same bytes.
fn encode(map: &HashMap<u64, u32>) -> Vec<u8> {
    let mut entries: Vec<(u64, u32)> = map.iter().map(|(k, v)| (*k, *v)).collect();
    entries.sort_unstable();
    let mut out = Vec::with_capacity(MAGIC.len() + entries.len() * RECORD + 8);
    out.extend_from_slice(MAGIC);
    for (k, v) in entries {
        out.extend_from_slice(&k.to_le_bytes());
        out.extend_from_slice(&v.to_le_bytes());
    }
    let sum = xxhash_rust::xxh3::xxh3_64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

fn decode(bytes: &[u8]) -> Result<HashMap<u64, u32>, String> {
    if bytes.len() < MAGIC.len() + 8 || !bytes.starts_with(MAGIC) {
        return Err("not a compaction-sim count cache (bad header)".into());
    }
    let (body, sum) = bytes.split_at(bytes.len() - 8);
    let mut sum_bytes = [0u8; 8];
    sum_bytes.copy_from_slice(sum);
    if xxhash_rust::xxh3::xxh3_64(body) != u64::from_le_bytes(sum_bytes) {
        return Err("checksum mismatch (corrupted or truncated)".into());
    }
    let records = &body[MAGIC.len()..];
    if records.len() % RECORD != 0 {
        return Err(format!(
            "record area of {} bytes is not a multiple of {RECORD}",
            records.len()
        ));
    }
    let mut map = HashMap::with_capacity(records.len() / RECORD);
    for r in records.chunks_exact(RECORD) {
        let mut k = [0u8; 8];
        let mut v = [0u8; 4];
        k.copy_from_slice(&r[..8]);
        v.copy_from_slice(&r[8..]);
        map.insert(u64::from_le_bytes(k), u32::from_le_bytes(v));
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_deterministic_bytes() {
        let mut m = HashMap::new();
        m.insert(3u64, 30u32);
        m.insert(1, 10);
        m.insert(u64::MAX, u32::MAX);
        let a = encode(&m);
        assert_eq!(a, encode(&m.clone()));
        assert_eq!(decode(&a).unwrap(), m);
        assert_eq!(a.len(), 8 + 3 * RECORD + 8);
    }

    #[test]
    fn corrupted_files_are_rejected_not_panicking() {
        let mut m = HashMap::new();
        m.insert(7u64, 70u32);
        let good = encode(&m);
        assert!(decode(&[]).is_err());
        assert!(decode(b"garbage garbage garbage").is_err());
        assert!(decode(&good[..good.len() - 1]).is_err());
        let mut flipped = good.clone();
        flipped[10] ^= 0xff;
        assert!(decode(&flipped).is_err());
    }

    #[test]
    fn save_merges_and_load_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let opts = CacheOpts::at(dir.path().join("sub"));
        let mut a = CountCache::load(&opts, Tokenizer::O200k);
        a.insert(1, 11);
        // A second process loaded before `a` saved and adds another key.
        let mut b = CountCache::load(&opts, Tokenizer::O200k);
        b.insert(2, 22);
        a.save();
        b.save();
        let c = CountCache::load(&opts, Tokenizer::O200k);
        assert_eq!(c.get(1), Some(11));
        assert_eq!(c.get(2), Some(22));
        // Another tokenizer has its own file.
        assert_eq!(CountCache::load(&opts, Tokenizer::Cl100k).get(1), None);
    }

    #[test]
    fn resolve_prefers_flags() {
        assert_eq!(
            CacheOpts::resolve(Some("/x".into()), true),
            CacheOpts::disabled()
        );
        assert_eq!(
            CacheOpts::resolve(Some("/x".into()), false),
            CacheOpts::at("/x")
        );
    }
}
