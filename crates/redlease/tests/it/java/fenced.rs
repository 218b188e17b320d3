//! `RFencedLock` and redlease's fencing tokens: one counter per name
//! (`redisson_lock_token:{name}`), so tokens from both sides interleave in
//! one increasing sequence, and each side's fenced lock excludes the other.

use super::side::{Side, everywhere};

everywhere!(fenced_tokens_interleave_in_one_increasing_sequence);

/// Java and redlease take the same name in turns; every token is larger
/// than every token before it, whichever side issued it. redlease is built
/// with `redisson_fenced_interop(true)`, as a service sharing counters with
/// Java should be (the counter is then kept for ever, as Redisson keeps it).
async fn fenced_tokens_interleave_in_one_increasing_sequence(side: Side) {
    let rust = side
        .deploy
        .rust_builder()
        .redisson_fenced_interop(true)
        .build()
        .await
        .unwrap();
    let (java, name) = (side.java, side.name("fenced"));
    let owner = format!("{name}/a");
    let mut tokens: Vec<(&str, i64)> = Vec::new();
    for round in 0..5 {
        let token = java
            .call(&owner, &format!("token.trylock {name} 0 -1"))
            .await;
        tokens.push(("java", token.number()));
        if round == 0 {
            let busy = rust.lock(&name).try_lock().await.unwrap_err();
            assert!(busy.is_busy(), "{busy}");
        }
        java.call(&owner, &format!("unlock fenced {name}"))
            .await
            .value();

        let guard = rust.lock(&name).try_lock().await.unwrap();
        tokens.push((
            "redlease",
            i64::try_from(guard.fencing_token().unwrap()).unwrap(),
        ));
        if round == 0 {
            let refused = java
                .call(&owner, &format!("token.trylock {name} 0 -1"))
                .await;
            assert_eq!(refused.value(), "null", "Java's fenced lock is refused");
        }
        guard.unlock().await.unwrap();
    }
    for pair in tokens.windows(2) {
        assert!(pair[1].1 > pair[0].1, "tokens went back: {tokens:?}");
    }
    // Java reads the same counter: its last value is redlease's last token.
    let last = java
        .call(&owner, &format!("token.get {name}"))
        .await
        .number();
    assert_eq!(last, tokens.last().unwrap().1, "{tokens:?}");
}
