//! Reversible filters that reshape a block before a codec sees it.
//!
//! Each filter works on one block of little-endian fixed-width elements and is undone
//! exactly by [`Filter::decode`]. Blocks are independent, so each block's first
//! element is kept as is.

use std::fmt;

use crate::element::{ElementKind, NumericClass};

/// A reversible transform applied before compression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Filter {
    /// Byte shuffle: all first bytes of the elements, then all second bytes, ...
    /// Helps codecs on slowly varying multi-byte values (timestamps, sizes).
    Shuffle,
    /// Each integer minus its predecessor (wrapping): sorted or slowly changing
    /// integers and timestamps become small numbers.
    Delta,
    /// Delta applied twice: regular timestamps become runs of zeros.
    DeltaOfDelta,
    /// Each float's bits XOR its predecessor's (Gorilla-style): repeated or close
    /// prices share sign, exponent and high mantissa bits, which become zeros.
    Xor,
    /// Floats that are exact decimals with few digits (prices on a tick grid) become
    /// the integers `value * 10^k`, for the smallest `k` (0..=9) that holds for the
    /// whole block; later filters and the codec then see integers. `k` travels as one
    /// side byte per block; a block with no such `k` passes through unchanged.
    Decimal,
}

impl Filter {
    /// Every filter, in the order their codes number them.
    pub const ALL: [Filter; 5] = [Filter::Shuffle, Filter::Delta, Filter::DeltaOfDelta, Filter::Xor, Filter::Decimal];

    /// The name used in compression specs.
    pub fn name(self) -> &'static str {
        match self {
            Filter::Shuffle => "shuffle",
            Filter::Delta => "delta",
            Filter::DeltaOfDelta => "dod",
            Filter::Xor => "xor",
            Filter::Decimal => "dec",
        }
    }

    /// The filter a spec names.
    pub fn from_name(name: &str) -> Option<Filter> {
        Some(match name {
            "shuffle" => Filter::Shuffle,
            "delta" => Filter::Delta,
            "dod" | "delta2" => Filter::DeltaOfDelta,
            "xor" => Filter::Xor,
            "dec" | "decimal" => Filter::Decimal,
            _ => return None,
        })
    }

    /// The code stored in a compressed file's header (1-based; 0 means no filter).
    pub fn code(self) -> u8 {
        Filter::ALL.iter().position(|f| *f == self).expect("listed") as u8 + 1
    }

    /// The filter stored as `code`, if any.
    pub fn from_code(code: u8) -> Option<Filter> {
        (code as usize).checked_sub(1).and_then(|i| Filter::ALL.get(i).copied())
    }

    /// Why this filter cannot apply to elements of `kind`, if it cannot.
    pub fn unsuitable_for(self, kind: ElementKind) -> Option<String> {
        match self {
            Filter::Shuffle if kind.width < 2 => Some(format!("shuffle needs elements of 2 or more bytes, not {kind}")),
            Filter::Delta | Filter::DeltaOfDelta if !kind.is_integer() => {
                Some(format!("{} needs integer or temporal elements, not {kind}", self.name()))
            }
            Filter::Decimal if kind.class != NumericClass::Float || kind.width < 4 => {
                Some(format!("dec needs 4- or 8-byte floats, not {kind}"))
            }
            Filter::Xor if kind.class == NumericClass::Opaque || kind.width < 2 => {
                Some(format!("xor needs numeric elements of 2 or more bytes, not {kind}"))
            }
            _ => None,
        }
    }

    /// The kind of elements the next filter (or the codec) sees after this one.
    pub fn output_kind(self, kind: ElementKind) -> ElementKind {
        match self {
            Filter::Decimal => ElementKind::new(kind.width, NumericClass::Signed),
            _ => kind,
        }
    }

    /// Applies the filter to `block` in place. `block.len()` must be a multiple of
    /// `kind.width`. Returns the side byte the decoder needs, for filters that have one
    /// (`dec`).
    pub fn encode(self, kind: ElementKind, block: &mut Vec<u8>) -> Option<u8> {
        match self {
            Filter::Shuffle => *block = shuffle(block, kind.width),
            Filter::Delta => delta_encode(block, kind.width),
            Filter::DeltaOfDelta => {
                delta_encode(block, kind.width);
                delta_encode_from(block, kind.width, 1);
            }
            Filter::Xor => xor_encode(block, kind.width),
            Filter::Decimal => return Some(decimal::encode(block, kind.width)),
        }
        None
    }

    /// Undoes [`Filter::encode`] in place, given the side byte it returned.
    pub fn decode(self, kind: ElementKind, block: &mut Vec<u8>, side: Option<u8>) -> Result<(), String> {
        match self {
            Filter::Shuffle => *block = unshuffle(block, kind.width),
            Filter::Delta => delta_decode(block, kind.width),
            Filter::DeltaOfDelta => {
                delta_decode_from(block, kind.width, 1);
                delta_decode(block, kind.width);
            }
            Filter::Xor => xor_decode(block, kind.width),
            Filter::Decimal => decimal::decode(block, kind.width, side.ok_or("dec: side byte missing")?)?,
        }
        Ok(())
    }
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Transposes `n` elements of `width` bytes into `width` planes of `n` bytes.
fn shuffle(bytes: &[u8], width: usize) -> Vec<u8> {
    let n = bytes.len() / width;
    let mut out = vec![0u8; bytes.len()];
    for (i, element) in bytes.chunks_exact(width).enumerate() {
        for (plane, byte) in element.iter().enumerate() {
            out[plane * n + i] = *byte;
        }
    }
    out
}

