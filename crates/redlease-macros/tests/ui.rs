//! Compile-time behaviour of `#[distributed_lock]`: what it accepts, and
//! the errors (and where they point) for what it does not.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
