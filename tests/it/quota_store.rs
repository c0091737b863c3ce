//! The quota stores against a real `redis-server` (docs/protocol.md §20): two stores, as two
//! replicas hold them, enforce one quota; a Redis that is down is an error the caller sees at
//! once (it then counts in memory or refuses, as configured).

use std::time::Duration;

use crate::redis_server::RedisServer;
use hookwire::quota::{Clock, Limits, RedisStore, Spent, Store, Subject};

fn ann(limits: Limits) -> [Subject; 1] {
    [Subject::user("ann", limits)]
}

#[tokio::test]
async fn two_replicas_share_one_quota_in_redis() {
    let Some(redis) = RedisServer::start("two_replicas_share_one_quota_in_redis").await else {
        return;
    };
    let (a, b) = (
        RedisStore::new(&redis.url()).unwrap(),
        RedisStore::new(&redis.url()).unwrap(),
    );
    // Chats at once: one lease, whichever replica holds it.
    let one_at_a_time = ann(Limits {
        concurrent_chats: Some(1),
        ..Limits::default()
    });
    let now = Clock::now();
    assert_eq!(a.admit("c1", &one_at_a_time, now).await.unwrap(), Ok(()));
    let refused = b
        .admit("c2", &one_at_a_time, now)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(refused.spent, Spent::ConcurrentChats);
    a.release("c1", &one_at_a_time).await.unwrap();
    assert_eq!(b.admit("c2", &one_at_a_time, now).await.unwrap(), Ok(()));

    // Tokens per day: what one replica counted, the other refuses on.
    let budget = [Subject::user(
        "bob",
        Limits {
            tokens_per_day: Some(500),
            ..Limits::default()
        },
    )];
    assert_eq!(a.admit("c3", &budget, now).await.unwrap(), Ok(()));
    a.add_tokens(&budget, 200, now).await.unwrap();
    // A chat's end counts its tokens and gives its lease back in one.
    let both = [Subject::user(
        "bob",
        Limits {
            tokens_per_day: Some(500),
            concurrent_chats: Some(1),
            ..Limits::default()
        },
    )];
    assert_eq!(a.admit("c5", &both, now).await.unwrap(), Ok(()));
    a.finish("c5", &both, 300, now).await.unwrap();
    let one_place = [Subject::user(
        "bob",
        Limits {
            concurrent_chats: Some(1),
            ..Limits::default()
        },
    )];
    assert_eq!(b.admit("c6", &one_place, now).await.unwrap(), Ok(()));
    let refused = b.admit("c4", &budget, now).await.unwrap().unwrap_err();
    assert_eq!(refused.spent, Spent::TokensPerDay);
    assert_eq!(refused.retry_after_seconds, now.seconds_to_next_day());

    // Chats per minute, asked of both at once: exactly the limit gets in.
    let per_minute = [Subject::tenant(
        "acme",
        Limits {
            chats_per_minute: Some(5),
            ..Limits::default()
        },
    )];
    let mut now = Clock::now();
    if now.seconds_to_next_minute() < 5 {
        // Not across a minute's end: the count would start again halfway.
        tokio::time::sleep(Duration::from_secs(now.seconds_to_next_minute())).await;
        now = Clock::now();
    }
    let asks = (0..12).map(|n| {
        let store = if n % 2 == 0 { a.clone() } else { b.clone() };
        let subjects = per_minute.clone();
        tokio::spawn(async move { store.admit(&format!("m{n}"), &subjects, now).await })
    });
    let mut admitted = 0;
    for ask in asks {
        if ask.await.unwrap().unwrap().is_ok() {
            admitted += 1;
        }
    }
    assert_eq!(admitted, 5);
}

#[tokio::test]
async fn a_redis_that_is_down_is_an_error_at_once() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap();
    let store = RedisStore::new(&format!("redis://127.0.0.1:{port}/0")).unwrap();
    let started = std::time::Instant::now();
    let asked = store
        .admit(
            "c1",
            &ann(Limits {
                concurrent_chats: Some(1),
                ..Limits::default()
            }),
            Clock::now(),
        )
        .await;
    assert!(asked.is_err(), "{asked:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "bounded by the store's timeouts"
    );
}
