//! Any command line, parsed as `main` parses it (issue #29): made of the
//! tool's own words, values near their limits, and any text, it is a
//! command or a usage error, never a panic; and what parses passes the
//! checks `main` makes before connecting (the URL, TLS, the sentinels'
//! password), again without a panic.

use clap::FromArgMatches;
use proptest::prelude::*;

use super::{Cli, Command, command, connect, with_tls};

/// Subcommands, options and flags of every subcommand, and clap's own.
const WORDS: [&str; 36] = [
    "run",
    "inspect",
    "unlock",
    "audit",
    "acl",
    "demo",
    "help",
    "--url",
    "--wait",
    "-w",
    "--lease",
    "--watchdog-timeout",
    "--grace",
    "--permits",
    "--semaphore",
    "--read",
    "--write",
    "--layout",
    "-E",
    "--lost-exit-code",
    "--on-lost",
    "--limit",
    "--cursor",
    "-p",
    "--force",
    "-y",
    "--token",
    "--prefix",
    "--stock",
    "--workers",
    "--sentinel-password",
    "--tls-ca",
    "--",
    "--help",
    "-h",
    "--version",
];

/// Values near the limits of what the options read.
const VALUES: [&str; 18] = [
    "0",
    "1s",
    "1m30s",
    "18446744073709551615ms",
    "18446744073709551616ms",
    "5124095576030431h",
    "-1",
    "4294967296",
    "redis://127.0.0.1:1",
    "redis://u:p@127.0.0.1:99999/3",
    "redis-cluster://a:1,,b:2",
    "redis-sentinel://127.0.0.1:1#m",
    "rediss://127.0.0.1:1/#insecure",
    "string",
    "redisson",
    "true",
    "",
    "k:{x}",
];

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(&WORDS[..]).prop_map(str::to_owned),
        2 => prop::sample::select(&VALUES[..]).prop_map(str::to_owned),
        1 => any::<String>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_argv_parses_or_is_a_usage_error(words in prop::collection::vec(word(), 0..8)) {
        let argv = std::iter::once("redlease".to_owned()).chain(words);
        match command().try_get_matches_from(argv) {
            Ok(matches) => {
                let Ok(cli) = Cli::from_arg_matches(&matches) else { return Ok(()) };
                if !matches!(cli.command, Command::Audit(_) | Command::Acl(_)) {
                    // Prints a usage error to stderr when it refuses.
                    let _ = with_tls(
                        cli.command.name(),
                        cli.url,
                        connect::Tls::default(),
                        cli.sentinel_password,
                    );
                }
            }
            Err(e) => {
                prop_assert!(!e.render().to_string().is_empty());
                prop_assert!(matches!(e.exit_code(), 0 | 2), "{}", e.exit_code());
            }
        }
    }
}
