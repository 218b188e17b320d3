//! Failover safety, measured (#14): workers take one lock through Redis
//! Sentinel and deposit into one PostgreSQL account under its fencing
//! token (the `fenced` example's guard), while the test kit's group fails
//! over again and again; then it reports what went wrong in each mode.
//!
//! ```text
//! DATABASE_URL=$(bash scripts/postgres) \
//!   cargo run --release -p redlease --example failover_check -- [FAILOVERS]
//! ```
//!
//! Each mode (without and with `require_replicas(1, 100 ms)`) gets a
//! fresh group of a master, one replica and three sentinels on loopback,
//! and FAILOVERS (default 20) `SENTINEL FAILOVER`s, each waited out until
//! the old master replicates the new one (about 13 s each). Four workers,
//! each with its own client (a 3 s watchdog), loop: `try_lock_for(2 s)`,
//! claim the account with the token, read, wait 5 ms, write the balance
//! plus one (only if still claimed by that token), unlock.
//!
//! * **double grants**: a worker acquired while another worker was still
//!   inside its critical section (told by a counter in this process, so
//!   exact);
//! * **stale writes accepted**: writes the database took from a token
//!   older than one it had already taken a write from, and deposits lost
//!   (the balance short of the writes accepted); the guard makes both 0,
//!   whatever the lock did;
//! * **stale writes refused**: writes the guard turned away (a holder whose
//!   lock had passed on), which is the guard doing its job.
//!
//! Prints a Markdown table for `docs/FAILOVER.md`.

#[path = "fenced/ledger.rs"]
mod ledger;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ledger::Ledger;
use redlease_testkit::SentinelGroup;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const WORKERS: usize = 4;
const ACCOUNT: &str = "failover-check";

#[derive(Default)]
struct Counts {
    acquired: AtomicU64,
    double_grants: AtomicU64,
    busy: AtomicU64,
    not_replicated: AtomicU64,
    other_errors: AtomicU64,
    accepted: AtomicU64,
    refused: AtomicU64,
    stale_accepted: AtomicU64,
    lost_at_unlock: AtomicU64,
    /// The highest token the database took a write from.
    highest: AtomicU64,
    /// Workers inside their critical section now.
    inside: AtomicI64,
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let failovers: usize = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 20,
    };
    let database_url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let pool = sqlx::PgPool::connect(&database_url).await?;
    let ledger = Ledger::create(pool, "redlease_failover_check").await?;
    println!(
        "| mode | failovers | acquisitions | double grants | stale writes accepted | deposits lost | stale writes refused by the guard | acquires refused: not replicated | other errors | locks found gone at unlock |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for replicas in [false, true] {
        let (counts, balance) = run(&ledger, failovers, replicas).await?;
        let accepted = counts.accepted.load(Ordering::Relaxed);
        println!(
            "| {} | {failovers} | {} | {} | {} | {} | {} | {} | {} | {} |",
            if replicas {
                "`require_replicas(1, 100 ms)`"
            } else {
                "default"
            },
            counts.acquired.load(Ordering::Relaxed),
            counts.double_grants.load(Ordering::Relaxed),
            counts.stale_accepted.load(Ordering::Relaxed),
            accepted as i64 - balance,
            counts.refused.load(Ordering::Relaxed),
            counts.not_replicated.load(Ordering::Relaxed),
            counts.other_errors.load(Ordering::Relaxed),
            counts.lost_at_unlock.load(Ordering::Relaxed),
        );
    }
    Ok(())
}

/// One mode: a fresh group, the workers, `failovers` failovers.
async fn run(
    ledger: &Ledger,
    failovers: usize,
    replicas: bool,
) -> Result<(Arc<Counts>, i64), BoxError> {
    ledger.open(ACCOUNT, 0).await?;
    let group = tokio::task::spawn_blocking(|| SentinelGroup::start(1, 3)).await?;
    let url = group.url();
    let counts = Arc::new(Counts::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for _ in 0..WORKERS {
        let mut builder = redlease::Client::builder(&url).watchdog_timeout(Duration::from_secs(3));
        if replicas {
            builder = builder.require_replicas(1, Duration::from_millis(100));
        }
        let client = builder.build().await?;
        let (ledger, counts, stop) = (ledger.clone(), counts.clone(), stop.clone());
        workers.push(tokio::spawn(async move {
            let lock = client.lock("failover-check:account");
            while !stop.load(Ordering::Relaxed) {
                match lock.try_lock_for(Duration::from_secs(2)).await {
                    Ok(guard) => {
                        if counts.inside.fetch_add(1, Ordering::SeqCst) > 0 {
                            counts.double_grants.fetch_add(1, Ordering::Relaxed);
                        }
                        counts.acquired.fetch_add(1, Ordering::Relaxed);
                        deposit(
                            &ledger,
                            &counts,
                            guard.fencing_token().unwrap(),
                            guard.owner(),
                        )
                        .await;
                        counts.inside.fetch_sub(1, Ordering::SeqCst);
                        if let Err(e) = guard.unlock().await
                            && e.is_not_owner()
                        {
                            counts.lost_at_unlock.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Err(e) if e.is_busy() => {
                        counts.busy.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) if e.is_not_replicated() => {
                        counts.not_replicated.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => {
                        counts.other_errors.fetch_add(1, Ordering::Relaxed);
                        eprintln!("failover_check: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
        }));
    }
    let started = Instant::now();
    let group = tokio::task::spawn_blocking(move || {
        let mut group = group;
        for i in 0..failovers {
            let to = group.failover_and_reconvert();
            eprintln!("failover_check: failover {} of {failovers} to {to}", i + 1);
        }
        group
    })
    .await?;
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.await?;
    }
    eprintln!(
        "failover_check: {} failovers in {:.0} s",
        failovers,
        started.elapsed().as_secs_f64()
    );
    drop(group);
    let (balance, _) = ledger.read(ACCOUNT).await?;
    Ok((counts, balance))
}

/// Claim, read, write the balance plus one, under `token` by `holder`.
async fn deposit(ledger: &Ledger, counts: &Counts, token: u64, holder: &str) {
    let Ok(Some(balance)) = ledger.claim(ACCOUNT, token, holder).await else {
        counts.refused.fetch_add(1, Ordering::Relaxed);
        return;
    };
    tokio::time::sleep(Duration::from_millis(5)).await;
    match ledger.commit(ACCOUNT, token, holder, balance + 1).await {
        Ok(true) => {
            counts.accepted.fetch_add(1, Ordering::Relaxed);
            if counts.highest.fetch_max(token, Ordering::SeqCst) > token {
                counts.stale_accepted.fetch_add(1, Ordering::Relaxed);
            }
        }
        _ => {
            counts.refused.fetch_add(1, Ordering::Relaxed);
        }
    }
}
