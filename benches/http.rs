//! Throughput of the HTTP service, in two modes. SQLite: `cardex serve`'s router and
//! accept loop in this process with
//! accounts (2,000 teams, keys checked, rate limit, credits charged to the SQLite state in
//! a scratch folder, checkpointed every 500 ms as the server does), driven on
//! loopback by keep-alive connections sending `GET /pokemon/v1/cards?q=...&page_size=10`,
//! next to an axum handler that returns a constant body of the same size, in the same run
//! and process, and the same search on the Pokémon TCG API v2 surface
//! (`GET /v2/cards?q=...&pageSize=10`, the key alone), and the search on a server without
//! accounts ("open search": no key check, limit or charge). Reports requests/s and latency percentiles; every answer is checked to be
//! a 200 with the expected body length, so a fast error cannot pass.
//!
//! ```sh
//! cargo bench --bench http
//! CARDEX_HTTP_REQUESTS=200000 CARDEX_HTTP_CONNECTIONS=64 cargo bench --bench http
//! CARDEX_HTTP_POSTGRES=0 cargo bench --bench http     # the SQLite mode alone
//! CARDEX_HTTP_SQLITE=0 cargo bench --bench http       # the PostgreSQL mode alone
//! CARDEX_HTTP_ONLY=search cargo bench --bench http    # rounds of one server alone, to profile
//! ```
//!
//! `CARDEX_HTTP_ONLY` is `search` (with accounts), `open` (without) or `constant`: that
//! server's rounds alone in the SQLite mode, and no PostgreSQL mode.
//!
//! PostgreSQL (when it is installed): two `cardex serve` processes on one database that
//! this bench starts (initdb, pg_ctl, fsync on), 200 teams, the load spread over both, each
//! request admitted and charged in the database; see [`postgres_mode`].
//!
//! Not criterion: criterion times one call at a time, and a server's throughput is a
//! property of many concurrent connections. The load generator is a minimal HTTP/1.1
//! client over tokio sockets (a fixed request, `Content-Length` bodies), so that the
//! client costs as little CPU as possible on the two cores it shares with the server.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::get;
use cardex::server::accounts::{Accounts, Plan};
use cardex::server::state::{State, StateUrl};
use cardex::server::{router, serve_connections, CorsOrigins, ServeConfig, Service};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The `cardex` command's allocator, so that the service is measured as it runs.
#[path = "../src/cli/allocator.rs"]
mod allocator;

const TEAMS: usize = 2000;
/// Rounds of each, interleaved: the best of each is compared, so a moment when the
/// machine is busy with something else does not decide the ratio.
const ROUNDS: usize = 5;
const SEARCH: &str = "/pokemon/v1/cards?q=supertype:pokemon&page_size=10";
/// The same search on the Pokémon TCG API v2 surface, with the key alone.
const V2_SEARCH: &str = "/v2/cards?q=supertype:pokemon&pageSize=10";

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One response read off a keep-alive connection: its status and body length.
async fn read_response(stream: &mut TcpStream, buf: &mut Vec<u8>) -> (u16, usize) {
    buf.clear();
    let mut chunk = [0u8; 16 * 1024];
    let header_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut chunk).await.expect("read");
        assert!(n > 0, "the server closed the connection");
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = std::str::from_utf8(&buf[..header_end]).expect("UTF-8 headers");
    let status: u16 = head[9..12].parse().expect("a status");
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .expect("a Content-Length");
    while buf.len() < header_end + length {
        let n = stream.read(&mut chunk).await.expect("read");
        assert!(n > 0, "the server closed the connection");
        buf.extend_from_slice(&chunk[..n]);
    }
    (status, length)
}

