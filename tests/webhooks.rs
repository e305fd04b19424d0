//! Live updates end to end: the real `cardex serve` over a scratch copy of the
//! bundled snapshot, a real webhook receiver on 127.0.0.1 in this process, snapshot
//! changes made on disk, reloads by folder watching and by SIGHUP. Checks the events and
//! their expansion ids, the signatures, refused snapshots, retries through an outage and
//! a restart.

// They run the `cardex` binary, which needs the `cli` feature.
#![cfg(all(feature = "server", feature = "cli"))]

mod serving;
mod support;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use cardex::webhook::{verify, VerifyError, DEFAULT_TOLERANCE};
use serde_json::{json, Value};
use serving::{scratch, Server};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::ServerConfig;

/// A planned answer that is a 200 after four seconds: past a short `timeout_ms`.
const SLOW: u16 = 999;

const SECRET_ALL: &str = "whsec_all_0123456789abcdef";
const SECRET_GRADED: &str = "whsec_graded_0123456789abcdef";

/// One POST the receiver got.
#[derive(Debug, Clone)]
struct Delivery {
    path: String,
    signature: String,
    /// The same, sent as Scrydex names it (`--signature-header X-Scrydex-Signature`).
    scrydex_signature: String,
    content_type: String,
    body: Vec<u8>,
    answered: u16,
    at: Instant,
}

/// A webhook receiver: records every POST and answers with the next planned status
/// (200 once the plan is empty): a 3xx with `Location: /moved`, and [`SLOW`] as a 200
/// after four seconds.
#[derive(Clone, Default)]
struct Receiver {
    got: Arc<Mutex<Vec<Delivery>>>,
    plan: Arc<Mutex<VecDeque<u16>>>,
}

/// A receiver that is down on a port it holds: the port is bound but not listening, so
/// connections to it are refused, and no other socket can take it until the test lets the
/// receiver come up on it.
struct DownReceiver {
    socket: tokio::net::TcpSocket,
    port: u16,
}

impl DownReceiver {
    fn bind() -> DownReceiver {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let port = socket.local_addr().unwrap().port();
        DownReceiver { socket, port }
    }

    /// Starts listening on the held port, answering as `receiver` plans.
    async fn come_up(self, receiver: &Receiver) {
        receiver.listen(self.socket.listen(64).unwrap()).await;
    }
}

impl Receiver {
    async fn listen(&self, listener: tokio::net::TcpListener) {
        let app = self.app();
        tokio::spawn(async move { axum::serve(listener, app).await });
    }

    /// Listens on a free port of 127.0.0.1; returns the port.
    async fn listen_on_loopback(&self) -> u16 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        self.listen(listener).await;
        port
    }

    /// Listens for `https://` deliveries: TLS by rustls with `tls`'s certificate, then the
    /// same routes over hyper's HTTP/1.
    async fn listen_tls(&self, listener: tokio::net::TcpListener, tls: Arc<ServerConfig>) {
        let app = self.app();
        let acceptor = tokio_rustls::TlsAcceptor::from(tls);
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let (acceptor, app) = (acceptor.clone(), app.clone());
                tokio::spawn(async move {
                    // A client that refuses the certificate ends its handshake here.
                    let Ok(stream) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper_util::service::TowerToHyperService::new(app);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
    }

    fn app(&self) -> axum::Router {
        let me = self.clone();
        axum::Router::new().route(
            "/{hook}",
            post(
                move |axum::extract::Path(hook): axum::extract::Path<String>,
                      headers: HeaderMap,
                      body: Bytes| {
                    let me = me.clone();
                    async move {
                        let mut status = me.plan.lock().unwrap().pop_front().unwrap_or(200);
                        let header = |name: &str| {
                            headers
                                .get(name)
                                .map(|v| v.to_str().unwrap().to_string())
                                .unwrap_or_default()
                        };
                        me.got.lock().unwrap().push(Delivery {
                            path: hook,
                            signature: header("x-service-signature"),
                            scrydex_signature: header("x-scrydex-signature"),
                            content_type: header("content-type"),
                            body: body.to_vec(),
                            answered: status,
                            at: Instant::now(),
                        });
                        if status == SLOW {
                            tokio::time::sleep(Duration::from_secs(4)).await;
                            status = 200;
                        }
                        let code = StatusCode::from_u16(status).unwrap();
                        let mut answer = axum::response::IntoResponse::into_response(code);
                        if code.is_redirection() {
                            answer.headers_mut().insert(
                                axum::http::header::LOCATION,
                                axum::http::HeaderValue::from_static("/moved"),
                            );
                        }
                        answer
                    }
                },
            ),
        )
    }

    fn got(&self) -> Vec<Delivery> {
        self.got.lock().unwrap().clone()
    }

    /// Waits until `n` deliveries were answered 2xx.
    async fn wait_for_ok(&self, n: usize) -> Vec<Delivery> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let got = self.got();
            if got.iter().filter(|d| d.answered == 200).count() >= n {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "waited for {n} deliveries: {got:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A scratch copy of the bundled snapshot.
fn snapshot_copy(dir: &Path) -> PathBuf {
    let data = dir.join("data");
    support::copy_tree(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/data")),
        &data,
    );
    data
}

/// Edits the cards of `<data>/<file>` in one write (to a temporary name, then renamed, as
/// a snapshot publisher should).
fn edit_file(data: &Path, file: &str, edit: impl FnOnce(&mut Vec<Value>)) {
    let path = data.join(file);
    let mut cards: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut cards);
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(&cards).unwrap()).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
}

/// Card `id` of `cards`.
fn card<'c>(cards: &'c mut [Value], id: &str) -> &'c mut Value {
    cards
        .iter_mut()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no card {id}"))
}

