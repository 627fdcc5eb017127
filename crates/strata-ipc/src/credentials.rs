//! Who may connect: the users of a credentials file and how each one's password is
//! kept, the check of a login against them, and the bounds that keep a burst of
//! wrong passwords from pinning the server.
//!
//! A credentials file has one `user:secret` per line (blank lines and lines starting
//! with `#` are ignored), the secret in one of three forms:
//! - an argon2 PHC string (`$argon2id$v=19$m=19456,t=2,p=1$salt$hash`), salted and
//!   slow to guess: what `strata passwd` writes;
//! - 32 hexadecimal digits: the MD5 digest of the password, as in kdb+'s `-u`/`-U`
//!   files (so a plain password of 32 hex digits is read as a digest, as kdb+ does);
//! - anything else: the password itself, as in kdb+'s files.
//!
//! Argon2 costs milliseconds of CPU and megabytes of memory per check, so at most
//! [`HASHING_AT_ONCE`] run at once in the process, and a user name that was given
//! wrong passwords from a peer address is slowed there to [`FAILURE_REFILL`] per
//! attempt after [`FAILURE_BURST`] of them ([`LoginError::TooManyFailures`] without
//! a check). Other users from the same address (an RDB on the host of a script with
//! a stale password) are not slowed.

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::net::IpAddr;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use argon2::{Argon2, Params, PasswordHash, PasswordHasher, PasswordVerifier};
use md5::{Digest, Md5};
use password_hash::SaltString;
use password_hash::rand_core::OsRng;

use crate::error::IpcError;

/// Argon2 checks running at once in the process: each takes a core and
/// [`Params::DEFAULT_M_COST`] KiB (19 MiB) for tens of milliseconds, so a flood of
/// logins costs at most two cores and 38 MiB; later logins wait (within their
/// handshake deadline).
pub const HASHING_AT_ONCE: usize = 2;
/// Wrong passwords a peer address may give in a row before it is slowed down.
pub const FAILURE_BURST: u32 = 5;
/// After [`FAILURE_BURST`] wrong passwords, one more attempt per this period.
pub const FAILURE_REFILL: Duration = Duration::from_secs(1);
/// Peer addresses whose failures are remembered; past it, addresses that have
/// waited out their failures are forgotten first, then all.
const TRACKED_PEERS: usize = 4096;
/// The most memory an argon2 entry may ask of each check: a file with more would
/// let every login attempt take that much.
const MAX_ARGON2_KIB: u32 = 256 << 10;

/// How one user's password is kept.
#[derive(Clone, Debug)]
enum Secret {
    /// The password itself (kdb+'s plain form).
    Plain(String),
    /// The MD5 digest of the password (kdb+'s hashed form).
    Md5([u8; 16]),
    /// An argon2 PHC string, checked as parsed when loaded.
    Argon2(String),
}

impl Secret {
    /// Reads the secret part of a line.
    fn parse(text: &str) -> Result<Secret, String> {
        if text.starts_with("$argon2") {
            let hash = PasswordHash::new(text).map_err(|e| format!("not a valid argon2 PHC string: {e}"))?;
            if hash.hash.is_none() {
                return Err("not a valid argon2 PHC string: no hash after the salt".into());
            }
            let params = Params::try_from(&hash).map_err(|e| format!("argon2 parameters: {e}"))?;
            if params.m_cost() > MAX_ARGON2_KIB {
                return Err(format!(
                    "argon2 memory cost m={} KiB is over {MAX_ARGON2_KIB} KiB: every login attempt would take that much",
                    params.m_cost()
                ));
            }
            return Ok(Secret::Argon2(text.to_string()));
        }
        if text.len() == 32 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            let mut digest = [0u8; 16];
            for (i, byte) in digest.iter_mut().enumerate() {
                *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|e| e.to_string())?;
            }
            return Ok(Secret::Md5(digest));
        }
        Ok(Secret::Plain(text.to_string()))
    }

    /// Whether `password` is this secret's, in time that does not depend on where
    /// a wrong one differs.
    fn matches(&self, password: &str) -> bool {
        match self {
            Secret::Plain(p) => same_bytes(p.as_bytes(), password.as_bytes()),
            Secret::Md5(digest) => same_bytes(digest, &Md5::digest(password.as_bytes())),
            Secret::Argon2(phc) => argon2_matches(phc, password),
        }
    }

    fn is_argon2(&self) -> bool {
        matches!(self, Secret::Argon2(_))
    }
}