fn unshuffle(bytes: &[u8], width: usize) -> Vec<u8> {
    let n = bytes.len() / width;
    let mut out = vec![0u8; bytes.len()];
    for (i, element) in out.chunks_exact_mut(width).enumerate() {
        for (plane, byte) in element.iter_mut().enumerate() {
            *byte = bytes[plane * n + i];
        }
    }
    out
}

/// Runs `$body` with `$t` bound to the unsigned integer type of `$width` bytes.
macro_rules! with_uint {
    ($width:expr, $t:ident, $body:block) => {
        match $width {
            1 => {
                type $t = u8;
                $body
            }
            2 => {
                type $t = u16;
                $body
            }
            4 => {
                type $t = u32;
                $body
            }
            8 => {
                type $t = u64;
                $body
            }
            other => unreachable!("element width {other} is not 1, 2, 4 or 8"),
        }
    };
}

/// The `dec` filter: exact decimal floats to scaled integers and back.
mod decimal {
    /// The side byte of a block left unchanged.
    pub const UNCHANGED: u8 = 0xFF;
    const MAX_DIGITS: u8 = 9;

    macro_rules! impl_width {
        ($float:ty, $int:ty, $encode:ident, $decode:ident) => {
            /// The smallest digit count `k` for which every value is exactly
            /// `i / 10^k` with `i` an integer; the block then holds the integers.
            fn $encode(block: &mut [u8]) -> Option<u8> {
                const W: usize = size_of::<$float>();
                // Integers beyond the mantissa are not all exact in the float type.
                const LIMIT: $float = (1u64 << <$float>::MANTISSA_DIGITS) as $float;
                let read = |c: &[u8]| <$float>::from_le_bytes(c.try_into().expect("width"));
                // Round half away from zero by truncation: no libm call on the hot path.
                // Whichever integer it picks, the check below decides.
                let to_int = |scaled: $float| (scaled + (0.5 as $float).copysign(scaled)) as $int;
                'digits: for k in 0..=MAX_DIGITS {
                    let scale = (10 as $float).powi(k as i32);
                    for chunk in block.chunks_exact(W) {
                        let v = read(chunk);
                        let scaled = v * scale;
                        if scaled.is_nan() || scaled.abs() >= LIMIT {
                            continue 'digits;
                        }
                        if (to_int(scaled) as $float / scale).to_bits() != v.to_bits() {
                            continue 'digits;
                        }
                    }
                    for chunk in block.chunks_exact_mut(W) {
                        let i = to_int(read(chunk) * scale);
                        chunk.copy_from_slice(&i.to_le_bytes());
                    }
                    return Some(k);
                }
                None
            }

            fn $decode(block: &mut [u8], k: u8) {
                const W: usize = size_of::<$float>();
                let scale = (10 as $float).powi(k as i32);
                for chunk in block.chunks_exact_mut(W) {
                    let i = <$int>::from_le_bytes(chunk.try_into().expect("width"));
                    chunk.copy_from_slice(&(i as $float / scale).to_le_bytes());
                }
            }
        };
    }
    impl_width!(f64, i64, encode8, decode8);
    impl_width!(f32, i32, encode4, decode4);

    /// Scales the block to integers if some digit count fits; returns that count or
    /// [`UNCHANGED`].
    pub fn encode(block: &mut [u8], width: usize) -> u8 {
        let k = if width == 8 { encode8(block) } else { encode4(block) };
        k.unwrap_or(UNCHANGED)
    }

    /// Undoes [`encode`].
    pub fn decode(block: &mut [u8], width: usize, k: u8) -> Result<(), String> {
        match k {
            UNCHANGED => Ok(()),
            k if k > MAX_DIGITS => Err(format!("dec: side byte {k} is not a digit count 0..={MAX_DIGITS}")),
            k if width == 8 => {
                decode8(block, k);
                Ok(())
            }
            k => {
                decode4(block, k);
                Ok(())
            }
        }
    }
}

