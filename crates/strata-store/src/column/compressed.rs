//! Compressed column files: independent blocks, each checksummed, and an index.
//!
//! ```text
//! 0    header, 64 bytes: magic "STRZBLKS", version u16, type u8, attribute u8,
//!      algorithm u8, level i8, lbs u8, filter count u8, filter codes [u8; 4],
//!      zero padding, crc32c of bytes 0..28 at 28..32
//! 64   block payloads, back to back
//! I    index: one 40-byte entry per block: offset u64, stored length u32,
//!      raw length u32, crc32c of the stored bytes u32, flags u8 (1 stored raw,
//!      2 has bounds, 4 has a null count), null count u24, min 8 bytes, max 8 bytes
//! end  trailer, 48 bytes: value count u64, block count u64, index offset u64,
//!      raw bytes u64, index crc32c u32, trailer crc32c u32, magic "STRZTAIL"
//! ```
//! Each block holds `2^lbs` raw bytes (the last one the remainder), so a row range
//! maps to a block range by arithmetic and only those blocks are read and decoded.
//! An append writes new blocks and a new index and trailer after the old trailer,
//! never over it, so a crash mid-append leaves the previous trailer valid; readers
//! fall back to the last valid trailer when the tail is torn.
//!
//! The null count (kdb+ nulls in the block, see [`crate::nulls`]) lets readers skip
//! looking for nulls in blocks that have none; symbols and strings have none recorded
//! (their nulls cannot be told from the values alone). It went into bytes that the
//! first files left zero and their readers ignore, so the format stays version 1 and
//! both old and new builds read every file: an entry without flag 4 (written before
//! counts, or rewritten by an older build's append, which clears it) has no count.
//! A block holds at most 2^20 values (lbs at most 20), well within 24 bits.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use arrow_buffer::{Buffer, MutableBuffer};
use rayon::prelude::*;
use strata_codec::{Algorithm, CompressionSpec, ElementKind, Filter, MAX_FILTERS, compress_block, decompress_block};

use super::bounds::BlockBounds;
use super::header::{self, HEADER_LEN};
use crate::durable::{AtomicFile, Durability, open_rw};
use crate::error::{IoContext, Result, StoreError, corrupt};
use crate::nulls::count_nulls;
use crate::types::{Attribute, ColumnType};

/// The first 8 bytes of every compressed column file.
pub const COMPRESSED_MAGIC: &[u8; 8] = b"STRZBLKS";
/// The last 8 bytes of a compressed column file's trailer.
pub(crate) const TRAILER_MAGIC: &[u8; 8] = b"STRZTAIL";
const ENTRY_LEN: usize = 40;
const TRAILER_LEN: usize = 48;
/// The format version written and read.
const VERSION: u16 = 1;
const FLAG_RAW: u8 = 1;
const FLAG_BOUNDS: u8 = 2;
const FLAG_NULLS: u8 = 4;
/// Null counts are stored in 24 bits.
const MAX_RECORDED_NULLS: u32 = (1 << 24) - 1;

/// One block's place and summary in the index.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockEntry {
    /// Byte offset of the stored block in the file.
    pub offset: u64,
    /// Bytes stored.
    pub stored_len: u32,
    /// Bytes after decoding.
    pub raw_len: u32,
    /// crc32c of the stored bytes.
    pub crc: u32,
    /// Whether the block is stored raw because compressing did not shrink it.
    pub raw: bool,
    /// Smallest and largest value, for ordered types.
    pub bounds: Option<BlockBounds>,
    /// How many values are kdb+ nulls, if recorded (not for symbols and strings).
    pub nulls: Option<u32>,
}

/// What a compressed file's header says.
#[derive(Clone, Debug, PartialEq)]
pub struct CompressedHeader {
    /// Value type.
    pub ty: ColumnType,
    /// Attribute the values were validated for.
    pub attribute: Attribute,
    /// How blocks are encoded.
    pub spec: CompressionSpec,
}

