//! The report of a run: the machine, directories, sizes and flush method; one
//! throughput and one latency table per process count; the `dd` anchor.

use super::catalogue::Unit;
use super::{IoRun, anchor};
use crate::report::{Cell, Column, Report, Table};

/// The anchor's target: Strata's sequential write and read at this share of `dd`.
pub const ANCHOR_TARGET_PERCENT: f64 = 90.0;

/// Builds the report of `run`.
pub(super) fn build(run: &IoRun) -> Report {
    let plan = &run.plan;
    let m = &plan.machine;
    let mut report = Report::new("Strata I/O benchmark (KX Nano's method)");
    report.push_note(format!(
        "{}: {} cores, {:.1} GB memory; {} thread(s) per worker; workers write round-robin over {} director{}.",
        m.host,
        m.cores,
        m.mem_total as f64 / 1e9,
        plan.options.threads,
        plan.roots.len(),
        if plan.roots.len() == 1 { "y" } else { "ies" }
    ));
    for root in &plan.roots {
        let device = root.device.as_ref().map_or_else(
            || "no block device: the disk read/write columns are empty".to_string(),
            |d| format!("device {d}"),
        );
        let memory = if root.in_memory() { "; a memory file system: no read from it is cold" } else { "" };
        report.push_note(format!("{}: {} on {}, {device}{memory}.", root.path.display(), root.fs_type, root.source));
    }
    report.push_note(format!("Cache: {}.", run.flushed));
    for (procs, scale, notes) in &plan.scales {
        let caps = if notes.is_empty() { String::new() } else { format!(" ({})", notes.join("; ")) };
        report.push_note(format!("{procs} process(es): {}{caps}.", scale.describe()));
    }
    report.push_note(
        "MB/s is decimal megabytes moved per second of each worker's test, summed over workers (Nano's \
         throughput). Bytes are the values Strata stores: 8 per long or float, 4 per symbol key (Nano counts 8 \
         per item); replace tests count the values replaced, sync tests the bytes of the files synced (Nano's \
         sync figures multiply by the length of its shell command). Accuracy is Nano's: 100 means every worker \
         started at once. Disk columns are the devices' own throughput from /proc/diskstats during the test.",
    );
    for procs_run in &run.runs {
        let label =
            if procs_run.procs == 1 { "1 process".to_string() } else { format!("{} processes", procs_run.procs) };
        let mut throughput = Table::new(
            format!("throughput, {label}"),
            vec![
                Column::text("testtype"),
                Column::text("test"),
                Column::number("MBps", 2).higher_is_better(),
                Column::number("accuracy", 1),
                Column::number("disk_read_MBps", 0),
                Column::number("disk_write_MBps", 0),
            ],
        );
        let mut latency = Table::new(
            format!("latency, {label}"),
            vec![
                Column::text("testtype"),
                Column::text("test"),
                Column::number("avg_ms", 4).lower_is_better(),
                Column::number("max_ms", 4).lower_is_better(),
                Column::number("accuracy", 1),
            ],
        );
        for outcome in &procs_run.outcomes {
            let (testtype, name) = (Cell::from(outcome.test.testtype()), Cell::from(outcome.test.name()));
            match outcome.test.unit() {
                Unit::MBps => throughput.push_row(vec![
                    testtype,
                    name,
                    outcome.throughput().into(),
                    outcome.accuracy().into(),
                    outcome.disk.map(|d| d.read_mbps).into(),
                    outcome.disk.map(|d| d.write_mbps).into(),
                ]),
                Unit::Ms => latency.push_row(vec![
                    testtype,
                    name,
                    outcome.avg_latency().into(),
                    outcome.max_latency().into(),
                    outcome.accuracy().into(),
                ]),
            }
        }
        report.push_table(throughput);
        report.push_table(latency);
    }
    if !run.anchor.is_empty() {
        let mut anchor = Table::new(
            "anchor: Strata vs dd in the same directory",
            vec![
                Column::text("directory"),
                Column::text("fs"),
                Column::text("operation"),
                Column::number("MB", 0),
                Column::number("strata_MBps", 0),
                Column::number("dd_MBps", 0),
                Column::number("pct_of_dd", 1).higher_is_better(),
                Column::text("target_90pct"),
            ],
        );
        for row in &run.anchor {
            anchor.push_row(vec![
                Cell::from(row.root.display().to_string()),
                Cell::from(row.fs_type.as_str()),
                Cell::from(row.operation),
                Cell::from(row.bytes as f64 / 1e6),
                Cell::from(row.strata_mbps),
                Cell::from(row.dd_mbps),
                Cell::from(row.percent_of_dd()),
                row.percent_of_dd().map(|p| p >= ANCHOR_TARGET_PERCENT).into(),
            ]);
        }
        report.push_note(format!(
            "Anchor: Strata writes the huge vector as a column file and fsyncs it, then (after a flush) maps it \
                 and touches every page; dd copies the same bytes to a new file with conv=fdatasync and reads that \
                 file to /dev/null, 1 MiB blocks, same directory; best of {} alternating rounds each. The target is \
                 {ANCHOR_TARGET_PERCENT}% of dd.",
            anchor::ROUNDS
        ));
        report.push_table(anchor);
    }
    report
}
