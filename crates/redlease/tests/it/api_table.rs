//! The API table in DESIGN.md (#27): every primitive × every verb, one
//! answer per cell. Each cell is written here once, as the call itself:
//! the call must type-check with the shape its column demands (an acquire
//! answers `Result<guard, Error>`, busy being an error; a release
//! `Result<(), Error>`; ...), and the cell's text is rendered from that same
//! call. The test renders the table and compares it with DESIGN.md's, so
//! neither the API nor the document can drift from the other.
//!
//! Neither `Guard` nor `Extend` is imported here, so every `g.…` call is
//! the guard's own (inherent) method, as a user who imports nothing calls
//! it; `own_methods!` checks every method of both traits that way, for
//! every guard and its blocking twin (#38).
//!
//! To rewrite DESIGN.md's table after a deliberate change:
//! `REDLEASE_BLESS=1 cargo test -p redlease --test it api_table`.

use std::future::Future;
use std::time::{Duration, Instant};

// Not `Guard` or `Extend`: see the module docs.
use redlease::{Error, LostReason};

/// An acquire: a guard, or busy as an error. (A bound names the trait
/// without bringing its methods into scope.)
fn acquires<G: redlease::Guard, F: Future<Output = Result<G, Error>>>(_: F) {}
/// A wait that holds nothing afterwards (a latch opening).
fn waits<F: Future<Output = Result<(), Error>>>(_: F) {}
/// A release, or a lease moved.
fn settles<F: Future<Output = Result<(), Error>>>(_: F) {}
/// A loss notification.
fn loses<F: Future<Output = LostReason>>(_: F) {}
/// A fencing token, where the kind has one.
fn tokens(_: Option<u64>) {}
/// Who holds it, as Redis records it.
fn whose(_: &str) {}
/// The members of a multi-lock, each answering for itself.
fn members(_: &[redlease::LockGuard]) {}
/// A blocking twin's call: the same answer, without a future.
fn blocks<T>(_: Result<T, Error>) {}

/// A value of any type, for calls that are type-checked and never run.
fn any<V>() -> V {
    unreachable!("only type-checked")
}

/// What the cells' calls pass: rendered in lowercase.
const N: u64 = 1;
const WAIT: Duration = Duration::from_secs(1);
const LEASE: Duration = Duration::from_secs(1);
const VALUE: &str = "v";

/// One cell: `check(x.call(ARGS)...)` on the primitive `x`, its guard `g`
/// or its blocking twin `t`, type-checked (never run) and rendered as the
/// call; or `none("why")`. A `; "note"` is appended.
macro_rules! cell {
    (none($why:literal)) => {
        format!("— ({})", $why)
    };
    ($check:ident(x $($rest:tt)+)) => { cell!(@typed X, $check, $($rest)+) };
    ($check:ident(g $($rest:tt)+)) => { cell!(@typed G, $check, $($rest)+) };
    ($check:ident(t $($rest:tt)+)) => { cell!(@typed T, $check, $($rest)+) };
    (@typed $ty:ty, $check:ident, $(. $m:ident($($a:expr),*))+) => {{
        if false {
            $check(any::<$ty>() $(. $m($($a),*))+);
        }
        let calls: Vec<String> = vec![$(
            {
                let args: &[&str] = &[$(stringify!($a)),*];
                format!("{}({})", stringify!($m), args.join(", ").to_lowercase())
            }
        ),+];
        format!("`{}`", calls.join("."))
    }};
}

/// One row: the primitive's label, its types, and a cell per column.
macro_rules! row {
    ($label:literal, $x:ty, $g:ty, $t:ty, [$($cell:tt)*]) => {{
        #[allow(dead_code)]
        type X = $x;
        #[allow(dead_code)]
        type G = $g;
        #[allow(dead_code)]
        type T = $t;
        let mut row = vec![$label.to_owned()];
        cells!(row; $($cell)*);
        row
    }};
}

/// The cells of a row, separated by `|`, each with an optional `; "note"`.
macro_rules! cells {
    ($row:ident; ) => {};
    ($row:ident; $kind:ident($($inner:tt)*) $(; $note:literal)? $(| $($rest:tt)*)?) => {
        let text = cell!($kind($($inner)*));
        $( let text = format!("{text} {}", $note); )?
        $row.push(text);
        $( cells!($row; $($rest)*); )?
    };
}

const COLUMNS: [&str; 10] = [
    "primitive",
    "acquire once",
    "with a wait",
    "forever",
    "release",
    "extend",
    "lost",
    "fencing token",
    "whose",
    "blocking twin",
];