impl CompressedHeader {
    fn encode(&self) -> [u8; HEADER_LEN] {
        let mut h = header::start(COMPRESSED_MAGIC, VERSION, self.ty, self.attribute);
        h[12] = self.spec.algorithm.code();
        h[13] = self.spec.level as i8 as u8;
        h[14] = self.spec.lbs;
        h[15] = self.spec.filters.len() as u8;
        for (slot, f) in h[16..16 + MAX_FILTERS].iter_mut().zip(&self.spec.filters) {
            *slot = f.code();
        }
        header::seal(&mut h);
        h
    }

    fn decode(path: &Path, h: &[u8]) -> Result<CompressedHeader> {
        let common = header::open(path, h, COMPRESSED_MAGIC, "compressed", VERSION..=VERSION)?;
        let (ty, attribute) = (common.ty, common.attribute);
        let algorithm =
            Algorithm::from_code(h[12]).ok_or_else(|| corrupt(path, format!("unknown algorithm code {}", h[12])))?;
        let nfilters = h[15] as usize;
        if nfilters > MAX_FILTERS {
            return Err(corrupt(path, format!("{nfilters} filters, at most {MAX_FILTERS} are possible")));
        }
        let filters = h[16..16 + nfilters]
            .iter()
            .map(|&c| Filter::from_code(c).ok_or_else(|| corrupt(path, format!("unknown filter code {c}"))))
            .collect::<Result<Vec<_>>>()?;
        let spec = CompressionSpec { filters, algorithm, level: h[13] as i8 as i32, lbs: h[14], auto: None };
        spec.check_ranges().map_err(|source| StoreError::Codec { path: path.to_path_buf(), block: None, source })?;
        Ok(CompressedHeader { ty, attribute, spec })
    }
}

/// The trailer: where the index is and what it covers.
#[derive(Clone, Copy, Debug)]
struct Trailer {
    count: u64,
    nblocks: u64,
    index_offset: u64,
    raw_bytes: u64,
    index_crc: u32,
}

impl Trailer {
    fn encode(&self) -> [u8; TRAILER_LEN] {
        let mut t = [0u8; TRAILER_LEN];
        t[0..8].copy_from_slice(&self.count.to_le_bytes());
        t[8..16].copy_from_slice(&self.nblocks.to_le_bytes());
        t[16..24].copy_from_slice(&self.index_offset.to_le_bytes());
        t[24..32].copy_from_slice(&self.raw_bytes.to_le_bytes());
        t[32..36].copy_from_slice(&self.index_crc.to_le_bytes());
        let crc = crc32c::crc32c(&t[0..36]);
        t[36..40].copy_from_slice(&crc.to_le_bytes());
        t[40..48].copy_from_slice(TRAILER_MAGIC);
        t
    }

    /// The trailer in `t`, if it is one and its checksum holds.
    fn decode(t: &[u8]) -> Option<Trailer> {
        if t.len() != TRAILER_LEN || &t[40..48] != TRAILER_MAGIC {
            return None;
        }
        if u32::from_le_bytes(t[36..40].try_into().ok()?) != crc32c::crc32c(&t[0..36]) {
            return None;
        }
        let u = |r: std::ops::Range<usize>| u64::from_le_bytes(t[r].try_into().expect("8"));
        Some(Trailer {
            count: u(0..8),
            nblocks: u(8..16),
            index_offset: u(16..24),
            raw_bytes: u(24..32),
            index_crc: u32::from_le_bytes(t[32..36].try_into().expect("4")),
        })
    }
}

fn encode_index(entries: &[BlockEntry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len() * ENTRY_LEN);
    for e in entries {
        out.extend_from_slice(&e.offset.to_le_bytes());
        out.extend_from_slice(&e.stored_len.to_le_bytes());
        out.extend_from_slice(&e.raw_len.to_le_bytes());
        out.extend_from_slice(&e.crc.to_le_bytes());
        let nulls = e.nulls.filter(|n| *n <= MAX_RECORDED_NULLS);
        let flags = [(e.raw, FLAG_RAW), (e.bounds.is_some(), FLAG_BOUNDS), (nulls.is_some(), FLAG_NULLS)];
        out.push(flags.iter().filter(|(set, _)| *set).fold(0, |all, (_, flag)| all | flag));
        out.extend_from_slice(&nulls.unwrap_or(0).to_le_bytes()[..3]);
        out.extend_from_slice(&e.bounds.map(|b| b.encode()).unwrap_or([0; 16]));
    }
    out
}

