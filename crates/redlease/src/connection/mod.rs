//! The one place that talks to Redis.
//!
//! The rest of the crate sees a [`Connection`]: send a script call or a
//! command, subscribe and unsubscribe, and read release messages as
//! [`Push`]es. Only this module names redis-rs connection types: behind
//! the same methods sits one node (`single.rs`, a `ConnectionManager`), a
//! Redis Cluster (`cluster.rs`, redis-rs's cluster connection, which follows
//! MOVED and ASK by itself), or a master under Sentinel (`sentinel.rs`,
//! which follows the master the sentinels name), each over TLS as the URL
//! and `tls.rs` say.
//!
//! The files, each named for what it holds:
//!
//! * `backend.rs`: [`Connection`], and which backend each call goes to.
//! * The backends: `single.rs`; `cluster.rs` (feature `cluster`);
//!   `sentinel.rs`, the connection that follows the master, with
//!   `sentinel/address.rs`, the sentinel URL and what it names, and
//!   `sentinel/monitor.rs`, the sentinels asked which node is master.
//! * `pushes.rs`: what arrives on a connection unasked ([`Push`]es).
//! * What the backends and the rest of the crate share: `timeouts.rs`
//!   (how long to wait), `publish.rs` (which pub/sub), `natives.rs` (the
//!   server's own owner-checked commands), `nodes.rs` (slots and nodes).
//! * `url.rs`: what a URL names ([`url`], public); `password.rs`: the
//!   password in a URL, hidden or read; `tls.rs`: TLS options and the
//!   certificates a server rejected.
//! * `layers.rs` (tests only): that this map names every file, and that
//!   the files import one way.
//!
//! This file only names them and passes on what the crate uses. A type
//! kept here would be one the files reach with `super::`, while this file
//! imports them all: a circle through it.

// Without a cluster backend, what only a cluster uses (key routing, the
// sharded publish) has no reader.
#![cfg_attr(not(feature = "cluster"), allow(unused_variables, dead_code))]

mod backend;
#[cfg(feature = "cluster")]
mod cluster;
mod natives;
mod nodes;
mod password;
mod publish;
mod pushes;
mod sentinel;
mod single;
mod timeouts;
mod tls;
pub mod url;

pub(crate) use backend::Connection;
pub(crate) use natives::Natives;
pub(crate) use nodes::{Node, SlotId, SlotNodes};
pub use publish::PubSubMode;
pub(crate) use publish::Publish;
pub(crate) use pushes::{Push, Pushes};
pub(crate) use sentinel::{Said, SentinelAuth};
pub(crate) use timeouts::Timeouts;
pub(crate) use tls::TlsOptions;

#[cfg(test)]
mod layers;
