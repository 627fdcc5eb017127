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
    pub fn of(kind: ElementKind, raw: &[u8]) -> Option<BlockBounds> {
        if raw.is_empty() {
            return None;
        }
        let w = kind.width;
        let chunks = raw.chunks_exact(w);
        Some(match kind.class {
            NumericClass::Signed => {
                let it = chunks.map(signed);
                let (lo, hi) = it.fold((i64::MAX, i64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
                BlockBounds::Signed(lo, hi)
            }
            NumericClass::Unsigned | NumericClass::Opaque => {
                let it = chunks.map(unsigned);
                let (lo, hi) = it.fold((u64::MAX, 0), |(lo, hi), v| (lo.min(v), hi.max(v)));
                BlockBounds::Unsigned(lo, hi)
            }
            NumericClass::Float => {
                let it = chunks.map(|c| {
                    if w == 4 {
                        f32::from_le_bytes(c.try_into().expect("4")) as f64
                    } else {
                        f64::from_le_bytes(c.try_into().expect("8"))
                    }
                });
                let (lo, hi) =
                    it.filter(|v| !v.is_nan()).fold((f64::NAN, f64::NAN), |(lo, hi), v| (v.min(lo), v.max(hi)));
                BlockBounds::Float(lo, hi)
            }
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

fn signed(c: &[u8]) -> i64 {
    match c.len() {
        2 => i16::from_le_bytes(c.try_into().expect("2")) as i64,
        4 => i32::from_le_bytes(c.try_into().expect("4")) as i64,
        _ => i64::from_le_bytes(c.try_into().expect("8")),
    }
}

fn unsigned(c: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b[..c.len()].copy_from_slice(c);
    u64::from_le_bytes(b)
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
}
