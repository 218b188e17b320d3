//! Free functions: interpolation, options, error types, and bodies whose
//! `return`, `?` and coercions must typecheck as in the unrewritten `async fn`.
#![deny(warnings)]

use std::fmt::Display;
use std::time::Duration;

use redlease::distributed_lock;

#[derive(Debug)]
#[allow(dead_code)]
enum AppError {
    Lock(redlease::Error),
    Parse(std::num::ParseIntError),
    Invalid(&'static str),
}

impl From<redlease::Error> for AppError {
    fn from(e: redlease::Error) -> Self {
        AppError::Lock(e)
    }
}

impl From<std::num::ParseIntError> for AppError {
    fn from(e: std::num::ParseIntError) -> Self {
        AppError::Parse(e)
    }
}

/// An `anyhow`-like boxed error, converted through the blanket impl.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

mod app {
    /// An alias named `Result`, as crates define them.
    pub type Result<T> = std::result::Result<T, super::AppError>;
}

struct Customer {
    tenant: String,
}

struct Order {
    id: u64,
    customer: Customer,
    lines: (u32, u32),
}

#[distributed_lock(key = "sales:receipt:lock:{bill_id}", wait = "15s", lease = "120s")]
async fn issue_receipt(bill_id: u64, amount: &str) -> Result<u64, AppError> {
    if amount.is_empty() {
        return Err(AppError::Invalid("no amount"));
    }
    let cents: u64 = amount.parse()?;
    Ok(bill_id * 1000 + cents)
}

/// The two sides of a read-write lock on one key.
#[distributed_lock(key = "catalog:prices:{region}", mode = "read", wait = "2s")]
async fn read_prices(region: &str) -> Result<usize, AppError> {
    Ok(region.len())
}

#[distributed_lock(mode = "write", key = "catalog:prices:{region}", lease = "1m")]
async fn rebuild_prices(region: &str) -> Result<(), AppError> {
    let _ = region;
    Ok(())
}

/// A job that runs once per tick: held at least 50 s after it starts.
#[distributed_lock(key = "jobs:report:{day}", at_least = "50s", lease = "10m")]
async fn daily_report(day: u32) -> Result<u32, AppError> {
    Ok(day)
}

#[distributed_lock(key = "{{tenant:{order.customer.tenant}}}:order:{order.id}:{order.lines.1}")]
async fn ship(order: Order) -> app::Result<Order> {
    Ok(order)
}

#[distributed_lock(key = "payroll:batch:{month}", wait = "0s", lease = "1h2m3s4ms")]
async fn payroll(month: &str, mut paid: Vec<u32>) -> Result<Vec<u32>, BoxError> {
    paid.push(1);
    let n: u32 = month.parse()?;
    paid.push(n);
    Ok(paid)
}

#[distributed_lock(key = "generic:{id:>08}:{label}", wait = "500ms")]
async fn generic<T, L>(
    id: T,
    label: &L,
    items: impl IntoIterator<Item = T>,
) -> Result<Vec<T>, AppError>
where
    T: Display + Send + 'static,
    L: Display + Sync + ?Sized,
{
    let mut all = vec![id];
    all.extend(items);
    Ok(all)
}

/// `"0"` is zero (one attempt) and units chain from the largest: durations
/// that issue #12 found read differently by the audit and the command line.
#[distributed_lock(key = "zero:{id}", wait = "0", lease = "1h30m")]
async fn zero_wait(id: u64) -> Result<u64, AppError> {
    Ok(id)
}

/// Format specs as `format!` takes them, a named width included.
#[distributed_lock(key = "spec:{n:x}:{n:#010b}:{id:>width$}:{amount:+.2}", wait = "10s")]
async fn specs(n: u32, id: u64, width: usize, amount: f64) -> Result<u64, AppError> {
    Ok(u64::from(n) + id + width as u64 + amount as u64)
}

/// Coercions at `return` need the declared return type inside the body.
#[distributed_lock(key = "name:{name}")]
async fn coerce<'a>(name: &'a String, boxed: bool) -> Result<Box<dyn Display + 'a>, AppError> {
    if boxed {
        return Ok(Box::new(name));
    }
    Ok(Box::new(name.len()))
}

#[distributed_lock(key = "slice:{name}")]
async fn deref_coercion(name: &String) -> Result<&str, AppError> {
    if name.is_empty() {
        return Ok("anonymous");
    }
    Ok(name)
}

#[distributed_lock(key = "impl:{n}")]
async fn returns_impl(n: u32) -> Result<impl Display, AppError> {
    if n == 0 {
        return Ok(1);
    }
    Ok(n)
}

/// Pattern arguments bind names too.
#[distributed_lock(key = "pair:{a}:{b}", client = &CLIENT)]
async fn patterns((a, b): (u32, u32), Customer { tenant }: Customer) -> Result<String, AppError> {
    Ok(format!("{a}{b}{tenant}"))
}

static CLIENT: std::sync::LazyLock<redlease::Client> = std::sync::LazyLock::new(|| unreachable!());

/// A function of a trait's implementation, and a `Send` future.
trait Service {
    fn call(&self, id: u64) -> impl std::future::Future<Output = Result<(), AppError>> + Send;
}

struct Svc;

impl Service for Svc {
    #[distributed_lock(key = "svc:{id}")]
    async fn call(&self, id: u64) -> Result<(), AppError> {
        let _ = self;
        std::future::ready(Duration::from_millis(id)).await;
        Ok(())
    }
}

fn is_send<T: Send>(_: T) {}

fn main() {
    let order = || Order {
        id: 1,
        customer: Customer { tenant: "t".into() },
        lines: (1, 2),
    };
    is_send(issue_receipt(1, "2"));
    is_send(ship(order()));
    is_send(payroll("2026-11", vec![]));
    is_send(generic(1u32, "label", [2u32]));
    is_send(zero_wait(1));
    is_send(read_prices("eu"));
    is_send(rebuild_prices("eu"));
    is_send(daily_report(5));
    is_send(specs(1, 2, 3, 4.5));
    let name = String::from("n");
    drop(coerce(&name, true));
    is_send(deref_coercion(&name));
    is_send(returns_impl(1));
    is_send(patterns((1, 2), Customer { tenant: "t".into() }));
    is_send(Svc.call(1));
    let _ = AppError::Invalid("x");
}
