//! The on-disk count cache: event content hash → token count, one file per tokenizer.
//!
//! File `counts-v2-<tokenizer>.bin`, little-endian: an 8-byte magic (format version in it),
//! the entry count `n` (u64), `n` keys (u64, strictly ascending), `n` counts (u32, same
//! order), then an xxh3-64 checksum of everything before it. Its size is exactly `24 + 12 n`
//! bytes. A file that fails any check is ignored with a one-line warning and rebuilt; reading
//! never panics. Version 1 files (`counts-v1-*`, interleaved records) are simply not looked at.
//!
//! A warm run is mostly this load plus one lookup per event, so the format is read with one
//! `read` and decoded with no per-entry allocation into a pre-sized map whose hasher is the
//! identity (the keys are already xxh3 hashes, uniformly spread).
//!
//! Saving re-reads the file, merges, writes a temp file in the same directory and renames it
//! over the old one: a reader sees either the old or the new file, never a torn one. Two
//! processes saving at once cannot corrupt the file; the later rename wins, and the entries
//! only the other one added are tokenized again next time.

use super::count::Tokenizer;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"CSTKC\x02\n\0";
/// Bytes per entry: u64 key + u32 count.
const ENTRY: usize = 12;
/// Magic + entry count + checksum.
const OVERHEAD: usize = 24;

/// Hasher for keys that are already 64-bit hashes: passes the key through.
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write_u64(&mut self, k: u64) {
        self.0 = k;
    }
    /// Only `u64` keys are hashed with it; anything else still hashes (FNV-style), never panics.
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
    }
}

/// Map keyed by already-hashed u64 keys.
pub(crate) type KeyMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

pub(crate) fn key_map<V>(capacity: usize) -> KeyMap<V> {
    KeyMap::with_capacity_and_hasher(capacity, BuildHasherDefault::default())
}

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
            .map(|d| d.join(format!("counts-v2-{}.bin", tok.name())))
    }
}

/// The loaded counts of one tokenizer, plus what this run added.
pub(crate) struct CountCache {
    path: Option<PathBuf>,
    map: KeyMap<u32>,
    added: Vec<(u64, u32)>,
}

impl CountCache {
    pub(crate) fn load(opts: &CacheOpts, tok: Tokenizer) -> Self {
        let path = opts.file(tok);
        let map = match path.as_deref() {
            Some(p) => read_file_or_warn(p),
            None => key_map(0),
        };
        CountCache {
            path,
            map,
            added: Vec::new(),
        }
    }