fn delta_encode(block: &mut [u8], width: usize) {
    delta_encode_from(block, width, 0)
}

/// Replaces element i (for i > `skip`) by element i minus element i-1, wrapping.
/// Skipping keeps the first `skip + 1` elements, which second-order delta needs.
fn delta_encode_from(block: &mut [u8], width: usize, skip: usize) {
    with_uint!(width, T, {
        let mut prev: Option<T> = None;
        for chunk in block.chunks_exact_mut(width).skip(skip) {
            let value = T::from_le_bytes(chunk.try_into().expect("width"));
            if let Some(p) = prev {
                chunk.copy_from_slice(&value.wrapping_sub(p).to_le_bytes());
            }
            prev = Some(value);
        }
    })
}

fn delta_decode(block: &mut [u8], width: usize) {
    delta_decode_from(block, width, 0)
}

fn delta_decode_from(block: &mut [u8], width: usize, skip: usize) {
    with_uint!(width, T, {
        let mut prev: Option<T> = None;
        for chunk in block.chunks_exact_mut(width).skip(skip) {
            let mut value = T::from_le_bytes(chunk.try_into().expect("width"));
            if let Some(p) = prev {
                value = value.wrapping_add(p);
                chunk.copy_from_slice(&value.to_le_bytes());
            }
            prev = Some(value);
        }
    })
}

fn xor_encode(block: &mut [u8], width: usize) {
    with_uint!(width, T, {
        let mut prev: T = 0;
        for chunk in block.chunks_exact_mut(width) {
            let value = T::from_le_bytes(chunk.try_into().expect("width"));
            chunk.copy_from_slice(&(value ^ prev).to_le_bytes());
            prev = value;
        }
    })
}

