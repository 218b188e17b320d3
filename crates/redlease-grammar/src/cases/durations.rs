//! Durations: the attribute's `wait`/`lease` and the command line's
//! `--wait`, `--lease`, `--watchdog-timeout` and `--grace`.

use super::Expect::{self, Accept, Reject};

/// One duration string and its value in milliseconds, or why it is refused.
#[derive(Debug, Clone, Copy)]
pub struct DurationCase {
    /// The string, as written in the attribute or on the command line.
    pub text: &'static str,
    /// Its milliseconds, or a fragment of the error message.
    pub expect: Expect<u64>,
}

const fn case(text: &'static str, expect: Expect<u64>) -> DurationCase {
    DurationCase { text, expect }
}

const MALFORMED: &str = "expected integers each followed by a unit";
const ORDER: &str = "units must go from largest to smallest, each at most once";

/// The rows. `30s1m`, `1h30m` and `0` are the three that issue #12 found
/// read differently by the macro, the audit and the command line.
pub const DURATIONS: &[DurationCase] = &[
    case("500ms", Accept(500)),
    case("15s", Accept(15_000)),
    case("2m", Accept(120_000)),
    case("1h", Accept(3_600_000)),
    case("1m30s", Accept(90_000)),
    case("1h30m", Accept(5_400_000)),
    case("1h2m3s4ms", Accept(3_723_004)),
    case("1h250ms", Accept(3_600_250)),
    case("2h05m", Accept(7_500_000)),
    case("0", Accept(0)),
    case("0s", Accept(0)),
    case("0ms", Accept(0)),
    case("1m0s", Accept(60_000)),
    case("18446744073709551615ms", Accept(u64::MAX)),
    case("30s1m", Reject(ORDER)),
    case("1s1s", Reject(ORDER)),
    case("1m1m", Reject(ORDER)),
    case("1ms1s", Reject(ORDER)),
    case("", Reject("empty duration")),
    case("15", Reject(MALFORMED)),
    case("00", Reject(MALFORMED)),
    case("s", Reject(MALFORMED)),
    case("ms", Reject(MALFORMED)),
    case("15 s", Reject(MALFORMED)),
    case(" 15s", Reject(MALFORMED)),
    case("15s ", Reject(MALFORMED)),
    case("1.5s", Reject(MALFORMED)),
    case("-1s", Reject(MALFORMED)),
    case("+1s", Reject(MALFORMED)),
    case("1m30", Reject(MALFORMED)),
    case("soon", Reject(MALFORMED)),
    case("15S", Reject("unknown unit `S`")),
    case("15sec", Reject("unknown unit `sec`")),
    case("1d", Reject("unknown unit `d`")),
    case("5x", Reject("unknown unit `x`")),
    case("1us", Reject("unknown unit `us`")),
    case("18446744073709551616ms", Reject("is too long")),
    case("99999999999999999999s", Reject("is too long")),
    case("18446744073709551615h", Reject("is too long")),
    case("5124095576031h", Reject("is too long")),
];
