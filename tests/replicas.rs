//! The service on PostgreSQL, against a real server the tests start themselves (initdb
//! and pg_ctl in a scratch folder, a Unix socket only): migrations on an empty and an
//! up-to-date database and a schema from a newer cardex; two `cardex serve` replicas on
//! one database sharing one rate limit and charging each answer once; a replica killed
//! with SIGKILL mid-load; the database stopped for 5 s mid-load and started again; a
//! statement the database refuses, which is no outage.

// They run the `cardex` binary, which needs the `cli` feature.
#![cfg(all(feature = "server", feature = "cli"))]

mod serving;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cardex::server::state::{State, StateUrl, PG_SCHEMA_VERSION};
use reqwest::StatusCode;
use serving::postgres::Cluster;
use serving::{add_key, cardex, import_team, revoke_key, scratch, Server};

/// A throw-away PostgreSQL server with a `cardex` database and a key for team `acme`;
/// `None` when PostgreSQL is not installed (outside CI).
fn database_with_acme(name: &str) -> Option<(Cluster, String, String)> {
    let pg = Cluster::start(name)?;
    let url = pg.database("cardex");
    let acme = add_key(&url, "acme", 1_000_000);
    Some((pg, url, acme))
}

/// A replica on the bundled snapshot and the database `url`, with a spool of its own.
fn replica(url: &str, dir: &std::path::Path, name: &str, extra: &[&str]) -> Server {
    let spool = dir.join(format!("{name}.spool.db"));
    let mut args = vec!["--state", url, "--spool", spool.to_str().unwrap()];
    args.extend_from_slice(extra);
    Server::start(&args)
}

/// The credits `team` has used, read from the database.
fn used(pg: &Cluster, team: &str) -> u64 {
    pg.psql(
        "cardex",
        &format!("SELECT coalesce((SELECT used FROM credits_used WHERE team = '{team}'), 0)"),
    )
    .parse()
    .unwrap()
}

