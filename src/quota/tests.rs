//! The stores' rules on the in-memory store (the Redis store runs the same rules in one script:
//! tests/it/quota_store.rs runs both against a real `redis-server`).

use super::*;

fn at(millis: u64) -> Clock {
    Clock { millis }
}

fn limits(tokens: Option<u64>, chats: Option<u64>, running: Option<u64>) -> Limits {
    Limits {
        tokens_per_day: tokens,
        chats_per_minute: chats,
        concurrent_chats: running,
    }
}

#[tokio::test]
async fn chats_per_minute_are_counted_by_utc_minute() {
    let store = MemoryStore::new();
    let ann = [Subject::user("ann", limits(None, Some(2), None))];
    // 10 s into a UTC minute (1.8e12 ms is a whole minute).
    let noon = at(1_800_000_000_000 + 10_000);
    assert_eq!(store.admit("c1", &ann, noon).await.unwrap(), Ok(()));
    assert_eq!(store.admit("c2", &ann, noon).await.unwrap(), Ok(()));
    let refused = store.admit("c3", &ann, noon).await.unwrap().unwrap_err();
    assert_eq!(refused.spent, Spent::ChatsPerMinute);
    assert_eq!(refused.retry_after_seconds, 50, "until the next minute");
    // The next minute: counted afresh.
    let later = at(noon.millis + 50_000);
    assert_eq!(store.admit("c3", &ann, later).await.unwrap(), Ok(()));
}

#[tokio::test]
async fn a_refusal_moves_no_counter_of_any_subject() {
    let store = MemoryStore::new();
    let now = at(1_800_000_000_000);
    let tenant = Subject::tenant("acme", limits(None, Some(1), None));
    let ann = Subject::user("ann", limits(None, Some(5), None));
    let bob = Subject::user("bob", limits(None, Some(5), None));
    assert_eq!(
        store
            .admit("c1", &[ann.clone(), tenant.clone()], now)
            .await
            .unwrap(),
        Ok(())
    );
    // The tenant's minute is spent: bob is refused, and his own counter did not move.
    let refused = store
        .admit("c2", &[bob.clone(), tenant.clone()], now)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(refused.subject, "tenant:acme");
    for n in 0..5 {
        let alone = store
            .admit(&format!("b{n}"), std::slice::from_ref(&bob), now)
            .await;
        assert_eq!(alone.unwrap(), Ok(()), "bob's five are all his");
    }
}

#[tokio::test]
async fn chats_at_once_are_leases_given_back_at_the_end_or_lapsing() {
    let store = MemoryStore::new();
    let ann = [Subject::user("ann", limits(None, None, Some(1)))];
    let now = at(1_800_000_000_000);
    assert_eq!(store.admit("c1", &ann, now).await.unwrap(), Ok(()));
    let refused = store.admit("c2", &ann, now).await.unwrap().unwrap_err();
    assert_eq!(refused.spent, Spent::ConcurrentChats);
    store.release("c1", &ann).await.unwrap();
    assert_eq!(store.admit("c2", &ann, now).await.unwrap(), Ok(()));
    // c2's replica dies: its lease lapses; renewed, it would have held.
    let renewed = at(now.millis + 50_000);
    store.renew("c2", &ann, renewed).await.unwrap();
    let within = at(now.millis + 100_000);
    assert!(store.admit("c3", &ann, within).await.unwrap().is_err());
    let lapsed = at(renewed.millis + LEASE.as_millis() as u64 + 1);
    assert_eq!(store.admit("c3", &ann, lapsed).await.unwrap(), Ok(()));
}

#[tokio::test]
async fn tokens_per_day_refuse_until_the_next_utc_day() {
    let store = MemoryStore::new();
    let ann = [Subject::user("ann", limits(Some(1000), None, None))];
    let day = 20_000u64;
    let evening = at(day * 86_400_000 + 86_400_000 - 3_600_000);
    assert_eq!(store.admit("c1", &ann, evening).await.unwrap(), Ok(()));
    store.add_tokens(&ann, 1000, evening).await.unwrap();
    let refused = store.admit("c2", &ann, evening).await.unwrap().unwrap_err();
    assert_eq!(refused.spent, Spent::TokensPerDay);
    assert_eq!(refused.retry_after_seconds, 3600);
    let tomorrow = at((day + 1) * 86_400_000);
    assert_eq!(store.admit("c2", &ann, tomorrow).await.unwrap(), Ok(()));
}
