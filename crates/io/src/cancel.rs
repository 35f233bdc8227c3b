//! Stopping a long call from outside: a flag the caller raises (a Ctrl-C handler, a Python
//! signal check, a UI button) and the worker checks between units of work.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};

/// A cancellation flag shared between the caller of a long operation and its workers. Clones
/// share the flag. A worker calls [`Cancel::check`] between units of work (a block, a file, a
/// chunk) and stops with [`Error::Cancelled`] once [`Cancel::cancel`] was called; what was
/// completed stays complete (every file is still replaced atomically), so a resumable
/// operation can be resumed.
///
/// ```
/// let cancel = scifmt_io::Cancel::new();
/// let worker = cancel.clone();
/// assert!(worker.check().is_ok());
/// cancel.cancel();
/// assert!(matches!(worker.check(), Err(scifmt_io::Error::Cancelled)));
/// ```
///
/// Two `Cancel`s are equal when they share one flag.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl PartialEq for Cancel {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Cancel {}

impl Cancel {
    /// A flag not raised yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Raises the flag: every holder's next [`Cancel::check`] fails.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether the flag is raised.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// `Ok` while the flag is down.
    ///
    /// # Errors
    /// [`Error::Cancelled`] once it is raised.
    pub fn check(&self) -> Result<()> {
        if self.is_cancelled() {
            Err(Error::Cancelled)
        } else {
            Ok(())
        }
    }
}
