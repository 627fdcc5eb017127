//! `strata bench io`: KX Nano's storage benchmark run through Strata's own storage
//! calls, against one or more directories, with N worker processes per run.
//!
//! A run plans sizes for the machine ([`scale`]), then for each process count runs
//! Nano's suites in order ([`catalogue`]): a set of worker processes per suite, each in
//! its own directory (round-robin over the directories given), every test started in
//! all of them at the same moment ([`controller`]), the page cache flushed between
//! suites ([`flush`]) and the devices' throughput sampled around each test
//! ([`diskstats`]). Results are written in Nano's result-file formats ([`psv`]) and as
//! a [`Report`]; an anchor measures `dd` on the same directories ([`anchor`]);
//! [`compare`] lays result sets side by side as the KX file-system study does.

pub mod anchor;
pub mod catalogue;
pub mod compare;
pub mod controller;
pub mod diskstats;
mod error;
pub mod exec;
pub mod flush;
pub mod machine;
pub mod ops;
pub mod protocol;
pub mod psv;
mod report;
pub mod results;
pub mod scale;
pub mod vectors;
pub mod worker;

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use strata_store::Date;

pub use controller::WorkerCommand;
pub use error::IoBenchError;

use self::anchor::AnchorRow;
use self::catalogue::Suite;
use self::controller::SuiteRun;
use self::diskstats::Devices;
use self::flush::{FlushMode, Flushed};
use self::machine::{Machine, Root};
use self::results::ProcsRun;
use self::scale::{Scale, ScaleName};
use crate::report::Report;

/// What to run.
#[derive(Clone, Debug)]
pub struct IoBenchOptions {
    /// Directories to test; worker `i` writes under `roots[i % roots.len()]`.
    pub roots: Vec<PathBuf>,
    /// Process counts, each a full run (Nano's `multiproc.sh` list).
    pub procs: Vec<usize>,
    /// Threads per worker for Strata's parallel work (Nano's `-s`).
    pub threads: usize,
    /// Sizes.
    pub scale: ScaleName,
    /// How to empty the page cache between suites.
    pub flush: FlushMode,
    /// Whether to measure `dd` on each directory as well.
    pub anchor: bool,
    /// Whether to leave the data behind (Nano's `--noclean`).
    pub keep: bool,
}

/// A checked run: the machine, the directories and the sizes for each process count.
#[derive(Clone, Debug)]
pub struct IoPlan {
    options: IoBenchOptions,
    machine: Machine,
    roots: Vec<Root>,
    /// `(processes, sizes, notes on caps applied)`, processes ascending.
    scales: Vec<(usize, Scale, Vec<String>)>,
    stamp: String,
}

impl IoPlan {
    /// Checks the options, probes the machine and the directories (creating them) and
    /// sizes each process count.
    pub fn new(options: IoBenchOptions) -> Result<IoPlan, IoBenchError> {
        if options.roots.is_empty() {
            return Err(IoBenchError::Invalid("give at least one directory to test".into()));
        }
        let mut procs = options.procs.clone();
        procs.sort_unstable();
        procs.dedup();
        if procs.is_empty() || procs[0] == 0 {
            return Err(IoBenchError::Invalid(format!("process counts must be positive, got {:?}", options.procs)));
        }
        if options.threads == 0 {
            return Err(IoBenchError::Invalid("threads per worker must be positive".into()));
        }
        let machine = Machine::probe()?;
        let roots = options.roots.iter().map(|r| Root::probe(r)).collect::<Result<Vec<_>, _>>()?;
        let scales = procs
            .iter()
            .map(|&n| {
                let (scale, notes) = Scale::plan(options.scale, n, &machine, &roots);
                (n, scale, notes)
            })
            .collect();
        Ok(IoPlan { options, machine, roots, scales, stamp: stamp(SystemTime::now()) })
    }

    /// The run's time stamp, `mmdd_HHMMSS` (UTC), naming its data and result directories.
    pub fn stamp(&self) -> &str {
        &self.stamp
    }

    /// What will run, for printing before it starts.
    pub fn describe(&self) -> String {
        let mut text = String::new();
        for root in &self.roots {
            text.push_str(&format!(
                "{}: {} on {}, {:.1} GB free{}\n",
                root.path.display(),
                root.fs_type,
                root.source,
                root.free_bytes as f64 / 1e9,
                root.device.as_ref().map_or(", no block device to sample".into(), |d| format!(", device {d}"))
            ));
        }
        for (procs, scale, notes) in &self.scales {
            text.push_str(&format!("{procs} process(es): {}\n", scale.describe()));
            for note in notes {
                text.push_str(&format!("  {note}\n"));
            }
        }
        text
    }

