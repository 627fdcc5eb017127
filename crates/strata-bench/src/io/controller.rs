//! The controller side of a suite: starts one worker process per directory, waits
//! until all are set up, then starts each test in all of them at the same moment
//! (as Nano's controller calls every worker at once), sampling the devices around it.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};

use super::IoBenchError;
use super::catalogue::{Suite, Test};
use super::diskstats::{Devices, rates};
use super::protocol::{Reply, Request};
use super::results::{Measurement, TestOutcome};
use super::scale::Scale;

/// How to start a worker: a program and the arguments before the worker's own
/// (for the CLI: the `strata` binary and `bench io worker`).
#[derive(Clone, Debug)]
pub struct WorkerCommand {
    /// The executable.
    pub program: PathBuf,
    /// Leading arguments; the controller appends `--suite`, `--dir`, `--threads`
    /// and `--sizes`.
    pub args: Vec<OsString>,
}

/// One suite to run in a set of worker processes.
pub struct SuiteRun<'a> {
    /// How to start workers.
    pub command: &'a WorkerCommand,
    /// The suite.
    pub suite: Suite,
    /// One directory per worker.
    pub dirs: &'a [PathBuf],
    /// Sizes.
    pub scale: &'a Scale,
    /// Threads per worker.
    pub threads: usize,
    /// Devices to sample around each test.
    pub devices: &'a Devices,
}

impl SuiteRun<'_> {
    /// Runs every test of the suite in every worker; `on_test` hears of each test as
    /// it starts (for progress).
    pub fn run(&self, mut on_test: impl FnMut(Test)) -> Result<Vec<TestOutcome>, IoBenchError> {
        let mut workers = Workers::start(self)?;
        let tests = self.suite.tests();
        let expected: Vec<String> = tests.iter().map(Test::id).collect();
        for (i, reply) in workers.collect()?.into_iter().enumerate() {
            match reply {
                Reply::Hello(ids) if ids == expected => {}
                other => return Err(workers.fault(i, format!("sent {other:?}, expected hello with {expected:?}"))),
            }
        }
        let mut outcomes = Vec::with_capacity(tests.len());
        for test in tests {
            on_test(test);
            let id = test.id();
            workers.send_all(&Request::Prepare(id.clone()))?;
            workers.expect_all(|r| matches!(r, Reply::Prepared(p) if *p == id), "prepared")?;
            let before = self.devices.sample();
            workers.send_all(&Request::Run(id.clone()))?;
            let replies = workers.collect()?;
            let after = self.devices.sample();
            let mut measurements = Vec::with_capacity(replies.len());
            for (worker, reply) in replies.into_iter().enumerate() {
                match reply {
                    Reply::Result { id: got, start_ns, end_ns, elapsed_ns, work } if got == id => {
                        measurements.push(Measurement { worker, start_ns, end_ns, elapsed_ns, work })
                    }
                    other => return Err(workers.fault(worker, format!("sent {other:?}, expected the result of {id}"))),
                }
            }
            outcomes.push(TestOutcome { test, measurements, disk: rates(&before, &after) });
        }
        workers.finish()?;
        Ok(outcomes)
    }
}

/// The running worker processes of one suite. Dropping it kills any still running.
struct Workers {
    children: Vec<Child>,
    inputs: Vec<ChildStdin>,
    replies: Receiver<(usize, Option<String>)>,
    /// Workers whose output has closed (they can send nothing more).
    closed: Vec<bool>,
    dirs: Vec<PathBuf>,
}

impl Workers {
    /// Starts one worker per directory, back to back.
    fn start(run: &SuiteRun<'_>) -> Result<Workers, IoBenchError> {
        let (sender, replies) = channel();
        let mut workers = Workers {
            children: Vec::new(),
            inputs: Vec::new(),
            replies,
            closed: vec![false; run.dirs.len()],
            dirs: run.dirs.to_vec(),
        };
        for (i, dir) in run.dirs.iter().enumerate() {
            let mut child = Command::new(&run.command.program)
                .args(&run.command.args)
                .arg("--suite")
                .arg(run.suite.to_string())
                .arg("--dir")
                .arg(dir)
                .arg("--threads")
                .arg(run.threads.to_string())
                .arg("--sizes")
                .arg(run.scale.to_string())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .map_err(|e| IoBenchError::io(&run.command.program, e))?;
            let (input, output) = (child.stdin.take(), child.stdout.take());
            workers.children.push(child);
            let (Some(input), Some(output)) = (input, output) else {
                return Err(workers.fault(i, "started without pipes".into()));
            };
            workers.inputs.push(input);
            let sender = sender.clone();
            // One reader per worker, so a slow worker never blocks the others' replies.
            std::thread::spawn(move || {
                for line in BufReader::new(output).lines() {
                    let Ok(line) = line else { break };
                    if sender.send((i, Some(line))).is_err() {
                        return;
                    }
                }
                let _ = sender.send((i, None));
            });
        }
        Ok(workers)
    }

