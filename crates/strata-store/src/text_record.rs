//! The framing of Strata's small text records (a partition's completion record, a
//! table's schema record): lines of text, then a last line `crc32c 0x<8 hex digits>`
//! holding the checksum of every byte before it.
//!
//! A record is accepted only byte for byte as Strata writes it: after parsing, the
//! caller encodes what it read and compares ([`exact`]), so an upper-case hex digit
//! or an extra newline, which would parse the same, is reported rather than passed.

use crate::error::{Result, StoreError};

/// `body` with its checksum line appended.
pub(crate) fn seal(mut body: String) -> String {
    let crc = crc32c::crc32c(body.as_bytes());
    body.push_str(&format!("crc32c {crc:#010x}\n"));
    body
}

/// Checks the checksum line of `text` and returns the body before it. `bad` makes
/// the error (naming the file and the kind of record) from what was wrong.
pub(crate) fn open<'a>(text: &'a str, bad: &impl Fn(String) -> StoreError) -> Result<&'a str> {
    let body_end = text
        .trim_end_matches('\n')
        .rfind('\n')
        .map(|i| i + 1)
        .ok_or_else(|| bad("too short (no checksum line)".into()))?;
    let (body, last) = text.split_at(body_end);
    let stored = last
        .strip_suffix('\n')
        .and_then(|l| l.strip_prefix("crc32c 0x"))
        .and_then(|hex| u32::from_str_radix(hex, 16).ok())
        .ok_or_else(|| bad(format!("last line {last:?} is not `crc32c 0x<8 hex digits>` (torn write?)")))?;
    let computed = crc32c::crc32c(body.as_bytes());
    if stored != computed {
        return Err(bad(format!("checksum {stored:#010x} stored, {computed:#010x} computed")));
    }
    Ok(body)
}

/// Fails unless `encoded` (what Strata writes for the contents parsed from `text`)
/// is `text` itself.
pub(crate) fn exact(encoded: &str, text: &str, bad: &impl Fn(String) -> StoreError) -> Result<()> {
    if encoded != text {
        return Err(bad("not byte for byte what Strata writes for its contents (edited or damaged)".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::error::corrupt;

    #[test]
    fn sealed_text_opens_and_any_change_is_refused() {
        let bad = |what: String| corrupt(Path::new("r"), what);
        let text = seal("kind 1\nvalue 7\n".to_string());
        assert_eq!(open(&text, &bad).unwrap(), "kind 1\nvalue 7\n");
        assert!(exact(&text, &text, &bad).is_ok());
        let upper = text.replace("0x", "0X");
        assert!(open(&upper, &bad).unwrap_err().to_string().contains("is not `crc32c"));
        let hex_start = text.len() - 9;
        let mut shouted = text.clone();
        shouted.replace_range(hex_start.., &text[hex_start..].to_uppercase());
        if shouted != text {
            // Same checksum value, other bytes: opens, but is not exact.
            assert!(open(&shouted, &bad).is_ok());
            assert!(exact(&text, &shouted, &bad).unwrap_err().to_string().contains("byte for byte"));
        }
        let err = open(&text.replace("value 7", "value 8"), &bad).unwrap_err().to_string();
        assert!(err.contains("stored") && err.contains("computed"), "{err}");
        assert!(open("", &bad).unwrap_err().to_string().contains("too short"));
    }
}
