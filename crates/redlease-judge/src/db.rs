//! The database side: one row per lock name in a table of the phase's own,
//! with a fenced balance (the pattern of redlease's `fenced` example: claim
//! the row with the token and the holder, then write only if nobody has
//! claimed it since) and an unfenced counter beside it, the baseline the
//! docs warn about.
//!
//! The claim names the holder as well as the token because a token can be
//! issued twice: a failover loses the counter's last increments, or, for a
//! few seconds after a Sentinel switch, a client still on the old master
//! takes tokens there. A claim by token alone (`fence <= token`, the
//! pattern before #29, kept as [`Guard::Token`] to show it) lets two
//! holders with the same token both claim and both write: an increment is
//! lost. With the holder in the claim, the second is refused.

use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;

/// The rows of one phase.
#[derive(Clone, Debug)]
pub(crate) struct Table {
    pool: PgPool,
    table: String,
    guard: Guard,
}

/// How a fenced write claims its row.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Guard {
    /// By token and holder: a token seen before is refused unless it is
    /// the same holder's.
    Holder,
    /// By token alone (`fence <= token`): two holders given the same token
    /// both get the row.
    Token,
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
    pub(crate) async fn connect(url: &str, table: &str, guard: Guard) -> sqlx::Result<Table> {
        let pool = PgPoolOptions::new().max_connections(1).connect(url).await?;
        Ok(Table {
            pool,
            table: table.to_owned(),
            guard,
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
             fence bigint NOT NULL DEFAULT 0, holder text NOT NULL DEFAULT '',
             plain bigint NOT NULL DEFAULT 0)"
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

    /// The fenced read-modify-write of `name` with `token` by `holder` (a
    /// name unique to this hold), with `pause` between the claim and the
    /// commit (the work done under the lock).
    pub(crate) async fn fenced_increment(
        &self,
        name: &str,
        token: u64,
        holder: &str,
        pause: std::time::Duration,
    ) -> sqlx::Result<Fenced> {
        let t = &self.table;
        let token = i64::try_from(token).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
        let claim = match self.guard {
            Guard::Holder => format!(
                "UPDATE {t} SET fence = $2, holder = $3 WHERE id = $1
                 AND (fence < $2 OR (fence = $2 AND holder = $3)) RETURNING balance"
            ),
            Guard::Token => format!(
                "UPDATE {t} SET fence = $2, holder = $3 WHERE id = $1 AND fence <= $2
                 RETURNING balance"
            ),
        };
        let read: Option<i64> = sqlx::query_scalar(&claim)
            .bind(name)
            .bind(token)
            .bind(holder)
            .fetch_optional(&self.pool)
            .await?;
        let Some(read) = read else {
            return Ok(Fenced::Refused);
        };
        tokio::time::sleep(pause).await;
        let commit = match self.guard {
            Guard::Holder => {
                format!("UPDATE {t} SET balance = $3 WHERE id = $1 AND fence = $2 AND holder = $4")
            }
            Guard::Token => format!("UPDATE {t} SET balance = $3 WHERE id = $1 AND fence = $2"),
        };
        let done = sqlx::query(&commit)
            .bind(name)
            .bind(token)
            .bind(read + 1)
            .bind(holder)
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

    /// A reader's work on `name`: the unfenced counter read, `pause`, read
    /// again. Nobody writes it under a read lock, so the two are equal
    /// unless a writer was inside meanwhile.
    pub(crate) async fn read_twice(
        &self,
        name: &str,
        pause: std::time::Duration,
    ) -> sqlx::Result<(i64, i64)> {
        let query = format!("SELECT plain FROM {} WHERE id = $1", self.table);
        let first: i64 = sqlx::query_scalar(&query)
            .bind(name)
            .fetch_one(&self.pool)
            .await?;
        tokio::time::sleep(pause).await;
        let second: i64 = sqlx::query_scalar(&query)
            .bind(name)
            .fetch_one(&self.pool)
            .await?;
        Ok((first, second))
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
