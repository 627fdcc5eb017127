//! A worker process: runs one suite's tests in its own directory when the controller
//! says so, and reports what each did and how long it took.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::IoBenchError;
use super::catalogue::{Suite, Test};
use super::exec::Workspace;
use super::protocol::{Reply, Request};
use super::scale::Scale;

/// What a worker runs and where.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    /// The suite.
    pub suite: Suite,
    /// The worker's own directory (shared by its suites, as Nano's `-db`).
    pub dir: PathBuf,
    /// The sizes, as the controller planned them.
    pub scale: Scale,
    /// Threads for Strata's parallel work (Nano's `-s`): table writes and sorts.
    pub threads: usize,
}

/// Serves the controller on `input` and `output` until it says `exit` or closes
/// `input`. A failure is reported to the controller as an `error` line, then returned.
pub fn serve(config: &WorkerConfig, input: impl BufRead, mut output: impl Write) -> Result<(), IoBenchError> {
    let result = serve_inner(config, input, &mut output);
    if let Err(e) = &result {
        // The controller may be gone already; the error is returned either way.
        let _ = send(&mut output, &Reply::Error(e.to_string()));
    }
    result
}

fn serve_inner(config: &WorkerConfig, input: impl BufRead, output: &mut impl Write) -> Result<(), IoBenchError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(config.threads.max(1))
        .build()
        .map_err(|e| IoBenchError::Invalid(format!("cannot start {} threads: {e}", config.threads)))?;
    let tests = config.suite.tests();
    let mut workspace = Workspace::new(&config.dir, config.scale.clone())?;
    pool.install(|| workspace.set_up(config.suite))?;
    send(output, &Reply::Hello(tests.iter().map(Test::id).collect()))?;
    let mut prepared: Option<Test> = None;
    for line in input.lines() {
        let line = line.map_err(|e| IoBenchError::Invalid(format!("reading the controller's requests: {e}")))?;
        match Request::decode(&line).map_err(IoBenchError::Invalid)? {
            Request::Prepare(id) => {
                let test = *tests
                    .iter()
                    .find(|t| t.id() == id)
                    .ok_or_else(|| IoBenchError::Invalid(format!("suite {} has no test {id}", config.suite)))?;
                pool.install(|| workspace.prepare(test))?;
                prepared = Some(test);
                send(output, &Reply::Prepared(id))?;
            }
            Request::Run(id) => {
                let test = prepared
                    .take()
                    .filter(|t| t.id() == id)
                    .ok_or_else(|| IoBenchError::Invalid(format!("asked to run {id} before preparing it")))?;
                let wall = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
                let clock = Instant::now();
                let work = pool.install(|| workspace.run(test))?;
                let elapsed_ns = (clock.elapsed().as_nanos() as u64).max(1);
                let reply = Reply::Result { id, start_ns: wall, end_ns: wall + elapsed_ns, elapsed_ns, work };
                send(output, &reply)?;
            }
            Request::Exit => return Ok(()),
        }
    }
    Ok(())
}

fn send(output: &mut impl Write, reply: &Reply) -> Result<(), IoBenchError> {
    writeln!(output, "{}", reply.encode())
        .and_then(|()| output.flush())
        .map_err(|e| IoBenchError::Invalid(format!("writing to the controller: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::scale::ScaleName;

    fn config(dir: &std::path::Path, suite: Suite) -> WorkerConfig {
        WorkerConfig { suite, dir: dir.to_path_buf(), scale: Scale::preset(ScaleName::Tiny, 1), threads: 1 }
    }

    #[test]
    fn a_worker_answers_hello_prepared_and_result() {
        let dir = tempfile::tempdir().unwrap();
        let input = "prepare .meta.openclose\nrun .meta.openclose\nexit\n";
        let mut output = Vec::new();
        // The meta suite needs the write suite's files; `openclose` is made by its set-up.
        Workspace::new(dir.path(), config(dir.path(), Suite::Write).scale).unwrap().set_up(Suite::Write).unwrap();
        serve(&config(dir.path(), Suite::Meta), input.as_bytes(), &mut output).unwrap();
        let lines: Vec<Reply> = String::from_utf8(output).unwrap().lines().map(|l| Reply::decode(l).unwrap()).collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0], Reply::Hello(Suite::Meta.tests().iter().map(Test::id).collect()));
        assert_eq!(lines[1], Reply::Prepared(".meta.openclose".into()));
        let Reply::Result { id, start_ns, end_ns, elapsed_ns, work } = &lines[2] else { panic!("{:?}", lines[2]) };
        assert_eq!(id, ".meta.openclose");
        assert_eq!((end_ns - start_ns, work.amount), (*elapsed_ns, 1000));
    }

    #[test]
    fn protocol_mistakes_are_reported_as_errors() {
        let dir = tempfile::tempdir().unwrap();
        for (input, expected) in [
            ("run .meta.size\n", "before preparing it"),
            ("prepare .write.setIntTiny\n", "suite meta has no test .write.setIntTiny"),
            ("dance\n", "unknown request"),
        ] {
            let mut output = Vec::new();
            let err = serve(&config(dir.path(), Suite::Meta), input.as_bytes(), &mut output).unwrap_err();
            assert!(err.to_string().contains(expected), "{err}");
            let last = String::from_utf8(output).unwrap().lines().last().unwrap().to_string();
            assert!(last.starts_with("error ") && last.contains(expected), "{last}");
        }
    }
}
