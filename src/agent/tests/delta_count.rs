//! The text-delta counter of a chat, added in batches.

use crate::agent::run::DeltaCount;
use metrics_exporter_prometheus::PrometheusBuilder;

#[test]
fn text_deltas_reach_the_counter_in_batches_and_all_at_the_end() {
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    let mut count = metrics::with_local_recorder(&recorder, DeltaCount::new);
    for _ in 0..40 {
        count.add_one();
    }
    assert!(
        handle.render().contains("hookwire_text_deltas_total 32\n"),
        "{}",
        handle.render()
    );
    drop(count);
    assert!(
        handle.render().contains("hookwire_text_deltas_total 40\n"),
        "{}",
        handle.render()
    );
}
