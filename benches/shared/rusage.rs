//! The CPU time `getrusage` reports, shared by the bench targets.

use std::time::Duration;

/// This process's CPU time (user and system) so far.
pub fn own_cpu() -> Duration {
    usage(libc::RUSAGE_SELF)
}

/// The CPU time of this process's children that were waited for (and of theirs).
pub fn children_cpu() -> Duration {
    usage(libc::RUSAGE_CHILDREN)
}

fn usage(who: libc::c_int) -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes the struct it is given; RUSAGE_SELF and RUSAGE_CHILDREN are valid.
    let usage = unsafe {
        if libc::getrusage(who, usage.as_mut_ptr()) != 0 {
            return Duration::ZERO;
        }
        usage.assume_init()
    };
    let of = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    of(usage.ru_utime) + of(usage.ru_stime)
}
