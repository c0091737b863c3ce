//! Metric handles looked up in the recorder once and kept.
//!
//! `metrics::counter!` and its kin look their series up each time: they build the key (its
//! labels as strings), hash it and search the recorder's registry. A chat records a dozen such
//! figures, and the lookups were a tenth of a chat's own work (docs/performance.md). A series of
//! fixed labels is looked up once and its handle kept here. The recorder forgets no series (no
//! idle timeout is set, `server::metrics`), so a kept handle stays its series'. A different
//! recorder (the server's, installed after something was recorded without one; a test's own)
//! gets its own handles: each is kept with the recorder it came from, told apart by its address
//! (the process's lives for good; a test's local one for its test).

use std::sync::{Mutex, PoisonError};

use metrics::Recorder;

/// One series' handle (a `Counter`, a `Histogram`).
pub(crate) struct Kept<H> {
    make: fn() -> H,
    /// The handle and its recorder's address.
    slot: Mutex<Option<(usize, H)>>,
}

impl<H: Clone> Kept<H> {
    /// A series `make` looks up (`|| metrics::counter!("name")`).
    pub(crate) const fn new(make: fn() -> H) -> Self {
        Self {
            make,
            slot: Mutex::new(None),
        }
    }

    /// The series' handle in the recorder now in use.
    pub(crate) fn get(&self) -> H {
        let recorder = current_recorder();
        let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        match &*slot {
            Some((kept_for, handle)) if *kept_for == recorder => handle.clone(),
            _ => {
                let handle = (self.make)();
                *slot = Some((recorder, handle.clone()));
                handle
            }
        }
    }
}

/// The handles of one metric's series by one label of a few known values (a chat's `outcome`).
pub(crate) struct KeptBy<H> {
    make: fn(&'static str) -> H,
    /// The recorder's address, and a handle per label value seen.
    slots: Mutex<(usize, Vec<(&'static str, H)>)>,
}

impl<H: Clone> KeptBy<H> {
    /// The series `make` looks up for a label value (`|v| metrics::counter!("name", "l" => v)`).
    pub(crate) const fn new(make: fn(&'static str) -> H) -> Self {
        Self {
            make,
            slots: Mutex::new((0, Vec::new())),
        }
    }

    /// The handle of the series labelled `value`, in the recorder now in use.
    pub(crate) fn get(&self, value: &'static str) -> H {
        let recorder = current_recorder();
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        let (kept_for, handles) = &mut *slots;
        if *kept_for != recorder {
            handles.clear();
            *kept_for = recorder;
        }
        if let Some((_, handle)) = handles.iter().find(|(seen, _)| *seen == value) {
            return handle.clone();
        }
        let handle = (self.make)(value);
        handles.push((value, handle.clone()));
        handle
    }
}

/// The address of the recorder `metrics::counter!` would use here and now: a test's local one,
/// else the process's, else the no-op one.
pub(crate) fn current_recorder() -> usize {
    metrics::with_recorder(|recorder: &dyn Recorder| {
        std::ptr::from_ref(recorder).cast::<()>() as usize
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use metrics::Counter;
    use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusRecorder};

    static RUNS: Kept<Counter> = Kept::new(|| metrics::counter!("t_kept_total"));
    static BY: KeptBy<Counter> = KeptBy::new(|v| metrics::counter!("t_kept_by_total", "l" => v));

    fn lines(recorder: &PrometheusRecorder) -> Vec<String> {
        let mut lines: Vec<String> = recorder
            .handle()
            .render()
            .lines()
            .filter(|line| line.starts_with("t_kept"))
            .map(str::to_string)
            .collect();
        lines.sort();
        lines
    }

    #[test]
    fn a_kept_handle_counts_in_the_recorder_in_use() {
        let first = PrometheusBuilder::new().build_recorder();
        metrics::with_local_recorder(&first, || {
            RUNS.get().increment(2);
            RUNS.get().increment(1);
            BY.get("a").increment(1);
            BY.get("b").increment(1);
            BY.get("a").increment(1);
        });
        assert_eq!(
            lines(&first),
            [
                r#"t_kept_by_total{l="a"} 2"#,
                r#"t_kept_by_total{l="b"} 1"#,
                "t_kept_total 3",
            ]
        );
        let second = PrometheusBuilder::new().build_recorder();
        metrics::with_local_recorder(&second, || {
            RUNS.get().increment(1);
            BY.get("a").increment(5);
        });
        assert_eq!(
            lines(&second),
            [r#"t_kept_by_total{l="a"} 5"#, "t_kept_total 1"]
        );
        assert!(lines(&first).contains(&"t_kept_total 3".to_string()));
    }
}
