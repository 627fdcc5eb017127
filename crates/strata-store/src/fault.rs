//! Named fault points, so tests can kill or slow a real process at an exact moment
//! of a multi-step write (end of day, a partition's publication) instead of at a
//! random time that rarely lands inside it.
//!
//! A process arms points through the `STRATA_FAULTS` environment variable, read once:
//! `name=action` pairs separated by `;`, where the action is `kill` (SIGKILL the
//! process the first time the point is reached), `kill@N` (the Nth time) or
//! `sleep:MS` (every time). `STRATA_FAULTS="tp.eod.end-sent=kill"` kills a
//! tickerplant right after it has told its subscribers the day ended. Unset (as in
//! production) every point costs one load of an initialised `OnceLock`.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The environment variable that arms fault points.
pub const FAULTS_VARIABLE: &str = "STRATA_FAULTS";

/// What an armed point does when reached.
#[derive(Debug, PartialEq)]
enum Action {
    /// SIGKILL this process on the given hit (1 for the first).
    Kill { on_hit: u64 },
    /// Sleep this long on every hit.
    Sleep(Duration),
}

struct Armed {
    action: Action,
    hits: AtomicU64,
}

fn armed() -> &'static HashMap<String, Armed> {
    static ARMED: OnceLock<HashMap<String, Armed>> = OnceLock::new();
    ARMED.get_or_init(|| std::env::var(FAULTS_VARIABLE).map(|spec| parse(&spec)).unwrap_or_default())
}

/// Parses `name=action;...`; an entry that does not parse is reported on stderr
/// and ignored (a test that armed it then fails for want of the fault).
fn parse(spec: &str) -> HashMap<String, Armed> {
    let mut points = HashMap::new();
    for entry in spec.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        match parse_entry(entry) {
            Some((name, action)) => {
                points.insert(name.to_string(), Armed { action, hits: AtomicU64::new(0) });
            }
            None => eprintln!("{FAULTS_VARIABLE}: ignored {entry:?}: expected name=kill, name=kill@N or name=sleep:MS"),
        }
    }
    points
}

fn parse_entry(entry: &str) -> Option<(&str, Action)> {
    let (name, action) = entry.split_once('=')?;
    let action = match action.trim() {
        "kill" => Action::Kill { on_hit: 1 },
        other => match (other.strip_prefix("kill@"), other.strip_prefix("sleep:")) {
            (Some(n), _) => Action::Kill { on_hit: n.parse().ok().filter(|n| *n > 0)? },
            (_, Some(ms)) => Action::Sleep(Duration::from_millis(ms.parse().ok()?)),
            _ => return None,
        },
    };
    Some((name.trim(), action))
}

/// Marks fault point `name`: does nothing unless `STRATA_FAULTS` arms it.
pub fn point(name: &str) {
    let points = armed();
    if points.is_empty() {
        return;
    }
    let Some(armed) = points.get(name) else { return };
    let hit = armed.hits.fetch_add(1, Ordering::Relaxed) + 1;
    match armed.action {
        Action::Kill { on_hit } if hit == on_hit => {
            eprintln!("{FAULTS_VARIABLE}: killing this process at {name} (hit {hit})");
            // SIGKILL, as `kill -9` would: no destructors, no buffered writes flushed.
            let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
            std::process::abort();
        }
        Action::Kill { .. } => {}
        Action::Sleep(pause) => std::thread::sleep(pause),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_parse_into_their_actions() {
        assert_eq!(parse_entry("tp.eod.end-sent=kill"), Some(("tp.eod.end-sent", Action::Kill { on_hit: 1 })));
        assert_eq!(parse_entry(" a = kill@3 "), Some(("a", Action::Kill { on_hit: 3 })));
        assert_eq!(parse_entry("b=sleep:250"), Some(("b", Action::Sleep(Duration::from_millis(250)))));
    }

    #[test]
    fn malformed_entries_are_ignored() {
        for bad in ["nothing", "a=kill@0", "a=kill@x", "a=sleep:", "a=explode"] {
            assert_eq!(parse_entry(bad), None, "{bad}");
        }
        assert_eq!(parse("a=kill; junk ;b=sleep:1").len(), 2);
    }
}
