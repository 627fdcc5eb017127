//! One block through a spec: filters, then the codec, and back.

use crate::algorithm::Algorithm;
use crate::element::{ElementKind, NumericClass};
use crate::filter::Filter;
use crate::spec::CompressionSpec;
use crate::{CodecError, qipc};

/// Compresses one block of raw little-endian elements of `kind` with `spec`.
///
/// Returns `None` when the compressed form would not be smaller than the raw block,
/// so the caller can store the block raw instead (as kdb+ does for qipc). The spec must
/// have passed [`CompressionSpec::check_suitable`] for `kind`.
pub fn compress_block(spec: &CompressionSpec, kind: ElementKind, raw: &[u8]) -> Result<Option<Vec<u8>>, CodecError> {
    debug_assert_eq!(raw.len() % kind.width, 0, "a block holds whole elements");
    if spec.is_auto() {
        return Err(CodecError::Unsuitable(format!("{spec} must be resolved to a concrete chain before compressing")));
    }
    // Nothing to compress; some codecs (LZ4HC's optimal parser) misread empty input.
    if raw.is_empty() {
        return Ok(None);
    }
    let mut filtered = raw.to_vec();
    let mut side_bytes = Vec::new();
    let raw_kind = kind;
    let mut kind = kind;
    for filter in &spec.filters {
        side_bytes.extend(filter.encode(kind, &mut filtered));
        kind = filter.output_kind(kind);
    }
    let packed = match spec.algorithm {
        Algorithm::None => filtered,
        Algorithm::Qipc => match qipc::compress(&filtered, raw.len().saturating_sub(1)) {
            Some(packed) => packed,
            None => return Ok(None),
        },
        Algorithm::Gzip => gzip_compress(&filtered, spec.level)?,
        Algorithm::Snappy => snap::raw::Encoder::new()
            .compress_vec(&filtered)
            .map_err(|e| CodecError::Library { algorithm: "snappy", detail: e.to_string() })?,
        Algorithm::Lz4hc => {
            let mode = match spec.level {
                0 => lz4::block::CompressionMode::DEFAULT,
                level => lz4::block::CompressionMode::HIGHCOMPRESSION(level),
            };
            lz4::block::compress(&filtered, Some(mode), false)
                .map_err(|e| CodecError::Library { algorithm: "lz4hc", detail: e.to_string() })?
        }
        Algorithm::Zstd => zstd::bulk::compress(&filtered, spec.level)
            .map_err(|e| CodecError::Library { algorithm: "zstd", detail: e.to_string() })?,
        Algorithm::Pco => pco_compress(&filtered, kind, &pco_config(spec))?,
    };
    let mut packed = packed;
    packed.extend_from_slice(&side_bytes);
    // A filter-only spec keeps its (filtered) block even when it is no smaller.
    if spec.algorithm != Algorithm::None && packed.len() >= raw.len() {
        return Ok(None);
    }
    debug_assert_eq!(raw_kind.width, kind.width, "filters keep the element width");
    Ok(Some(packed))
}

