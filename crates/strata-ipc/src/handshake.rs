//! The connection handshake: the client sends `user:password`, a capability byte and
//! a NUL; the server answers with one byte (the capability it accepts) or closes the
//! connection. Strata speaks protocol capability 3 (kdb+ 3.x messages, 32-bit
//! lengths) and accepts any client that offers it or less.

use std::io::{Read, Write};

pub use crate::credentials::Credentials;
use crate::error::IpcError;

/// The capability Strata offers and accepts at most.
pub const CAPABILITY: u8 = 3;
/// The longest handshake accepted (kdb+ limits user:password similarly).
pub const MAX_HANDSHAKE: usize = 1024;

/// The `user:password` a client process sends, from the user name its command line
/// gives and a secret kept off the command line (where `ps` would show it to every
/// user of the machine): the contents of a password file or an environment
/// variable, either the password alone or `user:password` (the first line; a
/// trailing newline is not part of it). `user` with a `:` is refused: that is a
/// password on the command line.
pub fn login(user: &str, secret: Option<&str>) -> Result<String, String> {
    if user.contains(':') {
        return Err(format!(
            "--user {:?}: give the user name only; a password on the command line is visible to every user \
             of the machine (ps): put it in --password-file or STRATA_PASSWORD",
            user.split(':').next().unwrap_or_default()
        ));
    }
    let Some(secret) = secret else { return Ok(user.to_string()) };
    let secret = secret.lines().next().unwrap_or_default();
    match secret.split_once(':') {
        Some((named, _)) if !user.is_empty() && named != user => {
            Err(format!("--user {user:?} does not match the user {named:?} of the password file or STRATA_PASSWORD"))
        }
        Some(_) => Ok(secret.to_string()),
        None => Ok(format!("{user}:{secret}")),
    }
}

/// Who connected, as the handshake said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    /// The user name (empty when the client sent none).
    pub user: String,
    /// The capability agreed: the lower of the client's and [`CAPABILITY`].
    pub capability: u8,
}

/// Runs the server side of the handshake on a fresh connection. With `credentials`,
/// an unknown user or wrong password is refused (the caller closes the connection,
/// which is how kdb+ says no).
pub fn accept<S: Read + Write>(stream: &mut S, credentials: Option<&Credentials>) -> Result<Peer, IpcError> {
    accept_with(stream, |user, password| match credentials {
        Some(c) if !c.check(user, password) => Err(format!("user {user:?} refused: unknown user or wrong password")),
        _ => Ok(()),
    })
}

