//! The `#[distributed_lock]` attribute; use it through `redlease`, which
//! re-exports it as `redlease::distributed_lock`.
#![forbid(unsafe_code)]

mod expand;

use proc_macro::TokenStream;

/// Runs an `async fn` under a distributed lock whose name is built from the
/// function's arguments.
///
/// ```no_run
/// use redlease::distributed_lock;
///
/// #[derive(Debug)]
/// enum AppError {
///     Lock(redlease::Error),
///     AlreadyIssued(u64),
/// }
///
/// impl From<redlease::Error> for AppError {
///     fn from(e: redlease::Error) -> Self {
///         AppError::Lock(e)
///     }
/// }
///
/// /// One receipt per bill, even with two clicks on two servers.
/// #[distributed_lock(key = "sales:receipt:lock:{bill_id}", wait = "15s", lease = "120s")]
/// async fn issue_receipt(bill_id: u64) -> Result<String, AppError> {
///     // ... check that no receipt exists, then write one ...
///     Ok(format!("receipt for bill {bill_id}"))
/// }
///
/// struct Payroll {
///     locks: redlease::Client,
/// }
///
/// impl Payroll {
///     /// One batch per month; a second run while the first is going fails
///     /// at once (no `wait`).
///     #[distributed_lock(key = "payroll:batch:{month}", client = self.locks)]
///     async fn run_batch(&self, month: &str) -> Result<usize, AppError> {
///         Ok(0)
///     }
/// }
///
/// # async fn demo() -> Result<(), AppError> {
/// let client = redlease::Client::connect("redis://127.0.0.1:6379").await?;
/// if redlease::install_default(client).is_err() {
///     // Installed once at start-up already; that client stays the default.
///     eprintln!("a default redlease client was installed already");
/// }
/// match issue_receipt(42).await {
///     Ok(receipt) => println!("{receipt}"),
///     Err(AppError::Lock(e)) if e.is_busy() => println!("bill 42 is being invoiced elsewhere"),
///     Err(e) => return Err(e),
/// }
/// # Ok(())
/// # }
/// ```
///
/// Before the body runs, the function formats its key and acquires the lock;
/// it releases the lock when the body is done, however it ends: by its last
/// expression, by `return`, or by `?`. If the body panics, the lock's guard
/// is dropped, which releases the lock in the background. The body runs in
/// an owner scope (`redlease::scope`), so a call from inside it to another
/// locked function with the same key (through the same client) re-enters
/// the lock instead of waiting for itself.
///
/// # Options
///
/// * `key = "..."` (required): the lock name. `{name}` is replaced by the
///   argument `name`, `{order.id}` by a field of one (nested fields and
///   tuple indices too, and `{self.id}` in methods), formatted with
///   `Display` (or a `format!` spec, `{id:08}`, `{id:x}`, `{id:>width$}`;
///   not a positional count like `{id:1$}`). `{{` and `}}` are literal
///   braces, as Redis hash tags need: `"{{tenant:{tenant}}}:orders"`. The
///   key is formatted from references to the arguments, so it moves none.
/// * `mode = "read"` or `mode = "write"`: take that side of the
///   read-write lock named by the key (`Client::read_write_lock`) instead
///   of the plain lock: any number of `"read"` holders run at once, a
///   `"write"` holder runs alone. Without `mode`, the plain lock, which
///   excludes both sides of a read-write lock of the same name (they are
///   one Redis hash), so give every function on one resource a `mode`.
/// * `wait = "15s"`: how long to wait for a busy lock before giving up.
///   Without it, or with `"0"`, one attempt is made.
/// * `lease = "120s"`: a fixed lease after which the lock expires, whatever
///   the body is doing. Without it the lock is renewed by the client's
///   watchdog for as long as the body runs.
/// * `client = expr`: the `redlease::Client` to lock with, evaluated inside
///   the function (so it can use `self` and the arguments); a `Client`, a
///   `&Client`, an `Arc<Client>` or anything else that derefs to one.
///   Without it, the client installed by `redlease::install_default` is
///   used.
///
/// Durations are whole numbers each followed by `ms`, `s`, `m` or `h`,
/// chained from the largest unit to the smallest, each unit at most once:
/// `"250ms"`, `"15s"`, `"1m30s"`, `"1h30m"`; `"0"` alone is zero. No spaces,
/// fractions or other units. The `redlease` command line and
/// `redlease audit` read them the same way (the grammar lives in
/// `redlease-grammar`).
///
/// # Errors
///
/// The function must return a `Result` (or an alias spelled `Result`, such
/// as `io::Result` or `anyhow::Result`) whose error type implements
/// `From<redlease::Error>`. When the lock cannot be acquired, the body does
/// not run and the function returns `Err(From::from(e))`: for a lock still
/// held by another owner after the wait, `e.is_busy()` is true; without a
/// `client` and with no default client installed,
/// `e.is_invalid_argument()` is; Redis being unreachable gives its own kind.
///
/// A failure to release after the body ran is logged and does not change
/// what the function returns; the lock then expires at the end of its lease.
///
/// Mistakes in the attribute are compile errors: a `{name}` that is not an
/// argument, a malformed duration or format spec, a zero lease or one over
/// 100 years, an unknown or repeated option, a `mode` other than `"read"`
/// or `"write"`, a missing or empty key, a
/// function that is not `async` or does not return a `Result`.
#[proc_macro_attribute]
pub fn distributed_lock(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::distributed_lock(args.into(), item.into()).into()
}
