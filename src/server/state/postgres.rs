//! The state in PostgreSQL, shared by any number of replicas: a pool of connections
//! (deadpool-postgres over tokio-postgres), the schema versioned in `cardex_schema` and
//! migrated at start by one replica at a time under an advisory lock, and every time
//! taken from the database's clock, so that replicas on machines whose clocks differ
//! still agree.
//!
//! The rate limit and the charge are one statement, `SELECT cardex_admit(...)`: under a
//! lock on the team's row it keeps the team's sliding-window log of accepted requests (as
//! [`crate::server::limit`] does in memory) and, when the request is accepted, adds its
//! credits, in the same transaction. Webhook deliveries are leased: a replica takes the
//! first pending delivery of a subscription (`FOR UPDATE SKIP LOCKED`) for a while, renews
//! the lease at each attempt, and another replica takes it over once the lease runs out.

use std::str::FromStr;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::NoTls;

use super::{Claimed, MarksToSave, SavedMarks, StateError};
use crate::server::accounts::{
    hash_key, valid_team_id, Accounts, CreditCosts, Endpoint, Plan, StoredKey, Team,
};
use crate::Event;

/// The newest schema version this server knows.
pub const PG_SCHEMA_VERSION: i32 = 1;

/// Changes the accounts version that servers watch (in the transaction that changes the
/// accounts).
const BUMP_ACCOUNTS_VERSION: &str = "INSERT INTO meta (key, value) VALUES ('accounts_version', '1')
     ON CONFLICT (key) DO UPDATE SET value = (meta.value::BIGINT + 1)::TEXT";

/// The advisory lock migrations run under (any constant; "cardex" in ASCII).
const MIGRATION_LOCK: i64 = 0x6361_7264_6578;

/// Whether `cardex_schema` is in the schema tables are made in (the first of the search
/// path that exists), as `CREATE TABLE` would make it: a `cardex_schema` further along
/// the path is another state's.
const SCHEMA_TABLE_EXISTS: &str = "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables \
     WHERE schemaname = current_schema() AND tablename = 'cardex_schema')";

/// The migrations, in order: `MIGRATIONS[i]` takes the schema from version `i` to `i + 1`.
const MIGRATIONS: [&str; PG_SCHEMA_VERSION as usize] = [
    // 1: accounts, credits, the shared rate limit, usage, the outbox and the marks.
    r#"
    CREATE TABLE teams (
        id TEXT PRIMARY KEY,
        total_credits BIGINT NOT NULL,
        overage_credit_rate DOUBLE PRECISION NOT NULL
    );
    CREATE TABLE api_keys (
        sha256 TEXT PRIMARY KEY,
        team TEXT NOT NULL REFERENCES teams(id),
        created BIGINT NOT NULL
    );
    CREATE TABLE credit_costs (
        endpoint TEXT PRIMARY KEY,
        credits BIGINT NOT NULL
    );
    CREATE TABLE credits_used (
        team TEXT PRIMARY KEY,
        used BIGINT NOT NULL
    );
    CREATE TABLE rate_windows (
        team TEXT PRIMARY KEY,
        times DOUBLE PRECISION[] NOT NULL
    );
    CREATE TABLE spool_applied (
        id TEXT PRIMARY KEY,
        applied DOUBLE PRECISION NOT NULL
    );
    CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    CREATE TABLE usage_board (
        team TEXT PRIMARY KEY,
        used BIGINT NOT NULL
    );
    CREATE TABLE events (
        id TEXT PRIMARY KEY,
        body TEXT NOT NULL,
        created DOUBLE PRECISION NOT NULL
    );
    CREATE TABLE deliveries (
        seq BIGSERIAL PRIMARY KEY,
        event_id TEXT NOT NULL REFERENCES events(id),
        subscription TEXT NOT NULL,
        done BOOLEAN NOT NULL DEFAULT FALSE,
        attempts INTEGER NOT NULL DEFAULT 0,
        first_attempt DOUBLE PRECISION,
        lease_holder TEXT,
        lease_until DOUBLE PRECISION,
        UNIQUE (subscription, event_id)
    );
    CREATE INDEX deliveries_pending ON deliveries (subscription, seq) WHERE NOT done;
    CREATE FUNCTION cardex_now() RETURNS DOUBLE PRECISION LANGUAGE sql VOLATILE AS
        $$ SELECT extract(epoch FROM clock_timestamp())::DOUBLE PRECISION $$;
    -- Admits a request of p_team when fewer than p_limit of its requests were accepted in
    -- the last p_window seconds, and then charges it p_credits; returns 0 when admitted,
    -- else the seconds until one more would be.
    CREATE FUNCTION cardex_admit(p_team TEXT, p_credits BIGINT, p_limit INTEGER,
                                 p_window DOUBLE PRECISION)
    RETURNS DOUBLE PRECISION LANGUAGE plpgsql AS $$
    DECLARE
        t DOUBLE PRECISION[];
        n INTEGER;
        now_s DOUBLE PRECISION;
    BEGIN
        SELECT times INTO t FROM rate_windows WHERE team = p_team FOR UPDATE;
        IF NOT FOUND THEN
            INSERT INTO rate_windows (team, times) VALUES (p_team, '{}')
                ON CONFLICT (team) DO NOTHING;
            SELECT times INTO t FROM rate_windows WHERE team = p_team FOR UPDATE;
        END IF;
        -- Read under the lock: the log stays in time order whoever writes it.
        now_s := cardex_now();
        n := coalesce(array_length(t, 1), 0);
        IF n >= p_limit THEN
            IF t[n - p_limit + 1] > now_s - p_window THEN
                RETURN t[n - p_limit + 1] + p_window - now_s;
            END IF;
            t := t[n - p_limit + 2 : n];
        END IF;
        UPDATE rate_windows SET times = t || now_s WHERE team = p_team;
        IF p_credits > 0 THEN
            INSERT INTO credits_used (team, used) VALUES (p_team, p_credits)
                ON CONFLICT (team) DO UPDATE SET used = credits_used.used + excluded.used;
        END IF;
        RETURN 0;
    END $$;
    "#,
];