    /// Sends `request` to every worker, one right after the other.
    fn send_all(&mut self, request: &Request) -> Result<(), IoBenchError> {
        let line = format!("{}\n", request.encode());
        for i in 0..self.inputs.len() {
            let sent = self.inputs[i].write_all(line.as_bytes()).and_then(|()| self.inputs[i].flush());
            if let Err(e) = sent {
                return Err(self.fault(i, format!("cannot send {:?}: {e}", request.encode())));
            }
        }
        Ok(())
    }

    /// One reply from every worker, in worker order. A worker's `error` line or exit
    /// ends the run with its message.
    fn collect(&mut self) -> Result<Vec<Reply>, IoBenchError> {
        let mut replies: Vec<Option<Reply>> = vec![None; self.dirs.len()];
        while let Some(i) = replies.iter().position(Option::is_none) {
            if let Some(dead) = (0..replies.len()).find(|&w| replies[w].is_none() && self.closed[w]) {
                let status = self.children[dead].wait().map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
                return Err(self.fault(dead, format!("exited ({status}) before replying")));
            }
            let Ok((i, line)) = self.replies.recv() else {
                return Err(self.fault(i, "output closed".into()));
            };
            let Some(line) = line else {
                // A worker may close after its last reply; only a missing reply is fatal.
                self.closed[i] = true;
                continue;
            };
            match Reply::decode(&line) {
                Ok(Reply::Error(message)) => return Err(self.fault(i, message)),
                Ok(reply) if replies[i].is_none() => replies[i] = Some(reply),
                Ok(reply) => return Err(self.fault(i, format!("sent {reply:?} out of turn"))),
                Err(e) => return Err(self.fault(i, e)),
            }
        }
        Ok(replies.into_iter().map(|r| r.expect("every worker replied")).collect())
    }

    /// One reply per worker, each of which must pass `ok`.
    fn expect_all(&mut self, ok: impl Fn(&Reply) -> bool, what: &str) -> Result<(), IoBenchError> {
        for (i, reply) in self.collect()?.into_iter().enumerate() {
            if !ok(&reply) {
                return Err(self.fault(i, format!("sent {reply:?}, expected {what}")));
            }
        }
        Ok(())
    }

    /// Tells every worker to exit and waits for them.
    fn finish(mut self) -> Result<(), IoBenchError> {
        self.send_all(&Request::Exit)?;
        self.inputs.clear();
        for i in 0..self.children.len() {
            let status = self.children[i].wait().map_err(|e| self.fault(i, format!("cannot wait: {e}")))?;
            if !status.success() {
                return Err(self.fault(i, format!("exited with {status}")));
            }
        }
        self.children.clear();
        Ok(())
    }

    fn fault(&self, worker: usize, detail: String) -> IoBenchError {
        IoBenchError::Worker { worker, dir: self.dirs.get(worker).cloned().unwrap_or_default(), detail }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        // Only after a failure: stop the workers this controller started.
        self.inputs.clear();
        for child in &mut self.children {
            if let Ok(None) = child.try_wait() {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::scale::ScaleName;

    fn run_with(program: &str, args: &[&str]) -> IoBenchError {
        let dir = tempfile::tempdir().unwrap();
        let command = WorkerCommand { program: program.into(), args: args.iter().map(Into::into).collect() };
        let dirs = [dir.path().join("w0"), dir.path().join("w1")];
        let scale = Scale::preset(ScaleName::Tiny, 2);
        let devices = Devices::new(Vec::new());
        let run = SuiteRun {
            command: &command,
            suite: Suite::Meta,
            dirs: &dirs,
            scale: &scale,
            threads: 1,
            devices: &devices,
        };
        run.run(|_| {}).unwrap_err()
    }

    #[test]
    fn a_worker_that_dies_or_fails_ends_the_run_with_its_story() {
        let err = run_with("false", &[]).to_string();
        assert!(err.starts_with("worker ") && err.contains("exited (exit status: 1) before replying"), "{err}");
        let err = run_with("sh", &["-c", "echo error disk on fire", "sh"]).to_string();
        assert!(err.starts_with("worker ") && err.contains("): disk on fire"), "{err}");
        let err = run_with("sh", &["-c", "echo hello .meta.size", "sh"]).to_string();
        assert!(err.contains("expected hello with"), "{err}");
        let err = run_with("/nonexistent/strata", &[]).to_string();
        assert!(err.contains("/nonexistent/strata"), "{err}");
    }
}
