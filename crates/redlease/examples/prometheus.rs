//! Exposes redlease's metrics for Prometheus to scrape while a few workers
//! contend for locks.
//!
//! ```text
//! cargo run -p redlease --example prometheus -- 127.0.0.1:9898 30
//! curl -s http://127.0.0.1:9898/metrics | grep redlease_
//! ```
//!
//! Arguments: the address to serve `/metrics` on (default
//! `127.0.0.1:9898`) and how many seconds to run (default: until Ctrl-C).
//! `REDIS_URL` selects the server (default `redis://127.0.0.1:6379`).
//!
//! The library only records through the `metrics` facade; the exporter is
//! the application's choice. Here it is `metrics-exporter-prometheus`
//! without its HTTP listener: the example renders the text format itself on
//! a plain Tokio socket, which is all a scrape needs.

use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Histogram buckets for waits and holds, in seconds: a lock's waits and
/// holds span from sub-millisecond hand-offs to watchdog-renewed minutes.
const BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0,
];

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:9898".to_owned());
    let run_for = match args.next() {
        Some(s) => Some(Duration::from_secs(s.parse().map_err(|_| {
            format!("the run time must be a whole number of seconds, but found {s:?}")
        })?)),
        None => None,
    };
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());

    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".to_owned()), BUCKETS)?
        .install_recorder()?;
    let listener = TcpListener::bind(&addr).await?;
    println!("serving metrics on http://{addr}/metrics (redis at {url})");
    tokio::spawn(serve(listener, handle));

    let client = redlease::Client::builder(&url)
        // Renew every second, so renewals show up within a short run.
        .watchdog_timeout(Duration::from_secs(3))
        .build()
        .await?;
    for worker in 0..4u64 {
        let client = client.clone();
        tokio::spawn(async move {
            loop {
                // Two SKUs: the label is the prefix `example:stock`, one
                // series for both.
                let key = format!("example:stock:{}", worker % 2);
                match client
                    .lock(key)
                    .try_lock_for(Duration::from_millis(300))
                    .await
                {
                    Ok(guard) => {
                        // Now and then a hold long enough to be renewed.
                        let hold = if worker == 0 { 1500 } else { 20 };
                        tokio::time::sleep(Duration::from_millis(hold)).await;
                        let _ = guard.unlock().await;
                    }
                    Err(e) if e.is_busy() => {}
                    Err(e) => {
                        eprintln!("worker {worker}: {e}");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
            }
        });
    }

    match run_for {
        Some(d) => tokio::time::sleep(d).await,
        None => tokio::signal::ctrl_c().await?,
    }
    Ok(())
}

/// Answers every request on `listener` with the current metrics.
async fn serve(listener: TcpListener, handle: PrometheusHandle) {
    loop {
        let Ok((mut socket, _)) = listener.accept().await else {
            continue;
        };
        let handle = handle.clone();
        tokio::spawn(async move {
            // The request itself does not matter: one path, one answer.
            let mut request = [0u8; 1024];
            let _ = socket.read(&mut request).await;
            let body = handle.render();
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(response.as_bytes()).await;
        });
    }
}