/// The statements that remove what is past the retention
/// ([`super::EVENT_RETENTION_SECS`] by the database's clock): the finished deliveries of
/// old events, the old events left without deliveries, and old replayed spool ids.
fn prune_outbox() -> String {
    format!(
        "DELETE FROM deliveries WHERE done AND event_id IN
             (SELECT id FROM events WHERE created < cardex_now() - {r});
         DELETE FROM events WHERE created < cardex_now() - {r}
             AND NOT EXISTS (SELECT 1 FROM deliveries WHERE event_id = events.id);
         DELETE FROM spool_applied WHERE applied < cardex_now() - {r};",
        r = super::EVENT_RETENTION_SECS
    )
}

/// The value of `key` in `meta` (made `default` when missing), locked until `tx` ends:
/// replicas doing the same take turns.
async fn lock_meta(
    tx: &tokio_postgres::Transaction<'_>,
    key: &str,
    default: &str,
) -> Result<String, tokio_postgres::Error> {
    tx.execute(
        "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
        &[&key, &default],
    )
    .await?;
    Ok(tx
        .query_one("SELECT value FROM meta WHERE key = $1 FOR UPDATE", &[&key])
        .await?
        .get(0))
}

/// The state in a PostgreSQL database.
pub struct PgState {
    /// The URL without its password, for messages.
    shown: String,
    pool: Pool,
}

impl std::fmt::Debug for PgState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgState")
            .field("state", &self.shown)
            .finish()
    }
}

type Client = deadpool_postgres::Object;

impl PgState {
    /// Connects to the database at `url` (a `postgres://` URL or a key-value connection
    /// string) and migrates its schema to [`PG_SCHEMA_VERSION`], under an advisory lock so
    /// that replicas starting together migrate once.
    ///
    /// # Errors
    ///
    /// A URL the driver does not take, a database that cannot be reached, or a schema a
    /// newer cardex wrote.
    pub async fn open(url: &str, shown: &str) -> Result<PgState, StateError> {
        let state = PgState::connect(url, shown)?;
        state.migrate().await?;
        Ok(state)
    }

    /// [`PgState::open`] of a database that holds cardex's schema already.
    ///
    /// # Errors
    ///
    /// [`StateError::NoState`] when the database holds no `cardex_schema` table; then as
    /// [`PgState::open`].
    pub async fn open_existing(url: &str, shown: &str) -> Result<PgState, StateError> {
        let state = PgState::connect(url, shown)?;
        let db = state.client("connect").await?;
        let exists: bool = db
            .query_one(SCHEMA_TABLE_EXISTS, &[])
            .await
            .map_err(|e| state.fail("read the schema version")(e.into()))?
            .get(0);
        drop(db);
        if !exists {
            return Err(StateError::NoState {
                state: shown.to_string(),
            });
        }
        state.migrate().await?;
        Ok(state)
    }

