//! A scheduled job that runs once per tick across replicas whose clocks
//! differ: tokio-cron-scheduler fires it on every replica, a redlease lock
//! picks one, and `unlock_at_least` keeps the lock long enough that a
//! replica with a late clock does not run the same tick again.
//!
//! ```text
//! # in three terminals (or with & in one), a second apart by their clocks:
//! cargo run -p redlease --example once_per_tick -- --id a
//! cargo run -p redlease --example once_per_tick -- --id b --skew 1
//! cargo run -p redlease --example once_per_tick -- --id c --skew 1
//! ```
//!
//! Every 4 seconds one of them prints `ran the job`. With `--at-least 0`
//! the replica whose clock is behind runs each tick a second time: the
//! failure this prevents. Needs Redis (`REDIS_URL`, default
//! `redis://127.0.0.1:6379`); runs for `--for` seconds (default 20).

mod replica;

use std::time::Duration;

use replica::Replica;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let mut id = "replica".to_owned();
    let (mut skew, mut at_least_ms, mut run_for) = (0i32, 2500u64, 20u64);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--id" => id = value()?,
            "--skew" => skew = value()?.parse()?,
            "--at-least" => at_least_ms = value()?.parse()?,
            "--for" => run_for = value()?.parse()?,
            other => return Err(format!("unknown argument {other:?}").into()),
        }
    }
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let client = redlease::Client::connect(&url).await?;
    let replica = Replica {
        client,
        lock: "example:once-per-tick:report".to_owned(),
        schedule: "*/4 * * * * *".to_owned(),
        every: Duration::from_secs(4),
        at_least: Duration::from_millis(at_least_ms),
        skew_secs: skew,
        id,
        record: None,
    };
    replica::run(replica, Duration::from_secs(run_for)).await
}
