//! Compression algorithms with kdb+'s numbering and level ranges.

use std::fmt;
use std::ops::RangeInclusive;

/// A block compression algorithm.
///
/// The numbers 0..=5 are kdb+'s (`-21!` reports them, `.z.zd` takes them), so a kdb+
/// user's `17 2 6` means the same thing here. `Pco` is Strata's own addition and gets
/// the next free number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Algorithm {
    /// Stored as is.
    None = 0,
    /// kdb+'s IPC LZ scheme (see [`crate::qipc`]).
    Qipc = 1,
    /// zlib streams (RFC 1950), levels 0-9.
    Gzip = 2,
    /// Raw snappy blocks.
    Snappy = 3,
    /// Raw LZ4 blocks; level 0 is fast LZ4, 1-16 are LZ4HC levels.
    Lz4hc = 4,
    /// zstd frames, levels -7..=22.
    Zstd = 5,
    /// pcodec, for numeric and temporal columns, levels 0-12.
    Pco = 6,
}

impl Algorithm {
    /// Every algorithm, in numbering order.
    pub const ALL: [Algorithm; 7] = [
        Algorithm::None,
        Algorithm::Qipc,
        Algorithm::Gzip,
        Algorithm::Snappy,
        Algorithm::Lz4hc,
        Algorithm::Zstd,
        Algorithm::Pco,
    ];

    /// The algorithm with kdb+'s (or Strata's) number `code`.
    pub fn from_code(code: u8) -> Option<Algorithm> {
        Algorithm::ALL.get(code as usize).copied()
    }

    /// The number stored on disk and reported by `stats` (kdb+'s `algorithm`).
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The name used in compression specs.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::None => "none",
            Algorithm::Qipc => "qipc",
            Algorithm::Gzip => "gzip",
            Algorithm::Snappy => "snappy",
            Algorithm::Lz4hc => "lz4hc",
            Algorithm::Zstd => "zstd",
            Algorithm::Pco => "pco",
        }
    }

    /// The algorithm a spec names, accepting a few common aliases.
    pub fn from_name(name: &str) -> Option<Algorithm> {
        Some(match name {
            "none" => Algorithm::None,
            "qipc" | "ipc" => Algorithm::Qipc,
            "gzip" | "zlib" => Algorithm::Gzip,
            "snappy" => Algorithm::Snappy,
            "lz4hc" | "lz4" => Algorithm::Lz4hc,
            "zstd" => Algorithm::Zstd,
            "pco" | "pcodec" => Algorithm::Pco,
            _ => return None,
        })
    }

    /// The levels this algorithm accepts (kdb+'s ranges; a single 0 means no levels).
    pub fn levels(self) -> RangeInclusive<i32> {
        match self {
            Algorithm::None | Algorithm::Qipc | Algorithm::Snappy => 0..=0,
            Algorithm::Gzip => 0..=9,
            Algorithm::Lz4hc => 0..=16,
            Algorithm::Zstd => -7..=22,
            Algorithm::Pco => 0..=12,
        }
    }

    /// The level used when a spec gives none: each library's own default.
    pub fn default_level(self) -> i32 {
        match self {
            Algorithm::None | Algorithm::Qipc | Algorithm::Snappy => 0,
            Algorithm::Gzip => 6,
            Algorithm::Lz4hc => 9,
            Algorithm::Zstd => 3,
            Algorithm::Pco => 8,
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_match_kdb() {
        for alg in Algorithm::ALL {
            assert_eq!(Algorithm::from_code(alg.code()), Some(alg));
            assert_eq!(Algorithm::from_name(alg.name()), Some(alg));
            assert!(alg.levels().contains(&alg.default_level()));
        }
        assert_eq!(Algorithm::Gzip.code(), 2);
        assert_eq!(Algorithm::Zstd.code(), 5);
        assert_eq!(Algorithm::from_code(7), None);
    }
}
