//! Key templates.

use super::Expect::{self, Accept, Reject};

/// One key template and what it parses to, or why it is refused.
#[derive(Debug, Clone, Copy)]
pub struct KeyCase {
    /// The template, as in `key = "..."`.
    pub template: &'static str,
    /// What it parses to, or a fragment of the error message.
    pub expect: Expect<KeyShape>,
}

/// What a template parses to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyShape {
    /// The `format!` string the macro expands to.
    pub format: &'static str,
    /// The placeholders' paths, in order.
    pub placeholders: &'static [&'static str],
    /// The namespace the audit reports.
    pub prefix: Option<&'static str>,
}

const fn ok(
    template: &'static str,
    format: &'static str,
    placeholders: &'static [&'static str],
    prefix: Option<&'static str>,
) -> KeyCase {
    KeyCase {
        template,
        expect: Accept(KeyShape {
            format,
            placeholders,
            prefix,
        }),
    }
}

const fn bad(template: &'static str, fragment: &'static str) -> KeyCase {
    KeyCase {
        template,
        expect: Reject(fragment),
    }
}

const NOT_A_PATH: &str = "is not an argument or a field path";
const SPEC: &str = "has an invalid format spec";

/// The rows: each template of `crates/redlease-macros/tests/ui/pass`, then
/// the forms around them.
pub const KEYS: &[KeyCase] = &[
    ok(
        "sales:receipt:lock:{bill_id}",
        "sales:receipt:lock:{}",
        &["bill_id"],
        Some("sales:receipt:lock"),
    ),
    ok(
        "{{tenant:{order.customer.tenant}}}:order:{order.id}:{order.lines.1}",
        "{{tenant:{}}}:order:{}:{}",
        &["order.customer.tenant", "order.id", "order.lines.1"],
        Some("{tenant"),
    ),
    ok(
        "generic:{id:>08}:{label}",
        "generic:{:>08}:{}",
        &["id", "label"],
        Some("generic"),
    ),
    ok(
        "ledger:{self.id}:{entry}",
        "ledger:{}:{}",
        &["self.id", "entry"],
        Some("ledger"),
    ),
    ok(
        "ledger:{__redlease_guard}",
        "ledger:{}",
        &["__redlease_guard"],
        Some("ledger"),
    ),
    ok(
        "{{orders}}:lock:{id}",
        "{{orders}}:lock:{}",
        &["id"],
        Some("{orders}:lock"),
    ),
    ok(
        "nightly:{{cluster}}:run:{day}",
        "nightly:{{cluster}}:run:{}",
        &["day"],
        Some("nightly:{cluster}:run"),
    ),
    ok("sweep:{{all}}", "sweep:{{all}}", &[], Some("sweep")),
    ok("lock", "lock", &[], None),
    ok("{order_id}", "{}", &["order_id"], None),
    ok("lock{id}:x", "lock{}:x", &["id"], None),
    ok("a:b:c", "a:b:c", &[], Some("a:b")),
    ok("{r#type}", "{}", &["r#type"], None),
    ok("t:{a.r#type.0}", "t:{}", &["a.r#type.0"], Some("t")),
    ok("é:{ü}", "é:{}", &["ü"], Some("é")),
    ok(
        "n:{n:x}:{n:#010b}:{f:+.3e}:{s:?}",
        "n:{:x}:{:#010b}:{:+.3e}:{:?}",
        &["n", "n", "f", "s"],
        Some("n"),
    ),
    ok("w:{id:>width$}", "w:{:>width$}", &["id"], Some("w")),
    ok("pad:{id::>8}", "pad:{::>8}", &["id"], Some("pad")),
    bad("", "the key is empty"),
    bad("a{", "unclosed `{` in the key at byte 1"),
    bad("a{b", "unclosed `{`"),
    bad("{tenant:{id}", "unclosed `{` in the key at byte 0"),
    bad("a{b{c}}", "unclosed `{`"),
    bad("{{}", "unmatched `}`"),
    bad("{tenant}:{id}}", "unmatched `}` in the key at byte 13"),
    bad("a}", "unmatched `}`"),
    bad("orders:{}", "empty `{}` in the key"),
    bad("{:x}", "empty `{}` in the key"),
    bad("orders:{order-id}", NOT_A_PATH),
    bad("{a.}", NOT_A_PATH),
    bad("{.a}", NOT_A_PATH),
    bad("{a..b}", NOT_A_PATH),
    bad("{1}", NOT_A_PATH),
    bad("{ a }", NOT_A_PATH),
    bad("{_}", NOT_A_PATH),
    bad("{a.01}", NOT_A_PATH),
    bad("{a.99999999999}", NOT_A_PATH),
    bad("{a.self}", NOT_A_PATH),
    bad("{r#self}", NOT_A_PATH),
    bad("{crate}", NOT_A_PATH),
    bad(
        "{type}",
        "uses the keyword `type` as a name: write `r#type`",
    ),
    bad("{a.fn}", "uses the keyword `fn`"),
    bad("{id:y}", SPEC),
    bad("{id:70000}", SPEC),
    bad("{id:1$}", SPEC),
    bad("{id:.*}", SPEC),
    bad("{id:>8 x}", SPEC),
];
