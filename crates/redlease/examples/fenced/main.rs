//! A Redis lock plus a fencing token guarding a PostgreSQL row: the way to
//! protect code that moves money.
//!
//! ```text
//! cargo run -p redlease --example fenced
//! ```
//!
//! Needs Redis (`REDIS_URL`, default `redis://127.0.0.1:6379`) and PostgreSQL
//! (`DATABASE_URL`, default `postgres://postgres@127.0.0.1:5432/test`). It
//! creates the table `redlease_example_accounts` and leaves it there.
//!
//! Part 1 replays the failure a lock alone cannot stop: holder A pauses past
//! its lease (a GC, a swapped-out VM), B takes the lock and deposits, then A
//! wakes up and writes. The database rejects A's write, because A's token is
//! older than B's. Part 2 is the everyday shape: concurrent deposits through
//! [`deposit`], and a final balance that adds up.

mod ledger;

use std::error::Error;
use std::time::Duration;

use ledger::Ledger;
use redlease::Lock;

type BoxError = Box<dyn Error + Send + Sync>;

const ACCOUNT: &str = "acct-1";

/// Deposits `amount` under the lock, fenced: the lock keeps honest holders
/// apart, the token keeps a holder that lost its lock out of the row.
async fn deposit(lock: &Lock, ledger: &Ledger, amount: i64) -> Result<(), BoxError> {
    let guard = lock.try_lock_for(Duration::from_secs(5)).await?;
    let token = guard.fencing_token().unwrap();
    let Some(balance) = ledger.claim(ACCOUNT, token, guard.owner()).await? else {
        return Err("a newer lock holder has claimed the account".into());
    };
    // ... anything slow: call a payment provider, render a receipt ...
    if !ledger
        .commit(ACCOUNT, token, guard.owner(), balance + amount)
        .await?
    {
        return Err("the lock passed to a newer holder before the write".into());
    }
    guard.unlock().await?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let redis_url =
        std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let database_url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let client = redlease::Client::connect(&redis_url).await?;
    let pool = sqlx::PgPool::connect(&database_url).await?;
    let ledger = Ledger::create(pool, "redlease_example_accounts").await?;
    ledger.open(ACCOUNT, 0).await?;
    let name = format!("example:fenced:{ACCOUNT}:{}", client.id());

    println!("part 1: a holder that paused past its lease");
    let lease = Duration::from_millis(300);
    let a = client.lock(&name).lease(lease).try_lock().await?;
    let a_token = a.fencing_token().unwrap();
    let a_read = ledger
        .claim(ACCOUNT, a_token, a.owner())
        .await?
        .ok_or("claim refused")?;
    println!("  A holds token {a_token}, reads balance {a_read}, then pauses for 2 leases");
    tokio::time::sleep(lease * 2).await;
    println!("  A's lease has run out: is_lost() = {}", a.is_lost());

    let b = client
        .lock(&name)
        .try_lock_for(Duration::from_secs(1))
        .await?;
    let b_token = b.fencing_token().unwrap();
    let b_read = ledger
        .claim(ACCOUNT, b_token, b.owner())
        .await?
        .ok_or("claim refused")?;
    let b_wrote = ledger
        .commit(ACCOUNT, b_token, b.owner(), b_read + 10)
        .await?;
    b.unlock().await?;
    println!("  B holds token {b_token}, deposits 10: written = {b_wrote}");

    let a_wrote = ledger
        .commit(ACCOUNT, a_token, a.owner(), a_read + 5)
        .await?;
    println!("  A wakes up and deposits 5 with token {a_token}: written = {a_wrote}");
    let a_unlock = a.unlock().await;
    println!(
        "  A's unlock: {}",
        a_unlock.map_or_else(|e| e.to_string(), |()| "ok".to_owned())
    );
    let (balance, fence) = ledger.read(ACCOUNT).await?;
    println!("  balance {balance} (B's 10 only), fence {fence}");
    if a_wrote || balance != 10 {
        return Err("the stale write was accepted".into());
    }

    println!("part 2: 4 clients x 25 deposits of 1, concurrently");
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let client = redlease::Client::connect(&redis_url).await?;
        let (lock, ledger) = (client.lock(&name), ledger.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..25 {
                deposit(&lock, &ledger, 1).await?;
            }
            Ok::<(), BoxError>(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let (balance, _) = ledger.read(ACCOUNT).await?;
    println!("  balance {balance}, expected {}", 10 + 100);
    if balance != 110 {
        return Err("deposits were lost".into());
    }
    Ok(())
}
