//! One replica of a service whose scheduled job must run once per tick
//! across the fleet, on tokio-cron-scheduler: each tick, every replica
//! tries the job's lock without waiting; the one that gets it runs the job
//! and releases with [`unlock_at_least`](redlease::LockGuard::unlock_at_least),
//! so that a replica whose clock is behind, firing the same tick later,
//! still finds it taken (ShedLock's `lockAtLeastFor`).
//!
//! The rule for the minimum: longer than the spread of the replicas'
//! clocks plus the lateness a replica accepts ([`LATE_LIMIT`]; this
//! scheduler polls every 500 ms), and shorter than the interval minus that
//! lateness, so the next tick is free again for everyone.
//!
//! Shared by the `once_per_tick` example and by its test, which runs
//! replicas in separate processes with skewed clocks.

use std::sync::Arc;
use std::time::Duration;

use chrono::{FixedOffset, Utc};
use tokio_cron_scheduler::{Job, JobScheduler};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A tick fired later than this into its interval is skipped. A scheduler
/// fires a tick it missed (while the process started, or stalled) as soon
/// as it can, however late; a replica that late cannot tell whether
/// another ran the tick, and no minimum covers an unbounded lateness. The
/// minimum must then exceed the clocks' spread plus this.
pub(crate) const LATE_LIMIT: Duration = Duration::from_millis(1500);

/// What a replica runs.
#[derive(Clone, Debug)]
pub(crate) struct Replica {
    pub(crate) client: redlease::Client,
    /// The job's lock: one name per job, not per tick.
    pub(crate) lock: String,
    /// A six-field cron expression (with seconds): `*/4 * * * * *`.
    pub(crate) schedule: String,
    /// The interval between ticks, for naming them.
    pub(crate) every: Duration,
    /// The least time the lock stays held after the job starts.
    pub(crate) at_least: Duration,
    /// How far ahead of true time this replica's scheduler thinks it is:
    /// its clock's error, given to the scheduler as a time zone's offset
    /// (whole seconds), so the system clock is left alone.
    pub(crate) skew_secs: i32,
    /// A name for this replica in the record.
    pub(crate) id: String,
    /// Where to push `<tick> <id>` for each run, if anywhere.
    pub(crate) record: Option<Record>,
}

/// A Redis list of the runs, for a test to read.
#[derive(Clone)]
pub(crate) struct Record {
    pub(crate) conn: redis::aio::MultiplexedConnection,
    pub(crate) list: String,
}

impl std::fmt::Debug for Record {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Record")
            .field("list", &self.list)
            .finish_non_exhaustive()
    }
}

/// Runs the replica's scheduler for `run_for`, then stops it.
pub(crate) async fn run(replica: Replica, run_for: Duration) -> Result<(), BoxError> {
    let clock = FixedOffset::east_opt(replica.skew_secs).ok_or("a skew under a day")?;
    let replica = Arc::new(replica);
    let mut scheduler = JobScheduler::new().await?;
    let job = {
        let replica = replica.clone();
        Job::new_async_tz(replica.schedule.clone(), clock, move |_, _| {
            let replica = replica.clone();
            Box::pin(async move {
                if let Err(e) = tick(&replica, clock).await {
                    eprintln!("{}: the job failed: {e}", replica.id);
                }
            })
        })?
    };
    scheduler.add(job).await?;
    scheduler.start().await?;
    tokio::time::sleep(run_for).await;
    scheduler.shutdown().await?;
    Ok(())
}

/// One tick on this replica: run the job if the lock is free.
async fn tick(replica: &Replica, clock: FixedOffset) -> Result<(), BoxError> {
    // The tick this replica's clock says it is: the scheduler fires up to
    // about half a second late, never early.
    // By this replica's clock: the local time's fields read as UTC (a
    // `timestamp()` of the zoned time would be the true time again).
    let now_ms = Utc::now()
        .with_timezone(&clock)
        .naive_local()
        .and_utc()
        .timestamp_millis();
    let every = i64::try_from(replica.every.as_secs()).unwrap_or(1).max(1);
    let tick = now_ms.div_euclid(1000 * every) * every;
    let late_ms = now_ms - tick * 1000;
    if late_ms > LATE_LIMIT.as_millis() as i64 {
        println!(
            "{}: skipped tick {tick}, fired {late_ms} ms late",
            replica.id
        );
        return Ok(());
    }
    let guard = match replica.client.lock(replica.lock.as_str()).try_lock().await {
        Ok(guard) => guard,
        // Another replica runs this tick.
        Err(e) if e.is_busy() => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    // The job: short, as scheduled jobs often are, which is the case a
    // plain unlock gets wrong.
    if let Some(record) = &replica.record {
        let _: i64 = redis::cmd("RPUSH")
            .arg(&record.list)
            .arg(format!("{tick} {}", replica.id))
            .query_async(&mut record.conn.clone())
            .await?;
    }
    println!(
        "{}: ran the job for tick {tick} at {}",
        replica.id,
        Utc::now().format("%H:%M:%S%.3f")
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    guard.unlock_at_least(replica.at_least).await?;
    Ok(())
}
