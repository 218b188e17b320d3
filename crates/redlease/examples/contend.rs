//! Two workers, each with its own client (as two services would have),
//! contend for one lock; a third tries once without waiting and is told the
//! lock is busy.
//!
//! ```text
//! REDIS_URL=redis://127.0.0.1:6379 cargo run -p redlease --example contend
//! ```

use std::time::{Duration, Instant};

const LOCK: &str = "demo:contend:inventory";
const ROUNDS: usize = 4;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    match run(&url).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) if e.is_connection() || e.is_timeout() => {
            eprintln!("error: {e}");
            eprintln!("start a server (for example `redis-server --port 6379`) or set REDIS_URL");
            std::process::ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(url: &str) -> Result<(), redlease::Error> {
    println!("contending for {LOCK:?} on {url}");
    let start = Instant::now();
    let workers = ["A", "B"].map(|who| {
        let url = url.to_owned();
        tokio::spawn(async move { worker(who, &url, start).await })
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let impatient = redlease::Client::connect(url).await?;
    match impatient.lock(LOCK).try_lock().await {
        Ok(guard) => {
            println!(
                "{:>5}ms  C got the lock at once (the others were between rounds)",
                start.elapsed().as_millis()
            );
            guard.unlock().await?;
        }
        Err(e) if e.is_busy() => {
            println!(
                "{:>5}ms  C gave up without waiting: {e}",
                start.elapsed().as_millis()
            )
        }
        Err(e) => return Err(e),
    }
    for w in workers {
        w.await.expect("worker task panicked")?;
    }
    println!("done: each worker held the lock {ROUNDS} times, never at the same time");
    Ok(())
}

async fn worker(who: &str, url: &str, start: Instant) -> Result<(), redlease::Error> {
    let client = redlease::Client::connect(url).await?;
    let lock = client.lock(LOCK);
    for round in 1..=ROUNDS {
        let asked = Instant::now();
        let guard = lock.try_lock_for(Duration::from_secs(5)).await?;
        println!(
            "{:>5}ms  {who} acquired (round {round}, waited {:.0?}) as {}",
            start.elapsed().as_millis(),
            asked.elapsed(),
            guard.owner()
        );
        // The critical section: stop early if the lock is lost.
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(150)) => {}
            reason = guard.lost() => {
                println!("{who} lost the lock: {reason}");
                continue;
            }
        }
        guard.unlock().await?;
        println!("{:>5}ms  {who} released", start.elapsed().as_millis());
        // Work outside the lock, so the other worker gets its turn.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}
