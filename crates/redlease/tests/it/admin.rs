//! The operators' side (`redlease::admin`) on both layouts (#27): a lock of
//! the string layout is a lock to `lock_state`, `force_unlock` and
//! `force_unlock_if_unchanged`, and a `WRONGTYPE` says what the key holds.

use std::time::Duration;

use redlease::Client;
use redlease::admin;
use redlease::layout::{self, Layout, StateKind};

use crate::support::{RedisServer, exists, listen_once, unique};

async fn string_client() -> Client {
    Client::builder(&RedisServer::shared().url())
        .layout(Layout::String)
        .build()
        .await
        .unwrap()
}

fn get(key: &str) -> Option<String> {
    redis::cmd("GET")
        .arg(key)
        .query(&mut RedisServer::shared().connection())
        .unwrap()
}

fn set(key: &str, value: &str) {
    let () = redis::cmd("SET")
        .arg(key)
        .arg(value)
        .query(&mut RedisServer::shared().connection())
        .unwrap();
}

/// A string lock an operator looked at, then released and taken by another
/// owner before the confirmed removal (same key, same type, another
/// value), stays with its new holder, with or without `any_type`. Before
/// #27 only the type and the hash fields were compared, so it looked
/// unchanged and was removed under its live holder.
#[tokio::test]
async fn issue_27_a_retaken_string_lock_is_never_force_removed() {
    let client = string_client().await;
    let name = unique("admin:retaken");
    let lock = client.lock(&name);
    let first = lock.try_lock().await.unwrap();
    let first_owner = first.owner().to_owned();
    let seen = admin::lock_state(&client, &name).await.unwrap();
    first.unlock().await.unwrap();
    let second = lock.try_lock().await.unwrap();
    assert_ne!(first_owner, second.owner());
    for any_type in [true, false] {
        let state = admin::force_unlock_if_unchanged(&client, &seen, any_type)
            .await
            .unwrap();
        assert!(
            state.changed && !state.removed,
            "any_type {any_type}: {state:?}"
        );
        assert_eq!(state.string_owner(), Some(second.owner()));
    }
    assert_eq!(get(&name).as_deref(), Some(second.owner()));
    assert!(second.is_held().await.unwrap());

    // Taken by another library's `SET NX` with an owner of its own: changed
    // too.
    let seen = admin::lock_state(&client, &name).await.unwrap();
    second.unlock().await.unwrap();
    set(&name, "rslock-5f1e");
    let state = admin::force_unlock_if_unchanged(&client, &seen, false)
        .await
        .unwrap();
    assert!(state.changed && !state.removed, "{state:?}");
    assert_eq!(get(&name).as_deref(), Some("rslock-5f1e"));

    // Unchanged since it was read: removed, without `any_type`.
    let seen = admin::lock_state(&client, &name).await.unwrap();
    let state = admin::force_unlock_if_unchanged(&client, &seen, false)
        .await
        .unwrap();
    assert!(state.removed && !state.changed, "{state:?}");
    assert!(!exists(RedisServer::shared(), &name));
}

