//! Leader election: run it in two terminals (or more); one leads, the
//! others follow and take over when it stops.
//!
//! ```text
//! cargo run -p redlease --example leader -- node-a
//! cargo run -p redlease --example leader -- node-b
//! ```
//!
//! Each process prints every change of leader it observes, campaigns, and
//! once it leads, "works" (prints its epoch every second) for 10 s, then
//! resigns and campaigns again. Stop the leader with Ctrl-C (it resigns,
//! and a follower takes over at once) or kill it with `kill -9` (a
//! follower takes over when its lock expires, within the 30 s watchdog
//! lease). Needs Redis (`REDIS_URL`, default `redis://127.0.0.1:6379`).

use std::time::Duration;

use futures_util::StreamExt;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How a leadership's work ended.
enum End {
    Lost(redlease::LostReason),
    Done,
    Stop,
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let me = std::env::args().nth(1).unwrap_or_else(|| "node".to_owned());
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let client = redlease::Client::connect(&url).await?;
    let election = client.election("example:leader:scheduler");

    // Followers and leader alike watch who leads.
    let mut changes = Box::pin(election.observe());
    let watcher = tokio::spawn({
        let me = me.clone();
        async move {
            while let Some(change) = changes.next().await {
                match change {
                    Ok(Some(leader)) => println!(
                        "{me}: the leader is {} (epoch {:?})",
                        leader.value.as_deref().unwrap_or("a holder with no value"),
                        leader.epoch
                    ),
                    Ok(None) => println!("{me}: nobody leads"),
                    Err(e) => eprintln!("{me}: cannot read the election: {e}"),
                }
            }
        }
    });

    loop {
        let leadership = tokio::select! {
            won = election.campaign(&me) => won?,
            _ = tokio::signal::ctrl_c() => break,
        };
        let epoch = leadership.epoch();
        println!("{me}: leading, epoch {epoch:?}");
        let work = async {
            for _ in 0..10 {
                // A leader checks before each step that it still leads,
                // and passes its epoch with every write it makes.
                if leadership.is_lost() {
                    return;
                }
                println!("{me}: working as leader (epoch {epoch:?})");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        };
        let end = tokio::select! {
            reason = leadership.lost() => End::Lost(reason),
            () = work => End::Done,
            _ = tokio::signal::ctrl_c() => End::Stop,
        };
        match end {
            End::Lost(reason) => {
                println!("{me}: lost the leadership: {reason}");
                continue;
            }
            End::Done => leadership.resign().await?,
            End::Stop => {
                leadership.resign().await?;
                break;
            }
        }
        // Let another lead for a while.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    watcher.abort();
    Ok(())
}
