//! Feeds arbitrary bytes, as any network client can send them, to strata-ipc's
//! readers of message bodies and whole messages.
//!
//! Input: a message body (the bytes after the 8-byte header), little-endian. When
//! the input is at least 8 bytes, it is also read as a whole message: its first 8
//! bytes as a header and, when the input holds the length that header claims, the
//! rest as its body (decompressed when the header says so, at most 64 KiB).
//!
//! Properties:
//! - `view`, `decode`, `Header::parse`, `decode_body` and `plain_body` never panic
//!   or recurse without bound;
//! - whatever `view` accepts, `decode` accepts, and the view decodes (`to_value`);
//! - the items of every viewed list and table, and the symbols of every symbol
//!   vector, can be walked to the end without a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_ipc::frame::{HEADER_LEN, Header, decode_body, plain_body};
use strata_ipc::view::{View, to_value, view};
use strata_ipc::{MAX_DEPTH, decode};

/// The most a compressed message may expand to here (bounds the allocation).
const MAX_MESSAGE: usize = 1 << 16;

/// Walks every item below `value`, as the tick plane's hot paths do.
fn walk(value: &View<'_>, depth: usize) {
    assert!(depth <= MAX_DEPTH + 2, "a view nests deeper than view allows");
    let _ = (value.count(), value.text(), value.describe());
    if let Some(symbols) = value.symbols() {
        for symbol in symbols {
            let _ = symbol;
        }
    }
    if let Some(items) = value.items() {
        for item in items {
            match item {
                Ok(item) => walk(&item, depth + 1),
                Err(_) => break,
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let decoded = decode(data, false);
    if let Ok(viewed) = view(data) {
        assert!(decoded.is_ok(), "view accepted what decode refuses: {:?}", decoded.err());
        assert!(to_value(&viewed).is_ok(), "a view that does not decode");
        walk(&viewed, 0);
    }
    let _ = decode(data, true);
    let Some(head) = data.first_chunk::<HEADER_LEN>() else { return };
    let Ok(header) = Header::parse(head) else { return };
    if header.len <= data.len() {
        let body = &data[HEADER_LEN..header.len];
        let _ = decode_body(&header, body, MAX_MESSAGE);
        if let Ok(plain) = plain_body(&header, body, MAX_MESSAGE) {
            let _ = view(&plain);
        }
    }
});
