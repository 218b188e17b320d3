//! `redlease demo`: the stock-deduction scenario, without and with the lock.
//!
//! * `demo/server.rs`: which Redis to use; the private `redis-server` or
//!   cluster.
//! * `demo/placement.rs`: on a cluster, where the demo's keys live.
//! * `demo/shop.rs`: the buyers, the stock key and the two phases.
//! * `demo/recorder.rs`: the in-process metrics recorder and the library's
//!   numbers read from it.
//! * `demo/summary.rs`: the summary, as text or JSON.

mod placement;
mod recorder;
mod server;
mod shop;
mod summary;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::time::timeout;

use crate::connect::{self, LayoutArg, Target, Tls, is_cluster};
use recorder::Recorder;
use shop::Shop;
use summary::{LockSettings, LockedSummary, Summary, UnlockedSummary};

/// Sells one SKU's stock without a lock (oversold) and with one (exact).
///
/// Buyers on several clients sell one SKU's stock by reading it, checking
/// it and writing it back, first without a lock (they oversell), then under
/// a redlease lock (exactly the stock), and the demo prints what the
/// library's metrics recorded.
///
/// Uses --url or REDIS_URL if given, else the Redis on 127.0.0.1:6379 if
/// one answers, else a private redis-server from PATH on a free port,
/// stopped at the end. With --cluster, a Redis Cluster instead: the
/// redis-cluster:// URL of --url or REDIS_URL, else a private cluster of 3
/// masters. Over TLS with a rediss:// or rediss-cluster:// URL and the
/// --tls-* options. Exits 0 when the locked phase sold exactly the stock, 1
/// otherwise.
#[derive(Debug, clap::Args)]
pub(crate) struct DemoArgs {
    /// Units of stock the SKU starts each phase with.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    stock: u32,
    /// Clients, as separate service instances: each has its own connections
    /// and its own watchdog.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    clients: u32,
    /// Buyers (tasks) per client.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1024))]
    workers: u32,
    /// Milliseconds between reading the stock and writing it back, as a
    /// database call would take; each sale takes between half and one and a
    /// half times this.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(0..=1000))]
    hold_ms: u64,
    /// How long a buyer waits for the lock before it is told "busy" and
    /// tries again, in milliseconds.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    wait_ms: u64,
    /// The lease of the demo's locks, in milliseconds; the watchdog renews
    /// held locks every third of it. Short, so that renewals show.
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(30..=600_000))]
    watchdog_ms: u64,
    /// One sale, halfway through the locked phase, holds the lock this many
    /// milliseconds, past its lease, to show the watchdog keeping it; 0 for
    /// none.
    #[arg(long, default_value_t = 800, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    slow_ms: u64,
    /// Always start a private redis-server (with --cluster, a private
    /// cluster) for the run, even when --url, REDIS_URL or a Redis on
    /// 127.0.0.1:6379 is there. Private servers are plain: --tls-* options
    /// are not used.
    #[arg(long)]
    private: bool,
    /// Run on a Redis Cluster: the redis-cluster://host:port[,host:port...]
    /// URL of --url or REDIS_URL, else a private cluster of 3 masters
    /// (redis-server from PATH), stopped at the end. The stock key and the
    /// lock share a hash tag, so one master holds both. Implied by a
    /// redis-cluster:// URL.
    #[arg(long)]
    cluster: bool,
    /// How the lock's key holds its owner in the locked phase: `redisson`
    /// (a hash, as Redisson's RLock) or `string` (`SET key owner NX PX`, as
    /// the SET NX locks of redis-py, rslock, redsync or a hand-written
    /// script, for sharing lock keys with services using them).
    #[arg(long, value_enum, value_name = "LAYOUT", default_value_t = LayoutArg::Redisson)]
    layout: LayoutArg,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn main(
    url: Option<String>,
    tls: Tls,
    sentinel_password: Option<String>,
    args: DemoArgs,
) -> ExitCode {
    // A URL the library would not read is a usage error, as in the other
    // subcommands; --private ignores the URL.
    if let Some(url) = url.as_deref().filter(|_| !args.private)
        && let Err(message) = Target::new(url.to_owned()).check()
    {
        return crate::usage_error("demo", message);
    }
    if let Err(usage) = check_cluster_url(url.as_deref(), &args) {
        return usage;
    }
    if let Err(usage) = check_tls_url(url.as_deref(), &tls, &args) {
        return usage;
    }
    match run(url, tls, sentinel_password, args).await {
        Ok(summary) if summary.locked.exact => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => connect::fail(&e),
    }
}