/// Edits card `id` of `<data>/<file>` alone.
fn edit_card(data: &Path, file: &str, id: &str, edit: impl FnOnce(&mut Value)) {
    edit_file(data, file, |cards| edit(card(cards, id)));
}

fn webhooks_file(dir: &Path, port: u16, retry: Value) -> PathBuf {
    webhooks_file_for(dir, &format!("http://127.0.0.1:{port}"), retry)
}

/// A webhooks file with the two subscriptions at `base` (`scheme://host:port`).
fn webhooks_file_for(dir: &Path, base: &str, retry: Value) -> PathBuf {
    let path = dir.join("webhooks.json");
    let file = json!({
        "subscriptions": [
            {"id": "all", "url": format!("{base}/all"), "secret": SECRET_ALL, "events": ["*"]},
            {"id": "graded", "url": format!("{base}/graded"), "secret": SECRET_GRADED,
             "events": ["onepiece.expansions.prices.graded_updated"]}
        ],
        "retry": retry,
    });
    std::fs::write(&path, serde_json::to_string_pretty(&file).unwrap()).unwrap();
    path
}

/// The server's arguments for webhooks from `hooks`, with the folder watcher off: the
/// tests reload with SIGHUP, when they choose.
fn reload_on_hup_only(hooks: &Path) -> [&str; 4] {
    [
        "--webhooks",
        hooks.to_str().unwrap(),
        "--watch-interval",
        "0",
    ]
}

fn event_of(d: &Delivery) -> Value {
    serde_json::from_slice(&d.body).unwrap()
}