/// Like [`accept`], with the login checked by `check(user, password)` (a server's
/// [`Credentials::verify`], which bounds how often and how many at once): its error
/// refuses the client, and says why in the returned error.
pub fn accept_with<S: Read + Write>(
    stream: &mut S,
    check: impl FnOnce(&str, &str) -> Result<(), String>,
) -> Result<Peer, IpcError> {
    let mut text = Vec::with_capacity(32);
    let mut byte = [0u8; 1];
    loop {
        match stream.read(&mut byte) {
            Ok(0) => return Err(IpcError::Handshake("connection closed during the handshake".into())),
            Ok(_) if byte[0] == 0 => break,
            Ok(_) => text.push(byte[0]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(IpcError::io("reading the handshake", e)),
        }
        if text.len() > MAX_HANDSHAKE {
            return Err(IpcError::Handshake(format!("no NUL within {MAX_HANDSHAKE} bytes")));
        }
    }
    // The capability byte is the last byte before the NUL when it is a control
    // character; clients older than kdb+ 2.6 send none and get no answer byte.
    let capability = match text.last() {
        Some(&c) if c < 32 => {
            text.pop();
            Some(c)
        }
        _ => None,
    };
    let text = String::from_utf8_lossy(&text);
    let (user, password) = text.split_once(':').unwrap_or((&text, ""));
    check(user, password).map_err(IpcError::Handshake)?;
    let agreed = capability.map_or(0, |c| c.min(CAPABILITY));
    if capability.is_some() {
        stream
            .write_all(&[agreed])
            .and_then(|()| stream.flush())
            .map_err(|e| IpcError::io("answering the handshake", e))?;
    }
    Ok(Peer { user: user.to_string(), capability: agreed })
}

/// Runs the client side: sends `user_password` (`user:password`, may be empty) and
/// capability [`CAPABILITY`], and returns the capability the server agreed.
pub fn offer<S: Read + Write>(stream: &mut S, user_password: &str) -> Result<u8, IpcError> {
    let mut hello = user_password.as_bytes().to_vec();
    hello.extend_from_slice(&[CAPABILITY, 0]);
    stream.write_all(&hello).map_err(|e| IpcError::io("sending the handshake", e))?;
    stream.flush().map_err(|e| IpcError::io("sending the handshake", e))?;
    let mut answer = [0u8; 1];
    match stream.read(&mut answer) {
        Ok(1) => Ok(answer[0]),
        Ok(_) => Err(IpcError::Handshake("the server closed the connection: access refused".into())),
        Err(e) => Err(IpcError::io("reading the handshake answer", e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// A stream that reads from `input` and records what is written.
    struct Duplex {
        input: Cursor<Vec<u8>>,
        output: Vec<u8>,
    }

    impl Read for Duplex {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.input.read(buf)
        }
    }

    impl Write for Duplex {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.output.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn duplex(input: &[u8]) -> Duplex {
        Duplex { input: Cursor::new(input.to_vec()), output: Vec::new() }
    }

    #[test]
    fn capability_is_the_lower_of_both() {
        let mut s = duplex(b"alice:pw\x06\x00");
        let peer = accept(&mut s, None).unwrap();
        assert_eq!(peer, Peer { user: "alice".into(), capability: 3 });
        assert_eq!(s.output, [3]);
        let mut old = duplex(b"bob\x01\x00");
        assert_eq!(accept(&mut old, None).unwrap().capability, 1);
        let mut ancient = duplex(b"carol:x\x00");
        assert_eq!(accept(&mut ancient, None).unwrap().capability, 0);
        assert!(ancient.output.is_empty(), "pre-2.6 clients get no answer byte");
    }

    #[test]
    fn credentials_are_checked() {
        let creds = Credentials::parse("# users\nalice:secret\n\nbob:hunter2\n").unwrap();
        assert!(accept(&mut duplex(b"alice:secret\x03\x00"), Some(&creds)).is_ok());
        let err = accept(&mut duplex(b"alice:wrong\x03\x00"), Some(&creds)).unwrap_err();
        assert!(err.to_string().contains("\"alice\" refused"), "{err}");
        assert!(accept(&mut duplex(b"mallory:x\x03\x00"), Some(&creds)).is_err());
        assert!(Credentials::parse("nocolon\n").unwrap_err().contains("line 1"));
        assert!(accept(&mut duplex(b"abc"), None).is_err(), "no NUL");
        assert!(accept(&mut duplex(&[b'a'; 2000]), None).unwrap_err().to_string().contains("1024"));
        assert!(!creds.check("alice", "secre") && !creds.check("alice", "secret!") && !creds.check("alice", ""));
    }

    #[test]
    fn a_login_takes_its_password_from_the_secret_only() {
        assert_eq!(login("alice", None).unwrap(), "alice");
        assert_eq!(login("alice", Some("pw\n")).unwrap(), "alice:pw");
        assert_eq!(login("", Some("bob:pw\n")).unwrap(), "bob:pw");
        assert_eq!(login("bob", Some("bob:pw")).unwrap(), "bob:pw");
        assert_eq!(login("", None).unwrap(), "");
        let err = login("alice:secret", None).unwrap_err();
        assert!(err.contains("\"alice\"") && !err.contains("secret\"") && err.contains("--password-file"), "{err}");
        assert!(login("alice", Some("bob:pw")).unwrap_err().contains("does not match"));
    }
}
