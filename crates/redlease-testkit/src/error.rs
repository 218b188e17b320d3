//! Why a private server could not be started.

use std::fmt;

/// Why [`RedisServer::try_start_with`](crate::RedisServer::try_start_with)
/// could not start a server.
#[derive(Debug)]
#[non_exhaustive]
pub enum StartError {
    /// There is no `redis-server` on PATH: a program should say how to
    /// install one.
    NotInstalled,
    /// Anything else (no free port, the scratch directory, the server
    /// exiting at once or not answering); the message says what, with the
    /// server's log when there is one.
    Failed(String),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::NotInstalled => f.write_str("redis-server is not on PATH"),
            StartError::Failed(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for StartError {}
