//! Where a measurement runs, one private server or a private cluster, and
//! what its masters report about themselves, summed over the masters.

use redlease_testkit::{RedisCluster, RedisServer, key_slot};

use crate::probe::{self, Calls};

/// The server or cluster a measurement talks to.
#[derive(Clone, Copy)]
pub(crate) enum Target<'a> {
    Single(&'a RedisServer),
    Cluster(&'a RedisCluster),
}

impl Target<'_> {
    /// How the tables name it.
    pub(crate) fn label(&self) -> String {
        match self {
            Target::Single(_) => "single node".to_owned(),
            Target::Cluster(c) => format!("{} masters", c.masters().count()),
        }
    }

    /// The URL redlease connects to.
    pub(crate) fn url(&self) -> String {
        match self {
            Target::Single(s) => s.url(),
            Target::Cluster(c) => c.url(),
        }
    }

    /// `redis://` of every master, for the statistics connections.
    pub(crate) fn master_urls(&self) -> Vec<String> {
        match self {
            Target::Single(s) => vec![s.url()],
            Target::Cluster(c) => c.seed_urls(),
        }
    }

    /// A plain connection to each master.
    pub(crate) fn masters(&self) -> Masters {
        Masters::connect(&self.master_urls())
    }
}

/// Plain connections to every master, for `INFO` and key checks: a
/// cluster's masters report each for itself, so every figure is a sum.
pub(crate) struct Masters {
    conns: Vec<redis::Connection>,
    /// Which connection serves each hash slot (all 0 on a single node),
    /// from `CLUSTER SLOTS` at connect time.
    slot_owner: Vec<usize>,
}

impl Masters {
    /// Connects to each of `urls`; on more than one, reads which serves
    /// which slot.
    pub(crate) fn connect(urls: &[String]) -> Masters {
        let mut conns: Vec<redis::Connection> = urls
            .iter()
            .map(|url| {
                redis::Client::open(url.as_str())
                    .and_then(|c| c.get_connection())
                    .expect("connect to a master")
            })
            .collect();
        let mut slot_owner = vec![0; usize::from(redlease_testkit::SLOTS)];
        if conns.len() > 1 {
            let ports: Vec<u16> = urls
                .iter()
                .map(|u| {
                    u.rsplit(':')
                        .next()
                        .and_then(|p| p.parse().ok())
                        .expect("port")
                })
                .collect();
            // Each range: start, end, then its master as [host, port, id,
            // ...], then its replicas.
            let ranges: Vec<Vec<redis::Value>> = redis::cmd("CLUSTER")
                .arg("SLOTS")
                .query(&mut conns[0])
                .expect("CLUSTER SLOTS");
            let slots: Vec<(u16, u16, u16)> = ranges
                .into_iter()
                .map(|range| {
                    let int = |v: &redis::Value| -> u16 {
                        redis::from_redis_value_ref(v).expect("a number")
                    };
                    let master: Vec<redis::Value> =
                        redis::from_redis_value_ref(&range[2]).expect("a master");
                    (int(&range[0]), int(&range[1]), int(&master[1]))
                })
                .collect();
            for (start, end, port) in slots {
                let owner = ports
                    .iter()
                    .position(|&p| p == port)
                    .expect("a known master");
                for slot in start..=end {
                    slot_owner[usize::from(slot)] = owner;
                }
            }
        }
        Masters { conns, slot_owner }
    }

    /// The masters' user plus system CPU seconds so far, summed.
    pub(crate) fn server_cpu(&mut self) -> f64 {
        self.conns.iter_mut().map(probe::server_cpu).sum()
    }

    /// `INFO commandstats` calls per command, summed over the masters.
    pub(crate) fn command_calls(&mut self) -> Calls {
        let mut sum = Calls::new();
        for conn in &mut self.conns {
            for (name, n) in probe::command_calls(conn) {
                *sum.entry(name).or_default() += n;
            }
        }
        sum
    }

    /// An `INFO` field summed over the masters.
    pub(crate) fn info_field(&mut self, section: &str, field: &str) -> f64 {
        self.conns
            .iter_mut()
            .map(|c| probe::info_field(c, section, field))
            .sum()
    }

    /// How many of `keys` each master serves.
    pub(crate) fn per_master<'k>(&self, keys: impl Iterator<Item = &'k str>) -> Vec<usize> {
        let mut counts = vec![0; self.conns.len()];
        for key in keys {
            counts[self.slot_owner[usize::from(key_slot(key))]] += 1;
        }
        counts
    }

    /// Runs `build(pipe, i)`, which adds `per_key` commands on `keys[i]`,
    /// on the master serving each key, pipelined, and returns the integer
    /// replies in `keys`' order.
    pub(crate) fn per_key(
        &mut self,
        keys: &[&str],
        per_key: usize,
        build: impl Fn(&mut redis::Pipeline, usize),
    ) -> Vec<i64> {
        let owner: Vec<usize> = keys
            .iter()
            .map(|k| self.slot_owner[usize::from(key_slot(k))])
            .collect();
        let mut replies = vec![0; keys.len() * per_key];
        for (m, conn) in self.conns.iter_mut().enumerate() {
            let mine: Vec<usize> = (0..keys.len()).filter(|&i| owner[i] == m).collect();
            for chunk in mine.chunks(1000) {
                let mut pipe = redis::pipe();
                for &i in chunk {
                    build(&mut pipe, i);
                }
                let got: Vec<i64> = pipe.query(conn).expect("check keys");
                for (j, &i) in chunk.iter().enumerate() {
                    replies[i * per_key..(i + 1) * per_key]
                        .copy_from_slice(&got[j * per_key..(j + 1) * per_key]);
                }
            }
        }
        replies
    }
}