fn table() -> Vec<Vec<String>> {
    use redlease::blocking;
    vec![
        row!(
            "`Lock` (`lock`, `fair_lock`, a `ReadWriteLock`'s `read()` and `write()`)",
            redlease::Lock,
            redlease::LockGuard,
            blocking::Lock,
            [acquires(x.try_lock())
                | acquires(x.try_lock_for(WAIT))
                | acquires(x.lock())
                | settles(g.unlock())
                | settles(g.extend(LEASE)); "(fixed lease)"
                | loses(g.lost())
                | tokens(g.fencing_token()); "`Some`"
                | whose(g.owner()); "`<client id>:<n>`, the hash field"
                | blocks(t.try_lock_for(WAIT))]
        ),
        row!(
            "`Election` → `Leadership` (#40)",
            redlease::Election,
            redlease::Leadership,
            blocking::Election,
            [acquires(x.try_campaign(VALUE))
                | acquires(x.campaign_for(VALUE, WAIT))
                | acquires(x.campaign(VALUE))
                | settles(g.resign())
                | none("the watchdog keeps it")
                | loses(g.lost())
                | tokens(g.fencing_token()); "`Some`: the leadership's `epoch()`"
                | whose(g.owner()); "`<client id>:<n>`, the lock's hash field"
                | blocks(t.campaign_for(VALUE, WAIT))]
        ),
        row!(
            "`Semaphore` → `SemaphorePermit`",
            redlease::Semaphore,
            redlease::SemaphorePermit,
            blocking::Semaphore,
            [acquires(x.try_acquire(N))
                | acquires(x.try_acquire_for(N, WAIT))
                | acquires(x.acquire(N))
                | settles(g.release())
                | none("no lease")
                | loses(g.lost()); "(never resolves: nothing takes permits)"
                | tokens(g.fencing_token()); "`None`"
                | none("no owner: any client may give permits back")
                | blocks(t.try_acquire_for(N, WAIT))]
        ),
        row!(
            "`ExpirableSemaphore` → `PermitGuard`",
            redlease::ExpirableSemaphore,
            redlease::PermitGuard,
            blocking::ExpirableSemaphore,
            [acquires(x.try_acquire())
                | acquires(x.try_acquire_for(WAIT))
                | acquires(x.acquire())
                | settles(g.release())
                | settles(g.extend(LEASE)); "(fixed lease)"
                | loses(g.lost())
                | tokens(g.fencing_token()); "`None`"
                | whose(g.id()); "Redisson's permit id, the zset member"
                | blocks(t.try_acquire_for(WAIT))]
        ),
        row!(
            "`CountDownLatch`",
            redlease::CountDownLatch,
            redlease::LockGuard,
            blocking::CountDownLatch,
            [none("`count()` reads it")
                | waits(x.wait_for(WAIT))
                | waits(x.wait())
                | none("nothing held")
                | none("nothing held")
                | none("nothing held")
                | none("nothing held")
                | none("nothing held")
                | blocks(t.wait_for(WAIT))]
        ),
        row!(
            "`MultiLock` → `MultiGuard`",
            redlease::MultiLock,
            redlease::MultiGuard,
            blocking::MultiLock,
            [acquires(x.try_lock())
                | acquires(x.try_lock_for(WAIT))
                | acquires(x.lock())
                | settles(g.unlock())
                | settles(g.extend(LEASE)); "(fixed lease)"
                | loses(g.lost())
                | tokens(g.fencing_token()); "`None`: `fencing_token_of(name)` per member"
                | members(g.guards()); "each member's `owner()`"
                | blocks(t.try_lock_for(WAIT))]
        ),
        row!(
            "`RedLock` → `RedLockGuard`",
            redlease::RedLock,
            redlease::RedLockGuard,
            blocking::RedLock,
            [acquires(x.try_lock())
                | acquires(x.try_lock_for(WAIT))
                | acquires(x.lock())
                | settles(g.unlock())
                | settles(g.extend(LEASE))
                | loses(g.lost())
                | tokens(g.fencing_token());
                "`None`: masters' tokens order nothing"
                    | none("an owner field per master, of that master's client")
                    | blocks(t.try_lock_for(WAIT))]
        ),
    ]
}

/// A guard seen through `own_methods!`'s impls; never built, only
/// type-checked.
#[allow(dead_code)]
#[derive(Debug)]
struct Own<G>(G);

