//! Methods: every receiver, `self` in the key and in the client expression,
//! and the client forms that must coerce to `&Client`.
#![deny(warnings)]

use std::sync::Arc;

use redlease::{Client, distributed_lock};

#[derive(Debug)]
struct AppError;

impl From<redlease::Error> for AppError {
    fn from(_: redlease::Error) -> Self {
        AppError
    }
}

struct App {
    locks: Client,
}

impl App {
    fn client(&self) -> Client {
        self.locks.clone()
    }
}

struct Ledger {
    id: u32,
    client: Client,
    shared: Arc<Client>,
    entries: Vec<u64>,
    name: String,
}

impl Ledger {
    #[distributed_lock(key = "ledger:{self.id}:{entry}", client = self.client, wait = "1s")]
    async fn read(&self, entry: usize) -> Result<Option<u64>, AppError> {
        Ok(self.entries.get(entry).copied())
    }

    /// A `&mut self` borrowed by the client expression, then used by the body.
    #[distributed_lock(key = "ledger:{self.id}", client = self.shared)]
    async fn append(&mut self, amount: u64) -> Result<&mut Vec<u64>, AppError> {
        if amount == 0 {
            return Ok(&mut self.entries);
        }
        self.entries.push(amount);
        Ok(&mut self.entries)
    }

    /// `self` by value, borrowed by the client expression, then moved.
    #[distributed_lock(key = "ledger:{self.id}:close", client = &self.client, lease = "30s")]
    async fn close(self) -> Result<Vec<u64>, AppError> {
        Ok(self.entries)
    }

    #[distributed_lock(key = "ledger:{self.name}", client = app.client())]
    async fn name(&self, app: &App) -> Result<&str, AppError> {
        if self.name.is_empty() {
            return Ok("unnamed");
        }
        Ok(&self.name)
    }

    /// The default client, and an argument shadowing nothing of ours.
    #[distributed_lock(key = "ledger:{__redlease_guard}")]
    async fn hygiene(__redlease_guard: u32, __redlease_key: u32) -> Result<u32, AppError> {
        Ok(__redlease_guard + __redlease_key)
    }
}

fn is_send<T: Send>(_: T) {}

async fn use_all(mut ledger: Ledger, app: App) -> Result<(), AppError> {
    ledger.read(0).await?;
    ledger.append(1).await?.push(2);
    ledger.name(&app).await?;
    Ledger::hygiene(1, 2).await?;
    ledger.close().await?;
    Ok(())
}

fn main() {
    let _ = |ledger: Ledger, app: App| is_send(use_all(ledger, app));
}
