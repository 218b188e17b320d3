//! The stock-deduction scenario: buyers on several clients sell one SKU's
//! stock, first with a bare check-then-deduct, then under a redlease lock.
//!
//! A sale reads the stock (`GET`), spends a moment as a database call would,
//! and writes the stock less one (`SET`) if there was any. Without the lock,
//! buyers that read the same stock all sell the same unit: the oversell.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::ProgressBar;
use redis::AsyncCommands;
use tokio::sync::Barrier;
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep};

use crate::connect::{LayoutArg, Plain, Target};

/// One run's SKU, keys and timings.
#[derive(Clone, Debug)]
pub(crate) struct Shop {
    /// The product, unique per run.
    pub(crate) sku: String,
    /// The plain string key holding the units left.
    pub(crate) stock_key: String,
    /// The lock every sale takes in the locked phase.
    pub(crate) lock_name: String,
    /// Units the SKU starts each phase with.
    pub(crate) stock: u32,
    /// The typical time between reading and writing the stock; each sale
    /// takes between half and one and a half times this.
    pub(crate) hold: Duration,
    /// How long the one slow sale of the locked phase takes (zero: none).
    pub(crate) slow: Duration,
    /// How long a buyer waits for the lock before it is told "busy".
    pub(crate) wait: Duration,
}

/// One simulated service instance: a lock client, with its own connection
/// and watchdog, and a connection for the stock.
#[derive(Clone, Debug)]
pub(crate) struct Instance {
    locks: redlease::Client,
    stock: Plain,
}

/// What the unlocked phase did.
#[derive(Debug)]
pub(crate) struct Unlocked {
    pub(crate) sold: u64,
    pub(crate) final_stock: i64,
    pub(crate) elapsed: Duration,
}

/// What the locked phase did, as counted by the demo itself (the library's
/// own numbers come from its metrics).
#[derive(Debug, Default)]
pub(crate) struct Locked {
    pub(crate) sold: u64,
    pub(crate) final_stock: i64,
    pub(crate) acquisitions: u64,
    pub(crate) busy: u64,
    /// Sales given up because the guard reported the lock lost.
    pub(crate) lost: u64,
    /// Each sale's stock reading and fencing token, in no set order.
    pub(crate) sales: Vec<(i64, u64)>,
    pub(crate) elapsed: Duration,
}

/// What one phase's buyers did, and the stock they left.
struct Phase {
    tally: Arc<Tally>,
    elapsed: Duration,
    final_stock: i64,
}

/// Counters shared by the buyers of one phase.
#[derive(Debug, Default)]
struct Tally {
    sold: AtomicU64,
    acquisitions: AtomicU64,
    busy: AtomicU64,
    lost: AtomicU64,
    /// A std mutex: it is held only for a push, never across an await.
    sales: Mutex<Vec<(i64, u64)>>,
}

/// Connects `count` instances to `target`, with lock leases of `watchdog`
/// and locks of `layout`.
///
/// # Errors
///
/// The first connection error, as a message without the URL's password.
pub(crate) async fn connect(
    target: &Target,
    count: u32,
    watchdog: Duration,
    layout: LayoutArg,
) -> Result<Vec<Instance>, String> {
    let mut instances = Vec::new();
    for _ in 0..count {
        // The fencing counter this leaves behind is removed with the stock.
        let locks = target.client(Some(watchdog), layout).await?;
        let stock = target.connection().await?;
        instances.push(Instance { locks, stock });
    }
    Ok(instances)
}

impl Shop {
    /// Puts the full stock back.
    pub(crate) async fn restock(&self, instance: &Instance) -> Result<(), String> {
        let stock = i64::from(self.stock);
        self.write_stock(&mut instance.stock.clone(), stock).await
    }

    /// Runs `workers` buyers on each instance with no lock, until each of
    /// them reads an empty stock.
    pub(crate) async fn unlocked(
        &self,
        instances: &[Instance],
        workers: u32,
        bar: &ProgressBar,
    ) -> Result<Unlocked, String> {
        let phase = self.phase(instances, workers, bar, false).await?;
        Ok(Unlocked {
            sold: phase.tally.sold.load(Ordering::Relaxed),
            final_stock: phase.final_stock,
            elapsed: phase.elapsed,
        })
    }

    /// Runs `workers` buyers on each instance, each sale under the lock,
    /// until each of them reads an empty stock.
    pub(crate) async fn locked(
        &self,
        instances: &[Instance],
        workers: u32,
        bar: &ProgressBar,
    ) -> Result<Locked, String> {
        let phase = self.phase(instances, workers, bar, true).await?;
        let tally = &phase.tally;
        let sales = std::mem::take(&mut *tally.sales.lock().unwrap_or_else(|e| e.into_inner()));
        Ok(Locked {
            sold: tally.sold.load(Ordering::Relaxed),
            final_stock: phase.final_stock,
            acquisitions: tally.acquisitions.load(Ordering::Relaxed),
            busy: tally.busy.load(Ordering::Relaxed),
            lost: tally.lost.load(Ordering::Relaxed),
            sales,
            elapsed: phase.elapsed,
        })
    }

    /// Runs one phase: `workers` buyers per instance, with or without the
    /// lock, until each of them reads an empty stock.
    async fn phase(
        &self,
        instances: &[Instance],
        workers: u32,
        bar: &ProgressBar,
        locked: bool,
    ) -> Result<Phase, String> {
        let tally = Arc::new(Tally::default());
        let started = Instant::now();
        self.run(instances, workers, |shop, instance, seed, barrier| {
            let (tally, bar) = (tally.clone(), bar.clone());
            async move {
                barrier.wait().await;
                match locked {
                    true => shop.buy_locked(instance, seed, &tally, &bar).await,
                    false => shop.buy_unlocked(instance, seed, &tally, &bar).await,
                }
            }
        })
        .await?;
        let elapsed = started.elapsed();
        let final_stock = self.read_stock(&mut instances[0].stock.clone()).await?;
        Ok(Phase {
            tally,
            elapsed,
            final_stock,
        })
    }

