//! The line protocol between the controller and its worker processes (on the
//! workers' stdin and stdout), standing in for Nano's kdb+ IPC.
//!
//! ```text
//! worker -> controller   hello <test id> <test id> ...      once, when ready
//! controller -> worker   prepare <test id>                  untimed set-up
//! worker -> controller   prepared <test id>
//! controller -> worker   run <test id>                      sent to all at once
//! worker -> controller   result <test id> <start ns> <end ns> <elapsed ns> <amount> <repeat> <length>
//! worker -> controller   error <message>                    then the worker exits
//! controller -> worker   exit
//! ```
//! Splitting set-up from the timed run lets every worker be ready before the
//! controller starts them together, as Nano's controller calls all workers at once.

use super::results::Work;

/// A message from the controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Set up the test (not timed).
    Prepare(String),
    /// Run the test (timed).
    Run(String),
    /// Leave.
    Exit,
}

/// A message from a worker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Ready; these are my tests, in order.
    Hello(Vec<String>),
    /// Set up for this test.
    Prepared(String),
    /// Ran this test.
    Result {
        /// The test's id.
        id: String,
        /// Wall-clock start, ns since the Unix epoch.
        start_ns: u64,
        /// Wall-clock end.
        end_ns: u64,
        /// Monotonic duration, ns.
        elapsed_ns: u64,
        /// What was done.
        work: Work,
    },
    /// Failed; the worker exits after sending this.
    Error(String),
}

impl Request {
    /// The request as one line (without the newline).
    pub fn encode(&self) -> String {
        match self {
            Request::Prepare(id) => format!("prepare {id}"),
            Request::Run(id) => format!("run {id}"),
            Request::Exit => "exit".into(),
        }
    }

    /// Parses a line written by [`Request::encode`].
    pub fn decode(line: &str) -> Result<Request, String> {
        match line.trim_end().split_once(' ') {
            Some(("prepare", id)) => Ok(Request::Prepare(id.into())),
            Some(("run", id)) => Ok(Request::Run(id.into())),
            None if line.trim_end() == "exit" => Ok(Request::Exit),
            _ => Err(format!("unknown request {line:?}; expected prepare, run or exit")),
        }
    }
}

impl Reply {
    /// The reply as one line (without the newline; line breaks in errors become spaces).
    pub fn encode(&self) -> String {
        match self {
            Reply::Hello(ids) => format!("hello {}", ids.join(" ")),
            Reply::Prepared(id) => format!("prepared {id}"),
            Reply::Result { id, start_ns, end_ns, elapsed_ns, work } => {
                format!("result {id} {start_ns} {end_ns} {elapsed_ns} {} {} {}", work.amount, work.repeat, work.length)
            }
            Reply::Error(message) => format!("error {}", message.replace(['\n', '\r'], " ")),
        }
    }

    /// Parses a line written by [`Reply::encode`].
    pub fn decode(line: &str) -> Result<Reply, String> {
        let line = line.trim_end();
        let (kind, rest) = line.split_once(' ').unwrap_or((line, ""));
        match kind {
            "hello" => Ok(Reply::Hello(rest.split_whitespace().map(str::to_string).collect())),
            "prepared" => Ok(Reply::Prepared(rest.into())),
            "error" => Ok(Reply::Error(rest.into())),
            "result" => {
                let fields: Vec<&str> = rest.split(' ').collect();
                let [id, numbers @ ..] = fields.as_slice() else { unreachable!("split yields one field") };
                let numbers: Vec<u64> = numbers
                    .iter()
                    .map(|n| n.parse::<u64>())
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("result line {line:?}: {e}"))?;
                let [start_ns, end_ns, elapsed_ns, amount, repeat, length] = numbers[..] else {
                    return Err(format!("result line {line:?}: expected an id and 6 numbers"));
                };
                Ok(Reply::Result {
                    id: id.to_string(),
                    start_ns,
                    end_ns,
                    elapsed_ns,
                    work: Work { amount, repeat, length },
                })
            }
            _ => Err(format!("unknown reply {line:?}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip() {
        for request in [Request::Prepare(".write.setIntTiny".into()), Request::Run("x".into()), Request::Exit] {
            assert_eq!(Request::decode(&request.encode()).unwrap(), request);
        }
        let work = Work { amount: 8, repeat: 2, length: 3 };
        for reply in [
            Reply::Hello(vec!["a".into(), "b".into()]),
            Reply::Prepared("a".into()),
            Reply::Result { id: "a".into(), start_ns: 1, end_ns: 5, elapsed_ns: 4, work },
            Reply::Error("disk full".into()),
        ] {
            assert_eq!(Reply::decode(&reply.encode()).unwrap(), reply);
        }
        assert_eq!(Reply::decode(&Reply::Error("a\nb".into()).encode()).unwrap(), Reply::Error("a b".into()));
    }

    #[test]
    fn garbage_is_refused_with_the_line() {
        assert!(Request::decode("jump x").unwrap_err().contains("jump x"));
        assert!(Reply::decode("result a 1 2").unwrap_err().contains("6 numbers"));
        assert!(Reply::decode("result a 1 2 x 4 5 6").unwrap_err().contains("invalid digit"));
        assert!(Reply::decode("bye").unwrap_err().contains("unknown reply"));
    }
}
