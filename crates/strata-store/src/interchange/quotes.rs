//! Quoted fields of a CSV file, followed as the bytes are read. The CSV parser
//! (csv-core, under arrow-csv) ends a quoted field that is never closed at the end
//! of the file without a word, so one stray `"` folds the rest of the file into one
//! value and the import succeeds with rows missing. [`QuoteCheck`] reads the same
//! bytes with RFC 4180's rules (a field that starts with `"` is quoted until a `"`
//! not followed by another) and, at the end of the file, fails the read naming the
//! line where the unclosed field opened.

use std::cell::Cell;
use std::io::{self, Read};
use std::rc::Rc;

#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    /// At the start of a field.
    FieldStart,
    /// Inside a field that did not start with a quote.
    Unquoted,
    /// Inside a quoted field.
    Quoted,
    /// Just after a quote inside a quoted field: a second one escapes it.
    QuoteInQuoted,
}

/// Reads `inner`, following its quotes; see the module documentation.
pub(crate) struct QuoteCheck<R> {
    inner: R,
    state: State,
    /// The 1-based line being read, and the line the open quoted field began on.
    line: u64,
    opened: u64,
    /// Set to the line of the unclosed field when the end of the file is reached
    /// inside it (shared, so the caller can name it after the parser's error).
    unclosed: Rc<Cell<Option<u64>>>,
}

impl<R: Read> QuoteCheck<R> {
    /// Follows `inner`; `unclosed` learns the line of a field never closed.
    pub(crate) fn new(inner: R, unclosed: Rc<Cell<Option<u64>>>) -> QuoteCheck<R> {
        QuoteCheck { inner, state: State::FieldStart, line: 1, opened: 0, unclosed }
    }

    fn follow(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == b'\n' {
                self.line += 1;
            }
            self.state = match (self.state, b) {
                (State::FieldStart, b'"') => {
                    self.opened = self.line;
                    State::Quoted
                }
                (State::Quoted, b'"') => State::QuoteInQuoted,
                (State::Quoted, _) => State::Quoted,
                (State::QuoteInQuoted, b'"') => State::Quoted,
                (State::FieldStart | State::Unquoted | State::QuoteInQuoted, b',' | b'\n' | b'\r') => State::FieldStart,
                (State::FieldStart | State::Unquoted | State::QuoteInQuoted, _) => State::Unquoted,
            };
        }
    }
}

/// The message for a quoted field that opens on `line` and never closes.
pub(crate) fn unclosed_message(line: u64) -> String {
    format!("line {line}: a quoted field opens here and is never closed (the rest of the file would be one value)")
}

impl<R: Read> Read for QuoteCheck<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        if read == 0 && !buf.is_empty() && self.state == State::Quoted {
            self.unclosed.set(Some(self.opened));
            return Err(io::Error::new(io::ErrorKind::InvalidData, unclosed_message(self.opened)));
        }
        self.follow(&buf[..read]);
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Option<u64> {
        let unclosed = Rc::new(Cell::new(None));
        let mut reader = QuoteCheck::new(text.as_bytes(), unclosed.clone());
        let mut sink = Vec::new();
        let result = reader.read_to_end(&mut sink);
        assert_eq!(result.is_err(), unclosed.get().is_some());
        unclosed.get()
    }

    #[test]
    fn closed_and_escaped_quotes_pass() {
        assert_eq!(check("a,b\n\"x, y\",2\n\"he said \"\"hi\"\"\",3\n"), None);
        assert_eq!(check("a,b\n\"two\nlines\",1\n"), None);
        assert_eq!(check("a,b\nx\"y,1\n"), None, "a quote inside an unquoted field is text");
        assert_eq!(check(""), None);
    }

    #[test]
    fn an_unclosed_quote_names_the_line_it_opens_on() {
        assert_eq!(check("a,b\n1,2\n\"oops,3\n4,5\n"), Some(3));
        assert_eq!(check("a,b\r\n1,\"x\"\"\n"), Some(2));
    }
}
