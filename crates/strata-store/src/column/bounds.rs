//! Per-block minimum and maximum, kept in a compressed file's index so a reader can
//! skip blocks that cannot match a range filter.

use strata_codec::{ElementKind, NumericClass};

/// The smallest and largest value in a block, by the element's numeric class.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BlockBounds {
    /// Signed integers and temporal values.
    Signed(i64, i64),
    /// Unsigned values: symbol keys, booleans, bytes, chars.
    Unsigned(u64, u64),
    /// Floats, ignoring NaN (both NaN when every value is NaN).
    Float(f64, f64),
}

impl BlockBounds {
    /// The bounds of `raw` little-endian values of `kind`; `None` for an empty block.
    ///
    /// Each width and class has its own loop over fixed-size values, so the compiler
    /// vectorises it: this runs on every block written, next to the codec itself.
    pub fn of(kind: ElementKind, raw: &[u8]) -> Option<BlockBounds> {
        if raw.is_empty() {
            return None;
        }
        Some(match (kind.class, kind.width) {
            (NumericClass::Signed, 2) => signed_bounds(raw, i16::from_le_bytes),
            (NumericClass::Signed, 4) => signed_bounds(raw, i32::from_le_bytes),
            (NumericClass::Signed, 8) => signed_bounds(raw, i64::from_le_bytes),
            (NumericClass::Float, 4) => float_bounds(raw, f32::from_le_bytes),
            (NumericClass::Float, 8) => float_bounds(raw, f64::from_le_bytes),
            (NumericClass::Unsigned | NumericClass::Opaque, 1) => unsigned_bounds(raw, u8::from_le_bytes),
            (NumericClass::Unsigned | NumericClass::Opaque, 2) => unsigned_bounds(raw, u16::from_le_bytes),
            (NumericClass::Unsigned | NumericClass::Opaque, 4) => unsigned_bounds(raw, u32::from_le_bytes),
            (NumericClass::Unsigned | NumericClass::Opaque, 8) => unsigned_bounds(raw, u64::from_le_bytes),
            // Column types fix the widths: reading another width as one of these
            // would give wrong bounds, so it is a bug, not a value to store.
            (class, width) => unreachable!("no column type has {width}-byte {class:?} values"),
        })
    }

    /// The 16 bytes stored in the index: min then max, each 8 bytes little-endian.
    pub fn encode(self) -> [u8; 16] {
        let (a, b) = match self {
            BlockBounds::Signed(lo, hi) => (lo.to_le_bytes(), hi.to_le_bytes()),
            BlockBounds::Unsigned(lo, hi) => (lo.to_le_bytes(), hi.to_le_bytes()),
            BlockBounds::Float(lo, hi) => (lo.to_le_bytes(), hi.to_le_bytes()),
        };
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&a);
        out[8..].copy_from_slice(&b);
        out
    }

    /// Reads bounds stored by [`BlockBounds::encode`] for elements of `kind`.
    pub fn decode(kind: ElementKind, bytes: &[u8; 16]) -> BlockBounds {
        let lo: [u8; 8] = bytes[..8].try_into().expect("8");
        let hi: [u8; 8] = bytes[8..].try_into().expect("8");
        match kind.class {
            NumericClass::Signed => BlockBounds::Signed(i64::from_le_bytes(lo), i64::from_le_bytes(hi)),
            NumericClass::Float => BlockBounds::Float(f64::from_le_bytes(lo), f64::from_le_bytes(hi)),
            _ => BlockBounds::Unsigned(u64::from_le_bytes(lo), u64::from_le_bytes(hi)),
        }
    }
}

fn signed_bounds<const W: usize, T: Into<i64> + Ord + Copy>(raw: &[u8], read: fn([u8; W]) -> T) -> BlockBounds {
    let (lo, hi) = min_max(raw, read);
    BlockBounds::Signed(lo.into(), hi.into())
}

