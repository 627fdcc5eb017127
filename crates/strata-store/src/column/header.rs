//! The 64-byte header both kinds of column file start with. Bytes 0..12 and the
//! checksum at 28..32 are common; each kind uses 12..28 for its own fields.
//!
//! ```text
//! 0   magic (8 bytes, names the kind)   10  type code u8   12..28  kind-specific
//! 8   format version u16                11  attribute u8   28      crc32c of bytes 0..28
//! 32..64  zero
//! ```
//!
//! The zero bytes are checked on open, so that a flipped bit anywhere in a column
//! file is found (the checksums cover the rest).

use std::path::Path;

use crate::error::{Result, corrupt};
use crate::types::{Attribute, ColumnType};

/// Bytes before the first value or block.
pub const HEADER_LEN: usize = 64;
/// The format version this build writes and reads.
const VERSION: u16 = 1;

/// A header with the common fields filled in; the caller adds its own fields to
/// bytes 12..28, then calls [`seal`].
pub(super) fn start(magic: &[u8; 8], ty: ColumnType, attribute: Attribute) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[0..8].copy_from_slice(magic);
    h[8..10].copy_from_slice(&VERSION.to_le_bytes());
    h[10] = ty.code();
    h[11] = attribute as u8;
    h
}

/// Writes the checksum of bytes 0..28 at 28..32.
pub(super) fn seal(h: &mut [u8; HEADER_LEN]) {
    let crc = crc32c::crc32c(&h[0..28]);
    h[28..32].copy_from_slice(&crc.to_le_bytes());
}

/// Checks length, magic, checksum and version, and reads type and attribute.
/// `kind` names the file kind in errors ("plain", "compressed").
pub(super) fn open(path: &Path, h: &[u8], magic: &[u8; 8], kind: &str) -> Result<(ColumnType, Attribute)> {
    if h.len() < HEADER_LEN {
        return Err(corrupt(path, format!("{kind} column header is {} bytes, expected {HEADER_LEN}", h.len())));
    }
    if &h[0..8] != magic {
        return Err(corrupt(path, format!("not a {kind} column file (bad magic)")));
    }
    let stored = u32::from_le_bytes(h[28..32].try_into().expect("4 bytes"));
    let computed = crc32c::crc32c(&h[0..28]);
    if stored != computed {
        return Err(corrupt(
            path,
            format!("{kind} column header checksum {stored:#010x} does not match {computed:#010x}"),
        ));
    }
    if let Some(at) = h[32..HEADER_LEN].iter().position(|&b| b != 0) {
        return Err(corrupt(path, format!("{kind} column header byte {} is not zero", 32 + at)));
    }
    let version = u16::from_le_bytes([h[8], h[9]]);
    if version != VERSION {
        return Err(corrupt(path, format!("format version {version}, this build reads {VERSION}")));
    }
    let ty = ColumnType::from_code(h[10]).ok_or_else(|| corrupt(path, format!("unknown type code {}", h[10])))?;
    let attribute =
        Attribute::from_code(h[11]).ok_or_else(|| corrupt(path, format!("unknown attribute code {}", h[11])))?;
    Ok((ty, attribute))
}
