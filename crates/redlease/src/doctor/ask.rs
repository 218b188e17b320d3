//! What the doctor asks: of each master (`INFO`, `CONFIG GET`, `WAIT`,
//! `WAITAOF`, `EVAL`, `TIME`, `PING`), of the deployment (`CLUSTER INFO`,
//! the sentinels), and of this client's rights (a probe lock taken, fenced
//! and released, its channel subscribed). Every reply is handed to
//! `judge.rs`; a refused command becomes a finding, not an error.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::{RedisError, Value};
use tokio::time::Instant;

use super::judge::{self, Info, Sentinel, Server};
use super::{Check, Finding};
use crate::client::Client;
use crate::connection::{Connection, Node, Publish, Said};
use crate::error::Error;
use crate::pubsub::Wakes;

/// How many `PING`s the round trip is the median of.
const PINGS: usize = 5;

/// The probe lock's fixed lease: bounds it if its release fails.
const PROBE_LEASE: Duration = Duration::from_secs(10);

/// How long the probe's subscription may take to be confirmed.
const SUBSCRIBE_WITHIN: Duration = Duration::from_secs(3);

/// The findings of every master: the nodes that hold keys. The first
/// node's `INFO` failing fails the whole examination (nothing can be
/// said); a later one's is a finding.
/// Also each node's server name and version, and the masters themselves,
/// for the deployment's checks.
/// `sentinel_master` labels the one node under Sentinel.
pub(super) async fn nodes(
    client: &Client,
    sentinel_master: Option<&str>,
) -> Result<(Vec<Finding>, Vec<Server>, Vec<Node>), Error> {
    let conn = client.shared().conn();
    let masters = conn.masters().await.map_err(Error::from)?;
    let mut servers = Vec::new();
    let required = client.shared().replicas().map(|r| r.count());
    let mut findings = Vec::new();
    for (i, node) in masters.iter().enumerate() {
        let label = node.address.as_deref().or(sentinel_master);
        let info: String = match conn.query_on(node, &redis::cmd("INFO")).await {
            Ok(info) => info,
            Err(e) if i == 0 => return Err(Error::from(e)),
            Err(e) => {
                findings.push(Finding {
                    check: Check::Role,
                    severity: super::Severity::Warning,
                    node: label.map(str::to_owned),
                    found: format!("INFO failed ({e})"),
                    advice: Some("a node that cannot be read cannot be checked".to_owned()),
                });
                continue;
            }
        };
        let info = Info::parse(&info);
        let (name, version) = info.server();
        servers.push((name.to_owned(), version));
        let config = |name: &'static str| config_get(conn, node, name);
        let (read_only, appendfsync, save) = tokio::join!(
            config("replica-read-only"),
            config("appendfsync"),
            config("save")
        );
        let mut add = |check, verdict| findings.push(Finding::new(check, label, verdict));
        add(Check::Role, judge::role(&info, &read_only));
        add(Check::Eviction, judge::eviction(&info));
        if let Some(v) = judge::memory(&info) {
            add(Check::Memory, v);
        }
        add(
            Check::Persistence,
            judge::persistence(&info, &appendfsync, &save),
        );
        if let Some(v) = judge::replicas(&info, required) {
            add(Check::Replicas, v);
        }
        // `0` replicas: answered at once, whatever the replication.
        let wait = query_on::<i64>(conn, node, redis::cmd("WAIT").arg(0).arg(0)).await;
        add(Check::Wait, judge::wait(&message(wait), required));
        let waitaof = query_on::<Value>(conn, node, redis::cmd("WAITAOF").arg(0).arg(0).arg(0))
            .await
            .map(|_| ());
        add(Check::WaitAof, judge::waitaof(&message(waitaof)));
        let eval = query_on::<i64>(conn, node, redis::cmd("EVAL").arg("return 1").arg(0)).await;
        add(Check::Scripting, judge::scripting(&message(eval)));
        add(Check::Version, judge::version(&info));
        add(Check::NativeRelease, judge::native_release(&info));
        match clock_skew(conn, node).await {
            Ok(skew) => add(Check::Clock, judge::clock(skew)),
            Err(e) => add(Check::Clock, refused("TIME", &e)),
        }
        match round_trip(conn, node).await {
            Ok(rtt) => add(Check::RoundTrip, judge::round_trip(rtt)),
            Err(e) => add(Check::RoundTrip, refused("PING", &e)),
        }
    }
    Ok((findings, servers, masters))
}

/// The deployment's findings: a cluster's slots and sharded pub/sub, the
/// sentinels' quorum and replicas.
pub(super) async fn deployment(
    client: &Client,
    masters: &[Node],
    servers: &[Server],
    survey: Option<&[Said]>,
) -> Vec<Finding> {
    let conn = client.shared().conn();
    let mut findings = Vec::new();
    if conn.is_cluster() {
        let slots = match masters.first() {
            Some(node) => {
                let reply = conn
                    .query_on::<String>(node, redis::cmd("CLUSTER").arg("INFO"))
                    .await;
                match reply {
                    Ok(text) => judge::cluster_slots(&text),
                    Err(e) => refused("CLUSTER INFO", &e),
                }
            }
            None => refused("CLUSTER SLOTS", &"no master serves any slot"),
        };
        findings.push(Finding::new(Check::ClusterSlots, None, slots));
        let sharded = conn.publish() == Publish::Sharded;
        findings.push(Finding::new(
            Check::ShardedPubSub,
            None,
            judge::sharded_pubsub(servers, sharded),
        ));
    }
    if let Some(said) = survey {
        let views: Vec<Sentinel> = said
            .iter()
            .map(|s| Sentinel {
                address: &s.address,
                fields: s.fields.as_ref().map_err(ToString::to_string),
                quorum: s.quorum.as_deref().map_err(ToString::to_string),
            })
            .collect();
        findings.push(Finding::new(
            Check::SentinelQuorum,
            None,
            judge::sentinel_quorum(&views),
        ));
        if let Some(v) = judge::sentinel_replicas(&views) {
            findings.push(Finding::new(Check::SentinelReplicas, None, v));
        }
    }
    findings
}