/// Sends `total` requests over `connections` keep-alive connections (spread over
/// `addrs` in turn), each request taken in turn from `requests`; returns the wall time
/// and every latency in microseconds.
async fn drive(
    addrs: &[std::net::SocketAddr],
    requests: Arc<Vec<Vec<u8>>>,
    connections: usize,
    total: usize,
    expected_len: usize,
) -> (Duration, Vec<u32>) {
    let per = total / connections;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..connections {
        let requests = requests.clone();
        let addr = addrs[c % addrs.len()];
        tasks.push(tokio::spawn(async move {
            let mut stream = TcpStream::connect(addr).await.expect("connect");
            stream.set_nodelay(true).expect("nodelay");
            let mut buf = Vec::with_capacity(32 * 1024);
            let mut latencies = Vec::with_capacity(per);
            for i in 0..per {
                let request = &requests[(c * per + i) % requests.len()];
                let sent = Instant::now();
                stream.write_all(request).await.expect("write");
                let (status, len) = read_response(&mut stream, &mut buf).await;
                assert_eq!(status, 200, "{}", String::from_utf8_lossy(&buf));
                assert_eq!(len, expected_len, "an answer of another size");
                latencies.push(sent.elapsed().as_micros() as u32);
            }
            latencies
        }));
    }
    let mut all = Vec::with_capacity(total);
    for task in tasks {
        all.extend(task.await.expect("a connection task"));
    }
    (started.elapsed(), all)
}

/// Prints the rate and latency percentiles of a round; returns the rate and the p99 in
/// microseconds.
fn report(name: &str, took: Duration, mut latencies: Vec<u32>) -> (f64, u32) {
    latencies.sort_unstable();
    let at = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    let rate = latencies.len() as f64 / took.as_secs_f64();
    println!(
        "{name:<10} {:>9.0} req/s   p50 {:>6} µs   p90 {:>6} µs   p99 {:>6} µs   p99.9 {:>6} µs   ({} requests in {:.2} s)",
        rate,
        at(0.50),
        at(0.90),
        at(0.99),
        at(0.999),
        latencies.len(),
        took.as_secs_f64()
    );
    (rate, at(0.99))
}

