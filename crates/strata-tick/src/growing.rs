//! Append-only memory for the RDB's columns: each buffer is an anonymous mapping of
//! its own that grows in place.
//!
//! The RDB's column builders grow by hundreds of MB a second at full rate. A buffer
//! that grows by allocating twice the room and copying holds the old memory and the
//! new at once, so at every doubling the process touches as much new memory again as
//! it already keeps, and pays for the copy. Here a buffer past [`MAPPED_FROM`] bytes
//! reserves address space ([`RESERVATION`], backed only where touched) and its values
//! never move again: each byte of memory is first touched by the append that writes
//! it. Past the reservation the kernel moves the mapping's page tables (`mremap`),
//! not its bytes. Smaller buffers live on the heap.
//!
//! Touching new memory is what a growing RDB pays for most. On a virtual machine
//! whose free memory goes back to the host (balloon free page reporting, which
//! hands back free 2 MiB blocks), a page new to the guest costs a fault in the host
//! as well. The mappings are therefore not advised onto transparent huge pages: a
//! huge page needs a whole free 2 MiB block, which on such a machine the host has
//! usually taken back, while 4 KiB pages come from smaller free blocks it has not.
//! `bench tick` measured 100-row updates at 10.7-11.1 M rows/s with the advice and
//! 12.6-14.7 M without it here, the RDB thread's CPU falling from 75-83% to 58-63%.
//! Where the system sets transparent huge pages to `always`, the kernel still uses
//! them.
//!
//! A finished buffer becomes an Arrow [`Buffer`] over the same memory (no copy); the
//! address space it did not use is given back.

use std::ptr::NonNull;
use std::sync::Arc;

use arrow_buffer::{ArrowNativeType, Buffer, MutableBuffer};
use rustix::mm::{MapFlags, MremapFlags, ProtFlags, mmap_anonymous, mremap, munmap};

/// Mappings are sized in whole huge pages (2 MiB on x86-64, and on aarch64 with
/// 4 KiB base pages), so that a system with transparent huge pages always on can
/// back them whole and giving back address space never splits one.
const HUGE_PAGE: usize = 2 << 20;

/// Address space a buffer reserves at its first append: a day of one column of most
/// tables fits without ever moving its page tables. Reserving costs no memory.
pub const RESERVATION: usize = 16 << 30;

/// An anonymous mapping, unmapped when dropped.
struct Mapping {
    start: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value alone; sharing its
// address across threads is as safe as sharing a `Box<[u8]>`'s.
unsafe impl Send for Mapping {}
// SAFETY: as above; `Mapping` itself offers no interior mutability.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes (a multiple of [`HUGE_PAGE`]) of private anonymous memory,
    /// not reserved against the system's commit limit. `None` when the system
    /// refuses.
    fn new(len: usize) -> Option<Mapping> {
        debug_assert!(len.is_multiple_of(HUGE_PAGE));
        // SAFETY: a fresh mapping at an address the kernel picks; nothing else
        // refers to it.
        let start = unsafe {
            mmap_anonymous(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE | MapFlags::NORESERVE,
            )
        }
        .ok()?;
        Some(Mapping { start: NonNull::new(start.cast())?, len })
    }

    /// Grows the mapping to `len` bytes (a multiple of [`HUGE_PAGE`]), wherever the
    /// kernel finds room, keeping its contents. `None` when the system refuses, and
    /// then the mapping is unchanged.
    fn grow(&mut self, len: usize) -> Option<()> {
        // SAFETY: the old range is exactly this live mapping; MAY_MOVE lets the kernel
        // move its pages (not copy them) to a new address, which replaces the old one.
        let moved = unsafe { mremap(self.start.as_ptr().cast(), self.len, len, MremapFlags::MAYMOVE) }.ok()?;
        self.start = NonNull::new(moved.cast())?;
        self.len = len;
        Some(())
    }

    /// Gives back the address space past the first `keep` bytes (rounded up to a
    /// huge page, so no huge page is split).
    fn shrink(&mut self, keep: usize) {
        let keep = keep.next_multiple_of(HUGE_PAGE).min(self.len);
        if keep < self.len {
            // SAFETY: the range is the end of this live mapping, past every byte kept.
            let _ = unsafe { munmap(self.start.as_ptr().add(keep).cast(), self.len - keep) };
            self.len = keep;
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: the mapping is owned by this value and no longer used.
            let _ = unsafe { munmap(self.start.as_ptr().cast(), self.len) };
        }
    }
}

