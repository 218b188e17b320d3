//! `#[distributed_lock]` on the two operations of the sales-and-payroll
//! design note: one receipt per bill, one payroll batch per month.
//!
//! ```text
//! REDIS_URL=redis://127.0.0.1:6379 cargo run -p redlease --example declared
//! ```
//!
//! 1. Two requests issue a receipt for the same bill at once: the second
//!    waits for the first (up to 15 s), then finds the receipt and issues
//!    none. A request to void the receipt meanwhile does not wait: it is
//!    refused as busy.
//! 2. Two payroll runs for one month start at once: the second is refused as
//!    busy. Runs for two months, one after the other, both succeed.
//!
//! Exits non-zero if anything turns out otherwise.

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redlease::{Client, distributed_lock};

#[derive(Debug)]
enum AppError {
    /// Another request holds the lock; the caller may retry later.
    Busy(String),
    /// The receipt was issued already (by a request we waited for).
    AlreadyIssued(u64),
    /// Nothing to void.
    NoReceipt(u64),
    /// Redis is unreachable, or some other lock failure.
    Lock(redlease::Error),
}

impl From<redlease::Error> for AppError {
    fn from(e: redlease::Error) -> Self {
        if e.is_busy() {
            AppError::Busy(e.key().unwrap_or_default().to_owned())
        } else {
            AppError::Lock(e)
        }
    }
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AppError::Busy(key) => write!(f, "busy: {key} is held by another request"),
            AppError::AlreadyIssued(bill) => write!(f, "bill {bill} already has a receipt"),
            AppError::NoReceipt(bill) => write!(f, "bill {bill} has no receipt"),
            AppError::Lock(e) => write!(f, "lock error: {e}"),
        }
    }
}

/// Receipts by bill, as a database table would hold them.
#[derive(Default)]
struct Receipts {
    by_bill: Mutex<HashMap<u64, String>>,
}

/// Issues the receipt of a bill at most once. The check and the write are
/// one critical section per bill, so two clicks on two servers cannot both
/// see "no receipt yet". Uses the default client.
#[distributed_lock(key = "sales:receipt:lock:{bill_id}", wait = "15s", lease = "120s")]
async fn issue_receipt(
    bill_id: u64,
    amount_cents: u64,
    receipts: &Receipts,
    start: Instant,
) -> Result<String, AppError> {
    if receipts.by_bill.lock().unwrap().contains_key(&bill_id) {
        return Err(AppError::AlreadyIssued(bill_id));
    }
    say(start, &format!("issuing the receipt of bill {bill_id}..."));
    // Rendering and filing the receipt takes a while.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let receipt = format!(
        "R-{bill_id}: {}.{:02}",
        amount_cents / 100,
        amount_cents % 100
    );
    receipts
        .by_bill
        .lock()
        .unwrap()
        .insert(bill_id, receipt.clone());
    Ok(receipt)
}

/// Voids a receipt, under the same lock, without waiting: a user who
/// clicks "void" while the receipt is being issued is told to retry.
#[distributed_lock(key = "sales:receipt:lock:{bill_id}")]
async fn void_receipt(bill_id: u64, receipts: &Receipts) -> Result<String, AppError> {
    receipts
        .by_bill
        .lock()
        .unwrap()
        .remove(&bill_id)
        .ok_or(AppError::NoReceipt(bill_id))
}

/// The payroll service, with its own client (another Redis, say).
struct Payroll {
    locks: Client,
    paid: Mutex<Vec<String>>,
}

