//! The binary's allocator, jemalloc, its settings, and its own figures on `/metrics`.
//!
//! `hookwire_allocator_bytes{kind}` (a gauge, refreshed every second): `allocated` is what
//! the program holds, `resident` what the allocator keeps in RAM (the program's heap share of the
//! RSS), `retained` the address space it keeps mapped but gave back to the system. A heap that
//! grows shows in `allocated`; memory the allocator keeps after a burst, in `resident` alone.

use std::ffi::{c_void, CStr};
use std::time::Duration;

/// jemalloc rather than glibc's malloc: its background thread gives freed memory back to the
/// system after a burst, even while the server idles (glibc's kept it), docs/performance.md.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's settings (`_RJEM_MALLOC_CONF` in the environment overrides them): pages freed for
/// 5 s are given back, with `MADV_DONTNEED` at once rather than first as "muzzy" `MADV_FREE`
/// pages, which the kernel takes back only under memory pressure and which count as resident
/// until then.
#[allow(non_upper_case_globals)]
#[export_name = "_rjem_malloc_conf"]
pub static malloc_conf: &[u8] = b"background_thread:true,dirty_decay_ms:5000,muzzy_decay_ms:0\0";

/// How often the gauges are refreshed.
const EVERY: Duration = Duration::from_secs(1);

/// The statistics published, by their `kind` label.
const FIGURES: &[(&str, &CStr)] = &[
    ("allocated", c"stats.allocated"),
    ("active", c"stats.active"),
    ("metadata", c"stats.metadata"),
    ("resident", c"stats.resident"),
    ("mapped", c"stats.mapped"),
    ("retained", c"stats.retained"),
];

/// Publishes jemalloc's figures every second from a thread of its own (the metrics
/// recorder is process-wide; it is installed when the server starts, and figures recorded
/// before that are dropped, which only delays the first by one period).
pub fn publish_figures() {
    let spawned = std::thread::Builder::new()
        .name("allocator-figures".into())
        .spawn(|| loop {
            refresh();
            for (kind, name) in FIGURES {
                if let Some(bytes) = read_size(name) {
                    metrics::gauge!("hookwire_allocator_bytes", "kind" => *kind).set(bytes as f64);
                }
            }
            std::thread::sleep(EVERY);
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "cannot start the allocator figures thread: /metrics will not show hookwire_allocator_bytes");
    }
}

/// jemalloc caches its statistics; writing `epoch` refreshes them.
fn refresh() {
    let mut epoch: u64 = 1;
    let mut len = std::mem::size_of::<u64>();
    let new = epoch;
    // SAFETY: "epoch" is a NUL-terminated name; jemalloc reads and writes one `uint64_t` through
    // pointers to a `u64` and its size, which outlive the call.
    unsafe {
        tikv_jemalloc_sys::mallctl(
            c"epoch".as_ptr(),
            (&mut epoch as *mut u64).cast::<c_void>(),
            &mut len,
            (&new as *const u64).cast_mut().cast::<c_void>(),
            std::mem::size_of::<u64>(),
        );
    }
}

/// A `size_t` statistic, or `None` if jemalloc has no such name (built without statistics).
fn read_size(name: &CStr) -> Option<usize> {
    let mut value: usize = 0;
    let mut len = std::mem::size_of::<usize>();
    // SAFETY: `name` is NUL-terminated; jemalloc writes at most `len` bytes (one `size_t`) to
    // `value`, and nothing is written to it (null new value).
    let status = unsafe {
        tikv_jemalloc_sys::mallctl(
            name.as_ptr(),
            (&mut value as *mut usize).cast::<c_void>(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    (status == 0 && len == std::mem::size_of::<usize>()).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figures_follow_what_the_program_holds() {
        refresh();
        let Some(before) = read_size(c"stats.allocated") else {
            panic!("jemalloc has no statistics: the `stats` feature is off");
        };
        let held = std::hint::black_box(vec![1u8; 64 << 20]);
        refresh();
        let during = read_size(c"stats.allocated").unwrap_or(0);
        // Other threads of the test harness allocate and free meanwhile: a margin.
        assert!(
            during >= before + (60 << 20),
            "allocated {before} → {during} with 64 MiB held"
        );
        drop(held);
        refresh();
        let after = read_size(c"stats.allocated").unwrap_or(u64::MAX as usize);
        assert!(
            after < during - (32 << 20),
            "allocated {during} → {after} after freeing"
        );
        for (kind, name) in FIGURES {
            assert!(read_size(name).is_some(), "{kind} is not readable");
        }
    }
}