/// A buffer starts on the heap and moves into a mapping of its own once it needs
/// more than this and than its heap buffer holds (at most twice this): a small
/// table's columns then cost no mapping (nor, where transparent huge pages are
/// always on, a whole 2 MiB page each), and the one copy is small.
pub const MAPPED_FROM: usize = 1 << 20;

/// Where a buffer's bytes live.
enum Storage {
    /// Small: Arrow's own aligned heap buffer, which knows its length.
    Heap(MutableBuffer),
    /// Large: a mapping of its own; the buffer's `len` says how much is written.
    Mapped(Mapping),
}

/// Bytes appended at the end, never moved once mapped (see the module
/// documentation).
pub struct GrowingBuffer {
    storage: Storage,
    /// Bytes written into the mapping (unused while on the heap).
    mapped_len: usize,
}

impl Default for GrowingBuffer {
    fn default() -> GrowingBuffer {
        GrowingBuffer { storage: Storage::Heap(MutableBuffer::new(0)), mapped_len: 0 }
    }
}

impl GrowingBuffer {
    /// An empty buffer (allocating nothing yet).
    pub fn new() -> GrowingBuffer {
        GrowingBuffer::default()
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        match &self.storage {
            Storage::Heap(bytes) => bytes.len(),
            Storage::Mapped(_) => self.mapped_len,
        }
    }

    /// Whether no bytes are held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes that fit without growing.
    pub fn capacity(&self) -> usize {
        match &self.storage {
            Storage::Heap(bytes) => bytes.capacity(),
            Storage::Mapped(mapping) => mapping.len,
        }
    }

    /// The bytes held.
    #[cfg(test)]
    fn as_slice(&self) -> &[u8] {
        match &self.storage {
            Storage::Heap(bytes) => bytes.as_slice(),
            // SAFETY: the first `mapped_len` bytes of the live mapping were written.
            Storage::Mapped(m) => unsafe { std::slice::from_raw_parts(m.start.as_ptr(), self.mapped_len) },
        }
    }

    /// Makes room for `additional` more bytes.
    ///
    /// # Panics
    /// When the system refuses the memory, as a `Vec` aborts when it cannot grow.
    pub fn reserve(&mut self, additional: usize) {
        let needed = self.len().checked_add(additional).expect("a buffer under the address space");
        if needed <= self.capacity() {
            return;
        }
        match &mut self.storage {
            Storage::Heap(bytes) if needed <= MAPPED_FROM => bytes.reserve(additional),
            _ => self.grow(needed),
        }
    }