/// Checks `password` against an argon2 PHC string (the comparison of the digests is
/// constant-time inside `password-hash`).
fn argon2_matches(phc: &str, password: &str) -> bool {
    PasswordHash::new(phc).is_ok_and(|hash| Argon2::default().verify_password(password.as_bytes(), &hash).is_ok())
}

/// Whether `a` and `b` are equal, looking at every byte whatever the answer.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |differ, (x, y)| differ | (x ^ y)) == 0
}

/// Why a login was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoginError {
    /// No such user, or the password is not theirs (one answer for both, so a
    /// guesser cannot tell which).
    Refused {
        /// The user name given.
        user: String,
    },
    /// The peer address gave too many wrong passwords for this user lately; not
    /// checked.
    TooManyFailures {
        /// The address.
        peer: IpAddr,
        /// How long until the next attempt is checked.
        retry_after: Duration,
    },
    /// Other logins held every argon2 slot until the handshake deadline.
    Busy,
}

impl std::fmt::Display for LoginError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoginError::Refused { user } => write!(f, "user {user:?} refused: unknown user or wrong password"),
            LoginError::TooManyFailures { peer, retry_after } => write!(
                f,
                "too many wrong passwords from {peer} for this user: login not checked; next attempt in {} ms",
                retry_after.as_millis()
            ),
            LoginError::Busy => write!(f, "password checks busy with other logins until the handshake deadline"),
        }
    }
}

impl std::error::Error for LoginError {}

/// Users that may connect, from a credentials file (see the module's doc). Its
/// `Debug` shows the user names only.
#[derive(Clone, Default)]
pub struct Credentials {
    users: HashMap<String, Secret>,
    /// Failed logins per peer address, shared by every clone (one server's).
    failures: Arc<Mutex<Failures>>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials").field("users", &self.users.keys().collect::<Vec<_>>()).finish_non_exhaustive()
    }
}

impl Credentials {
    /// Reads a credentials file; errors name the file and line.
    pub fn load(path: &Path) -> Result<Credentials, IpcError> {
        let text = std::fs::read_to_string(path).map_err(|e| IpcError::io(format!("reading {}", path.display()), e))?;
        Credentials::parse(&text).map_err(|e| IpcError::Handshake(format!("{}: {e}", path.display())))
    }

    /// Parses the text of a credentials file; errors name the line.
    pub fn parse(text: &str) -> Result<Credentials, String> {
        let mut users = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((user, secret)) = line.split_once(':') else {
                return Err(format!("line {}: expected user:password, user:<md5 hex> or user:$argon2id$...", i + 1));
            };
            let secret = Secret::parse(secret).map_err(|e| format!("line {}: user {user:?}: {e}", i + 1))?;
            users.insert(user.to_string(), secret);
        }
        Ok(Credentials { users, failures: Arc::default() })
    }

    /// Whether `user` may connect with `password` (no bound on how often: servers
    /// call [`Credentials::verify`]).
    pub fn check(&self, user: &str, password: &str) -> bool {
        match self.users.get(user) {
            Some(secret) => secret.matches(password),
            None => {
                // An unknown user costs what a known one does, so timing does not
                // tell a guesser which names exist.
                if self.users.values().any(Secret::is_argon2) {
                    argon2_matches(decoy(), password);
                }
                false
            }
        }
    }

    /// Checks a login from `peer` as a server must: a user with too many recent
    /// failures from this address is refused unchecked, argon2 checks wait for one of
    /// the process's [`HASHING_AT_ONCE`] slots until `deadline`, and a failure is
    /// counted against the address and user.
    pub fn verify(&self, user: &str, password: &str, peer: IpAddr, deadline: Instant) -> Result<(), LoginError> {
        let now = Instant::now();
        self.failures.lock().unwrap_or_else(|p| p.into_inner()).take(peer, user, now)?;
        let hashed = self.users.get(user).map_or(self.users.values().any(Secret::is_argon2), Secret::is_argon2);
        let _slot = if hashed { Some(HashingSlot::acquire(peer, deadline).ok_or(LoginError::Busy)?) } else { None };
        if self.check(user, password) {
            self.failures.lock().unwrap_or_else(|p| p.into_inner()).forgive(peer, user);
            Ok(())
        } else {
            Err(LoginError::Refused { user: user.to_string() })
        }
    }
}

/// An argon2 hash of a random password, checked for unknown users.
fn decoy() -> &'static str {
    static DECOY: OnceLock<String> = OnceLock::new();
    DECOY.get_or_init(|| hash_password("a password nobody has").unwrap_or_default())
}