/// Decompresses one block written by [`compress_block`] back to exactly `raw_len`
/// bytes. Corrupt input is an error naming the codec, never a panic.
pub fn decompress_block(
    spec: &CompressionSpec,
    kind: ElementKind,
    packed: &[u8],
    raw_len: usize,
) -> Result<Vec<u8>, CodecError> {
    if !raw_len.is_multiple_of(kind.width) {
        return Err(CodecError::Corrupt {
            algorithm: spec.algorithm.name(),
            detail: format!("block length {raw_len} is not a whole number of {}-byte elements", kind.width),
        });
    }
    // Each filter's input kind, and the side bytes filters appended after the payload.
    let mut kinds = Vec::with_capacity(spec.filters.len());
    let mut codec_kind = kind;
    for filter in &spec.filters {
        kinds.push(codec_kind);
        codec_kind = filter.output_kind(codec_kind);
    }
    let side_count = spec.filters.iter().filter(|f| **f == Filter::Decimal).count();
    let Some(payload_len) = packed.len().checked_sub(side_count) else {
        return Err(corrupt(
            spec.algorithm.name(),
            format!("block of {} bytes lacks its filter side bytes", packed.len()),
        ));
    };
    let (packed, side_bytes) = packed.split_at(payload_len);
    let kind = codec_kind;
    let mut raw = match spec.algorithm {
        Algorithm::None => packed.to_vec(),
        Algorithm::Qipc => qipc::decompress(packed, raw_len)?,
        Algorithm::Gzip => gzip_decompress(packed, raw_len)?,
        Algorithm::Snappy => {
            let claimed = snap::raw::decompress_len(packed).map_err(|e| corrupt("snappy", e))?;
            if claimed != raw_len {
                return Err(length_mismatch("snappy", claimed, raw_len));
            }
            snap::raw::Decoder::new().decompress_vec(packed).map_err(|e| corrupt("snappy", e))?
        }
        Algorithm::Lz4hc => {
            let size = i32::try_from(raw_len).map_err(|e| corrupt("lz4hc", e))?;
            lz4::block::decompress(packed, Some(size)).map_err(|e| corrupt("lz4hc", e))?
        }
        Algorithm::Zstd => {
            let mut out = Vec::with_capacity(raw_len);
            zstd::bulk::Decompressor::new()
                .and_then(|mut d| d.decompress_to_buffer(packed, &mut out))
                .map_err(|e| corrupt("zstd", e))?;
            out
        }
        Algorithm::Pco => pco_decompress(packed, kind, raw_len)?,
    };
    if raw.len() != raw_len {
        return Err(length_mismatch(spec.algorithm.name(), raw.len(), raw_len));
    }
    let mut sides = side_bytes.iter().rev();
    for (filter, kind) in spec.filters.iter().zip(kinds).rev() {
        let side = if *filter == Filter::Decimal { sides.next().copied() } else { None };
        filter.decode(kind, &mut raw, side).map_err(|detail| CodecError::Corrupt { algorithm: "filter", detail })?;
    }
    Ok(raw)
}

fn corrupt(algorithm: &'static str, error: impl std::fmt::Display) -> CodecError {
    CodecError::Corrupt { algorithm, detail: error.to_string() }
}

fn length_mismatch(algorithm: &'static str, got: usize, expected: usize) -> CodecError {
    CodecError::Corrupt { algorithm, detail: format!("block decodes to {got} bytes, expected {expected}") }
}

fn gzip_compress(raw: &[u8], level: i32) -> Result<Vec<u8>, CodecError> {
    use std::io::Write;
    let mut encoder =
        flate2::write::ZlibEncoder::new(Vec::with_capacity(raw.len() / 2), flate2::Compression::new(level as u32));
    encoder
        .write_all(raw)
        .and_then(|_| encoder.finish())
        .map_err(|e| CodecError::Library { algorithm: "gzip", detail: e.to_string() })
}

fn gzip_decompress(packed: &[u8], raw_len: usize) -> Result<Vec<u8>, CodecError> {
    use std::io::Read;
    let mut out = Vec::with_capacity(raw_len);
    // Read one byte past the expected length so an over-long stream is caught.
    flate2::read::ZlibDecoder::new(packed)
        .take(raw_len as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| corrupt("gzip", e))?;
    Ok(out)
}

/// Runs `$body` with `$t` bound to the Rust number type pcodec uses for `$kind`.
macro_rules! with_pco_type {
    ($kind:expr, $t:ident, $body:block) => {
        match ($kind.class, $kind.width) {
            (NumericClass::Signed, 2) => {
                type $t = i16;
                $body
            }
            (NumericClass::Signed, 4) => {
                type $t = i32;
                $body
            }
            (NumericClass::Signed, 8) => {
                type $t = i64;
                $body
            }
            (NumericClass::Unsigned, 2) => {
                type $t = u16;
                $body
            }
            (NumericClass::Unsigned, 4) => {
                type $t = u32;
                $body
            }
            (NumericClass::Unsigned, 8) => {
                type $t = u64;
                $body
            }
            (NumericClass::Float, 4) => {
                type $t = f32;
                $body
            }
            (NumericClass::Float, 8) => {
                type $t = f64;
                $body
            }
            _ => return Err(CodecError::Unsuitable(format!("pco cannot store {} elements", $kind))),
        }
    };
}

