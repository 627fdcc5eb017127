//! Plain column files: a 64-byte header, then raw little-endian values.
//!
//! ```text
//! 0   magic "STRPLAIN"        16  count u64 (values)
//! 8   version u16 (2)         24  crc32c of the values u32
//! 10  type code u8            28  crc32c of bytes 0..28 and 32..64 u32
//! 11  attribute u8            32  null count u64 (u64::MAX: not recorded)
//! 40  zero padding to 64
//! 64  values, count * width bytes
//! ```
//! Values start at byte 64 of a page-aligned mapping, so they satisfy Arrow's
//! alignment and are handed to Arrow without a copy. The header's count, not the file
//! length, says how many values there are: an append writes the values first and the
//! count last, so a crash between the two leaves the old column intact.
//!
//! The null count (kdb+ nulls among the values, see [`crate::nulls`]) lets readers
//! skip looking for nulls in a file that has none. It is not recorded for symbols and
//! strings, whose nulls cannot be told from the values alone. Version 1 files (before
//! null counts; their checksum covers bytes 0..28 only) are still read, with no
//! count, and an append keeps a file's version.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Arc;

use arrow_buffer::Buffer;

use super::header::{self, HEADER_LEN};
use super::verified::{self, FileVersion};
use crate::durable::{AtomicFile, Durability, open_rw};
use crate::error::{IoContext, Result, corrupt};
use crate::nulls::count_nulls;
use crate::types::{Attribute, ColumnType};

/// The first 8 bytes of every plain column file.
pub const PLAIN_MAGIC: &[u8; 8] = b"STRPLAIN";
/// The format version written: 2 added the null count.
const VERSION: u16 = 2;
/// The versions read: 1 has no null count.
const VERSIONS_READ: std::ops::RangeInclusive<u16> = 1..=VERSION;
/// The null count's value when none is recorded.
const NULLS_NOT_RECORDED: u64 = u64::MAX;

/// The decoded header of a plain column file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlainHeader {
    /// Value type.
    pub ty: ColumnType,
    /// Attribute the values were validated for.
    pub attribute: Attribute,
    /// Number of values.
    pub count: u64,
    /// crc32c of the value bytes.
    pub values_crc: u32,
    /// How many values are kdb+ nulls, if recorded (not for symbols, strings and
    /// version 1 files).
    pub nulls: Option<u64>,
    /// The file's format version (1 or 2).
    pub version: u16,
}

impl PlainHeader {
    fn encode(&self) -> [u8; HEADER_LEN] {
        let mut h = header::start(PLAIN_MAGIC, self.version, self.ty, self.attribute);
        h[16..24].copy_from_slice(&self.count.to_le_bytes());
        h[24..28].copy_from_slice(&self.values_crc.to_le_bytes());
        if self.version >= 2 {
            h[32..40].copy_from_slice(&self.nulls.unwrap_or(NULLS_NOT_RECORDED).to_le_bytes());
        }
        header::seal(&mut h);
        h
    }

    fn decode(path: &Path, h: &[u8]) -> Result<PlainHeader> {
        let common = header::open(path, h, PLAIN_MAGIC, "plain", VERSIONS_READ)?;
        let count = u64::from_le_bytes(h[16..24].try_into().expect("8 bytes"));
        let values_crc = u32::from_le_bytes(h[24..28].try_into().expect("4 bytes"));
        let nulls = match common.version {
            1 => None,
            _ => Some(u64::from_le_bytes(h[32..40].try_into().expect("8 bytes"))).filter(|n| *n != NULLS_NOT_RECORDED),
        };
        if let Some(n) = nulls
            && n > count
        {
            return Err(corrupt(path, format!("header records {n} nulls among {count} values")));
        }
        Ok(PlainHeader {
            ty: common.ty,
            attribute: common.attribute,
            count,
            values_crc,
            nulls,
            version: common.version,
        })
    }
}

/// Writes `values` (raw little-endian bytes of `ty`) as a plain column file, atomically.
pub fn write_plain(
    path: &Path,
    ty: ColumnType,
    attribute: Attribute,
    values: &[u8],
    durability: Durability,
) -> Result<()> {
    debug_assert_eq!(values.len() % ty.width(), 0);
    let header = PlainHeader {
        ty,
        attribute,
        count: (values.len() / ty.width()) as u64,
        values_crc: crc32c::crc32c(values),
        nulls: count_nulls(ty, values),
        version: VERSION,
    };
    let mut file = AtomicFile::create(path, durability)?;
    file.write_all(&header.encode())?;
    file.write_all(values)?;
    file.commit()
}

/// Appends raw values to an existing plain column file: values first, then the
/// header's count, checksum and null count, each synced when `durability` asks.
pub fn append_plain(path: &Path, values: &[u8], durability: Durability) -> Result<()> {
    let file = open_rw(path)?;
    let header = read_header(path, &file)?;
    let end = values_end(path, &file, &header)?;
    if !values.len().is_multiple_of(header.ty.width()) {
        return Err(crate::StoreError::Invalid(format!(
            "{}: {} bytes are not a whole number of {} values",
            path.display(),
            values.len(),
            header.ty
        )));
    }
    file.write_all_at(values, end).at(path)?;
    // Drop whatever a torn earlier append left past the new end.
    file.set_len(end + values.len() as u64).at(path)?;
    if durability == Durability::Fsync {
        file.sync_data().at(path)?;
    }
    let updated = PlainHeader {
        count: header.count + (values.len() / header.ty.width()) as u64,
        values_crc: crc32c::crc32c_append(header.values_crc, values),
        nulls: header.nulls.and_then(|n| Some(n + count_nulls(header.ty, values)?)),
        ..header
    };
    file.write_all_at(&updated.encode(), 0).at(path)?;
    if durability == Durability::Fsync {
        file.sync_data().at(path)?;
    }
    Ok(())
}

