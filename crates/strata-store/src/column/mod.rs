//! Column files, plain or block-compressed, and the operations over both kinds:
//! open, read a row range, append, convert, stats.

mod bounds;
mod compressed;
mod header;
mod plain;
mod verified;

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_buffer::Buffer;
use strata_codec::auto::choose;
use strata_codec::{Algorithm, CodecError, CompressionSpec};

pub use bounds::BlockBounds;
pub(crate) use compressed::TRAILER_MAGIC;
pub use compressed::{BlockEntry, COMPRESSED_MAGIC, CompressedColumn, CompressedHeader};
pub use plain::{PLAIN_MAGIC, PlainColumn, PlainHeader};

use crate::durable::Durability;
use crate::error::{IoContext, Result, corrupt};
use crate::types::{Attribute, ColumnType};

/// An open column file of either kind.
pub enum ColumnFile {
    /// Raw values, memory-mapped.
    Plain(PlainColumn),
    /// Independently compressed blocks.
    Compressed(CompressedColumn),
}

impl ColumnFile {
    /// Opens `path`, telling the kind by its magic bytes.
    pub fn open(path: &Path) -> Result<ColumnFile> {
        ColumnFile::from_file(path, File::open(path).at(path)?)
    }

    /// The column file open as `file` (`path` names it in messages), telling the
    /// kind by its magic bytes.
    pub fn from_file(path: &Path, file: File) -> Result<ColumnFile> {
        let mut magic = [0u8; 8];
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut magic, 0)
            .map_err(|_| corrupt(path, "file is shorter than the 8-byte magic: not a column file"))?;
        match &magic {
            m if m == PLAIN_MAGIC => Ok(ColumnFile::Plain(PlainColumn::from_file(path, file)?)),
            m if m == COMPRESSED_MAGIC => Ok(ColumnFile::Compressed(CompressedColumn::from_file(path, file)?)),
            other => Err(corrupt(
                path,
                format!("unknown magic {:?}: expected a Strata column file", String::from_utf8_lossy(other)),
            )),
        }
    }

    /// Opens `path` like [`ColumnFile::open`] and, when `verify_plain` is set, checks
    /// a plain file's values against the header's checksum the first time this
    /// process opens this version of the file (reading every page once; see
    /// [`crate::DbConfig::verify_plain_checksums`]). Compressed files need no such
    /// pass: every block is checked when it is read.
    pub fn open_checked(path: &Path, verify_plain: bool) -> Result<ColumnFile> {
        ColumnFile::open(path)?.checked(verify_plain)
    }

    /// This file, its values checked as [`ColumnFile::open_checked`] does when
    /// `verify_plain` is set.
    pub fn checked(self, verify_plain: bool) -> Result<ColumnFile> {
        if let (true, ColumnFile::Plain(plain)) = (verify_plain, &self) {
            plain.verify_once()?;
        }
        Ok(self)
    }

    /// The value type.
    pub fn ty(&self) -> ColumnType {
        match self {
            ColumnFile::Plain(p) => p.header().ty,
            ColumnFile::Compressed(c) => c.header().ty,
        }
    }

    /// The attribute the values were validated for.
    pub fn attribute(&self) -> Attribute {
        match self {
            ColumnFile::Plain(p) => p.header().attribute,
            ColumnFile::Compressed(c) => c.header().attribute,
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            ColumnFile::Plain(p) => p.header().count as usize,
            ColumnFile::Compressed(c) => c.count() as usize,
        }
    }

    /// Whether the file holds no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How the file is encoded (`none` for plain files).
    pub fn spec(&self) -> CompressionSpec {
        match self {
            ColumnFile::Plain(_) => CompressionSpec::none(),
            ColumnFile::Compressed(c) => c.header().spec.clone(),
        }
    }

    /// Whether rows `start..end` may hold kdb+ nulls (see [`crate::nulls`]): false
    /// only when the file's null counts (per plain file, per compressed block) say
    /// none do. Symbols, strings and files written before counts have none, so may.
    pub fn may_hold_nulls(&self, start: usize, end: usize) -> bool {
        match self {
            ColumnFile::Plain(p) => p.may_hold_nulls(start, end),
            ColumnFile::Compressed(c) => c.may_hold_nulls(start, end),
        }
    }

    /// Values `start..end` as raw little-endian bytes: a view of the mapping for plain
    /// files (no copy), the decoded blocks for compressed ones.
    pub fn values(&self, start: usize, end: usize) -> Result<Buffer> {
        match self {
            ColumnFile::Plain(p) => Ok(p.values(start, end)),
            ColumnFile::Compressed(c) => c.values(start, end),
        }
    }

    /// Every value.
    pub fn all_values(&self) -> Result<Buffer> {
        self.values(0, self.len())
    }

    /// Size, ratio and encoding of the file, like kdb+'s `-21!`.
    pub fn stats(&self, path: &Path) -> FileStats {
        let ty = self.ty();
        let (stored_bytes, spec, blocks) = match self {
            ColumnFile::Plain(p) => (p.stored_bytes(), CompressionSpec::none(), 0),
            ColumnFile::Compressed(c) => (c.stored_bytes(), c.header().spec.clone(), c.blocks().len()),
        };
        FileStats {
            path: path.to_path_buf(),
            ty,
            rows: self.len() as u64,
            raw_bytes: (self.len() * ty.width()) as u64,
            stored_bytes,
            spec,
            blocks,
        }
    }
}

