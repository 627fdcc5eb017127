//! Timing one column through one spec: compress every block, decompress every
//! block, check the round trip.

use std::time::Instant;

use rayon::ThreadPool;
use rayon::prelude::*;
use strata_codec::{CodecError, CompressionSpec, compress_block, decompress_block};

use super::CodecBenchError;
use crate::data::SampleColumn;

/// What one (column, spec, thread count) measurement found.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Figures {
    /// Raw bytes over stored bytes (blocks that did not shrink count at raw size).
    pub ratio: f64,
    /// Raw megabytes (10^6 bytes) compressed per second, best of the repeats.
    pub compress_mbps: f64,
    /// Raw megabytes (10^6 bytes) decompressed per second, best of the repeats.
    pub decompress_mbps: f64,
}

/// Compresses and decompresses `column` in blocks of `spec.block_bytes()`, `repeats`
/// times each, on the calling thread (`pool` = None) or on `pool`, and verifies that
/// every block comes back byte for byte. The spec must suit the column's kind.
pub(super) fn measure(
    column: &SampleColumn,
    spec: &CompressionSpec,
    pool: Option<&ThreadPool>,
    repeats: usize,
) -> Result<Figures, CodecBenchError> {
    assert!(repeats > 0, "at least one repeat");
    let blocks: Vec<&[u8]> = column.bytes.chunks(spec.block_bytes()).collect();
    let kind = column.kind;
    let codec_error = |block: usize, source: CodecError| CodecBenchError::Codec {
        column: column.name.to_string(),
        spec: spec.to_string(),
        block,
        source: Box::new(source),
    };

    let mut best_compress = f64::INFINITY;
    let mut packed = Vec::new();
    for _ in 0..repeats {
        let start = Instant::now();
        let results = map_blocks(pool, blocks.len(), |i| compress_block(spec, kind, blocks[i]));
        best_compress = best_compress.min(start.elapsed().as_secs_f64());
        packed = results
            .into_iter()
            .enumerate()
            .map(|(i, r)| r.map_err(|e| codec_error(i, e)))
            .collect::<Result<Vec<_>, _>>()?;
    }

    let mut best_decompress = f64::INFINITY;
    let mut unpacked = Vec::new();
    for _ in 0..repeats {
        let start = Instant::now();
        let results = map_blocks(pool, blocks.len(), |i| match &packed[i] {
            Some(p) => decompress_block(spec, kind, p, blocks[i].len()),
            // A block that did not shrink is stored raw; reading it is a copy.
            None => Ok(blocks[i].to_vec()),
        });
        best_decompress = best_decompress.min(start.elapsed().as_secs_f64());
        unpacked = results
            .into_iter()
            .enumerate()
            .map(|(i, r)| r.map_err(|e| codec_error(i, e)))
            .collect::<Result<Vec<_>, _>>()?;
    }

    for (block, (original, back)) in blocks.iter().zip(&unpacked).enumerate() {
        if *original != back.as_slice() {
            let offset = original.iter().zip(back).position(|(a, b)| a != b).unwrap_or(original.len().min(back.len()));
            return Err(CodecBenchError::RoundTrip {
                column: column.name.to_string(),
                spec: spec.to_string(),
                block,
                offset,
            });
        }
    }

    let raw_bytes = column.bytes.len() as f64;
    let stored_bytes: usize = packed.iter().zip(&blocks).map(|(p, raw)| p.as_ref().map_or(raw.len(), Vec::len)).sum();
    // Timer resolution can make tiny runs read as zero; a nanosecond floor keeps
    // the figures finite.
    let mbps = |secs: f64| raw_bytes / 1e6 / secs.max(1e-9);
    Ok(Figures {
        ratio: raw_bytes / stored_bytes.max(1) as f64,
        compress_mbps: mbps(best_compress),
        decompress_mbps: mbps(best_decompress),
    })
}

/// `f(0..n)` in order, on the calling thread or spread over `pool`.
fn map_blocks<T: Send>(pool: Option<&ThreadPool>, n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    match pool {
        None => (0..n).map(f).collect(),
        Some(pool) => pool.install(|| (0..n).into_par_iter().map(&f).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data;

    #[test]
    fn a_compressible_column_has_ratio_above_one_and_positive_speeds() {
        let column = data::sequence_numbers(10_000, 1);
        let spec: CompressionSpec = "delta+zstd:1@12".parse().unwrap();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        for pool in [None, Some(&pool)] {
            let figures = measure(&column, &spec, pool, 2).unwrap();
            assert!(figures.ratio > 4.0, "{figures:?}");
            assert!(figures.compress_mbps > 0.0 && figures.decompress_mbps > 0.0);
        }
    }

    #[test]
    fn none_stores_everything_at_ratio_one() {
        let column = data::conditions(5_000, 1);
        let figures = measure(&column, &CompressionSpec::none(), None, 1).unwrap();
        assert_eq!(figures.ratio, 1.0);
    }

    #[test]
    fn blocks_that_do_not_shrink_count_at_raw_size() {
        // Random bytes: qipc cannot shrink them, so every block is stored raw.
        let mut rng = crate::rng::SplitMix64::new(3);
        let column = SampleColumn {
            name: "noise",
            description: "random bytes",
            kind: strata_codec::ElementKind::BYTES,
            bytes: (0..20_000).map(|_| rng.next_u64() as u8).collect(),
        };
        let figures = measure(&column, &"qipc@12".parse().unwrap(), None, 1).unwrap();
        assert_eq!(figures.ratio, 1.0);
    }
}
