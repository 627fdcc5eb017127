//! Stopping a statement from outside: a client that disconnects, or a time limit.
//! A [`Cancel`] is shared between the thread running a statement and whoever may
//! stop it; [`bounded`] runs a statement's future until it finishes, the limit
//! passes or the cancel fires, whichever is first. Dropping the future stops the
//! plan: DataFusion's operators stop at their next batch, its spawned tasks are
//! aborted, and their memory goes back to the pool.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

use crate::error::{QueryError, Result};

/// A flag that stops the statement it is given to.
#[derive(Clone, Debug, Default)]
pub struct Cancel(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    cancelled: AtomicBool,
    notify: Notify,
}

impl Cancel {
    /// A cancel that has not fired.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Stops the statement (now, or as soon as it starts).
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::Release);
        self.0.notify.notify_waiters();
    }

    /// Whether [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::Acquire)
    }

    /// Completes once cancelled.
    async fn cancelled(&self) {
        loop {
            let notified = self.0.notify.notified();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

/// Runs `work` until it completes, `limit` passes ([`QueryError::TimedOut`]) or
/// `cancel` fires ([`QueryError::Cancelled`]).
pub async fn bounded<T>(work: impl Future<Output = Result<T>>, limit: Option<Duration>, cancel: &Cancel) -> Result<T> {
    use futures::future::{Either, select};
    use std::pin::pin;
    let timer = async {
        match limit {
            Some(limit) => tokio::time::sleep(limit).await,
            None => std::future::pending().await,
        }
    };
    // The stop is polled first, so a statement already cancelled never starts.
    let (cancelled, timer, work) = (pin!(cancel.cancelled()), pin!(timer), pin!(work));
    let stop = pin!(select(cancelled, timer));
    match select(stop, work).await {
        Either::Left((Either::Left(_), _)) => Err(QueryError::Cancelled),
        Either::Left((Either::Right(_), _)) => Err(QueryError::TimedOut { limit: limit.unwrap_or_default() }),
        Either::Right((result, _)) => result,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_time().build().unwrap()
    }

    #[test]
    fn work_that_finishes_gives_its_result() {
        let answer = runtime().block_on(bounded(async { Ok(7) }, Some(Duration::from_secs(5)), &Cancel::new()));
        assert_eq!(answer.unwrap(), 7);
    }

    #[test]
    fn work_past_its_limit_times_out_and_a_cancel_stops_it() {
        let forever = || async {
            std::future::pending::<()>().await;
            Ok(())
        };
        let rt = runtime();
        let err = rt.block_on(bounded(forever(), Some(Duration::from_millis(20)), &Cancel::new())).unwrap_err();
        assert!(matches!(err, QueryError::TimedOut { .. }), "{err}");
        let cancel = Cancel::new();
        let stopper = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            stopper.cancel();
        });
        let err = rt.block_on(bounded(forever(), None, &cancel)).unwrap_err();
        assert!(matches!(err, QueryError::Cancelled), "{err}");
        let fired = Cancel::new();
        fired.cancel();
        assert!(matches!(rt.block_on(bounded(async { Ok(1) }, None, &fired)), Err(QueryError::Cancelled)));
    }
}
