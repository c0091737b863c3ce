//! (15) What counting a chat in Redis costs: a short chat on a server whose quotas are counted
//! in a real `redis-server` on loopback (one admission script, then the tokens and the lease
//! given back) vs the same chat on a server without quotas, interleaved; and the store's own
//! round trips (admit, then finish: the tokens added and the lease given back) timed alone. Skipped without `redis-server`.

use std::time::Instant;

use hookwire::quota::{Clock, Limits, RedisStore, Store, Subject};

use super::common::{FakeUpstream, TestServer};
use super::redis_server::RedisServer;
use super::{median, short_chat};

const CHATS: usize = 300;
const ROUND_TRIPS: usize = 1000;

pub async fn bench_quota() {
    let Some(redis) = RedisServer::start("the quota bench").await else {
        println!("quota in Redis: skipped (no redis-server)");
        return;
    };
    let url = redis.url();
    let limits = Limits {
        tokens_per_day: Some(u64::MAX / 2),
        chats_per_minute: Some(u64::MAX / 2),
        concurrent_chats: Some(1_000),
    };

    // The store alone: what one chat asks of Redis.
    let Ok(store) = RedisStore::new(&url) else {
        println!("quota in Redis: skipped (bad URL)");
        return;
    };
    let subjects = [
        Subject::user("bench", limits),
        Subject::tenant("bench", limits),
    ];
    let mut trips = Vec::with_capacity(ROUND_TRIPS);
    for i in 0..ROUND_TRIPS {
        let chat = format!("lease-{i}");
        let started = Instant::now();
        let admitted = store.admit(&chat, &subjects, Clock::now()).await;
        let finished = store.finish(&chat, &subjects, 20, Clock::now()).await;
        trips.push(started.elapsed());
        if !matches!(admitted, Ok(Ok(()))) || finished.is_err() {
            println!("quota in Redis: the store failed; skipped");
            return;
        }
    }
    let store_p50 = median(trips);

    let (up_counted, up_free) = (FakeUpstream::start().await, FakeUpstream::start().await);
    let counted = TestServer::builder()
        .upstream(&up_counted)
        .config(move |c| {
            c.quotas.per_user = limits;
            c.quotas.per_tenant = limits;
            c.quotas.shared_state = Some(url);
            c.agent.context.window_tokens = Some(32_000);
        })
        .start()
        .await;
    let free = TestServer::builder()
        .upstream(&up_free)
        .config(|c| c.agent.context.window_tokens = Some(32_000))
        .start()
        .await;
    let (mut ws_counted, mut ws_free) = (counted.connect().await, free.connect().await);
    let (mut ours, mut baseline) = (Vec::new(), Vec::new());
    for i in 0..CHATS {
        baseline.push(short_chat(&mut ws_free, &up_free, i).await);
        ours.push(short_chat(&mut ws_counted, &up_counted, i).await);
    }
    counted.shutdown().await;
    free.shutdown().await;
    let (ours, baseline) = (median(ours), median(baseline));
    println!(
        "quota in Redis (median of {CHATS} short chats): counted {ours:?}, no quotas {baseline:?}, ratio {:.2}, added {:.3} ms (target ≤ 0.5 ms); the store's admit + finish alone: {:.3} ms (median of {ROUND_TRIPS})",
        ours.as_secs_f64() / baseline.as_secs_f64(),
        (ours.as_secs_f64() - baseline.as_secs_f64()) * 1000.0,
        store_p50.as_secs_f64() * 1000.0,
    );
}
