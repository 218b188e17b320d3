//! A batch job without async: four worker threads settle invoices, each
//! invoice under its own lock, with the blocking API.
//!
//! ```sh
//! cargo run -p redlease --features blocking --example blocking [REDIS_URL]
//! ```
//!
//! Each invoice is settled once: under its lock, a worker first checks
//! that nobody settled it yet (the record lives 10 s, so the job can be
//! run again), and a worker that finds an invoice locked moves on. Two
//! copies started at once settle the 20 invoices once between them.

use std::thread;
use std::time::Duration;

use redlease::blocking::Client;

fn main() -> Result<(), redlease::Error> {
    let url = std::env::args()
        .nth(1)
        .or_else(|| std::env::var("REDIS_URL").ok())
        .unwrap_or_else(|| "redis://127.0.0.1:6379".to_owned());
    let client = Client::connect(&url)?;
    let workers: Vec<_> = (0..4)
        .map(|worker| {
            let (client, url) = (client.clone(), url.clone());
            thread::spawn(move || -> Result<u32, redlease::Error> {
                let mut records = redis::Client::open(url)?.get_connection()?;
                let mut settled = 0;
                for invoice in 0..20 {
                    let lock = client.lock(format!("example:invoice:{invoice}"));
                    let guard = match lock.try_lock_for(Duration::from_millis(5)) {
                        Ok(guard) => guard,
                        Err(e) if e.is_busy() => continue,
                        Err(e) => return Err(e),
                    };
                    let record = format!("example:invoice:{invoice}:settled");
                    if !redis::cmd("EXISTS")
                        .arg(&record)
                        .query::<bool>(&mut records)?
                    {
                        // The fencing token goes with the write, for a
                        // database to refuse a holder whose lock passed on.
                        let token = guard.fencing_token().expect("a lock has a token");
                        println!("worker {worker} settles invoice {invoice} (token {token})");
                        redis::cmd("SET")
                            .arg(&record)
                            .arg(token)
                            .arg("EX")
                            .arg(10)
                            .exec(&mut records)?;
                        settled += 1;
                    }
                    guard.unlock()?;
                }
                Ok(settled)
            })
        })
        .collect();
    let mut total = 0;
    for worker in workers {
        total += worker.join().expect("a worker panicked")?;
    }
    println!("{total} invoices settled by this run's 4 workers");
    Ok(())
}