    /// Runs every suite for every process count, then the anchor. Data directories
    /// are removed afterwards, even on failure, unless `keep` was asked for.
    pub fn run(&self, worker: &WorkerCommand, progress: bool) -> Result<IoRun, IoBenchError> {
        let bases: Vec<PathBuf> = self.roots.iter().map(|r| r.path.join(format!("strata-io-{}", self.stamp))).collect();
        let result = self.run_in(&bases, worker, progress);
        if !self.options.keep {
            for base in &bases {
                if base.exists() {
                    std::fs::remove_dir_all(base).map_err(|e| IoBenchError::io(base, e))?;
                }
            }
        }
        result
    }

    fn run_in(&self, bases: &[PathBuf], worker: &WorkerCommand, progress: bool) -> Result<IoRun, IoBenchError> {
        for base in bases {
            std::fs::create_dir_all(base).map_err(|e| IoBenchError::io(base, e))?;
        }
        let devices = Devices::new(self.roots.iter().filter_map(|r| r.device.clone()));
        let per_run: usize = Suite::all().iter().map(|s| s.tests().len()).sum();
        let anchors = if self.options.anchor { self.roots.len() } else { 0 };
        let bar = crate::progress::bar(progress, (per_run * self.scales.len() + anchors) as u64);
        let mut flushed = Flushed::DropCaches;
        let mut runs = Vec::new();
        for (procs, scale, _) in &self.scales {
            let dirs: Vec<PathBuf> = (0..*procs)
                .map(|i| bases[i % bases.len()].join(format!("{procs}p")).join(format!("{}.{i}", self.machine.host)))
                .collect();
            let mut outcomes = Vec::new();
            for suite in Suite::all() {
                if suite.flush_before() {
                    flushed = weaker(flushed, flush::flush(self.options.flush, bases)?);
                }
                let run = SuiteRun {
                    command: worker,
                    suite,
                    dirs: &dirs,
                    scale,
                    threads: self.options.threads,
                    devices: &devices,
                };
                outcomes.extend(run.run(|test| {
                    bar.set_message(format!("{procs} proc: {}", test.name()));
                    bar.inc(1);
                })?);
            }
            runs.push(ProcsRun { procs: *procs, outcomes });
            if !self.options.keep {
                for base in bases {
                    let done = base.join(format!("{procs}p"));
                    if done.exists() {
                        std::fs::remove_dir_all(&done).map_err(|e| IoBenchError::io(&done, e))?;
                    }
                }
            }
        }
        let mut anchor = Vec::new();
        if self.options.anchor {
            let longs = self.scales[0].1.huge;
            for (root, base) in self.roots.iter().zip(bases) {
                bar.set_message(format!("dd anchor: {}", root.path.display()));
                anchor.extend(anchor::measure(root, &base.join("anchor"), longs, self.options.flush)?);
                bar.inc(1);
            }
        }
        bar.finish_and_clear();
        Ok(IoRun { plan: self.clone(), flushed, runs, anchor })
    }
}

/// The less thorough of two flushes (a run is only as cold as its weakest flush).
fn weaker(a: Flushed, b: Flushed) -> Flushed {
    let rank = |f: Flushed| match f {
        Flushed::DropCaches => 2,
        Flushed::Fadvise => 1,
        Flushed::Nothing => 0,
    };
    if rank(b) < rank(a) { b } else { a }
}