    #[cold]
    fn grow(&mut self, needed: usize) {
        let needed = needed.next_multiple_of(HUGE_PAGE);
        let refused =
            || -> ! { panic!("the RDB could not map {needed} bytes for a column: out of memory or address space") };
        let (len, mapping) = match &mut self.storage {
            Storage::Mapped(mapping) => {
                if mapping.grow(needed.max(2 * mapping.len)).is_none() {
                    refused()
                }
                return;
            }
            // A system that counts address space against its commit limit (strict
            // overcommit, `ulimit -v`) may refuse the reservation; then the buffer
            // maps what it needs and grows by remapping.
            Storage::Heap(bytes) => {
                let Some(mapping) =
                    Mapping::new(needed.max(RESERVATION)).or_else(|| Mapping::new(needed.max(4 * HUGE_PAGE)))
                else {
                    refused()
                };
                // SAFETY: the new mapping holds at least `needed` bytes, more than the
                // heap buffer's, and the two do not overlap.
                unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), mapping.start.as_ptr(), bytes.len()) };
                (bytes.len(), mapping)
            }
        };
        self.mapped_len = len;
        self.storage = Storage::Mapped(mapping);
    }

    /// Appends `bytes`.
    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.reserve(bytes.len());
        match &mut self.storage {
            Storage::Heap(heap) => heap.extend_from_slice(bytes),
            Storage::Mapped(mapping) => {
                // SAFETY: `reserve` made room for `bytes.len()` bytes past `mapped_len`
                // inside the mapping, which cannot overlap `bytes` (it is this
                // buffer's own).
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        bytes.as_ptr(),
                        mapping.start.as_ptr().add(self.mapped_len),
                        bytes.len(),
                    )
                };
                self.mapped_len += bytes.len();
            }
        }
    }

    /// Appends one value in little-endian (native) form.
    pub fn push<T: ArrowNativeType>(&mut self, value: T) {
        self.reserve(size_of::<T>());
        match &mut self.storage {
            Storage::Heap(heap) => heap.push(value),
            Storage::Mapped(mapping) => {
                // SAFETY: `reserve` made room for one `T` past `mapped_len`; the write
                // is unaligned because nothing here keeps a buffer to one width.
                unsafe { mapping.start.as_ptr().add(self.mapped_len).cast::<T>().write_unaligned(value) };
                self.mapped_len += size_of::<T>();
            }
        }
    }

    /// The bytes held as an Arrow buffer over the same memory, which it keeps alive;
    /// a mapping's unused address space is given back.
    pub fn into_buffer(self) -> Buffer {
        match self.storage {
            Storage::Heap(bytes) => bytes.into(),
            Storage::Mapped(mut mapping) => {
                let len = self.mapped_len;
                mapping.shrink(len);
                let start = mapping.start;
                // SAFETY: the first `len` bytes of the mapping are initialised and
                // never written again (the buffer is consumed); the `Arc` keeps the
                // mapping alive for as long as Arrow refers to it.
                unsafe { Buffer::from_custom_allocation(start, len, Arc::new(mapping)) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_keep_their_values_and_their_place_once_mapped() {
        let mut buffer = GrowingBuffer::new();
        assert_eq!((buffer.len(), buffer.capacity(), buffer.as_slice()), (0, 0, &[][..]));
        buffer.push(7u32);
        let chunk: Vec<u8> = (0..=255).collect();
        while buffer.len() + chunk.len() <= MAPPED_FROM {
            buffer.extend_from_slice(&chunk);
        }
        assert!(matches!(buffer.storage, Storage::Heap(_)), "a small buffer stays on the heap");
        while matches!(buffer.storage, Storage::Heap(_)) {
            buffer.extend_from_slice(&chunk);
        }
        assert!(buffer.len() <= 2 * MAPPED_FROM + chunk.len(), "mapped once past its heap buffer's room");
        let first = buffer.as_slice().as_ptr();
        for _ in 0..10_000 {
            buffer.extend_from_slice(&chunk);
        }
        assert_eq!(buffer.as_slice().as_ptr(), first, "values never move inside the reservation");
        assert_eq!(&buffer.as_slice()[..4], 7u32.to_le_bytes());
        assert!(buffer.as_slice()[4..].chunks(256).all(|c| c == chunk.as_slice()));
        let len = buffer.len();
        let arrow = buffer.into_buffer();
        assert_eq!(arrow.len(), len);
        assert_eq!(arrow.as_ptr(), first, "handed to Arrow without a copy");
        assert_eq!(arrow.typed_data::<u32>()[0], 7);
    }

    #[test]
    fn a_full_mapping_moves_its_pages_and_keeps_its_values() {
        let mut buffer = GrowingBuffer { storage: Storage::Mapped(Mapping::new(HUGE_PAGE).unwrap()), mapped_len: 0 };
        for i in 0..(HUGE_PAGE / 8) as u64 {
            buffer.push(i);
        }
        assert_eq!(buffer.capacity(), HUGE_PAGE);
        buffer.push(u64::MAX);
        assert_eq!(buffer.capacity(), 2 * HUGE_PAGE, "doubled");
        let values = buffer.into_buffer();
        let values = values.typed_data::<u64>();
        assert_eq!(values.len(), HUGE_PAGE / 8 + 1);
        assert!(values[..HUGE_PAGE / 8].iter().enumerate().all(|(i, v)| *v == i as u64));
        assert_eq!(values[HUGE_PAGE / 8], u64::MAX);
    }

    #[test]
    fn an_arrow_buffer_outlives_the_builder() {
        let mut buffer = GrowingBuffer::new();
        buffer.extend_from_slice(&vec![1; MAPPED_FROM + 3]);
        assert!(matches!(buffer.storage, Storage::Mapped(_)));
        let slice = buffer.into_buffer().slice(MAPPED_FROM);
        assert_eq!(slice.as_slice(), [1, 1, 1], "the mapping lives as long as a slice of it");
        let empty = GrowingBuffer::new().into_buffer();
        assert_eq!(empty.typed_data::<i64>(), [0i64; 0], "an empty buffer suits every value type");
    }

    #[test]
    fn shrinking_keeps_whole_huge_pages() {
        let mut mapping = Mapping::new(4 * HUGE_PAGE).unwrap();
        mapping.shrink(HUGE_PAGE + 1);
        assert_eq!(mapping.len, 2 * HUGE_PAGE);
        mapping.shrink(3);
        assert_eq!(mapping.len, HUGE_PAGE);
        // SAFETY: the kept huge page is still mapped and writable.
        unsafe { mapping.start.as_ptr().add(HUGE_PAGE - 1).write(9) };
    }
}
