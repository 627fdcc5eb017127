//! Feeds arbitrary bytes, as any host that reaches a server's port can send them
//! after logging in, through the reader a server's connections use, with its limits:
//! a small shared budget for partial messages and a message bound.
//!
//! Input: the byte stream, cut into reads of varying size by its own first byte.
//!
//! Properties:
//! - `FrameReader` never panics, and every message it hands out is whole (its
//!   header's length) and within the bound;
//! - the buffer never holds more than twice the bytes received plus a chunk,
//!   whatever a header promises, and never more of the shared budget than it has;
//! - every byte of the budget is given back when the reader is dropped.
#![no_main]

use std::io::Read;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use strata_ipc::reader::{CHUNK, FrameReader, PartialBudget, ReadLimits};

const MAX_MESSAGE: usize = 1 << 20;
const BUDGET: usize = 256 << 10;

/// The input handed out in reads of `step` bytes at most.
struct Stream<'a> {
    bytes: &'a [u8],
    step: usize,
    given: usize,
}

impl Read for Stream<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(out.len()).min(self.bytes.len());
        out[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        self.given += n;
        Ok(n)
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, bytes)) = data.split_first() else { return };
    let budget = Arc::new(PartialBudget::new(BUDGET));
    let limits = ReadLimits { message_deadline: None, budget: Some(budget.clone()) };
    let stream = Stream { bytes, step: 1 + usize::from(first) * 97, given: 0 };
    let mut reader = FrameReader::with_limits(stream, MAX_MESSAGE, limits);
    loop {
        match reader.next_frame() {
            Ok(Some((header, body))) => {
                assert!(header.len <= MAX_MESSAGE && body.len() + 8 == header.len);
            }
            Ok(None) | Err(_) => break,
        }
        let given = reader.get_ref().given;
        assert!(reader.capacity() <= 2 * given + 2 * CHUNK, "{} bytes held for {given} received", reader.capacity());
        assert!(budget.held() <= BUDGET);
    }
    drop(reader);
    assert_eq!(budget.held(), 0, "the budget is given back");
});
