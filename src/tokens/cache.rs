//! The on-disk count cache: event content hash → token count, one file per tokenizer.
//!
//! File `counts-v2-<tokenizer>.bin`, little-endian: an 8-byte magic (format version in it),
//! the entry count `n` (u64), `n` keys (u64, strictly ascending), `n` counts (u32, same
//! order), then an xxh3-64 checksum of everything before it. Its size is exactly `24 + 12 n`
//! bytes. A file that fails any check is ignored with a one-line warning and rebuilt; reading
//! never panics. Version 1 files (`counts-v1-*`, interleaved records) are simply not looked at.
//!
//! A warm run is this load plus one lookup per event (and the keys, see `count`), so the file
//! is read with one `read` and used as it is: its sorted keys and counts are copied into two
//! arrays, plus an index by the keys' top bits built in one pass. The keys are xxh3 hashes,
//! spread evenly, so a bucket holds about one entry: no hashing, no per-entry allocation.
//!
//! Saving re-reads the file, merges, writes a temp file in the same directory and renames it
//! over the old one: a reader sees either the old or the new file, never a torn one. Two
//! processes saving at once cannot corrupt the file; the later rename wins, and the entries
//! only the other one added are tokenized again next time.

use super::tokenizer::Tokenizer;
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
    /// A 128-bit hash key: its low half.
    fn write_u128(&mut self, k: u128) {
        self.0 = k as u64;
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

/// Map keyed by already-hashed u128 keys (a text's xxh3-128).
pub(crate) type Key128Map<V> = HashMap<u128, V, BuildHasherDefault<IdHasher>>;

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
    stored: Sorted,
    added: KeyMap<u32>,
    unsaved: bool,
}

impl CountCache {
    pub(crate) fn load(opts: &CacheOpts, tok: Tokenizer) -> Self {
        let path = opts.file(tok);
        let stored = path.as_deref().map(read_file_or_warn).unwrap_or_default();
        CountCache {
            path,
            stored,
            added: key_map(0),
            unsaved: false,
        }
    }

    /// Room for `n` more entries (the misses about to be counted), so inserting never rehashes.
    pub(crate) fn reserve(&mut self, n: usize) {
        self.added.reserve(n);
    }

    pub(crate) fn get(&self, key: u64) -> Option<u32> {
        self.stored
            .get(key)
            .or_else(|| self.added.get(&key).copied())
    }

    pub(crate) fn insert(&mut self, key: u64, count: u32) {
        if self.stored.get(key).is_none() && self.added.insert(key, count).is_none() {
            self.unsaved = true;
        }
    }

    /// Writes the merged cache; failures are warnings (the counts are still right).
    pub(crate) fn save(&mut self) {
        let Some(path) = self.path.clone() else {
            return;
        };
        if !self.unsaved {
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
        let on_disk = match std::fs::read(path) {
            Ok(bytes) => decode(&bytes).unwrap_or_default(),
            Err(_) => Sorted::default(),
        };
        let mut entries: Vec<(u64, u32)> =
            Vec::with_capacity(on_disk.keys.len() + self.stored.keys.len() + self.added.len());
        for s in [&on_disk, &self.stored] {
            entries.extend(s.keys.iter().copied().zip(s.counts.iter().copied()));
        }
        entries.extend(self.added.iter().map(|(k, v)| (*k, *v)));
        // Sorted by key (then count, so the bytes never depend on map order), one per key.
        entries.sort_unstable();
        entries.dedup_by_key(|e| e.0);
        let bytes = encode(&entries);
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        tmp.write_all(&bytes)?;
        tmp.as_file().sync_all()?;
        tmp.persist(path).map_err(|e| e.error)?;
        self.unsaved = false;
        Ok(())
    }
}

/// A cache file's entries: keys strictly ascending, counts in the same order, and `start`,
/// the first entry of each bucket of keys sharing their top bits (bucket `b` is
/// `keys[start[b]..start[b + 1]]`), with about as many buckets as keys.
#[derive(Debug, Default, PartialEq)]
struct Sorted {
    keys: Vec<u64>,
    counts: Vec<u32>,
    start: Vec<u32>,
    shift: u32,
}

impl Sorted {
    /// `keys` must be strictly ascending and no longer than `u32::MAX` ([`decode`] checks).
    fn new(keys: Vec<u64>, counts: Vec<u32>) -> Sorted {
        // 2^bits buckets for n keys, n < 2^bits <= 2n (at least 2; at most 2^24, 64 MiB of
        // index, beyond which buckets just hold more keys).
        let bits = (usize::BITS - keys.len().leading_zeros()).clamp(1, 24);
        let shift = 64 - bits;
        let buckets = 1usize << bits;
        let mut start = Vec::with_capacity(buckets + 1);
        for (i, k) in keys.iter().enumerate() {
            let b = (k >> shift) as usize;
            while start.len() <= b {
                start.push(i as u32);
            }
        }
        start.resize(buckets + 1, keys.len() as u32);
        Sorted {
            keys,
            counts,
            start,
            shift,
        }
    }

