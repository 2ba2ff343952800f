//! The binding's tokio runtime: every async core operation runs on it, from a thread that has
//! released the GIL (see `errors::run`). Fork-aware: a runtime inherited across `fork`
//! (PySpark forks its Python workers) has no threads behind it and is replaced.
//!
//! Operations are interruptible (Ctrl-C): while one runs, the waiting thread checks Python's
//! signal handlers every [`SIGNAL_POLL`]. A signal whose handler raises (SIGINT's
//! `KeyboardInterrupt`) before the operation's commit point abandons the operation, nothing
//! of it visible; one that arrives after the commit point lets the operation finish, and the
//! exception then says that it committed (see `errors::run`).

use std::cell::RefCell;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lance_partitioned_core::ns::infra::session::per_process;
use lance_partitioned_core::ns::txn::interrupt::{with_gate, Gate};
use lance_partitioned_core::{Error, Result};
use pyo3::prelude::*;
use tokio::runtime::{Builder, Runtime};

/// How often a waiting thread runs Python's signal handlers.
const SIGNAL_POLL: Duration = Duration::from_millis(100);

/// A signal's exception, raised by its handler while an operation ran on this thread, and
/// whether the operation had begun to commit then.
pub struct Interrupt {
    pub error: PyErr,
    pub after_commit: bool,
}

thread_local! {
    static INTERRUPT: RefCell<Option<Interrupt>> = const { RefCell::new(None) };
}

/// The interrupt of the last operation on this thread, if one came.
pub fn take_interrupt() -> Option<Interrupt> {
    INTERRUPT.with(|i| i.borrow_mut().take())
}

static RUNTIME: Mutex<Option<(u32, Arc<Runtime>)>> = Mutex::new(None);

/// The runtime of this process.
///
/// # Errors
/// `Internal` if the runtime cannot be built.
pub fn runtime() -> Result<Arc<Runtime>> {
    per_process(&RUNTIME, || {
        Builder::new_multi_thread()
            .enable_all()
            .thread_name("lance-partitioned")
            .build()
            .map_err(|e| Error::Internal(format!("cannot start the tokio runtime: {e}")))
    })
}

/// Runs a future to completion on the runtime, from any thread: also from inside a runtime,
/// as when a write pulls its input from one of our own scans, or from a Python generator that
/// calls the library (`block_in_place` hands the thread's runtime work to another thread
/// while this one blocks). Only a single-threaded runtime cannot wait on this thread: that is
/// an error, never a panic.
///
/// # Errors
/// The future's error, or `Internal` if the runtime cannot be built.
pub fn block_on<T>(f: impl Future<Output = Result<T>>) -> Result<T> {
    let rt = runtime()?;
    let f = interruptible(f);
    match tokio::runtime::Handle::try_current() {
        Err(_) => rt.block_on(f),
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| rt.block_on(f))
        }
        Ok(_) => Err(Error::InvalidArgument(
            "lance_partitioned was called from inside a single-threaded tokio runtime, which \
             cannot wait for it; call it from a thread of its own"
                .into(),
        )),
    }
}

/// Runs `f` under a commit gate, running the signal handlers every [`SIGNAL_POLL`], at the
/// commit point and at the end; a handler's exception is kept for `errors::run` with whether
/// the operation had begun to commit.
async fn interruptible<T>(f: impl Future<Output = Result<T>>) -> Result<T> {
    let raised: Arc<Mutex<Option<PyErr>>> = Arc::default();
    let probe = {
        let raised = Arc::clone(&raised);
        move || signal_raised(&raised)
    };
    let gate = Gate::with_probe(Box::new(probe));
    let op = with_gate(Arc::clone(&gate), f);
    tokio::pin!(op);
    let mut late = false;
    let out = loop {
        tokio::select! {
            out = &mut op => break out,
            () = tokio::time::sleep(SIGNAL_POLL), if !late => {
                if !signal_raised(&raised) {
                    continue;
                }
                if gate.interrupt() {
                    break Err(Error::Interrupted(
                        "interrupted before the operation committed; nothing of it is visible"
                            .into(),
                    ));
                }
                late = true;
            }
        }
    };
    signal_raised(&raised);
    let error = raised.lock().ok().and_then(|mut r| r.take());
    if let Some(error) = error {
        let after_commit = gate.committing();
        INTERRUPT.with(|i| {
            *i.borrow_mut() = Some(Interrupt {
                error,
                after_commit,
            })
        });
    }
    out
}

/// Runs Python's signal handlers (on the main thread; elsewhere nothing runs) and keeps the
/// first exception one raised; whether one is kept.
fn signal_raised(raised: &Mutex<Option<PyErr>>) -> bool {
    let Ok(mut slot) = raised.lock() else {
        return false;
    };
    if slot.is_none() {
        *slot = Python::attach(|py| py.check_signals().err());
    }
    slot.is_some()
}