/// `--cluster` with a URL that names one node is a usage error (exit 2),
/// not a run on that node: the user asked for a cluster. `--private`
/// ignores the URL, as without `--cluster`.
fn check_cluster_url(url: Option<&str>, args: &DemoArgs) -> Result<(), ExitCode> {
    let Some(url) = url.filter(|url| args.cluster && !args.private && !is_cluster(url)) else {
        return Ok(());
    };
    let shown = Target::new(url.to_owned()).redacted();
    Err(crate::usage_error(
        "demo",
        format!(
            "--cluster needs a redis-cluster://host:port[,host:port...] url, but --url or \
             REDIS_URL is {shown}; give a cluster's url, or add --private to start a private \
             cluster"
        ),
    ))
}

/// TLS files need the demo to use a TLS URL of --url or REDIS_URL: they are
/// a usage error (exit 2) otherwise, never ignored, except with --private,
/// whose servers are plain and local.
fn check_tls_url(url: Option<&str>, tls: &Tls, args: &DemoArgs) -> Result<(), ExitCode> {
    if tls.is_empty() || args.private || url.is_some_and(connect::is_tls_url) {
        return Ok(());
    }
    let url = match url {
        Some(url) => Target::new(url.to_owned()).redacted(),
        None => "not given".to_owned(),
    };
    Err(crate::usage_error(
        "demo",
        format!(
            "--tls-ca, --tls-cert and --tls-key need a rediss://, rediss-cluster:// or \
             rediss-sentinel:// url in \
             --url or REDIS_URL, but the url is {url}"
        ),
    ))
}

async fn run(
    url: Option<String>,
    tls: Tls,
    sentinel_password: Option<String>,
    args: DemoArgs,
) -> Result<Summary, String> {
    // A redis-cluster:// URL means a cluster even without --cluster: the
    // keys need its hash tag, and the summary says where they lived.
    let cluster = args.cluster || (!args.private && url.as_deref().is_some_and(is_cluster));
    let redis = match cluster {
        true => server::choose_cluster(url, args.private).await?,
        false => server::choose(url, args.private).await?,
    };
    let recorder = recorder::install()?;
    let shop = new_shop(&args, cluster);
    let (tls, sentinel_password) = match redis.is_private() {
        true => (Tls::default(), None),
        false => (tls, sentinel_password),
    };
    let target = Target::new(redis.url.clone())
        .with_tls(tls)
        .with_sentinel_password(sentinel_password);
    let outcome = tokio::select! {
        outcome = scenario(&target, &args, &shop, &recorder) => outcome,
        signal = interrupted() => Err(signal),
    };
    // Also after an error or Ctrl-C: the demo must not leave keys in a
    // Redis that is not its own.
    remove_keys(&target, &shop).await;
    // Before the summary, so that nothing outlives the output.
    redis.stop().await;
    let summary = outcome?;
    if args.json {
        let json = serde_json::to_string_pretty(&summary)
            .map_err(|e| format!("cannot write the summary as json: {e}"))?;
        println!("{json}");
    } else {
        println!("{summary}");
    }
    Ok(summary)
}

/// The run's SKU and keys, unique to this run so that two demos on one
/// Redis do not sell each other's stock.
fn new_shop(args: &DemoArgs, cluster: bool) -> Shop {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let sku = format!("sku-{}-{:04x}", std::process::id(), nanos & 0xffff);
    // On a cluster the SKU is the hash tag of the stock key and of the lock
    // (whose fencing counter, `redisson_lock_token:demo:stock:{sku}`, keeps
    // the lock's tag): all three share one slot, so one master holds what
    // a sale reads and the lock that guards it, the summary can name that
    // master, and the clean-up is one DEL on one node.
    let tag = match cluster {
        true => format!("{{{sku}}}"),
        false => sku.clone(),
    };
    Shop {
        sku: sku.clone(),
        stock_key: format!("demo:inventory:{tag}"),
        lock_name: format!("demo:stock:{tag}"),
        stock: args.stock,
        hold: Duration::from_millis(args.hold_ms),
        slow: Duration::from_millis(args.slow_ms),
        wait: Duration::from_millis(args.wait_ms),
    }
}

