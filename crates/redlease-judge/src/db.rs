//! The database side: one row per lock name in a table of the phase's own,
//! with a fenced balance (the pattern of redlease's `fenced` example: claim
//! the row with the token, then write only if no newer token claimed it)
//! and an unfenced counter beside it, the baseline the docs warn about.

use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;

/// The rows of one phase.
#[derive(Clone, Debug)]
pub(crate) struct Table {
    pool: PgPool,
    table: String,
}

/// What the fenced read-modify-write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fenced {
    /// Claimed with the token, read `read`, wrote `read + 1`.
    Written { read: i64 },
    /// A newer token had claimed the row (at the claim or before the
    /// commit): nothing written.
    Refused,
}

impl Table {
    /// Connects to `url` with one connection (a client does one thing at a
    /// time).
    pub(crate) async fn connect(url: &str, table: &str) -> sqlx::Result<Table> {
        let pool = PgPoolOptions::new().max_connections(1).connect(url).await?;
        Ok(Table {
            pool,
            table: table.to_owned(),
        })
    }

    /// Creates the table afresh with a row for each of `names`. `table` is
    /// trusted input: it is formatted into the SQL.
    pub(crate) async fn create(&self, names: &[String]) -> sqlx::Result<()> {
        let t = &self.table;
        sqlx::query(&format!("DROP TABLE IF EXISTS {t}"))
            .execute(&self.pool)
            .await?;
        sqlx::query(&format!(
            "CREATE TABLE {t} (id text PRIMARY KEY, balance bigint NOT NULL DEFAULT 0,
             fence bigint NOT NULL DEFAULT 0, plain bigint NOT NULL DEFAULT 0)"
        ))
        .execute(&self.pool)
        .await?;
        for name in names {
            sqlx::query(&format!("INSERT INTO {t} (id) VALUES ($1)"))
                .bind(name)
                .execute(&self.pool)
                .await?;
        }
        Ok(())
    }

    /// Drops the table.
    pub(crate) async fn drop_table(&self) -> sqlx::Result<()> {
        sqlx::query(&format!("DROP TABLE IF EXISTS {}", self.table))
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The fenced read-modify-write of `name` with `token`, with `pause`
    /// between the claim and the commit (the work done under the lock).
    pub(crate) async fn fenced_increment(
        &self,
        name: &str,
        token: u64,
        pause: std::time::Duration,
    ) -> sqlx::Result<Fenced> {
        let t = &self.table;
        let token = i64::try_from(token).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
        let read: Option<i64> = sqlx::query_scalar(&format!(
            "UPDATE {t} SET fence = $2 WHERE id = $1 AND fence <= $2 RETURNING balance"
        ))
        .bind(name)
        .bind(token)
        .fetch_optional(&self.pool)
        .await?;
        let Some(read) = read else {
            return Ok(Fenced::Refused);
        };
        tokio::time::sleep(pause).await;
        let done = sqlx::query(&format!(
            "UPDATE {t} SET balance = $3 WHERE id = $1 AND fence = $2"
        ))
        .bind(name)
        .bind(token)
        .bind(read + 1)
        .execute(&self.pool)
        .await?;
        Ok(match done.rows_affected() {
            1 => Fenced::Written { read },
            _ => Fenced::Refused,
        })
    }

    /// The unfenced read-modify-write of `name`: read, `pause`, write
    /// read + 1. Returns what it read.
    pub(crate) async fn unfenced_increment(
        &self,
        name: &str,
        pause: std::time::Duration,
    ) -> sqlx::Result<i64> {
        let t = &self.table;
        let read: i64 = sqlx::query_scalar(&format!("SELECT plain FROM {t} WHERE id = $1"))
            .bind(name)
            .fetch_one(&self.pool)
            .await?;
        tokio::time::sleep(pause).await;
        sqlx::query(&format!("UPDATE {t} SET plain = $2 WHERE id = $1"))
            .bind(name)
            .bind(read + 1)
            .execute(&self.pool)
            .await?;
        Ok(read)
    }

    /// Every row: name, fenced balance, unfenced counter.
    pub(crate) async fn rows(&self) -> sqlx::Result<Vec<(String, i64, i64)>> {
        sqlx::query_as(&format!(
            "SELECT id, balance, plain FROM {} ORDER BY id",
            self.table
        ))
        .fetch_all(&self.pool)
        .await
    }
}