/// `mmdd_HHMMSS` in UTC, Nano's name for a run's directories.
pub fn stamp(now: SystemTime) -> String {
    let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (_, month, day) = Date((secs / 86_400) as i32).ymd();
    let s = secs % 86_400;
    format!("{month:02}{day:02}_{:02}{:02}{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// A finished run: every process count's outcomes and the anchor.
#[derive(Clone, Debug)]
pub struct IoRun {
    plan: IoPlan,
    flushed: Flushed,
    /// One per process count, ascending.
    pub runs: Vec<ProcsRun>,
    /// Strata against `dd`, per directory.
    pub anchor: Vec<AnchorRow>,
}

impl IoRun {
    /// What the flushes between suites did.
    pub fn flushed(&self) -> Flushed {
        self.flushed
    }

    /// The run as tables for the terminal, CSV and HTML.
    pub fn report(&self) -> Report {
        report::build(self)
    }

    /// Writes Nano's result files under `dir`: per process count `<n>p/` with the
    /// detailed, iostat, throughput and latency files, and across them
    /// `throughput_total.psv`, `latency_total.psv` and `config.yaml`. Returns the
    /// paths written.
    pub fn write_results(&self, dir: &Path) -> Result<Vec<PathBuf>, IoBenchError> {
        let (host, os, threads) = (&self.plan.machine.host, self.plan.machine.os, self.plan.options.threads);
        let mut files: Vec<(PathBuf, String)> = Vec::new();
        let (mut throughput, mut latency) =
            (format!("{}\n", psv::THROUGHPUT_HEADER), format!("{}\n", psv::LATENCY_HEADER));
        for run in &self.runs {
            let sub = dir.join(format!("{}p", run.procs));
            for worker in 0..run.procs {
                files
                    .push((sub.join(format!("detailed-{host}-{worker}.psv")), psv::detailed(run, worker, threads, os)));
            }
            files.push((sub.join(format!("iostat-{host}.psv")), psv::iostat(run)));
            let (t, l) = (psv::throughput_rows(run, threads, os), psv::latency_rows(run, threads, os));
            files.push((sub.join(format!("{host}-throughput.psv")), format!("{}\n{t}", psv::THROUGHPUT_HEADER)));
            files.push((sub.join(format!("{host}-latency.psv")), format!("{}\n{l}", psv::LATENCY_HEADER)));
            throughput.push_str(&t);
            latency.push_str(&l);
        }
        files.push((dir.join("throughput_total.psv"), throughput));
        files.push((dir.join("latency_total.psv"), latency));
        files.push((dir.join("config.yaml"), self.config_yaml()));
        for (path, text) in &files {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| IoBenchError::io(parent, e))?;
            }
            std::fs::write(path, text).map_err(|e| IoBenchError::io(path, e))?;
        }
        Ok(files.into_iter().map(|(path, _)| path).collect())
    }

    /// The run's settings, as Nano records them beside its results.
    fn config_yaml(&self) -> String {
        let p = &self.plan;
        let mut text = format!(
            "host: {}\nos: {}\ncores: {}\nmemory_bytes: {}\nthreads: {}\nscale: {}\nflush: \"{}\"\nroots:\n",
            p.machine.host,
            p.machine.os,
            p.machine.cores,
            p.machine.mem_total,
            p.options.threads,
            p.options.scale,
            self.flushed
        );
        for root in &p.roots {
            text.push_str(&format!(
                "  - path: \"{}\"\n    fs_type: {}\n    source: \"{}\"\n    device: {}\n",
                root.path.display(),
                root.fs_type,
                root.source,
                root.device.as_deref().unwrap_or("none")
            ));
        }
        text.push_str("sizes:\n");
        for (procs, scale, _) in &p.scales {
            text.push_str(&format!("  \"{procs}\": \"{scale}\"\n"));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn stamps_are_nanos_month_day_time() {
        let at = UNIX_EPOCH + Duration::from_secs(1_735_828_200);
        assert_eq!(stamp(at), "0102_143000");
    }

    #[test]
    fn bad_options_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let options = IoBenchOptions {
            roots: vec![dir.path().to_path_buf()],
            procs: vec![1],
            threads: 1,
            scale: ScaleName::Tiny,
            flush: FlushMode::Fadvise,
            anchor: false,
            keep: false,
        };
        let err = |o: IoBenchOptions| IoPlan::new(o).unwrap_err().to_string();
        assert!(err(IoBenchOptions { procs: vec![0, 2], ..options.clone() }).contains("positive"));
        assert!(err(IoBenchOptions { roots: vec![], ..options.clone() }).contains("at least one directory"));
        assert!(err(IoBenchOptions { threads: 0, ..options.clone() }).contains("threads"));
        let plan = IoPlan::new(IoBenchOptions { procs: vec![2, 1, 2], ..options }).unwrap();
        assert_eq!(plan.scales.iter().map(|s| s.0).collect::<Vec<_>>(), [1, 2]);
        assert!(plan.describe().contains("2 process(es): scale tiny"), "{}", plan.describe());
    }
}
