//! CPU time per role (tickerplant, RDB, feed) of this process's threads, from
//! Linux's per-thread accounting in `/proc/self/task`. The tick processes name
//! their threads `tp-*`, `rdb-*`, and the benchmark's feed thread is `feed`.

use std::collections::HashMap;

/// Clock ticks per second in `/proc` (USER_HZ, 100 on Linux).
const TICKS_PER_SECOND: f64 = 100.0;

/// CPU seconds so far per role.
#[derive(Clone, Debug, Default)]
pub struct RoleCpu(HashMap<&'static str, f64>);

impl RoleCpu {
    /// Seconds for `role` (0 when no thread of it ran).
    pub fn get(&self, role: &str) -> f64 {
        self.0.get(role).copied().unwrap_or(0.0)
    }
}

/// The role a thread name belongs to.
fn role(name: &str) -> Option<&'static str> {
    if name.starts_with("tp-") {
        Some("tp")
    } else if name.starts_with("rdb-") {
        Some("rdb")
    } else if name.starts_with("feed") {
        Some("feed")
    } else {
        None
    }
}

/// User plus system seconds of one thread's `stat` text.
fn seconds(stat: &str) -> Option<f64> {
    // Fields after the parenthesised name: state is field 3, utime 14, stime 15.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    Some((ticks(11)? + ticks(12)?) / TICKS_PER_SECOND)
}

/// CPU seconds the calling thread has used (0 where `/proc` is not available);
/// read it before a thread ends, since an ended thread leaves `/proc`.
pub fn this_thread() -> f64 {
    std::fs::read_to_string("/proc/thread-self/stat").ok().as_deref().and_then(seconds).unwrap_or(0.0)
}

/// Sums user and system time of the live threads by role; empty where `/proc` is
/// not available.
pub fn by_role() -> RoleCpu {
    let mut totals = HashMap::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return RoleCpu(totals) };
    for task in tasks.flatten() {
        let dir = task.path();
        let (Ok(comm), Ok(stat)) =
            (std::fs::read_to_string(dir.join("comm")), std::fs::read_to_string(dir.join("stat")))
        else {
            continue;
        };
        let (Some(role), Some(used)) = (role(comm.trim()), seconds(&stat)) else { continue };
        *totals.entry(role).or_insert(0.0) += used;
    }
    RoleCpu(totals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_named_thread_is_counted() {
        let before = by_role();
        std::thread::Builder::new()
            .name("feed-test".into())
            .spawn(move || {
                let start = std::time::Instant::now();
                let mut x = 0u64;
                while start.elapsed().as_millis() < 300 {
                    x = x.wrapping_mul(31).wrapping_add(1);
                }
                // Read while the thread is alive: dead threads leave /proc.
                let after = by_role();
                assert!(after.get("feed") > before.get("feed"), "{x}");
                assert!(this_thread() > 0.0);
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(role("tp-core"), Some("tp"));
        assert_eq!(role("main"), None);
    }
}