fn decode_index(kind: ElementKind, bytes: &[u8]) -> Vec<BlockEntry> {
    bytes
        .chunks_exact(ENTRY_LEN)
        .map(|e| {
            let u32_at = |i: usize| u32::from_le_bytes(e[i..i + 4].try_into().expect("4"));
            BlockEntry {
                offset: u64::from_le_bytes(e[0..8].try_into().expect("8")),
                stored_len: u32_at(8),
                raw_len: u32_at(12),
                crc: u32_at(16),
                raw: e[20] & FLAG_RAW != 0,
                bounds: (e[20] & FLAG_BOUNDS != 0)
                    .then(|| BlockBounds::decode(kind, e[24..40].try_into().expect("16"))),
                nulls: (e[20] & FLAG_NULLS != 0).then(|| u32::from_le_bytes([e[21], e[22], e[23], 0])),
            }
        })
        .collect()
}

/// A block ready to be written: its stored bytes and index summary (offset unset).
struct EncodedBlock {
    bytes: Vec<u8>,
    entry: BlockEntry,
}

/// Compresses `raw` into blocks in parallel (rayon), each independently.
fn encode_blocks(
    ty: ColumnType,
    spec: &CompressionSpec,
    raw: &[u8],
) -> std::result::Result<Vec<EncodedBlock>, strata_codec::CodecError> {
    let kind = ty.element_kind();
    raw.par_chunks(spec.block_bytes())
        .map(|chunk| {
            let (bytes, is_raw) = match compress_block(spec, kind, chunk)? {
                Some(packed) => (packed, false),
                None => (chunk.to_vec(), true),
            };
            let bounds = if ty.has_block_bounds() { BlockBounds::of(kind, chunk) } else { None };
            let entry = BlockEntry {
                offset: 0,
                stored_len: bytes.len() as u32,
                raw_len: chunk.len() as u32,
                crc: crc32c::crc32c(&bytes),
                raw: is_raw,
                bounds,
                nulls: count_nulls(ty, chunk).map(|n| n as u32),
            };
            Ok(EncodedBlock { bytes, entry })
        })
        .collect()
}

fn codec_error(path: &Path, source: strata_codec::CodecError) -> StoreError {
    StoreError::Codec { path: path.to_path_buf(), block: None, source }
}

/// Writes `raw` values of `ty` as a compressed column file with `spec`, atomically.
/// Blocks are compressed in parallel on the current rayon pool.
pub fn write_compressed(
    path: &Path,
    ty: ColumnType,
    attribute: Attribute,
    spec: &CompressionSpec,
    raw: &[u8],
    durability: Durability,
) -> Result<()> {
    spec.check_suitable(ty.element_kind()).map_err(|e| codec_error(path, e))?;
    let blocks = encode_blocks(ty, spec, raw).map_err(|e| codec_error(path, e))?;
    let header = CompressedHeader { ty, attribute, spec: spec.clone() };
    let mut file = AtomicFile::create(path, durability)?;
    file.write_all(&header.encode())?;
    let mut offset = HEADER_LEN as u64;
    let mut entries = Vec::with_capacity(blocks.len());
    for block in blocks {
        file.write_all(&block.bytes)?;
        entries.push(BlockEntry { offset, ..block.entry });
        offset += block.bytes.len() as u64;
    }
    let index = encode_index(&entries);
    file.write_all(&index)?;
    let trailer = Trailer {
        count: (raw.len() / ty.width()) as u64,
        nblocks: entries.len() as u64,
        index_offset: offset,
        raw_bytes: raw.len() as u64,
        index_crc: crc32c::crc32c(&index),
    };
    file.write_all(&trailer.encode())?;
    file.commit()
}

