//! Transparent huge pages for buffers that grow all day.
//!
//! The RDB's column builders grow by hundreds of MB a second at full rate. Backed by
//! 4 KiB pages, every page costs the RDB a page fault on first touch; `bench tick`
//! measured a third of the RDB thread in faults and page zeroing with 100-row
//! updates. Advising the kernel to back such buffers with 2 MiB pages cuts the
//! faults 512-fold (the kernel still zeroes every page). The advice applies only
//! where the system leaves transparent huge pages to the program
//! (`/sys/kernel/mm/transparent_hugepage/enabled` is `madvise` or `always`); under
//! `never` it is ignored.

use std::ffi::c_void;

use arrow_buffer::MutableBuffer;
use rustix::mm::{Advice, madvise};

/// A huge page on x86-64 and (with 4 KiB base pages) aarch64.
const HUGE_PAGE: usize = 2 << 20;

/// Buffers smaller than this are left alone: at least one whole huge page must fit
/// inside them wherever the allocator placed them.
pub const MIN_BYTES: usize = 2 * HUGE_PAGE;

/// The whole huge pages inside `len` bytes from `start`, as an address range.
fn whole_huge_pages(start: usize, len: usize) -> Option<(usize, usize)> {
    let first = start.checked_next_multiple_of(HUGE_PAGE)?;
    let end = (start + len) / HUGE_PAGE * HUGE_PAGE;
    (end > first).then_some((first, end - first))
}

/// Asks for huge pages to back the `capacity` bytes of a live heap buffer at
/// `start`. Below [`MIN_BYTES`] it does nothing. The advice changes how memory is
/// backed, never its contents, so a refusal (an old kernel) is ignored.
pub fn advise(start: *const u8, capacity: usize) {
    if capacity < MIN_BYTES {
        return;
    }
    if let Some((first, len)) = whole_huge_pages(start as usize, capacity) {
        // SAFETY: [first, first + len) lies inside the caller's live allocation, and
        // MADV_HUGEPAGE neither frees nor changes the bytes there.
        let _ = unsafe { madvise(first as *mut c_void, len, Advice::LinuxHugepage) };
    }
}

/// A buffer of plain values that grows at its end.
pub trait Growable: Sized {
    /// An empty buffer with room for at least `bytes` bytes.
    fn with_capacity_bytes(bytes: usize) -> Self;
    /// Bytes held.
    fn len_bytes(&self) -> usize;
    /// Bytes it can hold without growing.
    fn capacity_bytes(&self) -> usize;
    /// Where its memory starts.
    fn start(&self) -> *const u8;
    /// Appends a copy of everything `other` holds.
    fn extend_from(&mut self, other: &Self);
}

impl Growable for MutableBuffer {
    fn with_capacity_bytes(bytes: usize) -> Self {
        MutableBuffer::with_capacity(bytes)
    }
    fn len_bytes(&self) -> usize {
        self.len()
    }
    fn capacity_bytes(&self) -> usize {
        self.capacity()
    }
    fn start(&self) -> *const u8 {
        self.as_ptr()
    }
    fn extend_from(&mut self, other: &Self) {
        self.extend_from_slice(other.as_slice());
    }
}

impl<T: Copy> Growable for Vec<T> {
    fn with_capacity_bytes(bytes: usize) -> Self {
        Vec::with_capacity(bytes.div_ceil(size_of::<T>()))
    }
    fn len_bytes(&self) -> usize {
        self.len() * size_of::<T>()
    }
    fn capacity_bytes(&self) -> usize {
        self.capacity() * size_of::<T>()
    }
    fn start(&self) -> *const u8 {
        self.as_ptr().cast()
    }
    fn extend_from(&mut self, other: &Self) {
        self.extend_from_slice(other);
    }
}

/// Makes room in `buffer` for `additional` more bytes. A full buffer doubles (at
/// least); once that is [`MIN_BYTES`] or more, the new memory is advised onto huge
/// pages before the old contents are copied in, so it faults in 2 MiB at a time
/// from the start.
pub fn reserve<B: Growable>(buffer: &mut B, additional: usize) {
    let needed = buffer.len_bytes() + additional;
    if needed <= buffer.capacity_bytes() {
        return;
    }
    let mut grown = B::with_capacity_bytes(needed.max(2 * buffer.capacity_bytes()));
    advise(grown.start(), grown.capacity_bytes());
    grown.extend_from(buffer);
    *buffer = grown;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_huge_pages_inside_the_buffer_are_advised() {
        assert_eq!(whole_huge_pages(HUGE_PAGE, 2 * HUGE_PAGE), Some((HUGE_PAGE, 2 * HUGE_PAGE)));
        // Starting 16 bytes past a boundary: the first whole page is the next one.
        assert_eq!(whole_huge_pages(HUGE_PAGE + 16, 3 * HUGE_PAGE), Some((2 * HUGE_PAGE, 2 * HUGE_PAGE)));
        assert_eq!(whole_huge_pages(HUGE_PAGE + 16, 2 * HUGE_PAGE), Some((2 * HUGE_PAGE, HUGE_PAGE)));
        assert_eq!(whole_huge_pages(HUGE_PAGE + 16, HUGE_PAGE), None);
    }

    #[test]
    fn a_grown_buffer_keeps_its_values_and_doubles() {
        let mut keys: Vec<u32> = (0..MIN_BYTES as u32).collect();
        let capacity = keys.capacity();
        reserve(&mut keys, 4);
        keys.push(7);
        assert!(keys.capacity() >= 2 * capacity, "doubled");
        assert!(keys[..MIN_BYTES].iter().enumerate().all(|(i, k)| *k == i as u32));
        assert_eq!(keys[MIN_BYTES], 7);

        let mut bytes = MutableBuffer::new(0);
        bytes.extend_from_slice(&[3u8; 100]);
        reserve(&mut bytes, MIN_BYTES);
        assert!(bytes.capacity() >= 100 + MIN_BYTES);
        assert_eq!(bytes.as_slice(), [3u8; 100]);
        let before = bytes.as_ptr();
        reserve(&mut bytes, MIN_BYTES);
        assert_eq!(bytes.as_ptr(), before, "room enough: not moved");
    }

    /// Where the system leaves huge pages to programs, the kernel marks the advised
    /// mapping as eligible for them (`/proc/self/smaps`).
    #[test]
    fn the_kernel_takes_the_advice_where_programs_choose() {
        let setting = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
        if !setting.contains("[madvise]") {
            eprintln!("transparent huge pages are not left to programs here ({}); skipped", setting.trim());
            return;
        }
        let buffer = vec![1u8; 4 * MIN_BYTES];
        let (first, _) = whole_huge_pages(buffer.as_ptr() as usize, buffer.capacity()).expect("a whole page inside");
        assert_eq!(eligible(first), Some(false), "not eligible before the advice");
        advise(buffer.as_ptr(), buffer.capacity());
        assert_eq!(eligible(first), Some(true), "eligible after it");
    }

    /// The `THPeligible` flag of the mapping holding `address`.
    fn eligible(address: usize) -> Option<bool> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ')
                && let Some((from, to)) = range.split_once('-')
                && let (Ok(from), Ok(to)) = (usize::from_str_radix(from, 16), usize::from_str_radix(to, 16))
            {
                inside = (from..to).contains(&address);
            } else if inside && let Some(flag) = line.strip_prefix("THPeligible:") {
                return Some(flag.trim() == "1");
            }
        }
        None
    }
}