/// `lock_state` names a string-layout lock a lock, with its owner, lease
/// and token; `force_unlock` removes it without `any_type` and wakes its
/// waiters; a string integer (a semaphore's count) is still left alone.
#[tokio::test]
async fn issue_27_force_unlock_removes_a_string_layout_lock() {
    let client = string_client().await;
    let name = unique("admin:string");
    let guard = client
        .lock(&name)
        .lease(Duration::from_secs(20))
        .try_lock()
        .await
        .unwrap();
    let state = admin::lock_state(&client, &name).await.unwrap();
    assert_eq!(state.kind(), StateKind::StringLock);
    assert!(state.is_lock(), "{state:?}");
    assert_eq!(state.string_owner(), Some(guard.owner()));
    assert!((15_000..=20_000).contains(&state.pttl_ms), "{state:?}");
    assert_eq!(state.lock_token(), guard.fencing_token());
    assert!(!state.removed && state.problems().is_empty(), "{state:?}");

    let released = listen_once(RedisServer::shared(), layout::channel(&name));
    let state = admin::force_unlock(&client, &name).await.unwrap();
    assert!(state.removed, "{state:?}");
    assert_eq!(state.string_owner(), Some(guard.owner())); // as found
    assert!(!exists(RedisServer::shared(), &name));
    assert_eq!(released.await.unwrap().1, "0");
    assert!(guard.unlock().await.unwrap_err().is_not_owner());

    // A count is no lock: left alone unless any type goes.
    set(&name, "3");
    let state = admin::force_unlock(&client, &name).await.unwrap();
    assert!(!state.removed && !state.is_lock(), "{state:?}");
    assert_eq!(get(&name).as_deref(), Some("3"));
    let state = admin::force_unlock_any_type(&client, &name).await.unwrap();
    assert!(state.removed, "{state:?}");
}

/// A state read without the admin script (`admin::read`, on a replica for
/// example) cannot prove a string's value unchanged: nothing is removed.
#[tokio::test]
async fn issue_27_a_string_read_elsewhere_is_not_removed_unseen() {
    let client = string_client().await;
    let name = unique("admin:unseen");
    let guard = client.lock(&name).try_lock().await.unwrap();
    let seen = admin::read(&client, std::slice::from_ref(&name))
        .await
        .unwrap()
        .remove(0);
    assert_eq!(seen.string_owner(), Some(guard.owner()));
    let state = admin::force_unlock_if_unchanged(&client, &seen, false)
        .await
        .unwrap();
    assert!(state.changed && !state.removed, "{state:?}");
    assert!(guard.is_held().await.unwrap());
    guard.unlock().await.unwrap();
}

/// A `WRONGTYPE` names what the key holds and what was expected: a lock on
/// a semaphore's key (a string) is no lock hash, and a semaphore's count
/// on a lock's key (a hash) is not that either; neither says "not a lock"
/// about a key a lock was not asked of.
#[tokio::test]
async fn issue_27_wrong_type_says_what_the_key_holds() {
    let client = crate::support::client().await;
    let semaphore_key = unique("admin:wrongtype:semaphore");
    set(&semaphore_key, "3");
    let err = client.lock(&semaphore_key).try_lock().await.unwrap_err();
    assert!(err.is_wrong_type(), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("lock key {semaphore_key:?} holds a string, not a lock hash")
    );
    assert_eq!(get(&semaphore_key).as_deref(), Some("3"));

    let lock_key = unique("admin:wrongtype:lock");
    let guard = client.lock(&lock_key).try_lock().await.unwrap();
    let err = client
        .semaphore(&lock_key)
        .available_permits()
        .await
        .unwrap_err();
    assert!(err.is_wrong_type(), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("semaphore") && !message.contains("not a lock"),
        "{message}"
    );
    guard.unlock().await.unwrap();
}

/// A name with nothing under it (a lock released, or never taken) reads as
/// free, in both layouts, where it read as a fair queue with no lock key
/// (`QueueOnly`), which a newcomer took for a stuck queue (#27).
#[tokio::test]
async fn issue_27_a_released_lock_reads_as_free() {
    let redisson = Client::connect(&RedisServer::shared().url()).await.unwrap();
    for client in [redisson, string_client().await] {
        let name = unique("free");
        let guard = client.lock(&name).try_lock().await.unwrap();
        guard.unlock().await.unwrap();
        let states = admin::read(&client, std::slice::from_ref(&name))
            .await
            .unwrap();
        assert_eq!(states[0].kind(), StateKind::Free, "{:?}", states[0]);
        assert!(states[0].is_empty());
        let state = admin::lock_state(&client, &name).await.unwrap();
        assert_eq!(state.kind(), StateKind::Free, "{state:?}");
    }
}