/// An open compressed column file. Reads go through positioned reads of just the
/// blocks asked for; the count of blocks decoded is kept so tests and benchmarks can
/// prove that a range read touched only what it needed.
pub struct CompressedColumn {
    path: PathBuf,
    file: File,
    header: CompressedHeader,
    trailer: Trailer,
    entries: Vec<BlockEntry>,
    /// Bytes of the file up to the end of the trailer in use (a torn append may have
    /// left more).
    valid_len: u64,
    blocks_decoded: AtomicU64,
}

impl CompressedColumn {
    /// Opens `path`, reading header, trailer and index (not the blocks), and checking
    /// that the index is consistent. A torn tail from an interrupted append is skipped
    /// by finding the last valid trailer.
    pub fn open(path: &Path) -> Result<CompressedColumn> {
        let file = File::open(path).at(path)?;
        CompressedColumn::from_file(path, file)
    }

    /// [`CompressedColumn::open`] of the file open as `file` (`path` names it in
    /// messages).
    pub(crate) fn from_file(path: &Path, file: File) -> Result<CompressedColumn> {
        let len = file.metadata().at(path)?.len();
        if len < (HEADER_LEN + TRAILER_LEN) as u64 {
            return Err(corrupt(path, format!("file is {len} bytes, too short for a compressed column")));
        }
        let mut h = [0u8; HEADER_LEN];
        file.read_exact_at(&mut h, 0).at(path)?;
        let header = CompressedHeader::decode(path, &h)?;
        let (trailer, valid_len, index) = match read_tail(&file, len) {
            Some(tail) => tail,
            None => find_last_tail(path, &file, len)?,
        };
        let entries = decode_index(header.ty.element_kind(), &index);
        let column = CompressedColumn {
            path: path.to_path_buf(),
            file,
            header,
            trailer,
            entries,
            valid_len,
            blocks_decoded: AtomicU64::new(0),
        };
        column.check_index()?;
        Ok(column)
    }

    /// Checks the invariants readers rely on: every block but the last is full, raw
    /// lengths add up to the value count, blocks lie before the index.
    fn check_index(&self) -> Result<()> {
        let block_bytes = self.header.spec.block_bytes() as u64;
        let width = self.header.ty.width() as u64;
        if self.trailer.count.checked_mul(width) != Some(self.trailer.raw_bytes) {
            return Err(corrupt(
                &self.path,
                format!(
                    "{} raw bytes do not hold {} {} values",
                    self.trailer.raw_bytes, self.trailer.count, self.header.ty
                ),
            ));
        }
        let mut total = 0u64;
        for (i, e) in self.entries.iter().enumerate() {
            let last = i + 1 == self.entries.len();
            let full = e.raw_len as u64 == block_bytes;
            let inside = e.offset >= HEADER_LEN as u64
                && e.offset.checked_add(e.stored_len as u64).is_some_and(|end| end <= self.trailer.index_offset);
            // A raw block is stored as is: its stored length is its raw length.
            let raw_ok = !e.raw || e.stored_len == e.raw_len;
            if !raw_ok || !(e.raw_len as u64).is_multiple_of(width) {
                return Err(corrupt(&self.path, format!("index entry for block {i} has impossible lengths")));
            }
            if let Some(nulls) = e.nulls
                && u64::from(nulls) > e.raw_len as u64 / width
            {
                return Err(corrupt(
                    &self.path,
                    format!(
                        "index entry for block {i} records {nulls} nulls among {} values",
                        e.raw_len as u64 / width
                    ),
                ));
            }
            if !(full || last && e.raw_len as u64 <= block_bytes && e.raw_len > 0) || !inside {
                return Err(corrupt(
                    &self.path,
                    format!(
                        "index entry for block {i} is inconsistent ({} raw bytes at offset {})",
                        e.raw_len, e.offset
                    ),
                ));
            }
            total += e.raw_len as u64;
        }
        if total != self.trailer.raw_bytes {
            return Err(corrupt(
                &self.path,
                format!("blocks hold {total} raw bytes, the trailer says {}", self.trailer.raw_bytes),
            ));
        }
        Ok(())
    }

