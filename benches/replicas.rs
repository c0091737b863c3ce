//! `cargo bench --bench replicas`: what the load balancer's extra hop costs. The same chats go
//! through nginx in front of three replicas (the shipped `deploy/nginx.conf`, round-robin) and
//! straight to one replica, interleaved in one run so that the machine's noise falls on both,
//! and are reported as ratios:
//!
//! 1. a short chat (one token) on a connection already open: the relay of a few frames;
//! 2. a new connection and a short chat: the WebSocket handshake through nginx too (what a
//!    client that reconnects pays, and what spreads chats over the replicas);
//! 3. a streamed chat of 200 chunks on an open connection.
//!
//! The replicas run in this process against the fake upstream of the tests; nginx is Debian's
//! (`apt-get install nginx`). Without nginx the benchmark says so and measures nothing.

#[path = "../tests/it/common.rs"]
mod common;
#[path = "../tests/it/nginx.rs"]
mod nginx;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::{Client, FakeUpstream, Reply, TestServer};
use serde_json::json;

const OPEN_CHATS: usize = 200;
const NEW_CONNECTIONS: usize = 100;
const STREAMED_CHATS: usize = 30;
const CHUNKS: usize = 200;

fn main() {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start a runtime: {error}");
            return;
        }
    };
    runtime.block_on(bench_replicas());
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

async fn connect(addr: SocketAddr) -> Client {
    match tokio_tungstenite::connect_async(format!("ws://{addr}/ws")).await {
        Ok((ws, _)) => Client { ws },
        Err(error) => panic!("cannot connect to {addr}: {error}"),
    }
}

/// One chat on `client` answered with `reply`; its time from sending to `done`.
async fn timed_chat(client: &mut Client, upstream: &FakeUpstream, reply: &Reply) -> Duration {
    upstream.push(reply.clone());
    let started = Instant::now();
    let frames = client
        .chat(json!({"type":"chat","input":"hi","enable_tools":false}))
        .await;
    let elapsed = started.elapsed();
    assert_eq!(
        frames.last().map(|f| f["type"].clone()),
        Some(json!("done")),
        "{frames:?}"
    );
    elapsed
}

fn report(what: &str, count: usize, direct: Vec<Duration>, balanced: Vec<Duration>) {
    let (direct, balanced) = (median(direct), median(balanced));
    println!(
        "{what} (median of {count}): through nginx to 3 replicas {balanced:?}, one replica direct {direct:?}, ratio {:.2}, added {:.3} ms",
        balanced.as_secs_f64() / direct.as_secs_f64(),
        (balanced.as_secs_f64() - direct.as_secs_f64()) * 1000.0
    );
}

async fn bench_replicas() {
    let Some(binary) = nginx::binary() else {
        println!("replicas: skipped, nginx is not installed (apt-get install nginx)");
        return;
    };
    let upstream = FakeUpstream::start().await;
    let mut replicas = Vec::new();
    for _ in 0..3 {
        replicas.push(TestServer::builder().upstream(&upstream).start().await);
    }
    let addrs: Vec<SocketAddr> = replicas.iter().map(|r| r.addr).collect();
    let balancer = nginx::Nginx::start(&binary, &addrs).await;
    let direct = addrs[0];
    let short = Reply::text(&["hi"]);
    let pieces: Vec<String> = (0..CHUNKS).map(|i| format!("tok{i} ")).collect();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let streamed = Reply::text(&pieces);

    // 1. Open connections.
    let mut direct_ws = connect(direct).await;
    let mut balanced_ws = connect(balancer.addr).await;
    for _ in 0..20 {
        timed_chat(&mut direct_ws, &upstream, &short).await;
        timed_chat(&mut balanced_ws, &upstream, &short).await;
    }
    let (mut ours, mut baseline) = (Vec::new(), Vec::new());
    for _ in 0..OPEN_CHATS {
        baseline.push(timed_chat(&mut direct_ws, &upstream, &short).await);
        ours.push(timed_chat(&mut balanced_ws, &upstream, &short).await);
    }
    report(
        "short chat on an open connection",
        OPEN_CHATS,
        baseline,
        ours,
    );

    // 2. A new connection for every chat.
    let (mut ours, mut baseline) = (Vec::new(), Vec::new());
    for _ in 0..NEW_CONNECTIONS {
        for (addr, times) in [(direct, &mut baseline), (balancer.addr, &mut ours)] {
            upstream.push(short.clone());
            let started = Instant::now();
            let frames = connect(addr)
                .await
                .chat(json!({"type":"chat","input":"hi","enable_tools":false}))
                .await;
            times.push(started.elapsed());
            assert_eq!(
                frames.last().map(|f| f["type"].clone()),
                Some(json!("done"))
            );
        }
    }
    report(
        "new connection + short chat",
        NEW_CONNECTIONS,
        baseline,
        ours,
    );

    // 3. Streamed chats on the open connections.
    let (mut ours, mut baseline) = (Vec::new(), Vec::new());
    for _ in 0..STREAMED_CHATS {
        baseline.push(timed_chat(&mut direct_ws, &upstream, &streamed).await);
        ours.push(timed_chat(&mut balanced_ws, &upstream, &streamed).await);
    }
    report(
        &format!("streamed chat of {CHUNKS} chunks"),
        STREAMED_CHATS,
        baseline,
        ours,
    );

    drop(direct_ws);
    drop(balanced_ws);
    drop(balancer);
    for replica in replicas {
        replica.shutdown().await;
    }
}
