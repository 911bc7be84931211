//! Running a future that never waits, without an executor.
//!
//! The runtime's logic is written once, as async code; the sync API runs it
//! over sync stores, whose every call is done before it returns, so each
//! future it builds is ready the first time it is polled. Polling it once,
//! with a waker that does nothing, is then all the executor it needs: no
//! runtime is started, so the sync API works inside a tokio runtime too.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use crate::store::StoreError;

/// The output of `future` if it is ready when first polled.
pub(crate) fn now_or_never<F: Future>(future: F) -> Option<F::Output> {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => Some(output),
        Poll::Pending => None,
    }
}

/// The result of a future over sync stores. One that waits would be a bug in
/// this crate (a sync call that did not finish); it is an error, not a hang.
pub(crate) fn finish<T, E: From<StoreError>>(
    future: impl Future<Output = Result<T, E>>,
) -> Result<T, E> {
    now_or_never(future).unwrap_or_else(|| {
        Err(E::from(StoreError::Backend(
            "internal: a sync store's call did not finish before it returned".into(),
        )))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ready_future_finishes_and_a_waiting_one_is_an_error() {
        assert_eq!(now_or_never(async { 7 }), Some(7));
        let waiting: Result<(), StoreError> = finish(async {
            std::future::pending::<()>().await;
            Ok(())
        });
        assert!(waiting.unwrap_err().to_string().contains("did not finish"));
    }
}
