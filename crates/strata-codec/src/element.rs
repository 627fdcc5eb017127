//! What a codec needs to know about the values inside a byte slice.

use std::fmt;

/// The numeric class of fixed-width elements, which decides which filters and
/// codecs make sense (delta needs integers, pcodec needs numbers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NumericClass {
    /// Two's-complement integers, including temporal types stored as integers.
    Signed,
    /// Unsigned integers (symbol indices).
    Unsigned,
    /// IEEE-754 floats.
    Float,
    /// Bytes with no arithmetic meaning: booleans, chars, string data.
    Opaque,
}

/// The layout of the values in a buffer handed to a codec: their width in bytes
/// and their numeric class. Buffers are little-endian and a whole number of elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ElementKind {
    /// Bytes per element: 1, 2, 4 or 8.
    pub width: usize,
    /// How the bytes are to be read as numbers.
    pub class: NumericClass,
}

impl ElementKind {
    /// Opaque single bytes: what a codec sees when nothing is known about the data.
    pub const BYTES: ElementKind = ElementKind { width: 1, class: NumericClass::Opaque };

    /// A kind of the given width and class.
    pub const fn new(width: usize, class: NumericClass) -> ElementKind {
        ElementKind { width, class }
    }

    /// Whether the elements are integers (signed or unsigned).
    pub fn is_integer(self) -> bool {
        matches!(self.class, NumericClass::Signed | NumericClass::Unsigned)
    }
}

impl fmt::Display for ElementKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let class = match self.class {
            NumericClass::Signed => "i",
            NumericClass::Unsigned => "u",
            NumericClass::Float => "f",
            NumericClass::Opaque => "byte",
        };
        if self.class == NumericClass::Opaque {
            write!(f, "{}-byte opaque", self.width)
        } else {
            write!(f, "{class}{}", self.width * 8)
        }
    }
}
