//! Argument lists of `#[distributed_lock(..)]`, on a function.

use super::Expect::{self, Accept, Reject};

/// One attribute on one function, and what the attribute makes of it.
#[derive(Debug, Clone, Copy)]
pub struct ArgsCase {
    /// What is between the attribute's parentheses.
    pub args: &'static str,
    /// The function's signature, without a body.
    pub function: &'static str,
    /// The arguments read, or a fragment of the (first) error message.
    pub expect: Expect<ArgsShape>,
}

/// The arguments of an accepted attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArgsShape {
    /// The key template.
    pub key: &'static str,
    /// The mode, `read` or `write`; `None` (the plain lock) when not given.
    pub mode: Option<&'static str>,
    /// The wait in milliseconds; `None` when not given.
    pub wait_ms: Option<u64>,
    /// The lease in milliseconds; `None` when not given.
    pub lease_ms: Option<u64>,
    /// The least hold (`at_least`) in milliseconds; `None` when not given.
    pub at_least_ms: Option<u64>,
    /// The client expression as written; `None` when not given.
    pub client: Option<&'static str>,
}

const F: &str = "async fn f(id: u64) -> Result<(), AppError>";

const fn ok(args: &'static str, function: &'static str, shape: ArgsShape) -> ArgsCase {
    ArgsCase {
        args,
        function,
        expect: Accept(shape),
    }
}

const fn bad(args: &'static str, function: &'static str, fragment: &'static str) -> ArgsCase {
    ArgsCase {
        args,
        function,
        expect: Reject(fragment),
    }
}

const fn shape(
    key: &'static str,
    wait_ms: Option<u64>,
    lease_ms: Option<u64>,
    client: Option<&'static str>,
) -> ArgsShape {
    ArgsShape {
        key,
        mode: None,
        wait_ms,
        lease_ms,
        at_least_ms: None,
        client,
    }
}

/// `shape` with a least hold.
const fn with_at_least(shape: ArgsShape, ms: u64) -> ArgsShape {
    ArgsShape {
        at_least_ms: Some(ms),
        ..shape
    }
}

/// `shape` with a mode.
const fn with_mode(shape: ArgsShape, mode: &'static str) -> ArgsShape {
    ArgsShape {
        mode: Some(mode),
        ..shape
    }
}

/// The rows. Durations are covered by `DURATIONS` as well; these are the
/// list's own rules, and what zero means for each option.
pub const ARGS: &[ArgsCase] = &[
    ok(r#"key = "a:{id}""#, F, shape("a:{id}", None, None, None)),
    ok(
        r#"key = "a:{id}", wait = "1h30m", lease = "1h30m1s","#,
        F,
        shape("a:{id}", Some(5_400_000), Some(5_401_000), None),
    ),
    ok(
        r#"lease = "2m", client = self.locks, wait = "15s", key = "a:{self.id}:{id}""#,
        "async fn f(&self, id: u64) -> Result<(), AppError>",
        shape(
            "a:{self.id}:{id}",
            Some(15_000),
            Some(120_000),
            Some("self.locks"),
        ),
    ),
    ok(
        r#"key = "a:{id}", wait = "0""#,
        F,
        shape("a:{id}", Some(0), None, None),
    ),
    ok(
        r#"key = "a:{id}", wait = "0s""#,
        F,
        shape("a:{id}", Some(0), None, None),
    ),
    ok(
        r#"key = "pair:{a}:{b}:{tenant}""#,
        "async fn f((a, b): (u32, u32), Customer { tenant }: Customer) -> Result<(), AppError>",
        shape("pair:{a}:{b}:{tenant}", None, None, None),
    ),
    ok(
        r#"key = "a:{id}", lease = "876000h""#,
        F,
        shape("a:{id}", None, Some(3_153_600_000_000), None),
    ),
    ok(
        r#"key = "a:{id}", mode = "read""#,
        F,
        with_mode(shape("a:{id}", None, None, None), "read"),
    ),
    ok(
        r#"mode = "write", wait = "2s", key = "a:{id}", lease = "1m""#,
        F,
        with_mode(shape("a:{id}", Some(2_000), Some(60_000), None), "write"),
    ),
    ok(
        r#"key = "jobs:report", at_least = "50s""#,
        F,
        with_at_least(shape("jobs:report", None, None, None), 50_000),
    ),
    ok(
        r#"key = "a:{id}", mode = "write", lease = "1m", at_least = "10s""#,
        F,
        with_at_least(
            with_mode(shape("a:{id}", None, Some(60_000), None), "write"),
            10_000,
        ),
    ),
    bad(
        r#"key = "a:{id}", at_least = "0""#,
        F,
        "`at_least` must be longer than zero",
    ),
    bad(
        r#"key = "a:{id}", at_least = "876000h1ms""#,
        F,
        "`at_least` must be at most 100 years",
    ),
    bad(
        r#"key = "a:{id}", mode = "read", at_least = "5s""#,
        F,
        "`at_least` keeps an exclusive lock held; a read hold is shared",
    ),
    bad(
        r#"key = "a:{id}", at_least = 5"#,
        F,
        "`at_least` must be a string literal",
    ),
    bad(
        r#"key = "a:{id}", mode = "Read""#,
        F,
        "unknown mode \"Read\": expected \"read\" or \"write\"",
    ),
    bad(
        r#"key = "a:{id}", mode = "exclusive""#,
        F,
        "unknown mode \"exclusive\"",
    ),
    bad(
        r#"key = "a:{id}", mode = read"#,
        F,
        "`mode` must be a string literal, like `\"read\"`",
    ),
    bad(
        r#"key = "a:{id}", mode = "read", mode = "write""#,
        F,
        "duplicate option `mode`",
    ),
    bad(
        r#"key = "a:{id}", lease = "0""#,
        F,
        "a lease must be longer than zero",
    ),
    bad(
        r#"key = "a:{id}", lease = "0ms""#,
        F,
        "a lease must be longer than zero",
    ),
    bad(
        r#"key = "a:{id}", lease = "876000h1ms""#,
        F,
        "a lease must be at most 100 years",
    ),
    bad(
        r#"key = "a:{id}", lease = "30s1m""#,
        F,
        "units must go from largest to smallest",
    ),
    bad(
        r#"key = "a:{id}", wait = 15"#,
        F,
        "`wait` must be a string literal",
    ),
    bad(
        r#"key = "a:{id}", wait = "15 seconds""#,
        F,
        "invalid duration \"15 seconds\"",
    ),
    bad(
        r#"key = "a:{id}", timeout = "1s""#,
        F,
        "unknown option `timeout`",
    ),
    bad(
        r#"key = "a:{id}", wait = "1s", wait = "2s""#,
        F,
        "duplicate option `wait`",
    ),
    bad(r#"key = "a:{id}", key = "b""#, F, "duplicate option `key`"),
    bad("", F, "missing option `key`"),
    bad(r#"wait = "1s""#, F, "missing option `key`"),
    bad(r#"key "a""#, F, "expected `=`"),
    bad(r#"key::x = "a""#, F, "expected `=`"),
    bad("key = KEY", F, "the key must be a string literal"),
    bad(r#"key = "a:{id""#, F, "unclosed `{`"),
    bad(
        r#"key = "a:{nope}""#,
        F,
        "`{nope}` in the key is not an argument of `f`",
    ),
    bad(
        r#"key = "a:{self.id}""#,
        F,
        "`{self.id}` in the key does not start with an argument of `f`",
    ),
];
