//! The demo's summary: what each phase sold, and the lock's numbers, as a
//! block of text or as JSON.

use std::fmt::{self, Write as _};
use std::time::Duration;

use serde::Serialize;

use super::placement::Placement;
use super::recorder::{LockMetrics, quantile};
use super::shop::{Locked, Unlocked};

/// Everything the demo reports; `--json` prints it as it is.
#[derive(Debug, Serialize)]
pub(crate) struct Summary {
    pub(crate) sku: String,
    pub(crate) stock: u32,
    pub(crate) clients: u32,
    pub(crate) workers_per_client: u32,
    pub(crate) hold_ms: u64,
    /// On a cluster, where the keys lived; absent (not null) otherwise, so
    /// that a single node's summary is as it always was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cluster: Option<Placement>,
    pub(crate) unlocked: UnlockedSummary,
    pub(crate) locked: LockedSummary,
}

/// The phase without the lock.
#[derive(Debug, Serialize)]
pub(crate) struct UnlockedSummary {
    pub(crate) sold: u64,
    /// Units sold beyond the stock.
    pub(crate) oversold: u64,
    pub(crate) final_stock: i64,
    pub(crate) elapsed_ms: u64,
}

/// The phase under the lock. Unprefixed counts are the library's metrics;
/// `demo_*` ones the demo's own, to cross-check them.
#[derive(Debug, Serialize)]
pub(crate) struct LockedSummary {
    pub(crate) lock: String,
    pub(crate) sold: u64,
    pub(crate) final_stock: i64,
    /// Exactly the stock sold, none left, and the sales in fencing order.
    pub(crate) exact: bool,
    pub(crate) acquisitions: u64,
    pub(crate) busy_rejections: u64,
    pub(crate) demo_acquisitions: u64,
    pub(crate) demo_busy_rejections: u64,
    /// Waits of the acquisitions that succeeded.
    pub(crate) wait_p50_ms: Option<f64>,
    pub(crate) wait_p99_ms: Option<f64>,
    pub(crate) renewals: u64,
    pub(crate) renewal_failures: u64,
    pub(crate) lost: u64,
    pub(crate) unlock_not_owner: u64,
    /// Sales given up because the guard said the lock was lost.
    pub(crate) demo_lost: u64,
    pub(crate) wait_ms: u64,
    pub(crate) watchdog_timeout_ms: u64,
    pub(crate) slow_sale_ms: u64,
    /// Every sale's fencing token was larger than the previous sale's.
    pub(crate) tokens_increasing: bool,
    pub(crate) first_token: Option<u64>,
    pub(crate) last_token: Option<u64>,
    pub(crate) elapsed_ms: u64,
}

/// The locked phase's settings, for the summary's explanations.
#[derive(Debug)]
pub(crate) struct LockSettings {
    pub(crate) lock: String,
    pub(crate) wait: Duration,
    pub(crate) watchdog: Duration,
    pub(crate) slow: Duration,
}

impl UnlockedSummary {
    pub(crate) fn new(stock: u32, run: &Unlocked) -> UnlockedSummary {
        UnlockedSummary {
            sold: run.sold,
            oversold: run.sold.saturating_sub(u64::from(stock)),
            final_stock: run.final_stock,
            elapsed_ms: millis(run.elapsed),
        }
    }
}

