//! The API table in DESIGN.md (#27): every primitive × every verb, one
//! answer per cell. Each cell is written here once, as the call itself:
//! the call must type-check with the shape its column demands (an acquire
//! answers `Result<guard, Error>`, busy being an error; a release
//! `Result<(), Error>`; ...), and the cell's text is rendered from that same
//! call. The test renders the table and compares it with DESIGN.md's, so
//! neither the API nor the document can drift from the other.
//!
//! To rewrite DESIGN.md's table after a deliberate change:
//! `REDLEASE_BLESS=1 cargo test -p redlease --test it api_table`.

use std::future::Future;
use std::time::Duration;

use redlease::{Error, Guard, LostReason};

/// An acquire: a guard, or busy as an error.
fn acquires<G: Guard, F: Future<Output = Result<G, Error>>>(_: F) {}
/// A wait that holds nothing afterwards (a latch opening).
fn waits<F: Future<Output = Result<(), Error>>>(_: F) {}
/// A release, or a lease moved.
fn settles<F: Future<Output = Result<(), Error>>>(_: F) {}
/// A loss notification.
fn loses<F: Future<Output = LostReason>>(_: F) {}
/// A fencing token, where the kind has one.
fn tokens(_: Option<u64>) {}
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

const COLUMNS: [&str; 9] = [
    "primitive",
    "acquire once",
    "with a wait",
    "forever",
    "release",
    "extend",
    "lost",
    "fencing token",
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
                | blocks(t.try_lock_for(WAIT))]
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
                | tokens(g.fencing_token());
                "`None`" | blocks(t.try_acquire_for(WAIT))]
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
                "`None`: masters' tokens order nothing" | blocks(t.try_lock_for(WAIT))]
        ),
    ]
}

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

/// The table says each kind's token; the guards say it too.
#[tokio::test]
async fn the_token_column_is_what_the_guards_answer() {
    let c = crate::support::client().await;
    let name = crate::support::unique("api-table");
    let lock = c.lock(&name).try_lock().await.unwrap();
    assert!(Guard::fencing_token(&lock).is_some());
    lock.release().await.unwrap();
    let sem = c.semaphore(&name);
    sem.try_set_available(1).await.unwrap();
    let permit = sem.try_acquire(1).await.unwrap();
    assert_eq!(Guard::fencing_token(&permit), None);
    assert!(!Guard::is_lost(&permit));
    permit.release().await.unwrap();
    let multi = c.multi_lock([format!("{name}:a"), format!("{name}:b")]);
    let both = multi.try_lock().await.unwrap();
    assert_eq!(Guard::fencing_token(&both), None);
    both.release().await.unwrap();
}