fn xor_decode(block: &mut [u8], width: usize) {
    with_uint!(width, T, {
        let mut prev: T = 0;
        for chunk in block.chunks_exact_mut(width) {
            let value = T::from_le_bytes(chunk.try_into().expect("width")) ^ prev;
            chunk.copy_from_slice(&value.to_le_bytes());
            prev = value;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const I64: ElementKind = ElementKind::new(8, NumericClass::Signed);

    fn longs(values: &[i64]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn delta_of_regular_timestamps_is_zero_after_two() {
        let mut block = longs(&[1000, 1010, 1020, 1030, 1040]);
        Filter::DeltaOfDelta.encode(I64, &mut block);
        assert_eq!(block, longs(&[1000, 10, 0, 0, 0]));
        Filter::DeltaOfDelta.decode(I64, &mut block, None).unwrap();
        assert_eq!(block, longs(&[1000, 1010, 1020, 1030, 1040]));
    }

    #[test]
    fn delta_wraps_at_the_extremes() {
        let original = longs(&[i64::MAX, i64::MIN, 0, i64::MIN]);
        let mut block = original.clone();
        Filter::Delta.encode(I64, &mut block);
        Filter::Delta.decode(I64, &mut block, None).unwrap();
        assert_eq!(block, original);
    }

    #[test]
    fn shuffle_groups_bytes_by_significance() {
        let mut block = vec![1, 2, 3, 4, 5, 6];
        Filter::Shuffle.encode(ElementKind::new(2, NumericClass::Signed), &mut block);
        assert_eq!(block, vec![1, 3, 5, 2, 4, 6]);
    }

    #[test]
    fn decimal_scales_tick_prices_and_leaves_the_rest() {
        let f64s = |v: &[f64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let kind = ElementKind::new(8, NumericClass::Float);
        let prices = f64s(&[101.25, 101.26, -0.01, 0.0, 99.5]);
        let mut block = prices.clone();
        assert_eq!(Filter::Decimal.encode(kind, &mut block), Some(2));
        assert_eq!(block, longs(&[10125, 10126, -1, 0, 9950]));
        Filter::Decimal.decode(kind, &mut block, Some(2)).unwrap();
        assert_eq!(block, prices);
        let mut negative_zero = f64s(&[-0.0, 1.5]);
        assert_eq!(
            Filter::Decimal.encode(kind, &mut negative_zero),
            Some(decimal::UNCHANGED),
            "-0.0 keeps its sign bit"
        );
        let mut block = f64s(&[101.25, 0.1 + 0.2]);
        assert_eq!(Filter::Decimal.encode(kind, &mut block), Some(decimal::UNCHANGED));
        assert_eq!(block, f64s(&[101.25, 0.1 + 0.2]));
        for special in [f64::NAN, f64::INFINITY, 1e300] {
            let mut block = f64s(&[special, 1.0]);
            assert_eq!(Filter::Decimal.encode(kind, &mut block), Some(decimal::UNCHANGED));
        }
        assert!(Filter::Decimal.decode(kind, &mut f64s(&[1.0]), Some(12)).is_err());
    }

    #[test]
    fn suitability_rules() {
        assert!(Filter::Delta.unsuitable_for(ElementKind::new(8, NumericClass::Float)).is_some());
        assert!(Filter::Shuffle.unsuitable_for(ElementKind::BYTES).is_some());
        assert!(Filter::Xor.unsuitable_for(ElementKind::new(8, NumericClass::Float)).is_none());
        for f in Filter::ALL {
            assert_eq!(Filter::from_code(f.code()), Some(f));
            assert_eq!(Filter::from_name(f.name()), Some(f));
        }
        assert_eq!(Filter::from_code(0), None);
    }

    proptest! {
        #[test]
        fn every_filter_round_trips(
            width in prop::sample::select(vec![1usize, 2, 4, 8]),
            raw in proptest::collection::vec(any::<u8>(), 0..512),
        ) {
            let usable = raw.len() / width * width;
            let original = raw[..usable].to_vec();
            for filter in Filter::ALL {
                let class = if filter == Filter::Decimal { NumericClass::Float } else { NumericClass::Signed };
                let kind = ElementKind::new(width, class);
                if filter.unsuitable_for(kind).is_some() {
                    continue;
                }
                let mut block = original.clone();
                let side = filter.encode(kind, &mut block);
                filter.decode(kind, &mut block, side).unwrap();
                prop_assert_eq!(&block, &original, "{}", filter);
            }
        }
    }
}