    /// The header.
    pub fn header(&self) -> &CompressedHeader {
        &self.header
    }

    /// Number of values.
    pub fn count(&self) -> u64 {
        self.trailer.count
    }

    /// The block index.
    pub fn blocks(&self) -> &[BlockEntry] {
        &self.entries
    }

    /// Bytes of the file in use (header, blocks, index, trailer).
    pub fn stored_bytes(&self) -> u64 {
        self.valid_len
    }

    /// How many blocks have been decoded through this handle.
    pub fn blocks_decoded(&self) -> u64 {
        self.blocks_decoded.load(Ordering::Relaxed)
    }

    /// Values per block.
    pub fn rows_per_block(&self) -> usize {
        self.header.spec.block_bytes() / self.header.ty.width()
    }

    /// Whether rows `start..end` may hold kdb+ nulls: false only when every block
    /// they lie in records a null count of 0.
    pub fn may_hold_nulls(&self, start: usize, end: usize) -> bool {
        if start >= end {
            return false;
        }
        let per_block = self.rows_per_block();
        let blocks = start / per_block..=(end - 1) / per_block;
        self.entries.get(blocks).is_none_or(|entries| entries.iter().any(|e| e.nulls != Some(0)))
    }

    /// Reads, checks and decodes block `i`.
    pub fn decode_block(&self, i: usize) -> Result<Vec<u8>> {
        let e = self.entries[i];
        let mut stored = vec![0u8; e.stored_len as usize];
        self.file.read_exact_at(&mut stored, e.offset).at(&self.path)?;
        let computed = crc32c::crc32c(&stored);
        if computed != e.crc {
            return Err(StoreError::Checksum { path: self.path.clone(), block: i, stored: e.crc, computed });
        }
        self.blocks_decoded.fetch_add(1, Ordering::Relaxed);
        if e.raw {
            return Ok(stored);
        }
        decompress_block(&self.header.spec, self.header.ty.element_kind(), &stored, e.raw_len as usize)
            .map_err(|source| StoreError::Codec { path: self.path.clone(), block: Some(i), source })
    }

    /// Values `start..end` as raw bytes, decoding only the blocks they lie in (in
    /// parallel when there are several).
    pub fn values(&self, start: usize, end: usize) -> Result<Buffer> {
        assert!(start <= end && end as u64 <= self.trailer.count, "rows {start}..{end} of {}", self.trailer.count);
        let w = self.header.ty.width();
        let mut out = MutableBuffer::with_capacity((end - start) * w);
        if start == end {
            return Ok(out.into());
        }
        let per_block = self.rows_per_block();
        let (first, last) = (start / per_block, (end - 1) / per_block);
        let decoded: Vec<Vec<u8>> =
            (first..=last).into_par_iter().map(|b| self.decode_block(b)).collect::<Result<_>>()?;
        for (b, bytes) in (first..=last).zip(decoded) {
            let block_start = b * per_block;
            let lo = start.max(block_start) - block_start;
            let hi = end.min(block_start + bytes.len() / w) - block_start;
            out.extend_from_slice(&bytes[lo * w..hi * w]);
        }
        Ok(out.into())
    }
}

/// The trailer ending at byte `end` and the index it points to, if the trailer and
/// the index both pass their checksums.
fn read_tail(file: &File, end: u64) -> Option<(Trailer, u64, Vec<u8>)> {
    let trailer_at = end.checked_sub(TRAILER_LEN as u64)?;
    let mut t = [0u8; TRAILER_LEN];
    file.read_exact_at(&mut t, trailer_at).ok()?;
    let trailer = Trailer::decode(&t)?;
    let index_len = trailer.nblocks.checked_mul(ENTRY_LEN as u64)?;
    if trailer.index_offset.checked_add(index_len)? != trailer_at || trailer.index_offset < HEADER_LEN as u64 {
        return None;
    }
    let mut index = vec![0u8; index_len as usize];
    file.read_exact_at(&mut index, trailer.index_offset).ok()?;
    (crc32c::crc32c(&index) == trailer.index_crc).then_some((trailer, end, index))
}