fn main() {
    allocator::configure();
    // `cargo bench` passes `--bench`; `cargo test --benches` would pass nothing: run only
    // when benchmarking.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let total = env_usize("CARDEX_HTTP_REQUESTS", 100_000);
    let connections = env_usize("CARDEX_HTTP_CONNECTIONS", 32);
    if std::env::var("CARDEX_HTTP_SQLITE").as_deref() == Ok("0") {
        postgres_mode(total, connections.max(2));
        return;
    }
    let engine = cardex::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data")).expect("data");
    let mut accounts = Accounts::default();
    let plan = Plan {
        total_credits: 1_000_000_000,
        overage_credit_rate: 0.0,
    };
    let keys: Vec<(String, String)> = (0..TEAMS)
        .map(|i| {
            let team = format!("team{i}");
            let key = accounts.add_key(&team, plan, 0).expect("a key");
            (team, key)
        })
        .collect();
    let scratch = std::env::temp_dir().join(format!("cardex-http-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("a scratch folder");
    let config = Arc::new(ServeConfig::new(scratch.clone(), "127.0.0.1:0"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let state_file = scratch.join("bench.state.db");
    runtime.block_on(async move {
        let state = State::open(&StateUrl::Sqlite(state_file))
            .await
            .expect("the state");
        state.import(&accounts).await.expect("the accounts");
        let service = Arc::new(
            Service::with_state(
                engine,
                Arc::new(state),
                config.rate_limit,
                config.rate_window,
                None,
            )
            .await
            .expect("the service"),
        );
        let app = router(service.clone(), Duration::from_secs(10), &CorsOrigins::Any);
        // The same search on a server without accounts: what metering costs.
        let open_engine =
            cardex::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data")).expect("data");
        // What the server does after a load.
        allocator::give_back();
        let open_app = router(
            Arc::new(Service::open(open_engine)),
            Duration::from_secs(10),
            &CorsOrigins::Any,
        );
        let open_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let open_addr = open_listener.local_addr().expect("addr");
        {
            let config = config.clone();
            tokio::spawn(async move {
                serve_connections(open_listener, open_app, &config, std::future::pending()).await
            });
        }
        let search_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let search_addr = search_listener.local_addr().expect("addr");
        {
            let config = config.clone();
            tokio::spawn(async move {
                serve_connections(search_listener, app, &config, std::future::pending()).await
            });
        }
        {
            // The server's own periodic checkpoint.
            let service = service.clone();
            let every = config.sync_interval;
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(every);
                loop {
                    tick.tick().await;
                    service.tick().await;
                }
            });
        }

        // The search answer, once, to size the constant body alike.
        let probe = format!(
            "GET {SEARCH} HTTP/1.1\r\nHost: bench\r\nX-Api-Key: {}\r\nX-Team-ID: {}\r\n\r\n",
            keys[0].1, keys[0].0
        );
        let mut stream = TcpStream::connect(search_addr).await.expect("connect");
        stream.write_all(probe.as_bytes()).await.expect("write");
        let mut buf = Vec::new();
        let (status, search_len) = read_response(&mut stream, &mut buf).await;
        assert_eq!(status, 200);
        let probe = format!(
            "GET {V2_SEARCH} HTTP/1.1\r\nHost: bench\r\nX-Api-Key: {}\r\n\r\n",
            keys[0].1
        );
        stream.write_all(probe.as_bytes()).await.expect("write");
        let (status, v2_len) = read_response(&mut stream, &mut buf).await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&buf));
        drop(stream);

        let constant: &'static [u8] = Box::leak(vec![b' '; search_len].into_boxed_slice());
        let constant_app = axum::Router::new().route(
            "/constant",
            get(move || async move {
                ([("content-type", "application/json")], constant)
            }),
        );
        let constant_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let constant_addr = constant_listener.local_addr().expect("addr");
        {
            let config = config.clone();
            tokio::spawn(async move {
                serve_connections(constant_listener, constant_app, &config, std::future::pending())
                    .await
            });
        }

        // One request per team, sent in turn, so no team nears its 100 requests a second.
        let requests_for = |path: &str| -> Arc<Vec<Vec<u8>>> {
            Arc::new(
                keys.iter()
                    .map(|(team, key)| {
                        format!(
                            "GET {path} HTTP/1.1\r\nHost: bench\r\nX-Api-Key: {key}\r\nX-Team-ID: {team}\r\n\r\n"
                        )
                        .into_bytes()
                    })
                    .collect(),
            )
        };
        let search_requests = requests_for(SEARCH);
        let constant_requests = requests_for("/constant");
        let v2_requests: Arc<Vec<Vec<u8>>> = Arc::new(
            keys.iter()
                .map(|(_, key)| {
                    format!("GET {V2_SEARCH} HTTP/1.1\r\nHost: bench\r\nX-Api-Key: {key}\r\n\r\n")
                        .into_bytes()
                })
                .collect(),
        );
        println!(
            "{total} requests per round over {connections} keep-alive connections, {TEAMS} teams, body {search_len} bytes; {ROUNDS} rounds each, interleaved"
        );
        // Warm up each.
        drive(&[search_addr], search_requests.clone(), connections, connections * 50, search_len).await;
        drive(&[open_addr], search_requests.clone(), connections, connections * 50, search_len).await;
        drive(&[constant_addr], constant_requests.clone(), connections, connections * 50, search_len).await;
        drive(&[search_addr], v2_requests.clone(), connections, connections * 50, v2_len).await;
        let mut rates = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
        if let Ok(only) = std::env::var("CARDEX_HTTP_ONLY") {
            let (addr, reqs, len) = match only.as_str() {
                "search" => (search_addr, search_requests.clone(), search_len),
                "open" => (open_addr, search_requests.clone(), search_len),
                "constant" => (constant_addr, constant_requests.clone(), search_len),
                other => panic!("CARDEX_HTTP_ONLY is search, open or constant, not {other}"),
            };
            for _ in 0..ROUNDS {
                let (took, lat) = drive(&[addr], reqs.clone(), connections, total, len).await;
                report(&only, took, lat);
                tokio::time::sleep(Duration::from_millis(1100)).await;
            }
            return;
        }
        for _ in 0..ROUNDS {
            let (took, lat) = drive(&[constant_addr], constant_requests.clone(), connections, total, search_len).await;
            rates[0].push(report("constant", took, lat).0);
            // A team may send 100 requests per second: pace rounds so no team is limited.
            tokio::time::sleep(Duration::from_millis(1100)).await;
            let (took, lat) = drive(&[search_addr], search_requests.clone(), connections, total, search_len).await;
            rates[1].push(report("search", took, lat).0);
            tokio::time::sleep(Duration::from_millis(1100)).await;
            let (took, lat) = drive(&[search_addr], v2_requests.clone(), connections, total, v2_len).await;
            rates[2].push(report("v2 search", took, lat).0);
            let (took, lat) = drive(&[open_addr], search_requests.clone(), connections, total, search_len).await;
            rates[3].push(report("open search", took, lat).0);
            tokio::time::sleep(Duration::from_millis(1100)).await;
        }
        let best = |r: &Vec<f64>| r.iter().cloned().fold(0.0, f64::max);
        println!(
            "search / constant throughput: {:.2} (best rounds)",
            best(&rates[1]) / best(&rates[0])
        );
        // Each search round against the constant round just before it: the machine may
        // change speed between rounds, and the best rounds of the two can then come from
        // different moments.
        let by_round: Vec<String> = rates[1]
            .iter()
            .zip(&rates[0])
            .map(|(search, constant)| format!("{:.2}", search / constant))
            .collect();
        println!(
            "search / constant throughput, round by round: {}",
            by_round.join(" ")
        );
        println!(
            "search / open search throughput: {:.2} (best rounds; what keys, the limit and charging cost)",
            best(&rates[1]) / best(&rates[3])
        );
        println!(
            "v2 / v1 search throughput: {:.2} (best rounds; v2 body {v2_len} bytes, v1 {search_len})",
            best(&rates[2]) / best(&rates[1])
        );
    });
    let _ = std::fs::remove_dir_all(&scratch);
    if std::env::var_os("CARDEX_HTTP_ONLY").is_none() {
        postgres_mode(total, connections.max(2));
    }
}