/// Failed logins per peer address and user name: a token bucket of
/// [`FAILURE_BURST`] attempts refilled one per [`FAILURE_REFILL`]. An attempt takes a
/// token before it is checked (so a burst of simultaneous connections cannot all be
/// checked) and a success gives the address and user a full bucket back. Keyed by
/// user too, so one client retrying a stale password cannot lock every other user
/// of its address out.
#[derive(Debug, Default)]
struct Failures {
    peers: HashMap<(IpAddr, String), Bucket>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn refilled(self, now: Instant) -> f64 {
        let earned = now.saturating_duration_since(self.at).as_secs_f64() / FAILURE_REFILL.as_secs_f64();
        (self.tokens + earned).min(f64::from(FAILURE_BURST))
    }
}

impl Failures {
    /// Takes one attempt for `user` from `peer`, or says how long until it has one.
    fn take(&mut self, peer: IpAddr, user: &str, now: Instant) -> Result<(), LoginError> {
        let key = (peer, user.to_string());
        if !self.peers.contains_key(&key) && self.peers.len() >= TRACKED_PEERS {
            self.peers.retain(|_, b| b.refilled(now) < f64::from(FAILURE_BURST));
            if self.peers.len() >= TRACKED_PEERS {
                self.peers.clear();
            }
        }
        let bucket = self.peers.entry(key).or_insert(Bucket { tokens: f64::from(FAILURE_BURST), at: now });
        let tokens = bucket.refilled(now);
        if tokens < 1.0 {
            let retry_after = FAILURE_REFILL.mul_f64(1.0 - tokens);
            return Err(LoginError::TooManyFailures { peer, retry_after });
        }
        *bucket = Bucket { tokens: tokens - 1.0, at: now };
        Ok(())
    }

    /// A correct password for `user` from `peer`: its earlier failures are forgotten.
    fn forgive(&mut self, peer: IpAddr, user: &str) {
        self.peers.remove(&(peer, user.to_string()));
    }
}

/// One of the process's [`HASHING_AT_ONCE`] argon2 slots, held by one peer
/// address. Slots go to waiting logins in arrival order, skipping an address that
/// already holds one: one address flooding logins (under many user names, which
/// the failure buckets do not slow) takes at most one slot, and logins from every
/// other address still get checked.
struct HashingSlot {
    peer: IpAddr,
}

#[derive(Default)]
struct Hashing {
    /// Addresses holding a slot now.
    holders: Vec<IpAddr>,
    /// Logins waiting for a slot, oldest first: (ticket, address).
    waiting: VecDeque<(u64, IpAddr)>,
    next_ticket: u64,
}

impl Hashing {
    /// The oldest waiting ticket whose address holds no slot.
    fn next_eligible(&self) -> Option<u64> {
        self.waiting.iter().find(|(_, peer)| !self.holders.contains(peer)).map(|(ticket, _)| *ticket)
    }
}

/// The slots' state, and a wake-up for those waiting.
static HASHING: (Mutex<Hashing>, Condvar) =
    (Mutex::new(Hashing { holders: Vec::new(), waiting: VecDeque::new(), next_ticket: 0 }), Condvar::new());

impl HashingSlot {
    /// Waits for a slot for `peer` until `deadline`; `None` when none came in time.
    fn acquire(peer: IpAddr, deadline: Instant) -> Option<HashingSlot> {
        let (state, changed) = &HASHING;
        let mut state = state.lock().unwrap_or_else(|p| p.into_inner());
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.waiting.push_back((ticket, peer));
        loop {
            if state.holders.len() < HASHING_AT_ONCE && state.next_eligible() == Some(ticket) {
                state.waiting.retain(|(t, _)| *t != ticket);
                state.holders.push(peer);
                // Another slot may be free for the next address in line.
                changed.notify_all();
                return Some(HashingSlot { peer });
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                state.waiting.retain(|(t, _)| *t != ticket);
                changed.notify_all();
                return None;
            }
            state = changed.wait_timeout(state, left).unwrap_or_else(|p| p.into_inner()).0;
        }
    }
}

impl Drop for HashingSlot {
    fn drop(&mut self) {
        let (state, changed) = &HASHING;
        let mut state = state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(at) = state.holders.iter().position(|p| *p == self.peer) {
            state.holders.swap_remove(at);
        }
        changed.notify_all();
    }
}

