//! `--shard K/N`: the K-th of N deterministic slices of a sweep's sessions.
//!
//! Slicing is by session (every N-th session of the sorted session list), not by file, so
//! a corpus with one huge multi-session file still splits evenly; every shard reads the
//! inputs but counts and replays only its own sessions.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// 1-based.
    pub k: u32,
    pub n: u32,
}

impl Shard {
    pub fn owns(&self, session_index: usize) -> bool {
        (session_index % self.n as usize) as u32 == self.k - 1
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

/// A `--shard` value that is not K/N with 1 <= K <= N.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--shard `{0}`: expected K/N with 1 <= K <= N, e.g. 2/8")]
pub struct BadShard(pub String);

impl FromStr for Shard {
    type Err = BadShard;
    fn from_str(s: &str) -> Result<Self, BadShard> {
        let bad = || BadShard(s.to_string());
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let k: u32 = k.trim().parse().map_err(|_| bad())?;
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        if n == 0 || k == 0 || k > n {
            return Err(bad());
        }
        Ok(Shard { k, n })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_refuses() {
        assert_eq!("2/3".parse::<Shard>().unwrap(), Shard { k: 2, n: 3 });
        for bad in ["0/3", "4/3", "1/0", "x", "1/", "a/b"] {
            let e = bad.parse::<Shard>().unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
    }

    #[test]
    fn shards_partition_sessions() {
        let n = 3;
        for i in 0..20usize {
            let owners = (1..=n).filter(|&k| Shard { k, n }.owns(i)).count();
            assert_eq!(owners, 1, "session {i}");
        }
    }
}