impl Payroll {
    /// Pays one month's salaries. A second run for a month that is being
    /// paid is refused at once (no `wait`); the lease bounds how long a
    /// crashed run can block the month.
    #[distributed_lock(key = "payroll:batch:{month}", client = self.locks, lease = "10m")]
    async fn run_batch(
        &self,
        month: &str,
        employees: u32,
        start: Instant,
    ) -> Result<u32, AppError> {
        say(
            start,
            &format!("paying {employees} employees for {month}..."),
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
        self.paid.lock().unwrap().push(month.to_owned());
        Ok(employees)
    }
}

fn say(start: Instant, what: &str) {
    println!("{:>5}ms  {what}", start.elapsed().as_millis());
}

/// Checks one outcome, printing it; returns whether it was the expected one.
fn expect<T: std::fmt::Debug>(
    start: Instant,
    what: &str,
    got: &Result<T, AppError>,
    ok: impl FnOnce(&Result<T, AppError>) -> bool,
) -> bool {
    let line = match got {
        Ok(value) => format!("{what}: ok, {value:?}"),
        Err(e) => format!("{what}: {e}"),
    };
    let fine = ok(got);
    say(
        start,
        &if fine {
            line
        } else {
            format!("UNEXPECTED {line}")
        },
    );
    fine
}

async fn receipts(start: Instant) -> bool {
    println!("-- receipts: one per bill");
    let receipts = Arc::new(Receipts::default());
    let bill = 1001;
    let first = tokio::spawn({
        let receipts = receipts.clone();
        async move { issue_receipt(bill, 12_50, &receipts, start).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let duplicate = tokio::spawn({
        let receipts = receipts.clone();
        async move { issue_receipt(bill, 12_50, &receipts, start).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let void = void_receipt(bill, &receipts).await;
    let mut fine = expect(
        start,
        "void while issuing",
        &void,
        |r| matches!(r, Err(AppError::Busy(key)) if key == "sales:receipt:lock:1001"),
    );
    let first = first.await.expect("first request panicked");
    fine &= expect(start, "first request", &first, Result::is_ok);
    let duplicate = duplicate.await.expect("duplicate request panicked");
    fine &= expect(start, "duplicate request", &duplicate, |r| {
        matches!(r, Err(AppError::AlreadyIssued(1001)))
    });
    let issued = receipts.by_bill.lock().unwrap().len();
    if issued != 1 {
        say(start, &format!("UNEXPECTED {issued} receipts for one bill"));
        fine = false;
    }
    let void = void_receipt(bill, &receipts).await;
    fine & expect(start, "void afterwards", &void, Result::is_ok)
}

async fn payroll(url: &str, start: Instant) -> Result<bool, redlease::Error> {
    println!("-- payroll: one batch per month");
    let payroll = Payroll {
        locks: Client::connect(url).await?,
        paid: Mutex::default(),
    };
    let (a, b) = tokio::join!(
        payroll.run_batch("2026-11", 120, start),
        payroll.run_batch("2026-11", 120, start)
    );
    let one_ran = matches!(
        (&a, &b),
        (Ok(120), Err(AppError::Busy(_))) | (Err(AppError::Busy(_)), Ok(120))
    );
    expect(start, "first run for 2026-11", &a, |_| true);
    expect(start, "second run for 2026-11", &b, |_| true);
    if !one_ran {
        say(
            start,
            "UNEXPECTED: not exactly one run and one busy refusal",
        );
    }
    let mut fine = one_ran;
    for month in ["2026-12", "2027-01"] {
        let run = payroll.run_batch(month, 118, start).await;
        fine &= expect(start, &format!("run for {month}"), &run, |r| {
            matches!(r, Ok(118))
        });
    }
    let paid = payroll.paid.lock().unwrap().clone();
    if paid != ["2026-11", "2026-12", "2027-01"] {
        say(start, &format!("UNEXPECTED months paid: {paid:?}"));
        fine = false;
    }
    Ok(fine)
}

#[tokio::main]
async fn main() -> ExitCode {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let client = match Client::connect(&url).await {
        Ok(client) => client,
        Err(e) => {
            eprintln!("error: {e}");
            eprintln!("start a server (for example `redis-server --port 6379`) or set REDIS_URL");
            return ExitCode::FAILURE;
        }
    };
    if redlease::install_default(client).is_err() {
        unreachable!("nothing else installs a default client");
    }
    let start = Instant::now();
    let receipts_fine = receipts(start).await;
    let payroll_fine = match payroll(&url, start).await {
        Ok(fine) => fine,
        Err(e) => {
            eprintln!("error: {e}");
            false
        }
    };
    if receipts_fine && payroll_fine {
        println!("done: one receipt for the bill, one payroll batch per month");
        ExitCode::SUCCESS
    } else {
        println!("failed: see the UNEXPECTED lines above");
        ExitCode::FAILURE
    }
}