    /// Spawns `workers` buyers per instance, all starting together at a
    /// barrier, and waits for them; the first error stops the others.
    async fn run<F, Fut>(
        &self,
        instances: &[Instance],
        workers: u32,
        buyer: F,
    ) -> Result<(), String>
    where
        F: Fn(Shop, Instance, u64, Arc<Barrier>) -> Fut,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        let total = instances.len() * workers as usize;
        let barrier = Arc::new(Barrier::new(total));
        // Dropping the set (on an early return) aborts the buyers still
        // running, and with them their guards, which release in the
        // background.
        let mut buyers = JoinSet::new();
        for (i, instance) in instances.iter().enumerate() {
            for w in 0..workers {
                let seed = (i as u64) << 32 | u64::from(w);
                buyers.spawn(buyer(self.clone(), instance.clone(), seed, barrier.clone()));
            }
        }
        while let Some(done) = buyers.join_next().await {
            done.map_err(|e| format!("a buyer task failed: {e}"))??;
        }
        Ok(())
    }

    async fn buy_unlocked(
        &self,
        mut instance: Instance,
        seed: u64,
        tally: &Tally,
        bar: &ProgressBar,
    ) -> Result<(), String> {
        for n in 0.. {
            let stock = self.read_stock(&mut instance.stock).await?;
            if stock <= 0 {
                break;
            }
            sleep(jittered(self.hold, seed, n)).await;
            self.write_stock(&mut instance.stock, stock - 1).await?;
            sold(tally, bar);
        }
        Ok(())
    }

    async fn buy_locked(
        &self,
        mut instance: Instance,
        seed: u64,
        tally: &Tally,
        bar: &ProgressBar,
    ) -> Result<(), String> {
        let lock = instance.locks.lock(self.lock_name.as_str());
        // The slow sale: one unit in the middle of the stock, so that it
        // happens while other buyers are still waiting.
        let slow_at = i64::from(self.stock.div_ceil(2));
        for n in 0.. {
            let guard = match lock.try_lock_for(self.wait).await {
                Ok(guard) => guard,
                Err(e) if e.is_busy() => {
                    // What a shop's "busy, try again" page leads to.
                    tally.busy.fetch_add(1, Ordering::Relaxed);
                    bar.set_message(format!("busy {}", tally.busy.load(Ordering::Relaxed)));
                    continue;
                }
                Err(e) => return Err(e.to_string()),
            };
            tally.acquisitions.fetch_add(1, Ordering::Relaxed);
            let stock = self.read_stock(&mut instance.stock).await?;
            if stock <= 0 {
                guard.unlock().await.map_err(|e| e.to_string())?;
                break;
            }
            let hold = if stock == slow_at && !self.slow.is_zero() {
                self.slow
            } else {
                jittered(self.hold, seed, n)
            };
            sleep(hold).await;
            if guard.is_lost() {
                // Writing now could overwrite a newer holder's sale: give
                // this one up, as a service watching `lost()` would.
                tally.lost.fetch_add(1, Ordering::Relaxed);
                drop(guard);
                continue;
            }
            self.write_stock(&mut instance.stock, stock - 1).await?;
            tally
                .sales
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((stock, guard.fencing_token().unwrap_or_default()));
            sold(tally, bar);
            match guard.unlock().await {
                Ok(()) => {}
                // Counted by the library's metrics; the sale already landed.
                Err(e) if e.is_not_owner() => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(())
    }

    async fn read_stock(&self, conn: &mut Plain) -> Result<i64, String> {
        conn.get::<_, Option<i64>>(&self.stock_key)
            .await
            .map_err(|e| format!("cannot read the stock: {e}"))?
            .ok_or_else(|| format!("the stock key {} is gone", self.stock_key))
    }

    async fn write_stock(&self, conn: &mut Plain, stock: i64) -> Result<(), String> {
        conn.set::<_, _, ()>(&self.stock_key, stock)
            .await
            .map_err(|e| format!("cannot write the stock: {e}"))
    }
}

fn sold(tally: &Tally, bar: &ProgressBar) {
    tally.sold.fetch_add(1, Ordering::Relaxed);
    bar.inc(1);
}

/// `hold` scaled by a factor between 0.5 and 1.5 drawn from `(seed, n)`, so
/// that buyers drift apart as real requests do.
fn jittered(hold: Duration, seed: u64, n: u64) -> Duration {
    let x = splitmix64(seed.wrapping_mul(0x9E37_79B9).wrapping_add(n));
    // The top 53 bits as a fraction in [0, 1).
    let unit = (x >> 11) as f64 / (1u64 << 53) as f64;
    hold.mul_f64(0.5 + unit)
}

/// A well-mixed 64-bit hash of `x` (Vigna's SplitMix64 finaliser): plenty
/// for spreading sleeps, and no dependency for it.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_within_half_and_one_and_a_half() {
        let hold = Duration::from_millis(2);
        let holds: Vec<Duration> = (0..1000).map(|n| jittered(hold, 7, n)).collect();
        assert!(holds.iter().all(|h| *h >= hold / 2 && *h < hold * 3 / 2));
        assert!(holds.iter().any(|h| *h < hold) && holds.iter().any(|h| *h > hold));
    }
}
