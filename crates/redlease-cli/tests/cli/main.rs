//! Tests of the built `redlease` binary against private Redis servers.

mod acl;
mod audit;
mod authentication;
mod bad_url;
mod busy_message;
mod cluster;
mod demo;
mod doctor;
mod gc;
mod inspect;
mod leader;
mod nothing_matched;
mod run;
mod sentinel;
mod support;
mod tls;
mod unlock;
mod usage_without_a_server;