/// The argon2id PHC string of `password` with a fresh random salt and the
/// default parameters (19 MiB, 2 passes, 1 lane: OWASP's recommendation).
pub fn hash_password(password: &str) -> Result<String, String> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|e| format!("hashing the password: {e}"))
}

/// Whether `user` can be a credentials file's user name (and a login's).
fn valid_user(user: &str) -> Result<(), String> {
    if user.is_empty() || user.starts_with('#') || user.chars().any(|c| c == ':' || c.is_whitespace() || c.is_control())
    {
        return Err(format!("user name {user:?}: give a non-empty name without ':', spaces or a leading '#'"));
    }
    Ok(())
}

/// Whether `password` can be sent in a kdb+ handshake: its end is marked by a NUL
/// and a capability byte below 32, so control characters cannot be part of it.
fn valid_password(password: &str) -> Result<(), String> {
    if password.is_empty() {
        return Err("empty password".into());
    }
    if password.chars().any(char::is_control) {
        return Err("the password has a control character, which a kdb+ handshake cannot carry".into());
    }
    Ok(())
}

/// Sets `user`'s password in the credentials file at `path` to an argon2id hash of
/// `password`: the user's lines are replaced (or one is added), every other line is
/// kept as it was, and the file is replaced atomically (a temporary file in the
/// same directory, readable by its owner only, synced, then renamed over it), so a
/// server reading it sees the old or the new file, never a part. Errors name the
/// file and, for a file that does not parse, the line.
pub fn set_password(path: &Path, user: &str, password: &str) -> Result<(), IpcError> {
    let fail = |what: String| IpcError::Handshake(format!("{}: {what}", path.display()));
    valid_user(user).map_err(fail)?;
    valid_password(password).map_err(fail)?;
    let old = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(IpcError::io(format!("reading {}", path.display()), e)),
    };
    Credentials::parse(&old).map_err(fail)?;
    let entry = format!("{user}:{}", hash_password(password).map_err(fail)?);
    let mut lines: Vec<&str> = Vec::new();
    let mut replaced = false;
    for line in old.lines() {
        if line.trim().split_once(':').is_some_and(|(u, _)| u == user) {
            if !replaced {
                lines.push(&entry);
                replaced = true;
            }
        } else {
            lines.push(line);
        }
    }
    if !replaced {
        lines.push(&entry);
    }
    let text = lines.join("\n") + "\n";
    replace_file(path, text.as_bytes())
}

