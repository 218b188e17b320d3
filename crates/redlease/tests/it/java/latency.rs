//! How fast a release on one side wakes a waiter on the other, timed over
//! many hand-offs: Java release → redlease waiter, redlease release → Java
//! waiter, p50 and p99, printed for docs (run with `--nocapture`).

use super::side::{Deploy, Side, WAIT, WAIT_MS, WOKEN_WITHIN_US, lock_channel};

/// Hand-offs per direction.
const ROUNDS: usize = 100;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wake_latency_single_v4() {
    hand_offs(Side::new(0, Deploy::Single).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wake_latency_single_v3() {
    hand_offs(Side::new(1, Deploy::Single).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wake_latency_cluster_sharded_v4() {
    hand_offs(Side::new(0, Deploy::ClusterSharded).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wake_latency_cluster_plain_v4() {
    hand_offs(Side::new(0, Deploy::ClusterPlain).await).await;
}

/// The `q`-quantile of `samples` (sorted in place), nearest rank.
fn quantile(samples: &mut [u64], q: f64) -> u64 {
    samples.sort_unstable();
    let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
    samples[rank - 1]
}

async fn hand_offs(side: Side) {
    let (java, name) = (side.java, side.name("latency"));
    let (a, b) = (format!("{name}/a"), format!("{name}/b"));
    let channel = lock_channel(&name);
    let (mut to_rust, mut to_java) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        assert!(
            java.call(&a, &format!("trylock lock {name} 0 -1"))
                .await
                .bool()
        );
        let lock = side.rust.lock(&name);
        let (guard, woke) = side
            .redlease_woken_by_java(
                &channel,
                async move { lock.try_lock_for(WAIT).await },
                &a,
                &format!("unlock lock {name}"),
            )
            .await;
        to_rust.push(woke);

        let (got, woke) = side
            .java_woken_by_redlease(
                &channel,
                &b,
                &format!("trylock lock {name} {WAIT_MS} -1"),
                guard.unlock(),
            )
            .await;
        assert!(got.bool());
        to_java.push(woke);
        java.call(&b, &format!("unlock lock {name}")).await.value();
    }
    let mut report = Vec::new();
    for (direction, samples) in [
        ("Java release -> redlease waiter", &mut to_rust),
        ("redlease release -> Java waiter", &mut to_java),
    ] {
        let (p50, p99) = (quantile(samples, 0.5), quantile(samples, 0.99));
        report.push(format!(
            "Redisson {} {:?} {direction}: p50 {:.2} ms, p99 {:.2} ms ({ROUNDS} hand-offs)",
            java.version(),
            side.deploy,
            p50 as f64 / 1000.0,
            p99 as f64 / 1000.0
        ));
        assert!(p99 < WOKEN_WITHIN_US, "{}", report.last().unwrap());
    }
    eprintln!("{}", report.join("\n"));
}