/// A scratch folder (also what the PostgreSQL helper makes its cluster in).
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("cardex-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    dir
}

// The tests' throw-away PostgreSQL server; the bench uses part of it.
#[allow(dead_code)]
#[path = "../tests/serving/postgres.rs"]
mod postgres;

/// The teams of the PostgreSQL mode.
const PG_TEAMS: usize = 200;

/// A `cardex serve` process, killed when dropped.
struct Replica {
    child: std::process::Child,
    addr: std::net::SocketAddr,
}

impl Replica {
    /// Starts `cardex serve` on the bundled snapshot and the state `url`, its JSON log in
    /// `dir`; waits until it listens.
    fn start(url: &str, dir: &std::path::Path, name: &str) -> Replica {
        let log = dir.join(format!("{name}.log"));
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_cardex"))
            .args([
                "serve",
                "--data",
                concat!(env!("CARGO_MANIFEST_DIR"), "/data"),
            ])
            .args([
                "--state",
                url,
                "--addr",
                "127.0.0.1:0",
                "--log-format",
                "json",
            ])
            .arg("--spool")
            .arg(dir.join(format!("{name}.spool.db")))
            .stderr(std::fs::File::create(&log).expect("a log file"))
            .spawn()
            .expect("cardex serve starts");
        // Killed and waited for when dropped, should it not start.
        let mut replica = Replica {
            child,
            addr: "127.0.0.1:0".parse().expect("an address"),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if let Some(line) = text.lines().find(|l| l.contains(r#""event":"listening""#)) {
                let v: serde_json::Value = serde_json::from_str(line).expect("a JSON log line");
                replica.addr = v["message"].as_str().expect("an address")["http://".len()..]
                    .parse()
                    .expect("an address");
                return replica;
            }
            assert!(Instant::now() < deadline, "{name} did not start: {text}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One team offering a steady 150 requests a second for 6 s, spread over the replicas
/// (each request sent on its own schedule, answered or not): prints how many were
/// accepted in each whole second after the first (bar: at least 95 each second; the
/// limit lets at most 100 through in any second, which the tests check exactly).
async fn steady_team(addrs: &[std::net::SocketAddr], (team, key): &(String, String)) {
    let client = reqwest::Client::new();
    let started = tokio::time::Instant::now();
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / 150.0));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut sent = Vec::new();
    for i in 0..900 {
        tick.tick().await;
        let url = format!("http://{}{SEARCH}", addrs[i % addrs.len()]);
        let (client, team, key) = (client.clone(), team.clone(), key.clone());
        let at = started.elapsed();
        sent.push(tokio::spawn(async move {
            let status = client
                .get(&url)
                .header("X-Api-Key", key)
                .header("X-Team-ID", team)
                .send()
                .await
                .map(|r| r.status().as_u16())
                .unwrap_or(0);
            (at, status)
        }));
    }
    let mut per_second = [0u32; 6];
    for task in sent {
        let (at, status) = task.await.expect("a request task");
        if status == 200 {
            per_second[(at.as_secs() as usize).min(5)] += 1;
        }
    }
    let later = &per_second[1..];
    println!(
        "postgres   one team at 150 req/s over both replicas, accepted per second {per_second:?}: at least {} a second after the first (bar: at least 95: {})",
        later.iter().min().copied().unwrap_or(0),
        if later.iter().all(|&n| n >= 95) { "met" } else { "NOT met" }
    );
}

/// Two `cardex serve` replicas on one PostgreSQL database (started here with initdb and
/// pg_ctl, fsync on, on a Unix socket), 200 teams, the same search spread over both: every
/// request admitted and charged by one statement in the database. Skipped when PostgreSQL
/// is not installed.
fn postgres_mode(total: usize, connections: usize) {
    if std::env::var("CARDEX_HTTP_POSTGRES").as_deref() == Ok("0") {
        return;
    }
    let Some(pg) = postgres::Cluster::start_with("http-bench", true) else {
        println!("postgres   skipped: PostgreSQL (initdb, pg_ctl) is not installed");
        return;
    };
    let url = pg.database("cardex");
    let dir = scratch("http-bench-replicas");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let mut accounts = Accounts::default();
        let plan = Plan {
            total_credits: 1_000_000_000,
            overage_credit_rate: 0.0,
        };
        let keys: Vec<(String, String)> = (0..PG_TEAMS)
            .map(|i| {
                let team = format!("team{i}");
                let key = accounts.add_key(&team, plan, 0).expect("a key");
                (team, key)
            })
            .collect();
        let state = State::open(&StateUrl::parse(&url).expect("a URL"))
            .await
            .expect("the state");
        state.import(&accounts).await.expect("the accounts");
        drop(state);
        let replicas = [Replica::start(&url, &dir, "a"), Replica::start(&url, &dir, "b")];
        let addrs: Vec<std::net::SocketAddr> = replicas.iter().map(|r| r.addr).collect();
        let requests: Arc<Vec<Vec<u8>>> = Arc::new(
            keys.iter()
                .map(|(team, key)| {
                    format!(
                        "GET {SEARCH} HTTP/1.1\r\nHost: bench\r\nX-Api-Key: {key}\r\nX-Team-ID: {team}\r\n\r\n"
                    )
                    .into_bytes()
                })
                .collect(),
        );
        let mut stream = TcpStream::connect(addrs[0]).await.expect("connect");
        stream.write_all(&requests[0]).await.expect("write");
        let mut buf = Vec::new();
        let (status, search_len) = read_response(&mut stream, &mut buf).await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&buf));
        drop(stream);
        println!(
            "postgres: 2 replicas (cardex serve processes, JSON logs to files), {PG_TEAMS} teams, {total} requests per round over {connections} connections"
        );
        drive(&addrs, requests.clone(), connections, connections * 50, search_len).await;
        let mut best = (0.0f64, u32::MAX);
        for _ in 0..ROUNDS {
            tokio::time::sleep(Duration::from_millis(1100)).await;
            let (took, lat) = drive(&addrs, requests.clone(), connections, total, search_len).await;
            let (rate, p99) = report("postgres", took, lat);
            if rate > best.0 {
                best = (rate, p99);
            }
        }
        steady_team(&addrs, &keys[0]).await;
        println!(
            "postgres 2 replicas: {:.0} searches/s, p99 {:.1} ms (bars: at least 5,000/s, p99 under 20 ms: {})",
            best.0,
            f64::from(best.1) / 1000.0,
            if best.0 >= 5000.0 && best.1 < 20_000 { "met" } else { "NOT met" }
        );
    });
    drop(pg);
    let _ = std::fs::remove_dir_all(&dir);
}