async fn status_of(
    c: &reqwest::Client,
    url: &str,
    key: &str,
    team: &str,
) -> Result<(StatusCode, Option<u64>), reqwest::Error> {
    let r = c
        .get(url)
        .header("X-Api-Key", key)
        .header("X-Team-ID", team)
        .send()
        .await?;
    let retry = r
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok()?.parse().ok());
    let status = r.status();
    r.bytes().await?;
    Ok((status, retry))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_run_once_and_a_newer_schema_or_an_unreachable_database_stops_the_start() {
    let Some(pg) = Cluster::start("migrate") else {
        return;
    };
    let url = pg.database("cardex");
    let state = StateUrl::parse(&url).unwrap();
    // Two replicas starting together on an empty database: one migrates, under the
    // advisory lock, and the other finds it up to date.
    let (a, b) = tokio::join!(State::open(&state), State::open(&state));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(
        a.schema_version().await.unwrap(),
        i64::from(PG_SCHEMA_VERSION)
    );
    assert_eq!(b.engine(), "PostgreSQL");
    drop((a, b));
    // Opening an up-to-date database changes nothing.
    let c = State::open(&state).await.unwrap();
    assert_eq!(
        c.schema_version().await.unwrap(),
        i64::from(PG_SCHEMA_VERSION)
    );
    assert_eq!(pg.psql("cardex", "SELECT count(*) FROM cardex_schema"), "1");
    // A role that may read and write the tables and run the functions, but not create
    // anything, uses a database at the current version (no DDL runs).
    pg.psql(
        "cardex",
        "CREATE ROLE limited LOGIN; REVOKE CREATE ON SCHEMA public FROM PUBLIC; \
         GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO limited; \
         GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO limited; \
         GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO limited",
    );
    let limited = url.replacen("postgres@", "limited@", 1);
    let (code, out, err) = cardex(&["accounts", "list", "--state", &limited]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("team\ttotal_credits"), "{out}");
    // A role with a schema of its name, first in the default search path (`"$user",
    // public`), gets a state of its own there, though `public` further along holds another.
    pg.psql(
        "cardex",
        "CREATE ROLE scoped LOGIN; CREATE SCHEMA scoped AUTHORIZATION scoped",
    );
    let scoped = url.replacen("postgres@", "scoped@", 1);
    // Until it has one, a command that works on an existing state finds none there, and
    // makes nothing.
    let (code, _, err) = cardex(&["accounts", "list", "--state", &scoped]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("no state at postgres://scoped@/cardex"),
        "{err}"
    );
    assert_eq!(
        pg.psql(
            "cardex",
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'scoped'"
        ),
        "0"
    );
    let (code, _, err) = cardex(&[
        "accounts",
        "add-key",
        "--state",
        &scoped,
        "--team",
        "scopedteam",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(pg.psql("cardex", "SELECT count(*) FROM scoped.teams"), "1");
    assert_eq!(
        pg.psql(
            "cardex",
            "SELECT count(*) FROM public.teams WHERE id = 'scopedteam'"
        ),
        "0"
    );
    // A database that stops answering without closing its connections: a call fails after
    // its bound instead of waiting for TCP to give up.
    pg.signal_all("STOP");
    let stalled = tokio::time::timeout(Duration::from_secs(120), c.accounts()).await;
    pg.signal_all("CONT");
    let err = stalled
        .expect("a call on a database that answers nothing returns")
        .expect_err("and fails");
    assert!(
        err.to_string().contains("cannot read the accounts"),
        "{err}"
    );
    drop(c);
    // A schema a newer cardex wrote: the start stops with exit status 2, naming it.
    pg.psql(
        "cardex",
        &format!(
            "UPDATE cardex_schema SET version = {}",
            PG_SCHEMA_VERSION + 1
        ),
    );
    let (code, _, err) = cardex(&["serve", "--state", &url, "--addr", "127.0.0.1:0"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("written by a newer cardex"), "{err}");
    assert!(err.contains("postgres://postgres@/cardex"), "{err}");
    // A `cardex_schema` table cardex did not write: refused, saying what is wrong, and
    // left as it was.
    for (sql, says) in [
        ("UPDATE cardex_schema SET version = -1", "holds version -1"),
        (
            "INSERT INTO cardex_schema VALUES (1)",
            "holds 2 rows, not one",
        ),
        (
            "DELETE FROM cardex_schema; ALTER TABLE cardex_schema ALTER COLUMN version TYPE BIGINT; INSERT INTO cardex_schema VALUES (1)",
            "has a `version` of type int8, not integer",
        ),
    ] {
        pg.psql("cardex", sql);
        let before = pg.psql("cardex", "SELECT count(*) FROM cardex_schema");
        for command in [&["serve", "--addr", "127.0.0.1:0"][..], &["accounts", "list"][..]] {
            let mut args = command.to_vec();
            args.extend(["--state", url.as_str()]);
            let (code, _, err) = cardex(&args);
            assert_eq!(code, Some(2), "{err}");
            assert!(
                err.contains(&format!("its table `cardex_schema` {says}, so cardex did not write it")),
                "{err}"
            );
            assert!(!err.contains("panicked"), "{err}");
        }
        assert_eq!(pg.psql("cardex", "SELECT count(*) FROM cardex_schema"), before);
    }
    // A command that works on an existing state, given a database without one: refused,
    // and nothing made there (a mistyped database is not a new, empty state).
    let other = pg.database("other");
    let hash = "a".repeat(64);
    let revoke = ["accounts", "revoke-key", "--sha256", hash.as_str()];
    for command in [&["accounts", "list"][..], &revoke[..]] {
        let mut args = command.to_vec();
        args.extend(["--state", other.as_str()]);
        let (code, _, err) = cardex(&args);
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.contains("no state at postgres://postgres@/other"),
            "{err}"
        );
    }
    assert_eq!(
        pg.psql(
            "other",
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        ),
        "0"
    );
    // An unreachable database at start: exit status 2, saying what could not be done.
    let dir = scratch("pg-unreachable");
    let nowhere = format!("postgres://postgres@/cardex?host={}", dir.display());
    let (code, _, err) = cardex(&["serve", "--state", &nowhere, "--addr", "127.0.0.1:0"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("cannot connect"), "{err}");
    // With the reason the connection failed.
    assert!(
        err.contains("refused") || err.contains("No such file"),
        "{err}"
    );
    let (code, _, err) = cardex(&["accounts", "add-key", "--state", &nowhere, "--team", "acme"]);
    assert_eq!(code, Some(2), "{err}");
    // A URL the driver does not take is a usage error naming the forms.
    let (code, _, err) = cardex(&[
        "serve",
        "--state",
        "postgres://u:secret@h/db?sslmode=sometimes",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("the PostgreSQL driver does not take it"),
        "{err}"
    );
    assert!(!err.contains("secret"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_share_one_limit_and_charge_each_answer_once() {
    let Some((pg, url, acme)) = database_with_acme("limit") else {
        return;
    };
    // The short spellings of the plan's flags.
    let (code, globex, err) = cardex(&[
        "accounts",
        "add-key",
        "--state",
        &url,
        "--team",
        "globex",
        "--credits",
        "1000000",
        "--overage-rate",
        "0.001",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let globex = globex.trim().to_string();
    let (_, list, _) = cardex(&["accounts", "list", "--state", &url]);
    assert!(list.contains("globex\t1000000\t0.001\t1\t0"), "{list}");
    let dir = scratch("pg-limit");
    // A window of a minute: the whole burst falls in one window however slow the
    // machine, so exactly 100 are accepted across both replicas.
    let extra = ["--rate-window", "60000", "--usage-refresh", "1"];
    let a = replica(&url, &dir, "a", &extra);
    let b = replica(&url, &dir, "b", &extra);
    let c = reqwest::Client::new();
    let mut tasks = Vec::new();
    for i in 0..300 {
        let base = if i % 2 == 0 { &a } else { &b };
        let url = base.url("/pokemon/v1/cards?page_size=5&q=supertype:pokemon");
        let (c, key) = (c.clone(), acme.clone());
        tasks.push(tokio::spawn(async move {
            status_of(&c, &url, &key, "acme").await.unwrap()
        }));
    }
    let (mut ok, mut limited) = (0u64, 0u64);
    for task in tasks {
        match task.await.unwrap() {
            (StatusCode::OK, _) => ok += 1,
            (StatusCode::TOO_MANY_REQUESTS, retry) => {
                limited += 1;
                assert!(retry.is_some_and(|r| (1..=60).contains(&r)), "{retry:?}");
            }
            (other, _) => panic!("unexpected {other}"),
        }
    }
    assert_eq!((ok, limited), (100, 200));
    // Exactly the accepted requests were charged, once each, whichever replica answered.
    assert_eq!(used(&pg, "acme"), 100);
    // Another team is not limited by acme's burst, on either replica.
    for server in [&a, &b] {
        let (s, _) = status_of(&c, &server.url("/pokemon/v1/cards"), &globex, "globex")
            .await
            .unwrap();
        assert_eq!(s, StatusCode::OK);
    }
    assert_eq!(used(&pg, "globex"), 2);
    // The usage figures are one board in the database: both replicas answer alike.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let usage = |s: &Server| {
            let c = c.clone();
            let (url, key) = (s.url("/account/v1/usage"), globex.clone());
            async move {
                c.get(&url)
                    .header("X-Api-Key", key)
                    .header("X-Team-ID", "globex")
                    .send()
                    .await
                    .unwrap()
                    .json::<serde_json::Value>()
                    .await
                    .unwrap()
            }
        };
        let (ua, ub) = (usage(&a).await, usage(&b).await);
        if ua["used_credits"] == 2 && ua == ub {
            assert_eq!(ua["remaining_credits"], 1_000_000 - 2);
            break;
        }
        assert!(Instant::now() < deadline, "{ua} {ub}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // An accounts file imports into the database, and its key works on both replicas;
    // a revoked key stops working on both, without a restart.
    let initech = import_team(&url, &dir, "initech");
    // A file giving initech's key to another team is refused whole.
    let mut stolen = cardex::server::accounts::Accounts::default();
    stolen.teams.push(cardex::server::accounts::Team {
        id: "hooli".into(),
        plan: cardex::server::accounts::Plan {
            total_credits: 1,
            overage_credit_rate: 0.0,
        },
        keys: vec![cardex::server::accounts::StoredKey {
            sha256: cardex::server::accounts::hash_key(&initech),
            created: 1,
        }],
    });
    let stolen_file = dir.join("accounts-stolen.json");
    stolen.write(&stolen_file).unwrap();
    let (code, _, err) = cardex(&[
        "accounts",
        "import",
        stolen_file.to_str().unwrap(),
        "--state",
        &url,
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("team `initech` holds in the state"), "{err}");
    revoke_key(&url, &globex);
    for (key, team, wanted) in [
        (&initech, "initech", StatusCode::OK),
        (&globex, "globex", StatusCode::UNAUTHORIZED),
    ] {
        for server in [&a, &b] {
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                let (s, _) = status_of(&c, &server.url("/pokemon/v1/cards"), key, team)
                    .await
                    .unwrap();
                if s == wanted {
                    break;
                }
                assert!(Instant::now() < deadline, "{team}: {s}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    let (_, list, _) = cardex(&["accounts", "list", "--state", &url]);
    assert!(list.contains("globex\t1000000\t0.001\t0\t"), "{list}");
    assert!(list.contains("initech\t500\t0.002\t1\t"), "{list}");
    assert!(!list.contains("hooli"), "{list}");
    a.stop();
    b.stop();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Load on `team` from `tasks` sequential clients, spread over `replicas`, until `stop`;
/// a client that fails to reach a replica stops using it. Returns the 2xx answers, and
/// the requests that failed in flight.
async fn load(
    replicas: Vec<String>,
    key: String,
    team: &'static str,
    tasks: usize,
    pause: Duration,
    stop: Arc<AtomicBool>,
    answers_must_succeed: bool,
) -> (u64, u64) {
    let ok = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for t in 0..tasks {
        let (replicas, key, stop) = (replicas.clone(), key.clone(), stop.clone());
        let (ok, failed) = (ok.clone(), failed.clone());
        handles.push(tokio::spawn(async move {
            let c = reqwest::Client::new();
            let mut alive = vec![true; replicas.len()];
            let mut i = t;
            while !stop.load(Ordering::Acquire) {
                i += 1;
                let r = i % replicas.len();
                if !alive[r] {
                    continue;
                }
                let url = format!("{}/pokemon/v1/cards?page_size=3", replicas[r]);
                match status_of(&c, &url, &key, team).await {
                    Ok((StatusCode::OK, _)) => {
                        ok.fetch_add(1, Ordering::AcqRel);
                    }
                    Ok((StatusCode::TOO_MANY_REQUESTS, _)) if !answers_must_succeed => {}
                    Ok((other, _)) => panic!("unexpected {other}"),
                    Err(_) => {
                        failed.fetch_add(1, Ordering::AcqRel);
                        alive[r] = false;
                    }
                }
                tokio::time::sleep(pause).await;
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    (ok.load(Ordering::Acquire), failed.load(Ordering::Acquire))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_mid_load_loses_no_charge() {
    let Some((pg, url, acme)) = database_with_acme("kill") else {
        return;
    };
    let dir = scratch("pg-kill");
    let mut a = replica(&url, &dir, "a", &[]);
    let b = replica(&url, &dir, "b", &[]);
    let stop = Arc::new(AtomicBool::new(false));
    let loader = tokio::spawn(load(
        vec![a.base.clone(), b.base.clone()],
        acme.clone(),
        "acme",
        4,
        Duration::ZERO,
        stop.clone(),
        false,
    ));
    tokio::time::sleep(Duration::from_millis(800)).await;
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    stop.store(true, Ordering::Release);
    let (answered, cut_off) = loader.await.unwrap();
    assert!(answered > 0);
    // Every answered request is charged; the only charges without an answer are of the
    // requests the kill cut off (charged, then killed before the answer left).
    let charged = used(&pg, "acme");
    assert!(
        (answered..=answered + cut_off).contains(&charged),
        "{charged} charged, {answered} answered, {cut_off} cut off"
    );
    b.stop();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_outage_is_spooled_and_replayed_exactly() {
    let Some((pg, url, acme)) = database_with_acme("outage") else {
        return;
    };
    let dir = scratch("pg-outage");
    let a = replica(&url, &dir, "a", &[]);
    let b = replica(&url, &dir, "b", &[]);
    let stop = Arc::new(AtomicBool::new(false));
    // About 60 requests a second in all, under each replica's own limit while the
    // database is down: every answer must be a 200.
    let loader = tokio::spawn(load(
        vec![a.base.clone(), b.base.clone()],
        acme.clone(),
        "acme",
        2,
        Duration::from_millis(30),
        stop.clone(),
        true,
    ));
    tokio::time::sleep(Duration::from_millis(1000)).await;
    pg.stop();
    let down = Instant::now();
    a.wait_for("event=state_down", 1);
    b.wait_for("event=state_down", 1);
    tokio::time::sleep(Duration::from_secs(5).saturating_sub(down.elapsed())).await;
    pg.start_again();
    a.wait_for("event=state_restored", 1);
    b.wait_for("event=state_restored", 1);
    // The accounts check, every second, said once that it failed, and once that it works.
    a.wait_for("the accounts can be read again", 1);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    stop.store(true, Ordering::Release);
    let (answered, failed) = loader.await.unwrap();
    assert_eq!(failed, 0);
    // Requests answered during the outage were spooled, then replayed once: the total
    // is every answer, none lost or doubled.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(used(&pg, "acme"), answered);
    let log = a.stop();
    assert!(log.contains("spooling charges to"), "{log}");
    assert!(log.contains("spooled charges replayed"), "{log}");
    assert_eq!(
        log.matches("the accounts are read again every second")
            .count(),
        1,
        "{log}"
    );
    b.stop();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A statement the database refuses (here a permission taken away) is a fault, not an
/// outage: the request is answered `503 state_unavailable` and costs nothing, and the
/// replica neither spools nor falls back to its own limiter; once the permission is back,
/// requests are admitted and charged in the database again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_the_database_refuses_is_no_outage() {
    let Some((pg, url, acme)) = database_with_acme("refused") else {
        return;
    };
    pg.psql(
        "cardex",
        "CREATE ROLE limited LOGIN; \
         GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO limited; \
         GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO limited; \
         GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO limited",
    );
    let limited = url.replacen("postgres@", "limited@", 1);
    let dir = scratch("pg-refused");
    let a = replica(&limited, &dir, "a", &[]);
    let c = reqwest::Client::new();
    let card = a.url("/pokemon/v1/cards/emc-4");
    assert_eq!(
        status_of(&c, &card, &acme, "acme").await.unwrap().0,
        StatusCode::OK
    );
    let charged = used(&pg, "acme");
    assert_eq!(charged, 1);
    pg.psql("cardex", "REVOKE UPDATE ON rate_windows FROM limited");
    for _ in 0..3 {
        let r = c
            .get(&card)
            .header("X-Api-Key", &acme)
            .header("X-Team-ID", "acme")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        let body = r.text().await.unwrap();
        assert!(body.contains("\"code\":\"state_unavailable\""), "{body}");
    }
    let log = a.log();
    assert!(log.contains("event=state_error"), "{log}");
    assert!(log.contains("permission denied"), "{log}");
    assert!(!log.contains("event=state_down"), "{log}");
    assert_eq!(used(&pg, "acme"), charged);
    pg.psql("cardex", "GRANT UPDATE ON rate_windows TO limited");
    assert_eq!(
        status_of(&c, &card, &acme, "acme").await.unwrap().0,
        StatusCode::OK
    );
    assert_eq!(used(&pg, "acme"), charged + 1);
    let log = a.log();
    assert!(!log.contains("event=state_down"), "{log}");
    assert!(!log.contains("event=state_restored"), "{log}");
    a.stop();
    std::fs::remove_dir_all(&dir).unwrap();
}