/// Every method of `Guard` (and of `Extend`, for the kinds whose lease
/// moves) as the guard's own, and the same for its blocking twin, where
/// `lost` waits at most a given time and nothing is a future.
///
/// Each method is called in a function of its own, where no trait is in
/// scope, so the call can only be the guard's inherent method; a guard
/// that loses one stops this file from compiling. (Not inside an `impl
/// Guard`: the trait being implemented is in scope there, and the call
/// would quietly go through it.) The functions then implement the traits
/// for `Own`, so the traits check each signature, a `Send` future
/// included, and a method the traits gain must be added here. The twin's
/// calls are type-checked in a closure that never runs.
macro_rules! own_methods {
    ($g:ty, $t:ty, release = $release:ident $(, $extend:ident)?) => {
        const _: () = {
            fn name(g: &$g) -> &str {
                g.name()
            }
            fn fencing_token(g: &$g) -> Option<u64> {
                g.fencing_token()
            }
            fn expires_at(g: &$g) -> Option<Instant> {
                g.expires_at()
            }
            fn is_lost(g: &$g) -> bool {
                g.is_lost()
            }
            fn lost(g: &$g) -> impl Future<Output = LostReason> + Send {
                g.lost()
            }
            fn release(g: $g) -> impl Future<Output = Result<(), Error>> + Send {
                g.$release()
            }

            impl redlease::Guard for Own<$g> {
                fn name(&self) -> &str {
                    name(&self.0)
                }
                fn fencing_token(&self) -> Option<u64> {
                    fencing_token(&self.0)
                }
                fn expires_at(&self) -> Option<Instant> {
                    expires_at(&self.0)
                }
                fn is_lost(&self) -> bool {
                    is_lost(&self.0)
                }
                fn lost(&self) -> impl Future<Output = LostReason> + Send {
                    lost(&self.0)
                }
                fn release(self) -> impl Future<Output = Result<(), Error>> + Send {
                    release(self.0)
                }
            }

            $(
                fn $extend(g: &$g, lease: Duration) -> impl Future<Output = Result<(), Error>> + Send {
                    g.$extend(lease)
                }

                impl redlease::Extend for Own<$g> {
                    fn $extend(&self, lease: Duration) -> impl Future<Output = Result<(), Error>> + Send {
                        $extend(&self.0, lease)
                    }
                }
            )?
        };
        const _: fn() = || {
            let t = any::<$t>();
            let _: &str = t.name();
            let _: Option<u64> = t.fencing_token();
            let _: Option<Instant> = t.expires_at();
            let _: bool = t.is_lost();
            let _: Result<Option<LostReason>, Error> = t.lost(WAIT);
            $( let _: Result<(), Error> = t.$extend(LEASE); )?
            let _: Result<(), Error> = t.$release();
        };
    };
}

own_methods!(
    redlease::LockGuard,
    redlease::blocking::LockGuard,
    release = unlock,
    extend
);
own_methods!(
    redlease::MultiGuard,
    redlease::blocking::MultiGuard,
    release = unlock,
    extend
);
own_methods!(
    redlease::RedLockGuard,
    redlease::blocking::RedLockGuard,
    release = unlock,
    extend
);
own_methods!(
    redlease::Leadership,
    redlease::blocking::Leadership,
    release = resign
);
own_methods!(
    redlease::SemaphorePermit,
    redlease::blocking::SemaphorePermit,
    release = release
);
own_methods!(
    redlease::PermitGuard,
    redlease::blocking::PermitGuard,
    release = release,
    extend
);

fn render() -> String {
    let mut out = String::new();
    out.push_str(&format!("| {} |\n", COLUMNS.join(" | ")));
    out.push_str(&format!("|{}\n", "---|".repeat(COLUMNS.len())));
    for row in table() {
        assert_eq!(row.len(), COLUMNS.len(), "a row of {}", row[0]);
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out
}

const START: &str = "<!-- api-table: rendered by crates/redlease/tests/it/api_table.rs -->\n";
const END: &str = "<!-- api-table end -->";

#[test]
fn design_md_has_the_api_table_the_code_has() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../DESIGN.md");
    let design = std::fs::read_to_string(path).unwrap();
    let table = render();
    let (Some(start), Some(end)) = (design.find(START), design.find(END)) else {
        panic!("DESIGN.md has no API table between {START:?} and {END:?}; it should be:\n{table}");
    };
    let current = &design[start + START.len()..end];
    if current == table {
        return;
    }
    if std::env::var_os("REDLEASE_BLESS").is_some() {
        let updated = format!(
            "{}{table}{}",
            &design[..start + START.len()],
            &design[end..]
        );
        std::fs::write(path, updated).unwrap();
        return;
    }
    panic!(
        "DESIGN.md's API table differs from the API; with REDLEASE_BLESS=1 this test writes it. \
         It should be:\n{table}"
    );
}

/// The table says each kind's token; the guards say it too, on their own
/// and through the `Guard` trait alike.
#[tokio::test]
async fn the_token_column_is_what_the_guards_answer() {
    let c = crate::support::client().await;
    let name = crate::support::unique("api-table");
    let lock = c.lock(&name).try_lock().await.unwrap();
    assert!(lock.fencing_token().is_some());
    assert_eq!(redlease::Guard::fencing_token(&lock), lock.fencing_token());
    lock.unlock().await.unwrap();
    let sem = c.semaphore(&name);
    sem.try_set_available(1).await.unwrap();
    let permit = sem.try_acquire(1).await.unwrap();
    assert_eq!(permit.fencing_token(), None);
    assert_eq!(redlease::Guard::fencing_token(&permit), None);
    assert!(!permit.is_lost());
    assert!(!redlease::Guard::is_lost(&permit));
    permit.release().await.unwrap();
    let slots = c.expirable_semaphore(format!("{name}:expirable"));
    slots.try_set_total(1).await.unwrap();
    let permit = slots.try_acquire().await.unwrap();
    assert_eq!(permit.fencing_token(), None);
    assert_eq!(redlease::Guard::fencing_token(&permit), None);
    permit.release().await.unwrap();
    let multi = c.multi_lock([format!("{name}:a"), format!("{name}:b")]);
    let both = multi.try_lock().await.unwrap();
    assert_eq!(both.fencing_token(), None);
    assert_eq!(redlease::Guard::fencing_token(&both), None);
    both.unlock().await.unwrap();
}