    fn get(&self, key: u64) -> Option<u32> {
        let b = (key >> self.shift) as usize;
        let lo = *self.start.get(b)? as usize;
        let hi = *self.start.get(b + 1)? as usize;
        // About one key per bucket; a binary search keeps clustered keys (a crafted file)
        // logarithmic.
        let i = self.keys.get(lo..hi)?.binary_search(&key).ok()?;
        self.counts.get(lo + i).copied()
    }
}

fn read_file_or_warn(path: &Path) -> Sorted {
    match std::fs::read(path) {
        Ok(bytes) => match decode(&bytes) {
            Ok(m) => m,
            Err(why) => {
                eprintln!(
                    "warning: token cache {}: {why}; ignoring it and rebuilding",
                    path.display()
                );
                Sorted::default()
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Sorted::default(),
        Err(e) => {
            eprintln!(
                "warning: token cache {}: unreadable ({e}); counting without it",
                path.display()
            );
            Sorted::default()
        }
    }
}

/// `entries` sorted by key, one per key (so the same counts always give the same bytes).
fn encode(entries: &[(u64, u32)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(OVERHEAD + entries.len() * ENTRY);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    for (k, _) in entries {
        out.extend_from_slice(&k.to_le_bytes());
    }
    for (_, v) in entries {
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

/// Why a cache file is ignored (and rebuilt).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum DecodeError {
    #[error("not a compaction-sim count cache, version 2 (bad header)")]
    BadHeader,
    #[error("checksum mismatch (corrupted or truncated)")]
    Checksum,
    #[error("{bytes} bytes of entries for {n} entries of {ENTRY} bytes")]
    Length { bytes: usize, n: u64 },
    #[error("{0} entries (at most {max} supported)", max = u32::MAX)]
    TooMany(u64),
    #[error("keys out of order (corrupted)")]
    OutOfOrder,
}

/// The entries of a cache file; every length is checked before any slicing, so no input
/// panics.
fn decode(bytes: &[u8]) -> Result<Sorted, DecodeError> {
    if bytes.len() < OVERHEAD || !bytes.starts_with(MAGIC) {
        return Err(DecodeError::BadHeader);
    }
    let (body, sum) = bytes.split_at(bytes.len() - 8);
    if xxhash_rust::xxh3::xxh3_64(body) != le_u64(sum) {
        return Err(DecodeError::Checksum);
    }
    let n = le_u64(&body[MAGIC.len()..16]);
    let entries = &body[16..];
    if u64::try_from(entries.len()).ok() != n.checked_mul(ENTRY as u64) {
        return Err(DecodeError::Length {
            bytes: entries.len(),
            n,
        });
    }
    if n > u64::from(u32::MAX) {
        return Err(DecodeError::TooMany(n));
    }
    let (key_bytes, count_bytes) = entries.split_at(entries.len() / ENTRY * 8);
    let mut keys = Vec::with_capacity(key_bytes.len() / 8);
    for k in key_bytes.chunks_exact(8) {
        let k = le_u64(k);
        // Written strictly ascending: anything else (a duplicate key included) is damage.
        if keys.last().is_some_and(|&p| p >= k) {
            return Err(DecodeError::OutOfOrder);
        }
        keys.push(k);
    }
    let counts = count_bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Ok(Sorted::new(keys, counts))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The warning names a damaged file's fault in the words it always used.
    #[test]
    fn decode_errors_keep_their_wording() {
        let words = [
            (
                DecodeError::BadHeader,
                "not a compaction-sim count cache, version 2 (bad header)",
            ),
            (
                DecodeError::Checksum,
                "checksum mismatch (corrupted or truncated)",
            ),
            (
                DecodeError::Length { bytes: 5, n: 1 },
                "5 bytes of entries for 1 entries of 12 bytes",
            ),
            (
                DecodeError::TooMany(4294967296),
                "4294967296 entries (at most 4294967295 supported)",
            ),
            (DecodeError::OutOfOrder, "keys out of order (corrupted)"),
        ];
        for (e, text) in words {
            assert_eq!(e.to_string(), text);
        }
    }

    #[test]
    fn round_trip_and_lookups() {
        let entries = [(0, 5), (1, 10), (3, 30), (1 << 63, 7), (u64::MAX, u32::MAX)];
        let a = encode(&entries);
        let d = decode(&a).unwrap();
        for (k, v) in entries {
            assert_eq!(d.get(k), Some(v), "key {k}");
        }
        for k in [2, 4, (1 << 63) - 1, (1 << 63) + 1, u64::MAX - 1] {
            assert_eq!(d.get(k), None, "key {k}");
        }
        assert_eq!(a.len(), OVERHEAD + 5 * ENTRY);
        // Layout: magic, count, keys ascending, then counts in the same order.
        assert_eq!(&a[..8], MAGIC);
        assert_eq!(le_u64(&a[8..16]), 5);
        assert_eq!(le_u64(&a[24..32]), 1);
        assert_eq!(le_u64(&a[48..56]), u64::MAX);
        assert_eq!(&a[60..64], &10u32.to_le_bytes());
        assert_eq!(&a[72..76], &u32::MAX.to_le_bytes());
        // An empty cache is a valid file too.
        assert_eq!(decode(&encode(&[])).unwrap().get(0), None);
    }

    /// The bucket index finds every key among many, whatever their spread (clustered keys
    /// share buckets), and nothing else.
    #[test]
    fn index_finds_every_key() {
        for spread in [2u64, 1 << 20, 1 << 50, u64::MAX / 3000] {
            let keys: Vec<u64> = (0..3000u64).map(|i| i * spread + 1).collect();
            let counts: Vec<u32> = (0..3000u32).collect();
            let s = Sorted::new(keys.clone(), counts);
            for (i, &k) in keys.iter().enumerate() {
                assert_eq!(s.get(k), Some(i as u32));
                assert_eq!(s.get(k + 1), None);
            }
            assert_eq!(s.get(0), None);
            assert_eq!(s.get(u64::MAX), None);
        }
    }

    /// Re-seals `body` with a valid checksum, so the structural checks are reached.
    fn sealed(body: &[u8]) -> Vec<u8> {
        let mut v = body.to_vec();
        v.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(body).to_le_bytes());
        v
    }

    #[test]
    fn corrupted_files_are_rejected_not_panicking() {
        let good = encode(&[(7, 70), (8, 80)]);
        let body = &good[..good.len() - 8];
        assert!(decode(&[]).is_err());
        assert!(decode(b"garbage garbage garbage").is_err());
        // Every truncation and every single-byte flip is rejected.
        for cut in 0..good.len() {
            assert!(decode(&good[..cut]).is_err(), "cut at {cut}");
        }
        for i in 0..good.len() {
            let mut flipped = good.clone();
            flipped[i] ^= 0x01;
            assert!(decode(&flipped).is_err(), "flip at {i}");
        }
        // Checksum-valid but inconsistent: an entry count that does not match the size
        // (including one whose byte size overflows), a truncated entry area, duplicate keys.
        for n in [1u64, 3, u64::MAX, u64::MAX / 12 + 1] {
            let mut b = body.to_vec();
            b[8..16].copy_from_slice(&n.to_le_bytes());
            assert!(decode(&sealed(&b)).is_err(), "n = {n}");
        }
        assert!(decode(&sealed(&body[..body.len() - 4])).is_err());
        let mut dup = body.to_vec();
        dup.copy_within(16..24, 24);
        assert!(decode(&sealed(&dup)).is_err());
        let mut swapped = body.to_vec();
        swapped[16..32].copy_from_slice(&[body[24..32].to_vec(), body[16..24].to_vec()].concat());
        assert!(decode(&sealed(&swapped)).is_err());
        // A version 1 file (other magic) is not read as version 2.
        let mut v1 = body.to_vec();
        v1[5] = 1;
        assert!(decode(&sealed(&v1)).is_err());
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
        // The same entries, added in another order, give the same bytes.
        let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        for (d, order) in [
            (&d1, [(9, 90), (4, 40), (6, 60)]),
            (&d2, [(6, 60), (9, 90), (4, 40)]),
        ] {
            let mut x = CountCache::load(&CacheOpts::at(d.path()), Tokenizer::O200k);
            for (k, v) in order {
                x.insert(k, v);
            }
            x.save();
        }
        let file = |d: &tempfile::TempDir| {
            std::fs::read(CacheOpts::at(d.path()).file(Tokenizer::O200k).unwrap()).unwrap()
        };
        assert_eq!(file(&d1), file(&d2));
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
