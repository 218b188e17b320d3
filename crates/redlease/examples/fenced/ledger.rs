//! The database half of a fenced lock: a row that remembers the highest
//! fencing token that touched it, and which holder it was, so a holder whose
//! lock has passed to someone else cannot write any more.
//!
//! Two statements, for a read-modify-write under a lock, where `$holder` is
//! the guard's [`owner`](redlease::LockGuard::owner), unique to the hold:
//!
//! 1. **claim**: `UPDATE .. SET fence = $token, holder = $holder WHERE id = $1
//!    AND (fence < $token OR (fence = $token AND holder = $holder)) RETURNING
//!    balance`. Only a token newer than every earlier one gets the row (and
//!    reads it in the same statement), or the same holder again, for a
//!    second read-modify-write under the same lock; from then on, every
//!    older holder is locked out.
//! 2. **commit**: `UPDATE .. SET balance = $new WHERE id = $1 AND fence =
//!    $token AND holder = $holder`. Succeeds only if nobody has claimed the
//!    row since. A newer holder claimed after any write of ours that
//!    succeeded, so it read that write: no update is lost even when two
//!    holders overlap.
//!
//! Why the holder, and not the token alone (`fence <= $token`, as before
//! #29): a token can be issued twice. A failover loses the counter's last
//! increments, and for a few seconds after a Sentinel switch a client still
//! on the old master takes tokens there; two holders with the same token
//! would then both claim and both write, and one write would be lost.
//! redlease-judge found it (docs/JUDGE.md); with the holder in the claim the
//! second is refused.
//!
//! A write that needs no read (set a status, append an event) is one
//! statement: `UPDATE .. SET status = $2, fence = $token, holder = $holder
//! WHERE id = $1 AND (fence < $token OR (fence = $token AND holder =
//! $holder))`.
//!
//! This file is part of the `fenced` example and is also compiled into the
//! integration tests, which run it through stopped processes, killed
//! processes and a Redis server that restarts empty.

use sqlx::PgPool;

/// Accounts in one table of a PostgreSQL database.
#[derive(Clone, Debug)]
pub(crate) struct Ledger {
    pool: PgPool,
    table: String,
}

/// Tokens are below 2^53, so they fit PostgreSQL's `bigint`; the check
/// keeps a corrupt token from wrapping around to a negative one.
fn as_bigint(token: u64) -> sqlx::Result<i64> {
    i64::try_from(token).map_err(|e| sqlx::Error::Encode(Box::new(e)))
}

impl Ledger {
    /// Creates the table `table` if it does not exist (and gives a table
    /// made before #29 its `holder` column). `table` is trusted input (it is
    /// formatted into the SQL).
    pub(crate) async fn create(pool: PgPool, table: &str) -> sqlx::Result<Ledger> {
        sqlx::query(&format!(
            "CREATE TABLE IF NOT EXISTS {table} (
                id text PRIMARY KEY,
                balance bigint NOT NULL,
                fence bigint NOT NULL DEFAULT 0,
                holder text NOT NULL DEFAULT ''
            )"
        ))
        .execute(&pool)
        .await?;
        sqlx::query(&format!(
            "ALTER TABLE {table} ADD COLUMN IF NOT EXISTS holder text NOT NULL DEFAULT ''"
        ))
        .execute(&pool)
        .await?;
        Ok(Ledger {
            pool,
            table: table.to_owned(),
        })
    }

    /// Creates or resets the account `id`.
    pub(crate) async fn open(&self, id: &str, balance: i64) -> sqlx::Result<()> {
        sqlx::query(&format!(
            "INSERT INTO {} (id, balance) VALUES ($1, $2)
             ON CONFLICT (id) DO UPDATE SET balance = $2, fence = 0, holder = ''",
            self.table
        ))
        .bind(id)
        .bind(balance)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Claims the account for `token` and `holder` (the guard's owner) and
    /// returns its balance, or `None` when a newer token, or another holder
    /// with the same token, has claimed it: this holder's lock has passed
    /// on, and it must not write.
    pub(crate) async fn claim(
        &self,
        id: &str,
        token: u64,
        holder: &str,
    ) -> sqlx::Result<Option<i64>> {
        sqlx::query_scalar(&format!(
            "UPDATE {} SET fence = $2, holder = $3 WHERE id = $1
             AND (fence < $2 OR (fence = $2 AND holder = $3)) RETURNING balance",
            self.table
        ))
        .bind(id)
        .bind(as_bigint(token)?)
        .bind(holder)
        .fetch_optional(&self.pool)
        .await
    }

    /// Writes `balance` if the account is still claimed by `token` and
    /// `holder`; returns whether it was written.
    pub(crate) async fn commit(
        &self,
        id: &str,
        token: u64,
        holder: &str,
        balance: i64,
    ) -> sqlx::Result<bool> {
        let done = sqlx::query(&format!(
            "UPDATE {} SET balance = $3 WHERE id = $1 AND fence = $2 AND holder = $4",
            self.table
        ))
        .bind(id)
        .bind(as_bigint(token)?)
        .bind(balance)
        .bind(holder)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// The account's balance and the highest token that claimed it.
    pub(crate) async fn read(&self, id: &str) -> sqlx::Result<(i64, i64)> {
        sqlx::query_as(&format!(
            "SELECT balance, fence FROM {} WHERE id = $1",
            self.table
        ))
        .bind(id)
        .fetch_one(&self.pool)
        .await
    }
}