/// Writes `bytes` to `path` through a temporary file (mode 0600) renamed over it.
fn replace_file(path: &Path, bytes: &[u8]) -> Result<(), IpcError> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| IpcError::Handshake(format!("{}: not a file name", path.display())))?;
    let temp = dir.join(format!(".{}.tmp{}", name.to_string_lossy(), std::process::id()));
    let io = |what: &str, p: &Path| {
        let p = p.display().to_string();
        let what = what.to_string();
        move |e| IpcError::io(format!("{what} {p}"), e)
    };
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)
            .map_err(io("creating", &temp))?;
        file.write_all(bytes).map_err(io("writing", &temp))?;
        file.sync_all().map_err(io("syncing", &temp))?;
        std::fs::rename(&temp, path).map_err(io("renaming over", path))?;
        std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(io("syncing", dir))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `raze string md5 "password"` in q: a line of a kdb+ -u file.
    const KDB_LINE: &str = "trader:5f4dcc3b5aa765d61d8327deb882cf99";

    #[test]
    fn every_form_of_a_secret_is_checked() {
        let md5 = format!("{:x}", Md5::digest(b"kdb"));
        let hash = hash_password("argon-pw").unwrap();
        assert!(hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{hash}");
        let creds = Credentials::parse(&format!("plain:pw\nhashed:{md5}\nargon:{hash}\n")).unwrap();
        assert!(creds.check("plain", "pw") && !creds.check("plain", "pw2"));
        assert!(creds.check("hashed", "kdb") && !creds.check("hashed", &md5), "the digest is not the password");
        assert!(creds.check("argon", "argon-pw") && !creds.check("argon", "argon-p") && !creds.check("argon", &hash));
        assert!(!creds.check("nobody", "argon-pw"));
        assert!(Credentials::parse(&format!("upper:{}\n", md5.to_uppercase())).unwrap().check("upper", "kdb"));
        let kdb = Credentials::parse(KDB_LINE).unwrap();
        assert!(kdb.check("trader", "password") && !kdb.check("trader", &KDB_LINE[7..]));
    }

    #[test]
    fn bad_lines_are_named() {
        let err = Credentials::parse("# users\nalice:pw\nnocolon\n").unwrap_err();
        assert!(err.starts_with("line 3:"), "{err}");
        let err = Credentials::parse("a:pw\nb:$argon2id$v=19$m=19456,t=2,p=1$short\n").unwrap_err();
        assert!(err.starts_with("line 2: user \"b\": not a valid argon2 PHC string"), "{err}");
        let greedy = "c:$argon2id$v=19$m=4000000,t=2,p=1$c2FsdHNhbHRzYWx0$/3tRpZp9TLwNbJVKB1bsLWGSbTd0Ak9hmrNt8nVNdQs";
        assert!(Credentials::parse(greedy).unwrap_err().contains("memory cost"));
        let shown = format!("{:?}", Credentials::parse("alice:hunter2\n").unwrap());
        assert!(shown.contains("alice") && !shown.contains("hunter2"), "{shown}");
    }

    #[test]
    fn failures_slow_an_address_down_and_a_success_forgives_them() {
        let creds = Credentials::parse("alice:secret\n").unwrap();
        let (peer, other) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let deadline = Instant::now() + Duration::from_secs(5);
        for _ in 0..FAILURE_BURST {
            assert!(matches!(creds.verify("alice", "guess", peer, deadline), Err(LoginError::Refused { .. })));
        }
        let refused = creds.verify("alice", "secret", peer, deadline).unwrap_err();
        assert!(matches!(refused, LoginError::TooManyFailures { .. }), "even the right password waits: {refused}");
        creds.verify("alice", "secret", other, deadline).expect("another address is not slowed");
        creds.verify("bob", "guess", peer, deadline).expect_err("bob is unknown");
        let bob = creds.verify("bob", "guess", peer, deadline).unwrap_err();
        assert!(matches!(bob, LoginError::Refused { .. }), "another user of the address is checked: {bob}");
        let mut failures = Failures::default();
        let now = Instant::now();
        for _ in 0..FAILURE_BURST {
            failures.take(peer, "alice", now).unwrap();
        }
        assert!(failures.take(peer, "alice", now).is_err());
        failures.take(peer, "bob", now).expect("another user of the address is not slowed");
        failures.take(peer, "alice", now + FAILURE_REFILL).expect("one attempt per refill period");
        failures.forgive(peer, "alice");
        failures.take(peer, "alice", now + FAILURE_REFILL).expect("forgiven");
    }

    #[test]
    fn set_password_replaces_one_user_atomically_and_privately() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("users");
        std::fs::write(&path, "# team\nalice:old\nbob:pw\n").unwrap();
        set_password(&path, "alice", "new secret").unwrap();
        set_password(&path, "carol", "c-pw").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(lines[0], "# team");
        assert!(lines[1].starts_with("alice:$argon2id$") && lines[2] == "bob:pw" && lines[3].starts_with("carol:"));
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let creds = Credentials::load(&path).unwrap();
        assert!(creds.check("alice", "new secret") && !creds.check("alice", "old") && creds.check("bob", "pw"));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file left");
        assert!(set_password(&path, "a:b", "x").unwrap_err().to_string().contains("user name"));
        assert!(set_password(&path, "dave", "").unwrap_err().to_string().contains("empty password"));
        std::fs::write(&path, "broken\n").unwrap();
        let err = set_password(&path, "alice", "x").unwrap_err().to_string();
        assert!(err.contains("users: line 1"), "a file that does not parse is left alone: {err}");
    }

    #[test]
    fn a_flood_from_one_address_leaves_checks_for_others() {
        let flooder: IpAddr = "10.99.0.1".parse().unwrap();
        let other: IpAddr = "10.99.0.2".parse().unwrap();
        let soon = || Instant::now() + Duration::from_secs(5);
        let held = HashingSlot::acquire(flooder, soon()).expect("a free slot");
        // The same address waits for its own slot to come back, however many it sends...
        let again =
            std::thread::spawn(move || HashingSlot::acquire(flooder, Instant::now() + Duration::from_millis(200)));
        assert!(again.join().unwrap().is_none(), "one address holds one slot at a time");
        // ... while another address is checked at once.
        let checked = HashingSlot::acquire(other, soon());
        assert!(checked.is_some(), "another address gets the other slot");
        drop(held);
        assert!(HashingSlot::acquire(flooder, soon()).is_some(), "a slot given back is taken again");
    }
}