impl LockedSummary {
    pub(crate) fn new(
        stock: u32,
        settings: LockSettings,
        run: Locked,
        mut metrics: LockMetrics,
    ) -> LockedSummary {
        let mut sales = run.sales;
        // Sales under a lock happen one at a time, so sorted by the stock
        // they read (highest first) they must carry rising tokens, and read
        // every level from the full stock down to 1 exactly once.
        sales.sort_by_key(|s| std::cmp::Reverse(s.0));
        let levels_once = sales.iter().map(|s| s.0).eq((1..=i64::from(stock)).rev());
        let tokens_increasing = sales.windows(2).all(|w| w[0].1 < w[1].1);
        let to_ms = |s: f64| (s * 1e5).round() / 100.0;
        LockedSummary {
            lock: settings.lock,
            sold: run.sold,
            final_stock: run.final_stock,
            exact: run.sold == u64::from(stock)
                && run.final_stock == 0
                && levels_once
                && tokens_increasing,
            acquisitions: metrics.acquired,
            busy_rejections: metrics.busy,
            demo_acquisitions: run.acquisitions,
            demo_busy_rejections: run.busy,
            wait_p50_ms: quantile(&mut metrics.waits, 0.50).map(to_ms),
            wait_p99_ms: quantile(&mut metrics.waits, 0.99).map(to_ms),
            renewals: metrics.renewals,
            renewal_failures: metrics.renewal_failures,
            lost: metrics.lost,
            unlock_not_owner: metrics.unlock_not_owner,
            demo_lost: run.lost,
            wait_ms: millis(settings.wait),
            watchdog_timeout_ms: millis(settings.watchdog),
            slow_sale_ms: millis(settings.slow),
            tokens_increasing,
            first_token: sales.first().map(|s| s.1),
            last_token: sales.last().map(|s| s.1),
            elapsed_ms: millis(run.elapsed),
        }
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (u, l) = (&self.unlocked, &self.locked);
        writeln!(
            f,
            "stock deduction: {} units of {}, {} clients x {} buyers, about {} ms per sale",
            self.stock, self.sku, self.clients, self.workers_per_client, self.hold_ms
        )?;
        if let Some(cluster) = &self.cluster {
            writeln!(
                f,
                "on a redis cluster of {} masters: the stock and the lock share slot {}, on {}",
                cluster.masters,
                cluster.slot,
                cluster.node.as_deref().unwrap_or("no master (unassigned)")
            )?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "without the lock (read the stock, check, write stock - 1)"
        )?;
        let verdict = match u.oversold {
            0 => "no oversell this time".to_owned(),
            n => format!("oversold by {n}"),
        };
        line(
            f,
            "sold",
            format!("{} of {}: {verdict}", u.sold, self.stock),
        )?;
        if u.oversold > 0 && u.final_stock == 0 {
            line(
                f,
                "final stock",
                "0, which looks right: only the sales show the oversell",
            )?;
        } else {
            line(f, "final stock", u.final_stock)?;
        }
        line(f, "elapsed", seconds(u.elapsed_ms))?;
        writeln!(f)?;
        writeln!(
            f,
            "with the lock {} (try_lock_for {} ms, watchdog lease {} ms)",
            l.lock, l.wait_ms, l.watchdog_timeout_ms
        )?;
        let verdict = if l.exact { "exact" } else { "NOT exact" };
        line(
            f,
            "sold",
            format!("{} of {}: {verdict}", l.sold, self.stock),
        )?;
        line(f, "final stock", format!("{} (expected 0)", l.final_stock))?;
        line(
            f,
            "acquisitions",
            counted(l.acquisitions, l.demo_acquisitions),
        )?;
        line(
            f,
            "busy rejections",
            format!(
                "{} (each one a buyer that waited {} ms, was told busy and tried again)",
                counted(l.busy_rejections, l.demo_busy_rejections),
                l.wait_ms
            ),
        )?;
        line(f, "wait p50", ms(l.wait_p50_ms))?;
        line(f, "wait p99", ms(l.wait_p99_ms))?;
        line(
            f,
            "renewals",
            format!("{}{}", l.renewals, self.why_renewals()),
        )?;
        if l.renewal_failures + l.lost + l.unlock_not_owner + l.demo_lost > 0 {
            line(
                f,
                "trouble",
                format!(
                    "{} failed renewals, {} locks lost, {} unlocks too late, {} sales given up",
                    l.renewal_failures, l.lost, l.unlock_not_owner, l.demo_lost
                ),
            )?;
        }
        line(f, "fencing tokens", self.tokens())?;
        line(f, "elapsed", seconds(l.elapsed_ms))?;
        writeln!(f)?;
        if l.exact {
            write!(f, "ok: the lock kept the stock exact")
        } else {
            write!(
                f,
                "FAILED: the locked phase was not exact, which is a bug in redlease"
            )
        }
    }
}

impl Summary {
    /// Why the watchdog renewed anything, in words.
    fn why_renewals(&self) -> String {
        let l = &self.locked;
        let mut why = format!(
            " (the watchdog renews a held lock every {} ms, a third of its lease",
            l.watchdog_timeout_ms / 3
        );
        if l.slow_sale_ms > l.watchdog_timeout_ms {
            let _ = write!(
                why,
                "; one slow sale held it {} ms, past the lease, and kept it",
                l.slow_sale_ms
            );
        }
        why.push(')');
        why
    }

    fn tokens(&self) -> &'static str {
        match (self.locked.first_token, self.locked.tokens_increasing) {
            (Some(_), true) => {
                "rose with every sale, so a database could turn away a stale holder's write"
            }
            (Some(_), false) => "did NOT rise with every sale: two sales overlapped",
            (None, _) => "no sales",
        }
    }
}

/// One indented `name  value` line.
fn line(f: &mut fmt::Formatter<'_>, name: &str, value: impl fmt::Display) -> fmt::Result {
    writeln!(f, "  {name:<16} {value}")
}

/// A library count, with the demo's own when they disagree (as when the
/// library records no metrics).
fn counted(metrics: u64, demo: u64) -> String {
    if metrics == demo {
        metrics.to_string()
    } else {
        format!("{metrics} by the library's metrics, {demo} by the demo's count")
    }
}

fn ms(value: Option<f64>) -> String {
    match value {
        Some(v) => format!("{v:.2} ms"),
        None => "n/a (the library recorded no waits)".to_owned(),
    }
}

fn seconds(ms: u64) -> String {
    format!("{:.2} s", ms as f64 / 1000.0)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