/// Size and encoding of one column file.
#[derive(Clone, Debug, PartialEq)]
pub struct FileStats {
    /// The file.
    pub path: PathBuf,
    /// Value type stored in it.
    pub ty: ColumnType,
    /// Values in the file.
    pub rows: u64,
    /// Bytes of the values uncompressed (kdb+'s `uncompressedLength`, less header).
    pub raw_bytes: u64,
    /// Bytes the file takes (kdb+'s `compressedLength`).
    pub stored_bytes: u64,
    /// Encoding: algorithm, level, lbs and filters.
    pub spec: CompressionSpec,
    /// Number of compressed blocks (0 for plain files).
    pub blocks: usize,
}

impl FileStats {
    /// Raw bytes per stored byte: above 1 means the encoding saves space.
    pub fn ratio(&self) -> f64 {
        if self.stored_bytes == 0 { 0.0 } else { self.raw_bytes as f64 / self.stored_bytes as f64 }
    }

    /// The algorithm (kdb+'s number via [`Algorithm::code`]).
    pub fn algorithm(&self) -> Algorithm {
        self.spec.algorithm
    }
}

/// The concrete spec `spec` stands for on `values` (raw little-endian bytes of `ty`):
/// `spec` itself, or for `auto` the chain [`strata_codec::auto::choose`] picks on a
/// sample of the values.
pub fn resolve_spec(
    spec: &CompressionSpec,
    ty: ColumnType,
    values: &[u8],
) -> std::result::Result<CompressionSpec, CodecError> {
    match spec.auto {
        Some(objective) => Ok(choose(ty.element_kind(), values, objective, spec.lbs)?.spec),
        None => Ok(spec.clone()),
    }
}

/// Writes `values` (raw little-endian bytes of `ty`) to `path` with `spec`: a plain
/// file for `none`, a compressed one otherwise; `auto` is resolved on the values
/// first ([`resolve_spec`]) and the chosen chain is what the file records. Atomic.
pub fn write_column_file(
    path: &Path,
    ty: ColumnType,
    attribute: Attribute,
    spec: &CompressionSpec,
    values: &[u8],
    durability: Durability,
) -> Result<()> {
    let resolved;
    let spec = if spec.is_auto() {
        resolved = resolve_spec(spec, ty, values).map_err(|source| crate::StoreError::Codec {
            path: path.to_path_buf(),
            block: None,
            source,
        })?;
        &resolved
    } else {
        spec
    };
    if spec.is_compressed() {
        compressed::write_compressed(path, ty, attribute, spec, values, durability)
    } else {
        plain::write_plain(path, ty, attribute, values, durability)
    }
}

/// Appends raw values to a column file of either kind, keeping its encoding.
///
/// A file with an attribute is refused: the appended values could break its promise
/// and its index would go stale, so such columns are rewritten whole instead.
pub fn append_column_file(path: &Path, values: &[u8], durability: Durability) -> Result<()> {
    let file = ColumnFile::open(path)?;
    if file.attribute() != Attribute::None {
        return Err(crate::StoreError::Invalid(format!(
            "{}: cannot append to a column with the {} attribute; rewrite the table instead",
            path.display(),
            file.attribute()
        )));
    }
    match file {
        ColumnFile::Plain(p) => {
            drop(p);
            plain::append_plain(path, values, durability)
        }
        ColumnFile::Compressed(c) => {
            drop(c);
            compressed::append_compressed(path, values, durability)
        }
    }
}

/// Re-encodes a column file with `spec` (plain to compressed, compressed to another
/// spec, or back to plain with `none`), atomically: the old file stays until the new
/// one is complete. Returns the stats of the new file.
pub fn convert_column_file(path: &Path, spec: &CompressionSpec, durability: Durability) -> Result<FileStats> {
    let file = ColumnFile::open(path)?;
    let (ty, attribute) = (file.ty(), file.attribute());
    let values = file.all_values()?;
    drop(file);
    write_column_file(path, ty, attribute, spec, &values, durability)?;
    Ok(ColumnFile::open(path)?.stats(path))
}

#[cfg(test)]
mod tests;
