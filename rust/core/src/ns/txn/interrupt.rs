//! The commit point of an operation, for callers that can be interrupted (Ctrl-C in Python).
//!
//! A caller runs an operation inside [`with_gate`] and may [`Gate::interrupt`] it at any time.
//! An interrupt that arrives before the operation's first visible step makes that step fail
//! with [`Error::Interrupted`] (nothing of the operation is visible); once the first visible
//! step has begun, the operation runs to its end and the interrupt reports that it came too
//! late ([`Gate::interrupt`] returns `false`). The visible steps are the manifest commit, the
//! root-property commit and weak mode's leaf commits; each calls [`enter_commit`] first.
//! Outside a gate (tests, spawned tasks) [`enter_commit`] does nothing.

use std::future::Future;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};

const OPEN: u8 = 0;
const COMMITTING: u8 = 1;
const INTERRUPTED: u8 = 2;

/// Asks the caller whether an interrupt is waiting (Python: a raised signal handler).
pub type Probe = Box<dyn Fn() -> bool + Send + Sync>;

/// Whether an operation may still be interrupted.
#[derive(Default)]
pub struct Gate {
    state: AtomicU8,
    probe: Option<Probe>,
}

impl Gate {
    /// A gate of an operation that has not begun to commit.
    #[must_use]
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// A gate that also asks `probe`, at the commit point, whether an interrupt is waiting.
    #[must_use]
    pub fn with_probe(probe: Probe) -> Arc<Self> {
        Arc::new(Self {
            state: AtomicU8::new(OPEN),
            probe: Some(probe),
        })
    }

    /// Interrupts the operation: `true` when it had not begun to commit (it will stop before
    /// anything becomes visible), `false` when its commit had begun (it will run to its end).
    pub fn interrupt(&self) -> bool {
        match self
            .state
            .compare_exchange(OPEN, INTERRUPTED, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) => true,
            Err(state) => state == INTERRUPTED,
        }
    }

    /// Whether the operation has begun a visible step.
    #[must_use]
    pub fn committing(&self) -> bool {
        self.state.load(Ordering::SeqCst) == COMMITTING
    }

    fn enter(&self) -> Result<()> {
        if self.state.load(Ordering::SeqCst) == OPEN && self.probe.as_ref().is_some_and(|p| p()) {
            self.interrupt();
        }
        match self
            .state
            .compare_exchange(OPEN, COMMITTING, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) | Err(COMMITTING) => Ok(()),
            Err(_) => Err(Error::Interrupted(
                "interrupted before the operation committed; nothing of it is visible".into(),
            )),
        }
    }
}

tokio::task_local! {
    static GATE: Arc<Gate>;
}

/// Runs `op` under `gate`.
pub async fn with_gate<F: Future>(gate: Arc<Gate>, op: F) -> F::Output {
    GATE.scope(gate, op).await
}

/// Marks the start of a visible step of the current operation.
///
/// # Errors
/// `Interrupted` when the operation was interrupted before this point.
pub(crate) fn enter_commit() -> Result<()> {
    GATE.try_with(|g| g.enter()).unwrap_or(Ok(()))
}

/// Marks a leaf commit: a visible step unless it is `detached` (strong mode's leaf commits
/// become visible only with the manifest commit).
///
/// # Errors
/// `Interrupted` when the operation was interrupted before this point.
pub(crate) fn enter_leaf_commit(detached: bool) -> Result<()> {
    if detached {
        Ok(())
    } else {
        enter_commit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_interrupt_before_the_commit_point_stops_it_and_one_after_does_not() {
        let g = Gate::new();
        assert!(g.interrupt());
        let r = with_gate(Arc::clone(&g), async { enter_commit() }).await;
        assert!(matches!(r, Err(Error::Interrupted(_))));

        let g = Gate::new();
        let r = with_gate(Arc::clone(&g), async {
            enter_commit()?;
            assert!(!g.interrupt());
            enter_commit()
        })
        .await;
        assert!(r.is_ok());
        assert!(g.committing());
        assert!(enter_commit().is_ok(), "outside a gate nothing is gated");

        let g = Gate::with_probe(Box::new(|| true));
        let r = with_gate(Arc::clone(&g), async { enter_commit() }).await;
        assert!(
            matches!(r, Err(Error::Interrupted(_))),
            "the probe is asked at the point"
        );
    }
}