    /// Room for `n` more entries (the misses about to be counted), so inserting never rehashes.
    pub(crate) fn reserve(&mut self, n: usize) {
        self.map.reserve(n);
        self.added.reserve(n);
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
            Ok(bytes) => decode(&bytes, self.map.len()).unwrap_or_else(|_| key_map(0)),
            Err(_) => key_map(0),
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

fn read_file_or_warn(path: &Path) -> KeyMap<u32> {
    match std::fs::read(path) {
        Ok(bytes) => match decode(&bytes, 0) {
            Ok(m) => m,
            Err(why) => {
                eprintln!(
                    "warning: token cache {}: {why}; ignoring it and rebuilding",
                    path.display()
                );
                key_map(0)
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => key_map(0),
        Err(e) => {
            eprintln!(
                "warning: token cache {}: unreadable ({e}); counting without it",
                path.display()
            );
            key_map(0)
        }
    }
}

/// Sorted by key so the same counts always give the same bytes.
fn encode(map: &KeyMap<u32>) -> Vec<u8> {
    let mut entries: Vec<(u64, u32)> = map.iter().map(|(k, v)| (*k, *v)).collect();
    entries.sort_unstable();
    let mut out = Vec::with_capacity(OVERHEAD + entries.len() * ENTRY);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    for (k, _) in &entries {
        out.extend_from_slice(&k.to_le_bytes());
    }
    for (_, v) in &entries {
        out.extend_from_slice(&v.to_le_bytes());
    }
    let sum = xxhash_rust::xxh3::xxh3_64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

fn le_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    u64::from_le_bytes(a)
}

/// The entries of a cache file, in a map with room for `extra` more; every length is
/// checked before any slicing, so no input panics.
fn decode(bytes: &[u8], extra: usize) -> Result<KeyMap<u32>, String> {
    if bytes.len() < OVERHEAD || !bytes.starts_with(MAGIC) {
        return Err("not a compaction-sim count cache, version 2 (bad header)".into());
    }
    let (body, sum) = bytes.split_at(bytes.len() - 8);
    if xxhash_rust::xxh3::xxh3_64(body) != le_u64(sum) {
        return Err("checksum mismatch (corrupted or truncated)".into());
    }
    let n = le_u64(&body[MAGIC.len()..16]);
    let entries = &body[16..];
    if u64::try_from(entries.len()).ok() != n.checked_mul(ENTRY as u64) {
        return Err(format!(
            "{} bytes of entries for {n} entries of {ENTRY} bytes",
            entries.len()
        ));
    }
    let (keys, counts) = entries.split_at(entries.len() / ENTRY * 8);
    let mut map = key_map(keys.len() / 8 + extra);
    let mut prev = None;
    for (k, c) in keys.chunks_exact(8).zip(counts.chunks_exact(4)) {
        let k = le_u64(k);
        // Written strictly ascending: anything else (a duplicate key included) is damage.
        if prev.is_some_and(|p| p >= k) {
            return Err("keys out of order (corrupted)".into());
        }
        prev = Some(k);
        map.insert(k, u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map_of(entries: &[(u64, u32)]) -> KeyMap<u32> {
        let mut m = key_map(0);
        m.extend(entries.iter().copied());
        m
    }

    #[test]
    fn round_trip_and_deterministic_bytes() {
        let m = map_of(&[(3, 30), (1, 10), (u64::MAX, u32::MAX)]);
        let a = encode(&m);
        // Another insertion order, same bytes.
        assert_eq!(
            a,
            encode(&map_of(&[(u64::MAX, u32::MAX), (1, 10), (3, 30)]))
        );
        assert_eq!(decode(&a, 0).unwrap(), m);
        assert_eq!(a.len(), OVERHEAD + 3 * ENTRY);
        // Layout: magic, count, keys ascending, then counts in the same order.
        assert_eq!(&a[..8], MAGIC);
        assert_eq!(le_u64(&a[8..16]), 3);
        assert_eq!(le_u64(&a[16..24]), 1);
        assert_eq!(le_u64(&a[32..40]), u64::MAX);
        assert_eq!(&a[40..44], &10u32.to_le_bytes());
        assert_eq!(&a[48..52], &u32::MAX.to_le_bytes());
        // An empty cache is a valid file too.
        assert!(decode(&encode(&key_map(0)), 0).unwrap().is_empty());
    }

    /// Re-seals `body` with a valid checksum, so the structural checks are reached.
    fn sealed(body: &[u8]) -> Vec<u8> {
        let mut v = body.to_vec();
        v.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(body).to_le_bytes());
        v
    }

    #[test]
    fn corrupted_files_are_rejected_not_panicking() {
        let good = encode(&map_of(&[(7, 70), (8, 80)]));
        let body = &good[..good.len() - 8];
        assert!(decode(&[], 0).is_err());
        assert!(decode(b"garbage garbage garbage", 0).is_err());
        // Every truncation and every single-byte flip is rejected.
        for cut in 0..good.len() {
            assert!(decode(&good[..cut], 0).is_err(), "cut at {cut}");
        }
        for i in 0..good.len() {
            let mut flipped = good.clone();
            flipped[i] ^= 0x01;
            assert!(decode(&flipped, 0).is_err(), "flip at {i}");
        }
        // Checksum-valid but inconsistent: an entry count that does not match the size
        // (including one whose byte size overflows), a truncated entry area, duplicate keys.
        for n in [1u64, 3, u64::MAX, u64::MAX / 12 + 1] {
            let mut b = body.to_vec();
            b[8..16].copy_from_slice(&n.to_le_bytes());
            assert!(decode(&sealed(&b), 0).is_err(), "n = {n}");
        }
        assert!(decode(&sealed(&body[..body.len() - 4]), 0).is_err());
        let mut dup = body.to_vec();
        dup.copy_within(16..24, 24);
        assert!(decode(&sealed(&dup), 0).is_err());
        let mut swapped = body.to_vec();
        swapped[16..32].copy_from_slice(&[body[24..32].to_vec(), body[16..24].to_vec()].concat());
        assert!(decode(&sealed(&swapped), 0).is_err());
        // A version 1 file (other magic) is not read as version 2.
        let mut v1 = body.to_vec();
        v1[5] = 1;
        assert!(decode(&sealed(&v1), 0).is_err());
    }

    #[test]
    fn unreadable_or_corrupt_file_loads_as_empty_and_is_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let opts = CacheOpts::at(dir.path());
        let file = opts.file(Tokenizer::O200k).unwrap();
        let mut a = CountCache::load(&opts, Tokenizer::O200k);
        a.insert(5, 55);
        a.save();
        let mut bytes = std::fs::read(&file).unwrap();
        bytes.truncate(bytes.len() - 3);
        std::fs::write(&file, &bytes).unwrap();
        let mut b = CountCache::load(&opts, Tokenizer::O200k);
        assert_eq!(b.get(5), None);
        b.insert(5, 55);
        b.save();
        assert_eq!(CountCache::load(&opts, Tokenizer::O200k).get(5), Some(55));
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
    fn id_hasher_spreads_u64_keys_and_still_hashes_bytes() {
        let mut m = key_map(0);
        for k in [0u64, 1, u64::MAX, 1 << 63] {
            m.insert(k, k as u32);
        }
        assert_eq!(m.len(), 4);
        assert_eq!(m.get(&(1 << 63)), Some(&0));
        let mut h = IdHasher::default();
        h.write(b"ab");
        let mut g = IdHasher::default();
        g.write(b"ba");
        assert_ne!(h.finish(), g.finish());
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
