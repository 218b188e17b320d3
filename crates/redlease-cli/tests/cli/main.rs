//! Tests of the built `redlease` binary against private Redis servers.

mod acl;
mod audit;
mod cluster;
mod demo;
mod inspect;
mod run;
mod sentinel;
mod support;
mod tls;
mod unlock;