    /// A pool of connections to `url`, none made yet.
    fn connect(url: &str, shown: &str) -> Result<PgState, StateError> {
        let fail = |doing: &'static str| {
            move |e: Box<dyn std::error::Error + Send + Sync>| StateError::Database {
                state: shown.to_string(),
                doing,
                source: e,
            }
        };
        let mut config =
            tokio_postgres::Config::from_str(url).map_err(|e| fail("read the URL")(e.into()))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(5));
        }
        if config.get_application_name().is_none() {
            config.application_name("cardex");
        }
        // A peer that is gone (its host down, a network that drops everything) is found
        // by TCP in about 20 s, not the system's default two hours (keepalive, for a
        // connection waiting for an answer) or 15 minutes (retransmission, for one whose
        // request is unacknowledged); the pool then drops the closed connection. The URL's
        // own settings win.
        if config.get_keepalives_idle() == Duration::from_secs(2 * 60 * 60) {
            config.keepalives_idle(Duration::from_secs(10));
        }
        if config.get_keepalives_interval().is_none() {
            config.keepalives_interval(Duration::from_secs(2));
        }
        if config.get_keepalives_retries().is_none() {
            config.keepalives_retries(5);
        }
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(Duration::from_secs(20));
        }
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(16)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(Duration::from_secs(5)))
            .create_timeout(Some(Duration::from_secs(5)))
            .recycle_timeout(Some(Duration::from_secs(5)))
            .build()
            .map_err(|e| fail("make a connection pool")(e.into()))?;
        Ok(PgState {
            shown: shown.to_string(),
            pool,
        })
    }

    /// The state as configured, without its password.
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    fn fail(
        &self,
        doing: &'static str,
    ) -> impl Fn(Box<dyn std::error::Error + Send + Sync>) -> StateError + '_ {
        move |source| StateError::Database {
            state: self.shown.clone(),
            doing,
            source,
        }
    }

    async fn client(&self, doing: &'static str) -> Result<Client, StateError> {
        self.pool
            .get()
            .await
            .map_err(|e| self.fail(doing)(e.into()))
    }

    async fn migrate(&self) -> Result<(), StateError> {
        let mut db = self.client("connect").await?;
        let fail = |e: tokio_postgres::Error| self.fail("migrate the schema")(e.into());
        let tx = db.transaction().await.map_err(fail)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .await
            .map_err(fail)?;
        // A database at the current version takes no DDL, so a role without CREATE on the
        // schema can serve it.
        let exists: bool = tx
            .query_one(SCHEMA_TABLE_EXISTS, &[])
            .await
            .map_err(fail)?
            .get(0);
        if !exists {
            tx.batch_execute("CREATE TABLE cardex_schema (version INTEGER NOT NULL)")
                .await
                .map_err(fail)?;
        }
        let rows = tx
            .query("SELECT version FROM cardex_schema", &[])
            .await
            .map_err(fail)?;
        let version = self.stored_version(&rows)?.unwrap_or(0);
        if version > PG_SCHEMA_VERSION {
            return Err(StateError::NewerSchema {
                state: self.shown.clone(),
                found: i64::from(version),
                known: i64::from(PG_SCHEMA_VERSION),
            });
        }
        for migration in MIGRATIONS.iter().skip(version as usize) {
            tx.batch_execute(migration).await.map_err(fail)?;
        }
        if version < PG_SCHEMA_VERSION {
            tx.execute("DELETE FROM cardex_schema", &[])
                .await
                .map_err(fail)?;
            tx.execute(
                "INSERT INTO cardex_schema (version) VALUES ($1)",
                &[&PG_SCHEMA_VERSION],
            )
            .await
            .map_err(fail)?;
        }
        tx.commit().await.map_err(fail)
    }

    /// The schema version of the database.
    ///
    /// # Errors
    ///
    /// The database's.
    pub async fn schema_version(&self) -> Result<i64, StateError> {
        let db = self.client("read the schema version").await?;
        let rows = db
            .query("SELECT version FROM cardex_schema", &[])
            .await
            .map_err(|e| self.fail("read the schema version")(e.into()))?;
        let version = self
            .stored_version(&rows)?
            .ok_or_else(|| StateError::NoState {
                state: self.shown.clone(),
            })?;
        Ok(i64::from(version))
    }

    /// The version in the rows of `cardex_schema`: none for no row; an error for a table
    /// cardex did not write (several rows, a version below 0, a column of another type).
    fn stored_version(&self, rows: &[tokio_postgres::Row]) -> Result<Option<i32>, StateError> {
        let foreign = |why: String| StateError::ForeignSchemaTable {
            state: self.shown.clone(),
            why,
        };
        let row = match rows {
            [] => return Ok(None),
            [row] => row,
            _ => return Err(foreign(format!("holds {} rows, not one", rows.len()))),
        };
        let version: Option<i32> = row.try_get(0).map_err(|_| {
            foreign(format!(
                "has a `version` of type {}, not integer",
                row.columns()[0].type_()
            ))
        })?;
        let version = version.ok_or_else(|| foreign("holds a null version".to_string()))?;
        if version < 0 {
            return Err(foreign(format!("holds version {version}")));
        }
        Ok(Some(version))
    }

    /// Whether the database answers.
    pub(crate) async fn ping(&self) -> Result<(), StateError> {
        let db = self.client("reach the database").await?;
        db.simple_query("SELECT 1")
            .await
            .map(|_| ())
            .map_err(|e| self.fail("reach the database")(e.into()))
    }

    /// The accounts: every team with its plan and key hashes, and the credit costs.
    ///
    /// # Errors
    ///
    /// The database's.
    pub async fn accounts(&self) -> Result<Accounts, StateError> {
        let db = self.client("read the accounts").await?;
        let fail = |e: tokio_postgres::Error| self.fail("read the accounts")(e.into());
        let mut teams: Vec<Team> = db
            .query(
                "SELECT id, total_credits, overage_credit_rate FROM teams ORDER BY id",
                &[],
            )
            .await
            .map_err(fail)?
            .iter()
            .map(|row| Team {
                id: row.get(0),
                plan: Plan {
                    total_credits: row.get::<_, i64>(1).max(0) as u64,
                    overage_credit_rate: row.get(2),
                },
                keys: Vec::new(),
            })
            .collect();
        let number = super::team_numbers(&teams);
        for row in db
            .query(
                "SELECT team, sha256, created FROM api_keys ORDER BY created, sha256",
                &[],
            )
            .await
            .map_err(fail)?
        {
            let team: &str = row.get(0);
            if let Some(&i) = number.get(team) {
                teams[i].keys.push(StoredKey {
                    sha256: row.get(1),
                    created: row.get::<_, i64>(2).max(0) as u64,
                });
            }
        }
        let mut credit_costs = CreditCosts::default();
        for row in db
            .query("SELECT endpoint, credits FROM credit_costs", &[])
            .await
            .map_err(fail)?
        {
            let name: String = row.get(0);
            if let Some(slot) = super::cost_slot(&mut credit_costs, &name) {
                *slot = super::stored_cost(row.get::<_, i64>(1));
            }
        }
        Ok(Accounts {
            teams,
            credit_costs,
        })
    }

    /// Makes a new random key for `team` (creating the team with `plan` if it does not
    /// exist), stores its hash, and returns the key: the only time it is seen.
    ///
    /// # Errors
    ///
    /// An invalid team id, no randomness from the OS, or the database's.
    pub async fn add_key(&self, team: &str, plan: Plan, now: u64) -> Result<String, StateError> {
        if !valid_team_id(team) {
            return Err(StateError::BadTeamId {
                team: team.to_string(),
            });
        }
        let key = super::new_key()?;
        let mut db = self.client("add the key").await?;
        let fail = |e: tokio_postgres::Error| self.fail("add the key")(e.into());
        let tx = db.transaction().await.map_err(fail)?;
        tx.execute(
            "INSERT INTO teams (id, total_credits, overage_credit_rate) VALUES ($1, $2, $3)
             ON CONFLICT (id) DO NOTHING",
            &[
                &team,
                &(plan.total_credits as i64),
                &plan.overage_credit_rate,
            ],
        )
        .await
        .map_err(fail)?;
        tx.execute(
            "INSERT INTO api_keys (sha256, team, created) VALUES ($1, $2, $3)",
            &[&hash_key(&key), &team, &(now as i64)],
        )
        .await
        .map_err(fail)?;
        tx.execute(BUMP_ACCOUNTS_VERSION, &[]).await.map_err(fail)?;
        tx.commit().await.map_err(fail)?;
        Ok(key)
    }

    /// Revokes the key whose SHA-256 hash is `sha256` (as
    /// [`super::SqliteState::revoke_key`]): returns its team, or `None` when no key has
    /// that hash.
    ///
    /// # Errors
    ///
    /// The database's; then nothing is revoked.
    pub async fn revoke_key(&self, sha256: &str) -> Result<Option<String>, StateError> {
        let mut db = self.client("revoke the key").await?;
        let fail = |e: tokio_postgres::Error| self.fail("revoke the key")(e.into());
        let tx = db.transaction().await.map_err(fail)?;
        let team: Option<String> = tx
            .query_opt(
                "DELETE FROM api_keys WHERE sha256 = $1 RETURNING team",
                &[&sha256],
            )
            .await
            .map_err(fail)?
            .map(|row| row.get(0));
        if team.is_some() {
            tx.execute(BUMP_ACCOUNTS_VERSION, &[]).await.map_err(fail)?;
        }
        tx.commit().await.map_err(fail)?;
        Ok(team)
    }

    /// Imports an accounts file's teams, key hashes and credit costs, in one transaction
    /// (as [`super::SqliteState::import`]).
    ///
    /// # Errors
    ///
    /// The database's; then nothing is imported.
    pub async fn import(&self, accounts: &Accounts) -> Result<(), StateError> {
        let mut db = self.client("import the accounts").await?;
        let fail = |e: tokio_postgres::Error| self.fail("import the accounts")(e.into());
        let tx = db.transaction().await.map_err(fail)?;
        // Each statement prepared once for the whole file (not once a row).
        let add_team = tx
            .prepare(
                "INSERT INTO teams (id, total_credits, overage_credit_rate) VALUES ($1, $2, $3)
                 ON CONFLICT (id) DO UPDATE SET total_credits = excluded.total_credits,
                     overage_credit_rate = excluded.overage_credit_rate",
            )
            .await
            .map_err(fail)?;
        let add_key = tx
            .prepare(
                "INSERT INTO api_keys (sha256, team, created) VALUES ($1, $2, $3)
                 ON CONFLICT (sha256) DO NOTHING",
            )
            .await
            .map_err(fail)?;
        let key_holder = tx
            .prepare("SELECT team FROM api_keys WHERE sha256 = $1")
            .await
            .map_err(fail)?;
        for team in &accounts.teams {
            tx.execute(
                &add_team,
                &[
                    &team.id,
                    &(team.plan.total_credits as i64),
                    &team.plan.overage_credit_rate,
                ],
            )
            .await
            .map_err(fail)?;
            for key in &team.keys {
                tx.execute(&add_key, &[&key.sha256, &team.id, &(key.created as i64)])
                    .await
                    .map_err(fail)?;
                let holder: String = tx
                    .query_one(&key_holder, &[&key.sha256])
                    .await
                    .map_err(fail)?
                    .get(0);
                if holder != team.id {
                    return Err(StateError::KeyOfAnotherTeam {
                        team: team.id.clone(),
                        holder,
                        sha256: key.sha256.clone(),
                    });
                }
            }
        }
        for endpoint in Endpoint::ALL {
            tx.execute(
                "INSERT INTO credit_costs (endpoint, credits) VALUES ($1, $2)
                 ON CONFLICT (endpoint) DO UPDATE SET credits = excluded.credits",
                &[
                    &endpoint.name(),
                    &(accounts.credit_costs.of(endpoint) as i64),
                ],
            )
            .await
            .map_err(fail)?;
        }
        tx.execute(BUMP_ACCOUNTS_VERSION, &[]).await.map_err(fail)?;
        tx.commit().await.map_err(fail)
    }

    /// Admits a request of `team` and charges it `credits`, in one statement (see the
    /// module docs): `Ok(None)` when admitted, `Ok(Some(wait))` when the team is over
    /// `limit` requests per `window`.
    ///
    /// # Errors
    ///
    /// The database's: then the request was neither admitted nor charged, unless the
    /// connection broke after the statement was sent.
    pub(crate) async fn admit(
        &self,
        team: &str,
        credits: u64,
        limit: u32,
        window: Duration,
    ) -> Result<Option<Duration>, StateError> {
        let db = self.client("admit a request").await?;
        let statement = db
            .prepare_cached("SELECT cardex_admit($1, $2, $3, $4)")
            .await
            .map_err(|e| self.fail("admit a request")(e.into()))?;
        let row = db
            .query_one(
                &statement,
                &[
                    &team,
                    &(credits as i64),
                    &(limit as i32),
                    &window.as_secs_f64(),
                ],
            )
            .await
            .map_err(|e| self.fail("admit a request")(e.into()))?;
        let wait: f64 = row.get(0);
        Ok((wait > 0.0).then(|| Duration::from_secs_f64(wait)))
    }

    /// Adds spooled charges (`(id, team, credits)`, each id unique for ever), skipping
    /// those already added, in one statement: a replay that is cut short and run again
    /// counts each charge once.
    pub(crate) async fn apply_spooled(
        &self,
        charges: &[(String, String, u64)],
    ) -> Result<(), StateError> {
        let db = self.client("replay spooled charges").await?;
        // The ids replayed are kept as long as events are, then forgotten (here, as a
        // server without webhooks finishes no delivery).
        db.batch_execute(&format!(
            "DELETE FROM spool_applied WHERE applied < cardex_now() - {}",
            super::EVENT_RETENTION_SECS
        ))
        .await
        .map_err(|e| self.fail("replay spooled charges")(e.into()))?;
        let ids: Vec<&str> = charges.iter().map(|c| c.0.as_str()).collect();
        let teams: Vec<&str> = charges.iter().map(|c| c.1.as_str()).collect();
        let credits: Vec<i64> = charges.iter().map(|c| c.2 as i64).collect();
        db.execute(
            "WITH new AS (
                 INSERT INTO spool_applied (id, applied)
                 SELECT id, cardex_now() FROM unnest($1::TEXT[]) AS id
                 ON CONFLICT (id) DO NOTHING RETURNING id)
             INSERT INTO credits_used (team, used)
             SELECT c.team, sum(c.credits)
             FROM unnest($1::TEXT[], $2::TEXT[], $3::BIGINT[]) AS c(id, team, credits)
             JOIN new ON new.id = c.id
             GROUP BY c.team
             ON CONFLICT (team) DO UPDATE SET used = credits_used.used + excluded.used",
            &[&ids, &teams, &credits],
        )
        .await
        .map(|_| ())
        .map_err(|e| self.fail("replay spooled charges")(e.into()))
    }

    /// The credits `team` has used so far.
    ///
    /// # Errors
    ///
    /// The database's.
    pub async fn used(&self, team: &str) -> Result<u64, StateError> {
        let db = self.client("read the credits used").await?;
        let row = db
            .query_opt("SELECT used FROM credits_used WHERE team = $1", &[&team])
            .await
            .map_err(|e| self.fail("read the credits used")(e.into()))?;
        Ok(row.map_or(0, |r| r.get::<_, i64>(0).max(0) as u64))
    }

    /// The credits each team has used so far.
    pub async fn used_by_team(&self) -> Result<std::collections::HashMap<String, u64>, StateError> {
        let db = self.client("read the credits used").await?;
        let rows = db
            .query("SELECT team, used FROM credits_used", &[])
            .await
            .map_err(|e| self.fail("read the credits used")(e.into()))?;
        Ok(rows
            .iter()
            .map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1).max(0) as u64))
            .collect())
    }

    async fn meta(db: &Client, key: &str) -> Result<Option<String>, tokio_postgres::Error> {
        Ok(db
            .query_opt("SELECT value FROM meta WHERE key = $1", &[&key])
            .await?
            .map(|row| row.get(0)))
    }

    /// A number that changes whenever keys or teams are added or imported.
    pub(crate) async fn accounts_version(&self) -> Result<u64, StateError> {
        let db = self.client("read the accounts version").await?;
        Ok(Self::meta(&db, "accounts_version")
            .await
            .map_err(|e| self.fail("read the accounts version")(e.into()))?
            .and_then(|v| v.parse().ok())
            .unwrap_or(0))
    }

    /// The salt of this state's event ids, made when first asked for.
    pub(crate) async fn salt(&self) -> Result<String, StateError> {
        let db = self.client("read the event id salt").await?;
        let fail = |e: tokio_postgres::Error| self.fail("read the event id salt")(e.into());
        db.execute(
            "INSERT INTO meta (key, value) VALUES ('salt', $1) ON CONFLICT (key) DO NOTHING",
            &[&super::new_salt()],
        )
        .await
        .map_err(fail)?;
        Ok(Self::meta(&db, "salt")
            .await
            .map_err(fail)?
            .unwrap_or_default())
    }

    /// The saved marks, if any.
    pub(crate) async fn saved_marks(&self) -> Result<Option<SavedMarks>, StateError> {
        let db = self.client("read the saved marks").await?;
        let fail = |e: tokio_postgres::Error| self.fail("read the saved marks")(e.into());
        let marks = Self::meta(&db, "marks").await.map_err(fail)?;
        let generation = Self::meta(&db, "marks_generation").await.map_err(fail)?;
        Ok(marks.map(|marks| SavedMarks {
            generation: generation.and_then(|g| g.parse().ok()).unwrap_or(0),
            marks,
        }))
    }

    /// Publishes a reload's change (see [`super::State::publish`]) in one transaction,
    /// under a lock on the saved marks' generation: replicas publishing at once take
    /// turns, and the second finds the first's marks.
    pub(crate) async fn publish(
        &self,
        next: &MarksToSave<'_>,
        build: impl FnOnce(u64) -> Vec<(Event, Vec<String>)>,
    ) -> Result<(usize, u64), StateError> {
        let mut db = self.client("write events to the outbox").await?;
        let fail = |e: tokio_postgres::Error| self.fail("write events to the outbox")(e.into());
        let tx = db.transaction().await.map_err(fail)?;
        let stored: u64 = lock_meta(&tx, "marks_generation", "0")
            .await
            .map_err(fail)?
            .parse()
            .unwrap_or(0);
        let fingerprint: Option<String> = tx
            .query_opt(
                "SELECT value FROM meta WHERE key = 'marks_fingerprint'",
                &[],
            )
            .await
            .map_err(fail)?
            .map(|row| row.get(0));
        let generation = if fingerprint.as_deref() == Some(next.fingerprint) {
            stored
        } else {
            stored + 1
        };
        if generation != stored {
            for (key, value) in [
                ("marks", next.json),
                ("marks_fingerprint", next.fingerprint),
                ("marks_generation", &generation.to_string()),
            ] {
                tx.execute(
                    "INSERT INTO meta (key, value) VALUES ($1, $2)
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    &[&key, &value],
                )
                .await
                .map_err(fail)?;
            }
        }
        let mut written = 0;
        for (event, subscriptions) in build(generation) {
            let new = tx
                .execute(
                    "INSERT INTO events (id, body, created) VALUES ($1, $2, cardex_now())
                     ON CONFLICT (id) DO NOTHING",
                    &[&event.id, &event.to_json()],
                )
                .await
                .map_err(fail)?;
            // An event there already (another replica published this change) within the
            // retention: a subscription of this replica's that has no delivery of it (a
            // webhooks file naming one the other's did not, as in a rolling deploy) gets
            // one. An older event's finished deliveries may have been removed, and would
            // be sent again.
            // (An event another replica's prune removed meanwhile is not recent.)
            let recent = || async {
                tx.query_opt(
                    &format!(
                        "SELECT created >= cardex_now() - {} FROM events WHERE id = $1",
                        super::EVENT_RETENTION_SECS
                    ),
                    &[&event.id],
                )
                .await
                .map(|row| row.is_some_and(|row| row.get::<_, bool>(0)))
            };
            if new == 0 && !recent().await.map_err(fail)? {
                continue;
            }
            for subscription in &subscriptions {
                written += tx
                    .execute(
                        "INSERT INTO deliveries (event_id, subscription) VALUES ($1, $2)
                         ON CONFLICT (subscription, event_id) DO NOTHING",
                        &[&event.id, subscription],
                    )
                    .await
                    .map_err(fail)? as usize;
            }
        }
        // Here too, not only when a delivery finishes: events that no subscription wants
        // are never delivered.
        tx.batch_execute(&prune_outbox()).await.map_err(fail)?;
        tx.commit().await.map_err(fail)?;
        Ok((written, generation))
    }

    /// Takes the lease of the first pending delivery of `subscription` for `lease`
    /// seconds, unless another holder's lease on it is still running. The row is locked
    /// with `SKIP LOCKED`, and a delivery is only taken when no earlier one of the
    /// subscription is pending, so deliveries to one subscription keep their order.
    pub(crate) async fn claim(
        &self,
        subscription: &str,
        holder: &str,
        lease: f64,
    ) -> Result<Option<Claimed>, StateError> {
        let db = self.client("claim a delivery").await?;
        let row = db
            .query_opt(
                "WITH head AS (
                     SELECT d.seq FROM deliveries d
                     WHERE d.subscription = $1 AND NOT d.done
                       AND NOT EXISTS (SELECT 1 FROM deliveries e
                                       WHERE e.subscription = $1 AND NOT e.done
                                         AND e.seq < d.seq)
                     ORDER BY d.seq LIMIT 1
                     FOR UPDATE SKIP LOCKED)
                 UPDATE deliveries d SET lease_holder = $2, lease_until = cardex_now() + $3
                 FROM head
                 WHERE d.seq = head.seq
                   AND (d.lease_until IS NULL OR d.lease_until < cardex_now()
                        OR d.lease_holder = $2)
                 RETURNING d.seq, d.attempts, d.first_attempt,
                     (SELECT body FROM events WHERE id = d.event_id)",
                &[&subscription, &holder, &lease],
            )
            .await
            .map_err(|e| self.fail("claim a delivery")(e.into()))?;
        let Some(row) = row else { return Ok(None) };
        let body: String = row.get(3);
        Ok(Some(Claimed {
            seq: row.get(0),
            subscription: subscription.to_string(),
            event: super::event_from_json(&body)?,
            attempts: row.get::<_, i32>(1).max(0) as u32,
            first_attempt: row.get(2),
        }))
    }

    /// Records a failed attempt and renews the lease; false when the lease is no longer
    /// `holder`'s.
    pub(crate) async fn attempted(
        &self,
        claimed: &Claimed,
        holder: &str,
        lease: f64,
    ) -> Result<bool, StateError> {
        let db = self.client("record a delivery attempt").await?;
        db.execute(
            "UPDATE deliveries SET attempts = $3, first_attempt = $4,
                 lease_until = cardex_now() + $5
             WHERE seq = $1 AND lease_holder = $2 AND NOT done",
            &[
                &claimed.seq,
                &holder,
                &(claimed.attempts as i32),
                &claimed.first_attempt,
                &lease,
            ],
        )
        .await
        .map(|n| n == 1)
        .map_err(|e| self.fail("record a delivery attempt")(e.into()))
    }

    /// Marks a claimed delivery finished, and forgets finished deliveries and events
    /// older than [`super::EVENT_RETENTION_SECS`].
    pub(crate) async fn finish(&self, claimed: &Claimed, holder: &str) -> Result<(), StateError> {
        let db = self.client("mark a delivery finished").await?;
        let fail = |e: tokio_postgres::Error| self.fail("mark a delivery finished")(e.into());
        db.execute(
            "UPDATE deliveries SET done = TRUE, lease_holder = NULL, lease_until = NULL
             WHERE seq = $1 AND lease_holder = $2",
            &[&claimed.seq, &holder],
        )
        .await
        .map_err(fail)?;
        db.batch_execute(&prune_outbox()).await.map_err(fail)
    }

    /// The pending deliveries per subscription.
    pub(crate) async fn pending(&self) -> Result<Vec<(String, u64)>, StateError> {
        let db = self.client("count the pending deliveries").await?;
        Ok(db
            .query(
                "SELECT subscription, count(*) FROM deliveries WHERE NOT done
                 GROUP BY subscription ORDER BY subscription",
                &[],
            )
            .await
            .map_err(|e| self.fail("count the pending deliveries")(e.into()))?
            .iter()
            .map(|row| (row.get(0), row.get::<_, i64>(1).max(0) as u64))
            .collect())
    }

    /// Copies the credits used into the usage board, unless another replica (or this
    /// one) took it less than `min_age` seconds ago by the database's clock; true when it
    /// did.
    pub(crate) async fn refresh_usage(&self, min_age: f64) -> Result<bool, StateError> {
        let mut db = self.client("refresh the usage figures").await?;
        let fail = |e: tokio_postgres::Error| self.fail("refresh the usage figures")(e.into());
        let tx = db.transaction().await.map_err(fail)?;
        let taken: f64 = lock_meta(&tx, "usage_taken_at", "0")
            .await
            .map_err(fail)?
            .parse()
            .unwrap_or(0.0);
        let now: f64 = tx
            .query_one("SELECT cardex_now()", &[])
            .await
            .map_err(fail)?
            .get(0);
        let due = taken <= now - min_age;
        if !due {
            return Ok(false);
        }
        tx.batch_execute(
            "DELETE FROM usage_board;
             INSERT INTO usage_board (team, used) SELECT team, used FROM credits_used;
             UPDATE meta SET value = cardex_now()::TEXT WHERE key = 'usage_taken_at';",
        )
        .await
        .map_err(fail)?;
        tx.commit().await.map_err(fail)?;
        Ok(true)
    }

    /// `team`'s credits used on the usage board, and when the board was taken.
    pub(crate) async fn usage(&self, team: &str) -> Result<(u64, f64), StateError> {
        let db = self.client("read the usage figures").await?;
        let row = db
            .query_one(
                "SELECT (SELECT used FROM usage_board WHERE team = $1),
                        (SELECT value::DOUBLE PRECISION FROM meta WHERE key = 'usage_taken_at')",
                &[&team],
            )
            .await
            .map_err(|e| self.fail("read the usage figures")(e.into()))?;
        Ok((
            row.get::<_, Option<i64>>(0).unwrap_or(0).max(0) as u64,
            row.get::<_, Option<f64>>(1).unwrap_or(0.0),
        ))
    }
}