/// The byte just past the last value the header promises, checked against the file's
/// length (a truncated file is corrupt, not a column with zeros at the end).
fn values_end(path: &Path, file: &File, header: &PlainHeader) -> Result<u64> {
    let needed = header.count.checked_mul(header.ty.width() as u64).and_then(|b| b.checked_add(HEADER_LEN as u64));
    let len = file.metadata().at(path)?.len();
    match needed {
        Some(n) if n <= len => Ok(n),
        _ => Err(corrupt(
            path,
            format!(
                "header promises {} {} values but the file is only {len} bytes (truncated?)",
                header.count, header.ty
            ),
        )),
    }
}

fn read_header(path: &Path, file: &File) -> Result<PlainHeader> {
    let mut h = [0u8; HEADER_LEN];
    let len = file.metadata().at(path)?.len();
    if len < HEADER_LEN as u64 {
        return Err(corrupt(path, format!("file is {len} bytes, shorter than the {HEADER_LEN}-byte header")));
    }
    file.read_exact_at(&mut h, 0).at(path)?;
    PlainHeader::decode(path, &h)
}

/// An open plain column file, memory-mapped.
///
/// The mapping is shared by every [`Buffer`] handed out, so values reach Arrow without
/// a copy. Plain files are sealed once written (appends go through
/// [`append_plain`], which readers should not run concurrently with).
pub struct PlainColumn {
    path: PathBuf,
    header: PlainHeader,
    map: Arc<memmap2::Mmap>,
    /// The version of the file mapped, for checking it once per process.
    version: Option<FileVersion>,
}

impl PlainColumn {
    /// Opens and maps `path`, checking the header and that the file holds every value.
    pub fn open(path: &Path) -> Result<PlainColumn> {
        PlainColumn::from_file(path, File::open(path).at(path)?)
    }

    /// [`PlainColumn::open`] of the file open as `file` (`path` names it in messages).
    pub(crate) fn from_file(path: &Path, file: File) -> Result<PlainColumn> {
        let header = read_header(path, &file)?;
        values_end(path, &file, &header)?;
        // SAFETY: the file is mapped read-only; Strata never truncates a sealed column
        // file in place (rewrites go to a new file and rename over it).
        let map = unsafe { memmap2::Mmap::map(&file) }.at(path)?;
        let version = FileVersion::of(&file);
        Ok(PlainColumn { path: path.to_path_buf(), header, map: Arc::new(map), version })
    }

    /// The header.
    pub fn header(&self) -> &PlainHeader {
        &self.header
    }

    /// The path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Values `start..end` as an Arrow buffer over the mapping: no copy.
    pub fn values(&self, start: usize, end: usize) -> Buffer {
        let w = self.header.ty.width();
        assert!(start <= end && end as u64 <= self.header.count, "rows {start}..{end} of {}", self.header.count);
        let offset = HEADER_LEN + start * w;
        let len = (end - start) * w;
        // SAFETY: offset + len lies within the mapping (checked in `open` and above), and
        // the Arc<Mmap> owner keeps the mapping alive as long as the buffer.
        unsafe {
            let ptr = NonNull::new(self.map.as_ptr().add(offset) as *mut u8).expect("mapping is non-null");
            Buffer::from_custom_allocation(ptr, len, self.map.clone())
        }
    }

    /// Whether rows `start..end` may hold kdb+ nulls: false only when the header
    /// records a null count of 0 (or the range is empty).
    pub fn may_hold_nulls(&self, start: usize, end: usize) -> bool {
        start < end && self.header.nulls != Some(0)
    }

    /// Checks the values against the header's checksum, unless this process has
    /// checked this version of the file already ([`super::verified`]).
    pub fn verify_once(&self) -> Result<()> {
        if verified::was_checked(self.version) {
            return Ok(());
        }
        self.verify()?;
        verified::record_checked(self.version);
        Ok(())
    }

    /// Checks the values against the header's checksum (reading every page).
    pub fn verify(&self) -> Result<()> {
        let bytes = self.values(0, self.header.count as usize);
        let computed = crc32c::crc32c(&bytes);
        if computed != self.header.values_crc {
            let values = self.values_range();
            return Err(corrupt(
                &self.path,
                format!(
                    "values (bytes {}..{}) have checksum {computed:#010x}, the header's is {:#010x}: a value \
                     changed on disk",
                    values.start, values.end, self.header.values_crc
                ),
            ));
        }
        Ok(())
    }

    /// The bytes of the file the header's values occupy.
    pub fn values_range(&self) -> std::ops::Range<u64> {
        let start = HEADER_LEN as u64;
        start..start + self.header.count * self.header.ty.width() as u64
    }

    /// Bytes the file occupies on disk (its length).
    pub fn stored_bytes(&self) -> u64 {
        self.map.len() as u64
    }
}