/// How pcodec should search a block. After Strata's own delta filter the values are
/// already differences, and pcodec's search for a delta order (which tries several
/// orders on every block) costs close to half its compression time on timestamps
/// and sequence numbers while finding little more (0.4% on TAQ quote times); its
/// search for a common multiple or float mode finds nothing among differences either
/// (the same bytes on quote times, sizes and sequence numbers) and costs another 5%
/// or so. So `delta+pco` skips both: it is the fast form of `pco` for such columns.
fn pco_config(spec: &CompressionSpec) -> pco::ChunkConfig {
    let config = pco::ChunkConfig::default().with_compression_level(spec.level as usize);
    match spec.filters.last() {
        Some(Filter::Delta | Filter::DeltaOfDelta) => {
            config.with_delta_spec(pco::DeltaSpec::NoOp).with_mode_spec(pco::ModeSpec::Classic)
        }
        _ => config,
    }
}

fn pco_compress(raw: &[u8], kind: ElementKind, config: &pco::ChunkConfig) -> Result<Vec<u8>, CodecError> {
    with_pco_type!(kind, T, {
        let values: Vec<T> =
            raw.chunks_exact(kind.width).map(|c| T::from_le_bytes(c.try_into().expect("width"))).collect();
        pco::standalone::simple_compress(&values, config)
            .map_err(|e| CodecError::Library { algorithm: "pco", detail: e.to_string() })
    })
}

