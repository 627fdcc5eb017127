//! What this machine charges for the two things the tick plane's targets hinge on:
//! memory new to the process, and waking a sleeping thread.
//!
//! Every row an RDB keeps and every byte a tickerplant journals lands in memory the
//! process has not used before. On bare metal the kernel clears such a page at
//! several GB/s; on a virtual machine whose balloon hands free memory back to the
//! host (free page reporting), the host faults it in again too, and a huge page,
//! which needs a whole free 2 MiB block, is the likeliest to have been handed back.
//! Each hop of the tick plane (feed → TP reader → TP core → RDB) also wakes a
//! sleeping thread unless that thread is busy: the wake-up costs are a floor under
//! the latency of a lone update. The report prints these figures beside the runs.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use rustix::mm::{Advice, MapFlags, ProtFlags, madvise, mmap_anonymous, munmap};

use crate::report::{Cell, Column, Table};

/// Bytes touched per memory figure.
const PROBE_BYTES: usize = 256 << 20;
/// Wake-ups timed per figure.
const WAKE_SAMPLES: usize = 400;
/// How long the woken thread is left asleep before each wake-up.
const ASLEEP: Duration = Duration::from_micros(200);

/// Title of the report table.
pub const TITLE: &str = "machine: new memory and thread wake-ups";

/// The costs measured.
#[derive(Clone, Debug, PartialEq)]
pub struct MachineCosts {
    /// MB/s writing one byte per 4 KiB page of a new anonymous mapping.
    pub new_pages_mbps: f64,
    /// The same with the mapping advised onto 2 MiB pages; `None` where the system
    /// does not leave huge pages to programs.
    pub new_huge_pages_mbps: Option<f64>,
    /// The same on memory the process unmapped just before (the kernel hands the
    /// freed pages out again).
    pub reused_mbps: f64,
    /// Sleeping thread woken through a channel: p50 and p99 µs, send to receipt.
    pub channel_wake_us: (f64, f64),
    /// Sleeping thread woken through a loopback TCP socket: p50 and p99 µs.
    pub socket_wake_us: (f64, f64),
}

/// Measures the costs (about a second).
pub fn measure() -> std::io::Result<MachineCosts> {
    let huge = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .is_ok_and(|s| s.contains("[madvise]") || s.contains("[always]"));
    let new_pages_mbps = touch_new(false)?;
    let new_huge_pages_mbps = if huge { Some(touch_new(true)?) } else { None };
    // Touch, give back and touch again at once: the second pass gets the pages just
    // freed.
    touch_new(false)?;
    let reused_mbps = touch_new(false)?;
    Ok(MachineCosts {
        new_pages_mbps,
        new_huge_pages_mbps,
        reused_mbps,
        channel_wake_us: quantiles(channel_wakes()),
        socket_wake_us: quantiles(socket_wakes()?),
    })
}

impl MachineCosts {
    /// The figures as a report table.
    pub fn table(&self) -> Table {
        let mut table = Table::new(
            TITLE,
            vec![
                Column::text("figure"),
                Column::number("p50 or rate", 1),
                Column::number("p99", 1),
                Column::text("unit"),
            ],
        );
        let rate = |what: &str, mbps: Option<f64>| vec![what.into(), mbps.into(), Cell::Empty, "MB/s".into()];
        let wake = |what: &str, (p50, p99): (f64, f64)| vec![what.into(), p50.into(), p99.into(), "µs".into()];
        table.push_row(rate("memory new to the process, 4 KiB pages", Some(self.new_pages_mbps)));
        table.push_row(rate("memory new to the process, 2 MiB pages", self.new_huge_pages_mbps));
        table.push_row(rate("memory the process just freed, 4 KiB pages", Some(self.reused_mbps)));
        table.push_row(wake("wake a sleeping thread: channel", self.channel_wake_us));
        table.push_row(wake("wake a sleeping thread: loopback TCP", self.socket_wake_us));
        table
    }
}

/// MB/s writing a byte into each 4 KiB page of a new mapping of [`PROBE_BYTES`],
/// advised onto huge pages when `huge`; the mapping is unmapped after.
fn touch_new(huge: bool) -> std::io::Result<f64> {
    // SAFETY: a fresh private mapping; only this function uses it, and it is
    // unmapped before returning.
    unsafe {
        let at =
            mmap_anonymous(std::ptr::null_mut(), PROBE_BYTES, ProtFlags::READ | ProtFlags::WRITE, MapFlags::PRIVATE)?;
        if huge {
            madvise(at, PROBE_BYTES, Advice::LinuxHugepage)?;
        }
        let bytes = at.cast::<u8>();
        let started = Instant::now();
        for page in (0..PROBE_BYTES).step_by(4096) {
            bytes.add(page).write_volatile(1);
        }
        let seconds = started.elapsed().as_secs_f64();
        munmap(at, PROBE_BYTES)?;
        Ok(PROBE_BYTES as f64 / 1e6 / seconds.max(1e-9))
    }
}

/// µs from a send to its receipt by a thread asleep in `recv`.
fn channel_wakes() -> Vec<f64> {
    let (tx, rx) = std::sync::mpsc::channel::<Instant>();
    let receiver = std::thread::spawn(move || rx.iter().map(|sent| micros(sent.elapsed())).collect::<Vec<_>>());
    for _ in 0..WAKE_SAMPLES {
        std::thread::sleep(ASLEEP);
        if tx.send(Instant::now()).is_err() {
            break;
        }
    }
    drop(tx);
    receiver.join().unwrap_or_default()
}

/// µs from a write on one end of a loopback TCP connection to its read by a thread
/// asleep in `read` on the other.
fn socket_wakes() -> std::io::Result<Vec<f64>> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let mut sender = TcpStream::connect(listener.local_addr()?)?;
    let (mut receiving, _) = listener.accept()?;
    sender.set_nodelay(true)?;
    let base = Instant::now();
    let receiver = std::thread::spawn(move || {
        let mut wakes = Vec::with_capacity(WAKE_SAMPLES);
        let mut stamp = [0u8; 8];
        while receiving.read_exact(&mut stamp).is_ok() {
            let sent = Duration::from_nanos(u64::from_le_bytes(stamp));
            wakes.push(micros(base.elapsed().saturating_sub(sent)));
        }
        wakes
    });
    for _ in 0..WAKE_SAMPLES {
        std::thread::sleep(ASLEEP);
        sender.write_all(&(base.elapsed().as_nanos() as u64).to_le_bytes())?;
    }
    drop(sender);
    Ok(receiver.join().unwrap_or_default())
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// p50 and p99 of `samples` (0 for none).
fn quantiles(mut samples: Vec<f64>) -> (f64, f64) {
    if samples.is_empty() {
        return (0.0, 0.0);
    }
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.99))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_figure_is_measured_and_shown() {
        let costs = measure().unwrap();
        assert!(costs.new_pages_mbps > 0.0 && costs.reused_mbps > 0.0, "{costs:?}");
        assert!(costs.new_huge_pages_mbps.is_none_or(|r| r > 0.0));
        for (p50, p99) in [costs.channel_wake_us, costs.socket_wake_us] {
            assert!(p50 > 0.0 && p99 >= p50, "{costs:?}");
        }
        let table = costs.table();
        assert_eq!(table.rows.len(), 5);
        let unit = table.column_index("unit").unwrap();
        assert_eq!(table.display_cell(3, unit), "µs");
    }

    #[test]
    fn quantiles_read_the_sorted_samples() {
        let samples: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(quantiles(samples), (51.0, 99.0));
        assert_eq!(quantiles(Vec::new()), (0.0, 0.0));
    }
}
