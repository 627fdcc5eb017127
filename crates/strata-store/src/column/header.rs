//! The 64-byte header both kinds of column file start with. Bytes 0..12 and the
//! checksum at 28..32 are common; each kind uses 12..28 (and, from its version 2 on,
//! 32..64) for its own fields.
//!
//! ```text
//! 0   magic (8 bytes, names the kind)   10  type code u8   12..28  kind-specific
//! 8   format version u16                11  attribute u8   28      crc32c (below)
//! 32..64  kind-specific from version 2 on (zero before)
//! ```
//! The checksum covers bytes 0..28 in version 1 and bytes 0..28 then 32..64 from
//! version 2 on, so a field added there is as well protected as the first ones. In
//! version 1 bytes 32..64 are checked to be zero instead, so that a flipped bit
//! anywhere in a column file is found (the checksums cover the rest).

use std::ops::RangeInclusive;
use std::path::Path;

use crate::error::{Result, corrupt};
use crate::types::{Attribute, ColumnType};

/// Bytes before the first value or block.
pub const HEADER_LEN: usize = 64;

/// A header with the common fields filled in for format `version`; the caller adds
/// its own fields to bytes 12..28 (and 32..64 from version 2), then calls [`seal`].
pub(super) fn start(magic: &[u8; 8], version: u16, ty: ColumnType, attribute: Attribute) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[0..8].copy_from_slice(magic);
    h[8..10].copy_from_slice(&version.to_le_bytes());
    h[10] = ty.code();
    h[11] = attribute as u8;
    h
}

/// Writes the header's checksum (over the bytes its version covers) at 28..32.
pub(super) fn seal(h: &mut [u8; HEADER_LEN]) {
    let crc = checksum(h);
    h[28..32].copy_from_slice(&crc.to_le_bytes());
}

/// The checksum of a header, by the version it states.
fn checksum(h: &[u8]) -> u32 {
    let crc = crc32c::crc32c(&h[0..28]);
    if u16::from_le_bytes([h[8], h[9]]) >= 2 { crc32c::crc32c_append(crc, &h[32..HEADER_LEN]) } else { crc }
}

/// What the common part of a header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Common {
    pub ty: ColumnType,
    pub attribute: Attribute,
    pub version: u16,
}

/// Checks length, magic, version (one of `versions`) and checksum, and reads type and
/// attribute. `kind` names the file kind in errors ("plain", "compressed").
pub(super) fn open(
    path: &Path,
    h: &[u8],
    magic: &[u8; 8],
    kind: &str,
    versions: RangeInclusive<u16>,
) -> Result<Common> {
    if h.len() < HEADER_LEN {
        return Err(corrupt(path, format!("{kind} column header is {} bytes, expected {HEADER_LEN}", h.len())));
    }
    if &h[0..8] != magic {
        return Err(corrupt(path, format!("not a {kind} column file (bad magic)")));
    }
    let stored = u32::from_le_bytes(h[28..32].try_into().expect("4 bytes"));
    let computed = checksum(h);
    if stored != computed {
        return Err(corrupt(
            path,
            format!("{kind} column header checksum {stored:#010x} does not match {computed:#010x}"),
        ));
    }
    let version = u16::from_le_bytes([h[8], h[9]]);
    if version < 2
        && let Some(at) = h[32..HEADER_LEN].iter().position(|&b| b != 0)
    {
        return Err(corrupt(path, format!("{kind} column header byte {} is not zero", 32 + at)));
    }
    if !versions.contains(&version) {
        return Err(corrupt(
            path,
            format!(
                "{kind} column format version {version}, this build reads versions {} to {}",
                versions.start(),
                versions.end()
            ),
        ));
    }
    let ty = ColumnType::from_code(h[10]).ok_or_else(|| corrupt(path, format!("unknown type code {}", h[10])))?;
    let attribute =
        Attribute::from_code(h[11]).ok_or_else(|| corrupt(path, format!("unknown attribute code {}", h[11])))?;
    Ok(Common { ty, attribute, version })
}