/// Decodes into a buffer of exactly `raw_len` bytes: pcodec trusts the count in its
/// stream, so a corrupt count must not decide how much memory is reserved.
fn pco_decompress(packed: &[u8], kind: ElementKind, raw_len: usize) -> Result<Vec<u8>, CodecError> {
    with_pco_type!(kind, T, {
        let mut values: Vec<T> = vec![T::default(); raw_len / kind.width];
        let progress = pco::standalone::simple_decompress_into(packed, &mut values).map_err(|e| corrupt("pco", e))?;
        if !progress.finished || progress.n_processed != values.len() {
            return Err(corrupt(
                "pco",
                format!("stream holds other than the {} values the block should have", values.len()),
            ));
        }
        Ok(values.iter().flat_map(|v| v.to_le_bytes()).collect())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(n: i64) -> Vec<u8> {
        (0..n).flat_map(|i| (1_700_000_000_000_000_000 + i * 1_000_003).to_le_bytes()).collect()
    }

    #[test]
    fn every_algorithm_round_trips_at_both_level_edges() {
        let kind = ElementKind::new(8, NumericClass::Signed);
        let raw = ramp(5000);
        for algorithm in Algorithm::ALL {
            for level in [*algorithm.levels().start(), *algorithm.levels().end()] {
                let spec = CompressionSpec { filters: vec![], algorithm, level, lbs: 17, auto: None };
                let packed = compress_block(&spec, kind, &raw).unwrap();
                let back = match packed {
                    Some(p) => decompress_block(&spec, kind, &p, raw.len()).unwrap(),
                    None => raw.clone(),
                };
                assert_eq!(back, raw, "{spec}");
            }
        }
    }

    #[test]
    fn corrupt_blocks_are_errors_for_every_codec() {
        let kind = ElementKind::new(8, NumericClass::Signed);
        let raw = ramp(4096);
        for algorithm in Algorithm::ALL.into_iter().filter(|a| *a != Algorithm::None) {
            let spec =
                CompressionSpec { filters: vec![], algorithm, level: algorithm.default_level(), lbs: 17, auto: None };
            let packed = compress_block(&spec, kind, &raw).unwrap().expect("a ramp compresses");
            let truncated = &packed[..packed.len() / 2];
            assert!(decompress_block(&spec, kind, truncated, raw.len()).is_err(), "{spec} accepted a truncated block");
            assert!(decompress_block(&spec, kind, &packed, raw.len() + 8).is_err(), "{spec} accepted a wrong length");
        }
    }

    #[test]
    fn empty_blocks_are_stored_raw_for_every_codec() {
        for algorithm in Algorithm::ALL {
            let spec =
                CompressionSpec { filters: vec![], algorithm, level: *algorithm.levels().end(), lbs: 12, auto: None };
            assert_eq!(compress_block(&spec, ElementKind::new(4, NumericClass::Float), &[]).unwrap(), None, "{spec}");
        }
    }

    #[test]
    fn a_corrupt_pco_count_cannot_reserve_memory() {
        let kind = ElementKind::new(4, NumericClass::Float);
        let raw: Vec<u8> = (0..200).flat_map(|i| (i as f32 * 0.5).to_le_bytes()).collect();
        let spec: CompressionSpec = "pco:3".parse().unwrap();
        let packed = compress_block(&spec, kind, &raw).unwrap().unwrap();
        assert!(decompress_block(&spec, kind, &packed, raw.len() - 4).is_err(), "one value too few");
        for i in 0..packed.len() {
            let mut bad = packed.clone();
            bad[i] ^= 0x55;
            let _ = decompress_block(&spec, kind, &bad, raw.len());
        }
    }

    #[test]
    fn delta_then_pco_skips_pcos_own_search_without_losing_ratio_on_times() {
        // Bursty sorted nanosecond times: pcodec's own search settles on first-order
        // deltas too, so the filtered chain (which skips the search) stores within a
        // few percent of it (0.4% on the generated TAQ quote times).
        let mut t = 34_200_000_000_000i64;
        let raw: Vec<u8> = (0..16_384u64)
            .flat_map(|i| {
                // splitmix64: gaps without a period pcodec's lookback could find.
                let mut z = i.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                let noise = ((z ^ (z >> 31)) >> 2) as i64;
                t += if noise % 3 == 0 { 1_000_000_000 + noise % 999_983 } else { 1_000 + noise % 50_000 };
                t.to_le_bytes()
            })
            .collect();
        let kind = ElementKind::new(8, NumericClass::Signed);
        let config = |text: &str| pco_config(&text.parse().unwrap());
        assert!(matches!(config("delta+pco:6").delta_spec, pco::DeltaSpec::NoOp));
        assert!(matches!(config("delta+pco:6").mode_spec, pco::ModeSpec::Classic));
        assert!(matches!(config("dec+pco:6").delta_spec, pco::DeltaSpec::Auto));
        assert!(matches!(config("dec+pco:6").mode_spec, pco::ModeSpec::Auto));
        let size = |text: &str| {
            let spec: CompressionSpec = text.parse().unwrap();
            let packed = compress_block(&spec, kind, &raw).unwrap().expect("times compress");
            assert_eq!(decompress_block(&spec, kind, &packed, raw.len()).unwrap(), raw, "{spec}");
            packed.len() as f64
        };
        let (searched, filtered) = (size("pco:6"), size("delta+pco:6"));
        assert!(filtered <= searched * 1.05, "delta+pco:6 {filtered} bytes against pco:6 {searched}");
        assert!(filtered < raw.len() as f64 / 2.0, "{filtered}");
    }

    #[test]
    fn incompressible_blocks_are_reported_for_raw_storage() {
        let noise: Vec<u8> = (0..8192u64).flat_map(|i| i.wrapping_mul(0x9E3779B97F4A7C15).to_le_bytes()).collect();
        let spec: CompressionSpec = "snappy".parse().unwrap();
        assert_eq!(compress_block(&spec, ElementKind::BYTES, &noise).unwrap(), None);
    }
}
