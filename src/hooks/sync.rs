//! What the hooks' shared state needs to be shared safely.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// The lock of `mutex`, also when a thread panicked while it held it: the hooks' tables (figures,
/// chats, sessions, the async queue) stay usable, since a hook's panic must never fail the chats
/// that come after it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
