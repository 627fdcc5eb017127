//! Feeds arbitrary bytes, as any host that reaches a server's port can send them,
//! to the server side of the handshake, and arbitrary text to the credentials file
//! parser and the client's login helper.
//!
//! Input: the bytes the client sends (`user:password`, a capability byte, a NUL).
//!
//! Properties:
//! - `handshake::accept` never panics, with or without credentials, and reads at
//!   most `MAX_HANDSHAKE` bytes plus the NUL before answering;
//! - it answers with at most one byte, a capability no higher than Strata's;
//! - with credentials, only a listed `user:password` gets in;
//! - `Credentials::parse` and `handshake::login` never panic.
#![no_main]

use std::io::{Read, Write};

use libfuzzer_sys::fuzz_target;
use strata_ipc::handshake::{CAPABILITY, Credentials, MAX_HANDSHAKE, accept, login};

/// A client's bytes in, the server's answer out; counts what the server read.
struct Client<'a> {
    input: &'a [u8],
    read: usize,
    output: Vec<u8>,
}

impl Read for Client<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.input.len().min(buf.len());
        buf[..n].copy_from_slice(&self.input[..n]);
        self.input = &self.input[n..];
        self.read += n;
        Ok(n)
    }
}

impl Write for Client<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.output.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let credentials = Credentials::parse("alice:secret\nbob:\n").expect("a valid file");
    for checked in [None, Some(&credentials)] {
        let mut client = Client { input: data, read: 0, output: Vec::new() };
        let accepted = accept(&mut client, checked);
        assert!(client.read <= MAX_HANDSHAKE + 2, "read {} bytes of a handshake", client.read);
        assert!(client.output.len() <= 1 && client.output.iter().all(|&c| c <= CAPABILITY));
        if let (Ok(peer), Some(_)) = (&accepted, checked) {
            assert!(peer.user == "alice" || peer.user == "bob", "{:?} got in", peer.user);
        }
    }
    let text = String::from_utf8_lossy(data);
    let _ = Credentials::parse(&text);
    let (user, secret) = text.split_once('\n').unwrap_or((&text, ""));
    let _ = login(user, Some(secret));
});