fn unsigned_bounds<const W: usize, T: Into<u64> + Ord + Copy>(raw: &[u8], read: fn([u8; W]) -> T) -> BlockBounds {
    let (lo, hi) = min_max(raw, read);
    BlockBounds::Unsigned(lo.into(), hi.into())
}

/// The least and greatest of a non-empty block's values, seeded with the first
/// value so the loop is a plain vectorisable min/max.
fn min_max<const W: usize, T: Ord + Copy>(raw: &[u8], read: fn([u8; W]) -> T) -> (T, T) {
    let first = read(raw[..W].try_into().expect("a non-empty block"));
    values(raw, read).fold((first, first), |(lo, hi), v| (lo.min(v), hi.max(v)))
}

fn float_bounds<const W: usize, T: Into<f64> + Copy>(raw: &[u8], read: fn([u8; W]) -> T) -> BlockBounds {
    // f64::min and max ignore a NaN operand, so NaNs drop out; all NaN stays NaN.
    let (lo, hi) = values(raw, read).map(Into::into).fold((f64::NAN, f64::NAN), |(lo, hi), v| (v.min(lo), v.max(hi)));
    BlockBounds::Float(lo, hi)
}

fn values<const W: usize, T>(raw: &[u8], read: fn([u8; W]) -> T) -> impl Iterator<Item = T> + use<'_, W, T> {
    raw.chunks_exact(W).map(move |c| read(c.try_into().expect("chunks of W bytes")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_by_class() {
        let ints: Vec<u8> = [5i32, -3, 9].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(BlockBounds::of(ElementKind::new(4, NumericClass::Signed), &ints), Some(BlockBounds::Signed(-3, 9)));
        let floats: Vec<u8> = [1.5f64, f64::NAN, -2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let b = BlockBounds::of(ElementKind::new(8, NumericClass::Float), &floats).unwrap();
        assert_eq!(b, BlockBounds::Float(-2.0, 1.5));
        assert_eq!(BlockBounds::decode(ElementKind::new(8, NumericClass::Float), &b.encode()), b);
        assert_eq!(BlockBounds::of(ElementKind::BYTES, &[]), None);
    }

    #[test]
    fn bounds_at_every_width() {
        let bytes = |values: &[&[u8]]| values.concat();
        let signed = |w| ElementKind::new(w, NumericClass::Signed);
        let shorts = bytes(&[&7i16.to_le_bytes(), &(-300i16).to_le_bytes(), &2i16.to_le_bytes()]);
        assert_eq!(BlockBounds::of(signed(2), &shorts), Some(BlockBounds::Signed(-300, 7)));
        let longs = bytes(&[&i64::MIN.to_le_bytes(), &0i64.to_le_bytes(), &i64::MAX.to_le_bytes()]);
        assert_eq!(BlockBounds::of(signed(8), &longs), Some(BlockBounds::Signed(i64::MIN, i64::MAX)));
        assert_eq!(BlockBounds::of(ElementKind::BYTES, b"RAR "), Some(BlockBounds::Unsigned(b' ' as u64, b'R' as u64)));
        let keys = bytes(&[&9u32.to_le_bytes(), &u32::MAX.to_le_bytes(), &3u32.to_le_bytes()]);
        let symbol = ElementKind::new(4, NumericClass::Unsigned);
        assert_eq!(BlockBounds::of(symbol, &keys), Some(BlockBounds::Unsigned(3, u32::MAX as u64)));
        let reals = bytes(&[&f32::NAN.to_le_bytes(), &0.5f32.to_le_bytes(), &(-1.25f32).to_le_bytes()]);
        let real = ElementKind::new(4, NumericClass::Float);
        assert_eq!(BlockBounds::of(real, &reals), Some(BlockBounds::Float(-1.25, 0.5)));
        let Some(BlockBounds::Float(lo, hi)) = BlockBounds::of(real, &f32::NAN.to_le_bytes()) else {
            panic!("a float block has float bounds")
        };
        assert!(lo.is_nan() && hi.is_nan(), "an all-NaN block keeps NaN bounds");
    }
}