/// Scans backwards for the last trailer and index that pass their checksums: the
/// state before an append that was cut short.
///
/// Reads the file backwards in 1 MiB windows (overlapping by the magic's length) so a
/// large column does not have to fit in memory to be recovered.
fn find_last_tail(path: &Path, file: &File, len: u64) -> Result<(Trailer, u64, Vec<u8>)> {
    const WINDOW: u64 = 1 << 20;
    let lowest_end = (HEADER_LEN + TRAILER_LEN) as u64;
    let mut window_end = len;
    while window_end >= lowest_end {
        let window_start = window_end.saturating_sub(WINDOW + TRAILER_MAGIC.len() as u64);
        let mut window = vec![0u8; (window_end - window_start) as usize];
        file.read_exact_at(&mut window, window_start).at(path)?;
        for local_end in (TRAILER_MAGIC.len()..=window.len()).rev() {
            let end = window_start + local_end as u64;
            if end >= lowest_end
                && &window[local_end - TRAILER_MAGIC.len()..local_end] == TRAILER_MAGIC
                && let Some(tail) = read_tail(file, end)
            {
                return Ok(tail);
            }
        }
        if window_start == 0 {
            break;
        }
        window_end = window_start + TRAILER_MAGIC.len() as u64 - 1;
    }
    Err(corrupt(path, "no valid trailer and block index: the file is truncated or corrupt"))
}

/// Appends raw values to a compressed column file. The last partial block is decoded
/// and re-encoded with the new values; new blocks, index and trailer are written after
/// the current trailer, then synced as `durability` asks. A crash at any point leaves
/// the column as it was before the append.
pub fn append_compressed(path: &Path, raw: &[u8], durability: Durability) -> Result<()> {
    let file = open_rw(path)?;
    let column = CompressedColumn::from_file(path, file.try_clone().at(path)?)?;
    let ty = column.header.ty;
    if !raw.len().is_multiple_of(ty.width()) {
        return Err(StoreError::Invalid(format!(
            "{}: {} bytes are not a whole number of {ty} values",
            path.display(),
            raw.len()
        )));
    }
    let mut entries = column.entries.clone();
    let mut tail = Vec::new();
    if let Some(last) = entries.last()
        && (last.raw_len as usize) < column.header.spec.block_bytes()
    {
        tail = column.decode_block(entries.len() - 1)?;
        entries.pop();
    }
    tail.extend_from_slice(raw);
    let blocks = encode_blocks(ty, &column.header.spec, &tail).map_err(|e| codec_error(path, e))?;
    let offset = column.valid_len;
    let mut bytes = Vec::new();
    for block in blocks {
        entries.push(BlockEntry { offset: offset + bytes.len() as u64, ..block.entry });
        bytes.extend_from_slice(&block.bytes);
    }
    let index = encode_index(&entries);
    let trailer = Trailer {
        count: column.trailer.count + (raw.len() / ty.width()) as u64,
        nblocks: entries.len() as u64,
        index_offset: offset + bytes.len() as u64,
        raw_bytes: column.trailer.raw_bytes + raw.len() as u64,
        index_crc: crc32c::crc32c(&index),
    };
    bytes.extend_from_slice(&index);
    file.set_len(offset).at(path)?;
    file.write_all_at(&bytes, offset).at(path)?;
    // The trailer makes the new blocks count: it goes out only once they are on disk.
    if durability == Durability::Fsync {
        file.sync_data().at(path)?;
    }
    file.write_all_at(&trailer.encode(), offset + bytes.len() as u64).at(path)?;
    if durability == Durability::Fsync {
        file.sync_data().at(path)?;
    }
    Ok(())
}