async fn get_json(url: &str) -> (u16, Value) {
    let r = reqwest::get(url).await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_change_sends_exactly_the_right_signed_events() {
    let dir = scratch("events");
    let data = snapshot_copy(&dir);
    let receiver = Receiver::default();
    let port = receiver.listen_on_loopback().await;
    let hooks = webhooks_file(&dir, port, json!({}));
    let server = Server::start_on(
        &data,
        &[
            "--webhooks",
            hooks.to_str().unwrap(),
            "--watch-interval",
            "200",
        ],
    );
    // The folder watcher sees a file replaced: pokemon ddw-3 (its variant has no
    // printings) gets a new raw price → ddw.
    edit_card(&data, "pokemon/cards/ddw.json", "ddw-3", |c| {
        c["variants"][0]["prices"][0]["market"] = json!(10.5);
    });
    receiver.wait_for_ok(1).await;
    // Then one write to onepiece's OP01.json, with changes chosen so that a wrong
    // attribution shows:
    // - OP01-013's second "Normal" variant (printings [PRB01]): a raw price → PRB01 only,
    //   though the card debuted in OP01 and has another "Normal" variant there;
    // - OP01-013's Special Alt Art (printings [OP01]): a graded price → OP01;
    // - OP01-047's pop report → OP01; and a key reordering of a price, which is no change.
    edit_file(&data, "onepiece/cards/OP01.json", |cards| {
        let c = card(cards, "OP01-013");
        c["variants"][2]["prices"][0]["market"] = json!(3.3);
        c["variants"][1]["prices"][1]["market"] = json!(1400.0);
        let c = card(cards, "OP01-047");
        c["variants"][1]["pop_reports"][0]["total"] = json!(9999);
        let price = c["variants"][0]["prices"][0].take();
        let mut reordered = serde_json::Map::new();
        for (k, v) in price.as_object().unwrap().iter().rev() {
            reordered.insert(k.clone(), v.clone());
        }
        c["variants"][0]["prices"][0] = Value::Object(reordered);
    });
    // 4 events for "all", 1 for "graded".
    receiver.wait_for_ok(5).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let deliveries = receiver.got();
    let got_all: Vec<&Delivery> = deliveries.iter().filter(|d| d.path == "all").collect();
    let names: Vec<(String, Vec<String>)> = got_all
        .iter()
        .map(|d| {
            let e = event_of(d);
            (
                e["name"].as_str().unwrap().to_string(),
                serde_json::from_value(e["data"]["expansion_ids"].clone()).unwrap(),
            )
        })
        .collect();
    let owned = |n: &str, ids: &[&str]| {
        (
            n.to_string(),
            ids.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        )
    };
    assert_eq!(
        names,
        [
            owned("pokemon.expansions.prices.raw_updated", &["ddw"]),
            owned("onepiece.expansions.prices.raw_updated", &["PRB01"]),
            owned("onepiece.expansions.prices.graded_updated", &["OP01"]),
            owned("onepiece.expansions.pop_reports.updated", &["OP01"]),
        ],
        "each reload's changes, in kind order"
    );
    let graded: Vec<&Delivery> = deliveries.iter().filter(|d| d.path == "graded").collect();
    assert_eq!(graded.len(), 1);
    assert_eq!(
        event_of(graded[0])["name"],
        "onepiece.expansions.prices.graded_updated"
    );
    // The same event (same id) went to both subscriptions, each signed with its secret.
    assert_eq!(event_of(graded[0]), event_of(got_all[2]));
    let now = SystemTime::now();
    for d in got_all.iter().chain(graded.iter()) {
        let secret = if d.path == "all" {
            SECRET_ALL
        } else {
            SECRET_GRADED
        };
        assert_eq!(d.content_type, "application/json");
        let e = event_of(d);
        assert!(e["id"].as_str().unwrap().starts_with("evt_"));
        assert_eq!(e.as_object().unwrap().len(), 3, "id, name, data: {e}");
        verify(&d.signature, &d.body, secret, now, DEFAULT_TOLERANCE).expect("a valid signature");
        // A tampered body, a wrong secret and a stale clock are refused.
        let mut tampered = d.body.clone();
        let at = tampered.len() - 5;
        tampered[at] ^= 1;
        assert_eq!(
            verify(&d.signature, &tampered, secret, now, DEFAULT_TOLERANCE),
            Err(VerifyError::BadSignature)
        );
        assert_eq!(
            verify(
                &d.signature,
                &d.body,
                "whsec_wrong_0123456789abcdef",
                now,
                DEFAULT_TOLERANCE
            ),
            Err(VerifyError::BadSignature)
        );
        assert!(matches!(
            verify(
                &d.signature,
                &d.body,
                secret,
                now + Duration::from_secs(3600),
                DEFAULT_TOLERANCE
            ),
            Err(VerifyError::Stale { .. })
        ));
    }
    let ids: std::collections::HashSet<String> = got_all
        .iter()
        .map(|d| event_of(d)["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 4, "unique ids");
    // The new data is served.
    let (s, card) = get_json(&server.url("/pokemon/v1/cards/ddw-3?include=prices")).await;
    assert_eq!(s, 200);
    assert_eq!(card["data"]["variants"][0]["prices"][0]["market"], 10.5);
    // A SIGHUP reload of an unchanged folder: no event.
    let reloads = server.log().matches("event=reloaded").count();
    server.signal("HUP");
    let log = server.wait_for("event=reloaded", reloads + 1);
    assert!(log.contains("; 0 events"), "{log}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.got().len(), 5);
    server.stop();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_snapshot_is_refused_and_events_survive_an_outage_and_a_restart() {
    let dir = scratch("outage");
    let data = snapshot_copy(&dir);
    // The receiver is down: its port refuses connections.
    let down = DownReceiver::bind();
    let port = down.port;
    let hooks = webhooks_file(
        &dir,
        port,
        json!({"first_delay_ms": 50, "max_delay_ms": 200, "timeout_ms": 2000}),
    );
    let args = reload_on_hup_only(&hooks);
    let server = Server::start_on(&data, &args);
    // A broken file: the reload is refused with the file named, the old data serves.
    let ddw = data.join("pokemon/cards/ddw.json");
    let good = std::fs::read_to_string(&ddw).unwrap();
    std::fs::write(&ddw, &good[..good.len() / 2]).unwrap();
    server.signal("HUP");
    let log = server.wait_for("event=reload_error", 1);
    assert!(log.contains("ddw.json"), "{log}");
    assert!(log.contains("still serving the previous snapshot"), "{log}");
    let (s, card) = get_json(&server.url("/pokemon/v1/cards/ddw-3?include=prices")).await;
    assert_eq!(s, 200);
    assert_eq!(card["data"]["variants"][0]["prices"][0]["market"], 9.8);
    assert!(!server.log().contains("event=webhook_event"));
    // Repaired with two changes made one after the other, two reloads: two events, both
    // pending while the receiver is down.
    std::fs::write(&ddw, &good).unwrap();
    edit_card(&data, "pokemon/cards/ddw.json", "ddw-3", |c| {
        c["variants"][0]["prices"][0]["market"] = json!(11.0);
    });
    server.signal("HUP");
    server.wait_for("event=webhook_enqueued", 1);
    edit_card(&data, "pokemon/cards/ddw.json", "ddw-3", |c| {
        c["variants"][0]["pop_reports"][0]["total"] = json!(300);
    });
    server.signal("HUP");
    server.wait_for("event=webhook_enqueued", 2);
    let log = server.wait_for("event=webhook_retry", 2);
    assert!(log.contains("could not connect"), "{log}");
    let events: Vec<String> = log
        .lines()
        .filter(|l| l.contains("event=webhook_event"))
        .map(|l| {
            l.split("message=\"")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(events.len(), 2);
    // kill -9 with both deliveries pending.
    drop(server);
    // The receiver comes up, failing with 503 twice before it recovers.
    let receiver = Receiver::default();
    receiver.plan.lock().unwrap().extend([503, 503]);
    down.come_up(&receiver).await;
    let server = Server::start_on(&data, &args);
    let got = receiver.wait_for_ok(2).await;
    let log = server.log();
    assert!(
        log.contains("2 pending deliveries to all in the outbox"),
        "{log}"
    );
    // Per subscription, in order: the first event (two 503s, then 200), then the second.
    let seen: Vec<(String, u16)> = got
        .iter()
        .map(|d| (event_of(d)["id"].as_str().unwrap().to_string(), d.answered))
        .collect();
    assert_eq!(
        seen,
        [
            (events[0].clone(), 503),
            (events[0].clone(), 503),
            (events[0].clone(), 200),
            (events[1].clone(), 200)
        ]
    );
    assert_eq!(
        event_of(&got[0])["name"],
        "pokemon.expansions.prices.raw_updated"
    );
    assert_eq!(
        event_of(&got[3])["name"],
        "pokemon.expansions.pop_reports.updated"
    );
    assert_eq!(event_of(&got[3])["data"]["expansion_ids"], json!(["ddw"]));
    let now = SystemTime::now();
    for d in &got {
        verify(&d.signature, &d.body, SECRET_ALL, now, DEFAULT_TOLERANCE).expect("signed");
    }
    // Retries are signed afresh and spaced out.
    assert!(got[1].at.duration_since(got[0].at) >= Duration::from_millis(25));
    // After a clean restart nothing is delivered again.
    server.stop();
    let server = Server::start_on(&data, &args);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.got().len(), 4);
    assert!(!server.log().contains("restored"));
    server.stop();
    // A change made while the server is down is reported when it starts again.
    edit_card(&data, "pokemon/cards/ddw.json", "ddw-3", |c| {
        let prices = c["variants"][0]["prices"].as_array_mut().unwrap();
        let graded = prices.iter_mut().find(|p| p["type"] == "graded").unwrap();
        graded["market"] = json!(70.0);
    });
    let server = Server::start_on(&data, &args);
    let got = receiver.wait_for_ok(3).await;
    assert!(
        server
            .log()
            .contains("changed while the server was down; 1 events\" events=1"),
        "{}",
        server.log()
    );
    let last = event_of(got.last().unwrap());
    assert_eq!(last["name"], "pokemon.expansions.prices.graded_updated");
    assert_eq!(last["data"]["expansion_ids"], json!(["ddw"]));
    server.stop();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_is_retried_at_least_four_times_before_it_is_given_up() {
    let dir = scratch("give-up");
    let data = snapshot_copy(&dir);
    let receiver = Receiver::default();
    receiver.plan.lock().unwrap().extend([500; 100]);
    let port = receiver.listen_on_loopback().await;
    // Give up as soon as allowed: still one attempt and four retries.
    let hooks = webhooks_file(
        &dir,
        port,
        json!({"first_delay_ms": 10, "max_delay_ms": 40, "give_up_after_secs": 0}),
    );
    // Signed in the header a receiver written for Scrydex reads.
    let mut args = reload_on_hup_only(&hooks).to_vec();
    args.extend(["--signature-header", "X-Scrydex-Signature"]);
    let server = Server::start_on(&data, &args);
    edit_card(&data, "lorcana/cards/cards.json", "lor1-1", |c| {
        c["variants"][0]["prices"][0]["market"] = json!(123.0);
    });
    server.signal("HUP");
    let log = server.wait_for("gave up on", 1);
    assert!(log.contains("after 5 attempts: HTTP 500"), "{log}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let got = receiver.got();
    assert_eq!(got.len(), 5, "{got:?}");
    assert!(got.iter().all(|d| d.answered == 500));
    assert_eq!(
        event_of(&got[0])["name"],
        "lorcana.expansions.prices.raw_updated"
    );
    let now = std::time::SystemTime::now();
    for d in &got {
        assert!(d.signature.is_empty(), "{d:?}");
        verify(
            &d.scrydex_signature,
            &d.body,
            SECRET_ALL,
            now,
            DEFAULT_TOLERANCE,
        )
        .expect("signed in X-Scrydex-Signature");
    }
    // Given up means done: a restart does not send it again.
    server.stop();
    let server = Server::start_on(&data, &args);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.got().len(), 5);
    server.stop();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A certificate authority made for one test, and a server certificate it signed for
/// `127.0.0.1` and `localhost`: the CA's PEM, and the server's rustls configuration.
fn test_ca_and_server() -> (String, Arc<ServerConfig>) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "cardex test CA");
    let ca = ca.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let server = rcgen::CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()])
        .unwrap()
        .signed_by(&key, &ca, &ca_key)
        .unwrap();
    let chain = vec![CertificateDer::from(server.der().to_vec())];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let config = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    (ca.pem(), Arc::new(config))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_receivers_get_signed_deliveries_and_an_unknown_ca_is_a_retried_failure() {
    let dir = scratch("https");
    let data = snapshot_copy(&dir);
    let (ca_pem, tls) = test_ca_and_server();
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, &ca_pem).unwrap();
    let receiver = Receiver::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    receiver.listen_tls(listener, tls).await;
    let hooks = webhooks_file_for(
        &dir,
        &format!("https://localhost:{port}"),
        json!({"first_delay_ms": 50, "max_delay_ms": 100, "timeout_ms": 2000}),
    );
    let args = reload_on_hup_only(&hooks);
    // Without the private CA the receiver's certificate is not trusted: every attempt
    // fails with the reason logged, and the event stays pending.
    let server = Server::start_on(&data, &args);
    edit_card(&data, "pokemon/cards/ddw.json", "ddw-3", |c| {
        c["variants"][0]["prices"][0]["market"] = json!(12.5);
    });
    server.signal("HUP");
    let log = server.wait_for("event=webhook_retry", 2);
    assert!(log.to_ascii_lowercase().contains("certificate"), "{log}");
    assert!(receiver.got().is_empty());
    server.stop();
    // With it, the pending event is delivered over TLS, signed.
    let mut trusted = args.to_vec();
    trusted.extend(["--webhook-ca", ca.to_str().unwrap()]);
    let server = Server::start_on(&data, &trusted);
    let got = receiver.wait_for_ok(1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].path, "all");
    assert_eq!(
        event_of(&got[0])["name"],
        "pokemon.expansions.prices.raw_updated"
    );
    verify(
        &got[0].signature,
        &got[0].body,
        SECRET_ALL,
        SystemTime::now(),
        DEFAULT_TOLERANCE,
    )
    .expect("signed");
    server.stop();
    // A CA file that holds no certificate, or a certificate TLS cannot read, stops the
    // server at start (exit 2), naming the file, before the state is opened.
    let files = |dir: &std::path::Path| -> Vec<(std::path::PathBuf, Vec<u8>)> {
        let mut all: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
            .collect();
        all.sort();
        all
    };
    for (text, says) in [
        ("not a certificate", "holds no certificate"),
        (
            "-----BEGIN CERTIFICATE-----\nAAAAAAAA\n-----END CERTIFICATE-----\n",
            "a certificate in it cannot be used",
        ),
    ] {
        std::fs::write(&ca, text).unwrap();
        let before = files(&dir);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_cardex"))
            .args([
                "serve",
                "--data",
                data.to_str().unwrap(),
                "--addr",
                "127.0.0.1:0",
            ])
            .args(&trusted)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("ca.pem"), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(stderr.contains("--webhook-ca takes a PEM file"), "{stderr}");
        assert_eq!(files(&dir), before, "nothing is written");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The id of each `webhook_event` line of `log`.
fn event_ids(log: &str) -> Vec<String> {
    log.lines()
        .filter(|l| l.contains("event=webhook_event"))
        .filter_map(|l| Some(l.split("message=\"").nth(1)?.split(' ').next()?.to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_on_postgres_make_one_event_per_change_and_take_over_a_dead_holders_delivery() {
    let Some(pg) = serving::postgres::Cluster::start("webhooks") else {
        return;
    };
    let url = pg.database("cardex");
    let dir = scratch("pg-events");
    let data = snapshot_copy(&dir);
    let receiver = Receiver::default();
    // The first attempt fails; the retry waits 2 to 4 s (the first delay with jitter).
    receiver.plan.lock().unwrap().push_back(503);
    let port = receiver.listen_on_loopback().await;
    let hooks = webhooks_file(
        &dir,
        port,
        json!({"first_delay_ms": 4000, "max_delay_ms": 4000, "timeout_ms": 1000}),
    );
    let spool = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let (spool_a, spool_b) = (spool("a.spool.db"), spool("b.spool.db"));
    let args = |spool: &str| {
        vec![
            "--open".to_string(),
            "--state".into(),
            url.clone(),
            "--spool".into(),
            spool.to_string(),
            "--webhooks".into(),
            hooks.to_str().unwrap().into(),
            "--watch-interval".into(),
            "200".into(),
        ]
    };
    let (args_a, args_b) = (args(&spool_a), args(&spool_b));
    let a = Server::start_on(
        &data,
        &args_a.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let b = Server::start_on(
        &data,
        &args_b.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    // One change; both replicas see it, reload and publish it...
    edit_card(&data, "pokemon/cards/ddw.json", "ddw-3", |c| {
        c["variants"][0]["prices"][0]["market"] = json!(12.5);
    });
    let (log_a, log_b) = (
        a.wait_for("event=webhook_enqueued", 1),
        b.wait_for("event=webhook_enqueued", 1),
    );
    // ...as the same event, which the database holds once: one replica wrote its
    // delivery, the other found it there.
    let (ids_a, ids_b) = (event_ids(&log_a), event_ids(&log_b));
    assert_eq!(ids_a.len(), 1, "{log_a}");
    assert_eq!(ids_a, ids_b);
    let enqueued: Vec<bool> = [&log_a, &log_b]
        .iter()
        .map(|log| log.contains("event=webhook_enqueued message=\"1 deliveries\""))
        .collect();
    assert_eq!(
        enqueued.iter().filter(|&&e| e).count(),
        1,
        "{log_a}\n{log_b}"
    );
    // One replica holds the delivery: its attempt fails, and it dies while waiting to
    // retry.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (mut holder, survivor) = loop {
        if a.log().contains("event=webhook_retry") {
            break (a, b);
        }
        if b.log().contains("event=webhook_retry") {
            break (b, a);
        }
        assert!(Instant::now() < deadline, "no attempt was made");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    holder.child.kill().unwrap();
    holder.child.wait().unwrap();
    assert_eq!(receiver.got().len(), 1, "one attempt, by one replica");
    // The other takes the delivery over once the lease runs out, and delivers it.
    let got = receiver.wait_for_ok(1).await;
    let log = survivor.wait_for("event=webhook_delivered", 1);
    assert!(log.contains("(attempt 2)"), "{log}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let got_ids: Vec<(String, u16)> = receiver
        .got()
        .iter()
        .map(|d| (event_of(d)["id"].as_str().unwrap().to_string(), d.answered))
        .collect();
    assert_eq!(
        got_ids,
        [(ids_a[0].clone(), 503), (ids_a[0].clone(), 200)],
        "{got:?}"
    );
    verify(
        &got[1].signature,
        &got[1].body,
        SECRET_ALL,
        SystemTime::now(),
        DEFAULT_TOLERANCE,
    )
    .expect("signed");
    survivor.stop();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A reload whose events the outbox cannot take (the database is down) is refused, the
/// watcher's and a SIGHUP's alike: the old snapshot keeps serving, and once the database
/// is back the watcher publishes the change, as one event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_the_outbox_refuses_keeps_the_old_snapshot_and_is_published_later() {
    let Some(pg) = serving::postgres::Cluster::start("refused-reload") else {
        return;
    };
    let url = pg.database("cardex");
    let dir = scratch("refused-reload");
    let data = snapshot_copy(&dir);
    let receiver = Receiver::default();
    let port = receiver.listen_on_loopback().await;
    let hooks = webhooks_file(
        &dir,
        port,
        json!({"first_delay_ms": 50, "max_delay_ms": 100, "timeout_ms": 2000}),
    );
    let spool = dir.join("spool.db");
    let server = Server::start_on(
        &data,
        &[
            "--open",
            "--state",
            &url,
            "--spool",
            spool.to_str().unwrap(),
            "--webhooks",
            hooks.to_str().unwrap(),
            "--watch-interval",
            "200",
        ],
    );
    let client = reqwest::Client::new();
    let market = || async {
        let card: Value = client
            .get(server.url("/pokemon/v1/cards/ddw-3?include=prices"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        card["data"]["variants"][0]["prices"][0]["market"].clone()
    };
    let before = market().await;
    assert!(before.is_number() && before != json!(12.5), "{before}");
    pg.stop();
    edit_card(&data, "pokemon/cards/ddw.json", "ddw-3", |c| {
        c["variants"][0]["prices"][0]["market"] = json!(12.5);
    });
    let refused = "the webhook outbox refused the events";
    server.wait_for(refused, 1);
    server.signal("HUP");
    server.wait_for(refused, 2);
    assert_eq!(market().await, before, "the old snapshot serves");
    assert!(receiver.got().is_empty());
    pg.start_again();
    let got = receiver.wait_for_ok(1).await;
    assert_eq!(market().await, json!(12.5));
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(receiver.got().len(), 1, "one event: {got:?}");
    assert_eq!(
        event_of(&got[0])["name"],
        "pokemon.expansions.prices.raw_updated"
    );
    server.stop();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A redirect is a failed attempt, not followed (a receiver's address is what its
/// subscription says), and an attempt past `timeout_ms` is a failure that is retried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_are_not_followed_and_slow_answers_time_out() {
    let dir = scratch("redirect-timeout");
    let data = snapshot_copy(&dir);
    let receiver = Receiver::default();
    receiver.plan.lock().unwrap().extend([307, SLOW]);
    let port = receiver.listen_on_loopback().await;
    let hooks = webhooks_file(
        &dir,
        port,
        json!({"first_delay_ms": 50, "max_delay_ms": 100, "timeout_ms": 1500}),
    );
    let server = Server::start_on(&data, &reload_on_hup_only(&hooks));
    edit_card(&data, "pokemon/cards/ddw.json", "ddw-3", |c| {
        c["variants"][0]["prices"][0]["market"] = json!(12.5);
    });
    server.signal("HUP");
    let got = receiver.wait_for_ok(1).await;
    let log = server.wait_for("event=webhook_delivered", 1);
    let answered: Vec<(String, u16)> = got.iter().map(|d| (d.path.clone(), d.answered)).collect();
    assert_eq!(
        answered,
        [
            ("all".to_string(), 307),
            ("all".into(), SLOW),
            ("all".into(), 200)
        ],
        "nothing went to /moved"
    );
    assert!(log.contains("attempt 1 failed (HTTP 307)"), "{log}");
    assert!(log.contains("attempt 2 failed (timed out"), "{log}");
    assert!(log.contains("(attempt 3)"), "{log}");
    server.stop();
    std::fs::remove_dir_all(&dir).unwrap();
}