/// What this client may do on `probe`: take it with a fixed lease (its
/// fencing token too, when fencing is on), release it, and subscribe to
/// its release channel.
pub(super) async fn rights(client: &Client, probe: &str) -> Vec<Finding> {
    let lock = client.lock(probe).lease(PROBE_LEASE);
    let taken = match lock.try_lock().await {
        Ok(guard) => {
            let token = guard.fencing_token();
            match guard.unlock().await {
                Ok(()) => judge_rights(Ok(token), probe),
                Err(e) => judge_rights(Err(("release", e)), probe),
            }
        }
        Err(e) => judge_rights(Err(("take", e)), probe),
    };
    // Plain and string-layout waiters both wait on this one.
    let channel = crate::layout::channel(probe);
    let subscription = client.shared().subscribe(channel.clone(), Wakes::One);
    let subscribed = if subscription.ready(Some(SUBSCRIBE_WITHIN)).await {
        ok_verdict(format!("subscribed to {channel}"))
    } else {
        judge_subscribe(&channel)
    };
    drop(subscription);
    vec![
        Finding::new(Check::Rights, None, taken),
        Finding::new(Check::Subscribe, None, subscribed),
    ]
}

fn judge_rights(outcome: Result<Option<u64>, (&str, Error)>, probe: &str) -> judge::Verdict {
    match outcome {
        Ok(Some(token)) => ok_verdict(format!("took and released {probe} (fencing token {token})")),
        Ok(None) => ok_verdict(format!("took and released {probe}")),
        Err((_, e)) if e.is_busy() => judge::Verdict {
            severity: super::Severity::Warning,
            found: format!("{probe} is held by another owner"),
            advice: Some(
                "the probe proves nothing while another holds it: give another name (--name)"
                    .to_owned(),
            ),
        },
        Err((step, e)) => judge::Verdict {
            severity: super::Severity::Warning,
            found: format!("cannot {step} {probe}: {e}"),
            advice: Some(if e.is_auth() {
                "this user lacks rules redlease needs: grant what `redlease acl --prefix \
                 PREFIX` prints for the prefix of the service's lock names (and give a name \
                 under it: --name)"
                    .to_owned()
            } else {
                "lock calls fail here with this error".to_owned()
            }),
        },
    }
}

fn judge_subscribe(channel: &str) -> judge::Verdict {
    judge::Verdict {
        severity: super::Severity::Warning,
        found: format!("cannot subscribe to {channel} within {SUBSCRIBE_WITHIN:?}"),
        advice: Some(
            "waiters are woken by this channel's messages; without it they poll: allow the \
             channel (`redlease acl --prefix PREFIX` prints the rules)"
                .to_owned(),
        ),
    }
}

fn ok_verdict(found: String) -> judge::Verdict {
    judge::Verdict {
        severity: super::Severity::Ok,
        found,
        advice: None,
    }
}

/// A check that could not be made because `command` failed.
fn refused(command: &str, e: &dyn std::fmt::Display) -> judge::Verdict {
    judge::Verdict {
        severity: super::Severity::Warning,
        found: format!("{command} failed ({e})"),
        advice: Some("this check could not be made".to_owned()),
    }
}

async fn query_on<T: redis::FromRedisValue>(
    conn: &Connection,
    node: &Node,
    cmd: &mut redis::Cmd,
) -> Result<T, RedisError> {
    conn.query_on(node, cmd).await
}

/// One `CONFIG GET`: the value, `None` when the server has no such
/// setting, or the refusal's message (managed services rename `CONFIG`).
async fn config_get(conn: &Connection, node: &Node, name: &str) -> Result<Option<String>, String> {
    let reply: Result<HashMap<String, String>, RedisError> = conn
        .query_on(node, redis::cmd("CONFIG").arg("GET").arg(name))
        .await;
    message(reply.map(|mut values| values.remove(name)))
}

/// A reply with its error as a message, for the judges.
fn message<T>(reply: Result<T, RedisError>) -> Result<T, String> {
    reply.map_err(|e| e.to_string())
}

/// The server's clock minus ours at the middle of a `TIME` round trip, in
/// milliseconds.
async fn clock_skew(conn: &Connection, node: &Node) -> Result<i64, RedisError> {
    let before = SystemTime::now();
    let sent = Instant::now();
    let (secs, micros): (i64, i64) = conn.query_on(node, &redis::cmd("TIME")).await?;
    let half = sent.elapsed() / 2;
    let middle = (before + half)
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
        .unwrap_or(0);
    let server = secs.saturating_mul(1_000_000).saturating_add(micros);
    Ok((server - middle) / 1000)
}

/// The median of [`PINGS`] round trips, one after the other.
async fn round_trip(conn: &Connection, node: &Node) -> Result<Duration, RedisError> {
    let mut times = Vec::with_capacity(PINGS);
    for _ in 0..PINGS {
        let sent = Instant::now();
        let _: String = conn.query_on(node, &redis::cmd("PING")).await?;
        times.push(sent.elapsed());
    }
    times.sort();
    Ok(times[PINGS / 2])
}