async fn scenario(
    target: &Target,
    args: &DemoArgs,
    shop: &Shop,
    recorder: &Recorder,
) -> Result<Summary, String> {
    let watchdog = Duration::from_millis(args.watchdog_ms);
    let instances = shop::connect(target, args.clients, watchdog, args.layout).await?;
    let first = &instances[0];
    let placement = match target.is_cluster() {
        true => Some(placement::find(&mut target.connection().await?, &shop.stock_key).await?),
        false => None,
    };
    let label = redlease::metrics::lock_label(&shop.lock_name);

    shop.restock(first).await?;
    let bar = progress(args, "without the lock");
    let unlocked = shop.unlocked(&instances, args.workers, &bar).await?;
    bar.finish_and_clear();

    shop.restock(first).await?;
    // Start the locked phase's numbers from zero (taking them resets them).
    recorder::take(recorder, label);
    let bar = progress(args, "with the lock");
    let locked = shop.locked(&instances, args.workers, &bar).await?;
    bar.finish_and_clear();
    let metrics = recorder::take(recorder, label);

    let settings = LockSettings {
        lock: shop.lock_name.clone(),
        wait: shop.wait,
        watchdog,
        slow: shop.slow,
    };
    Ok(Summary {
        sku: shop.sku.clone(),
        stock: args.stock,
        clients: args.clients,
        workers_per_client: args.workers,
        hold_ms: args.hold_ms,
        cluster: placement,
        unlocked: UnlockedSummary::new(args.stock, &unlocked),
        locked: LockedSummary::new(args.stock, settings, locked, metrics),
    })
}

/// A progress bar of units sold against the stock, drawn only on a
/// terminal so that logs and tests get the summary alone.
fn progress(args: &DemoArgs, phase: &'static str) -> ProgressBar {
    if args.json || !std::io::stdout().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(args.stock.into()), ProgressDrawTarget::stdout());
    if let Ok(style) =
        ProgressStyle::with_template("{prefix:<17} [{bar:30}] {pos} sold of {len} {msg}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(phase);
    bar
}

/// Resolves on Ctrl-C or SIGTERM with the message to exit with; the
/// caller then stops the buyers, removes the keys and the private server.
async fn interrupted() -> String {
    use tokio::signal::unix::{SignalKind, signal};
    let terminate = async {
        match signal(SignalKind::terminate()) {
            Ok(mut s) => s.recv().await,
            // Without a SIGTERM handler only Ctrl-C is caught.
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate => {}
    }
    "interrupted".to_owned()
}

/// Deletes the run's stock, lock and fencing-counter keys, best effort,
/// within about two seconds.
async fn remove_keys(target: &Target, shop: &Shop) {
    // The library's fencing counter for the demo's lock.
    let token_key = redlease::layout::token_key(&shop.lock_name);
    let keys = [shop.stock_key.as_str(), shop.lock_name.as_str(), &token_key];
    // Unreachable: the error that ended the run already said so, and
    // nothing can be removed anyway.
    let Ok(Ok(mut conn)) = timeout(Duration::from_secs(1), target.connection()).await else {
        return;
    };
    let mut delete = redis::cmd("DEL");
    delete.arg(&keys);
    match timeout(Duration::from_secs(1), delete.exec_async(&mut conn)).await {
        Ok(Ok(())) => {}
        // Refused for want of credentials: then the run could not have
        // written any key either, and its own error says why (issue #18).
        Ok(Err(e)) if redlease::Error::from(e.clone()).is_auth() => {}
        Ok(Err(e)) => {
            connect::warn(&target.scrub(&format!("could not remove the demo's keys {keys:?}: {e}")))
        }
        Err(_) => connect::warn(&format!(
            "could not remove the demo's keys {keys:?} in time"
        )),
    }
}
