//! Feeds arbitrary text, as any network client can send it in a char vector, to the
//! request parser of the tick plane's processes (`strata_ipc::request`).
//!
//! Input: the bytes of the text (invalid UTF-8 is replaced, as the servers do).
//!
//! Properties:
//! - `Request::from_message` (SQL detection, q-text parsing) never panics and never
//!   overflows the stack, however deeply brackets nest;
//! - an error quotes a bounded part of the text, not all of it;
//! - a parsed request evaluates (every call answered with `::`) without a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_ipc::K;
use strata_ipc::request::{QUOTED_TEXT, Request, is_sql};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = is_sql(&text);
    match Request::from_message(K::string(&text)) {
        Ok(request) => {
            let _ = request.eval(&mut |_, _| Ok(K::Identity));
        }
        Err(error) => {
            // The quoted text, escaped (at most 4 bytes a character as {:?} writes
            // them, 10 for a replaced or control one), plus the sentence around it.
            assert!(error.len() <= QUOTED_TEXT * 10 + 200, "an error of {} bytes", error.len());
        }
    }
});
