//! A webhook receiver for `cardex serve --webhooks FILE`: verifies each delivery's
//! `X-Service-Signature` with [`cardex::webhook::verify`], answers 400 with the reason when
//! it fails, skips events it has already seen (deliveries are at least once), and prints
//! each new event on stdout, one JSON line each.
//!
//! ```sh
//! cargo run --example webhook_receiver -- 127.0.0.1:9000 whsec_your_secret_here
//! ```
//!
//! Then point a subscription of the webhooks file at `http://127.0.0.1:9000/hooks` with the
//! same secret. A real receiver would then fetch fresh prices with the card search, e.g.
//! `GET /pokemon/v1/cards?q=expansion_id:sv1&include=prices`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use cardex::webhook::{verify, DEFAULT_TOLERANCE, SIGNATURE_HEADER};
use cardex::Event;

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(addr), Some(secret)) = (args.next(), args.next()) else {
        eprintln!("usage: webhook_receiver HOST:PORT SECRET");
        std::process::exit(2);
    };
    let seen: Arc<Mutex<HashSet<String>>> = Arc::default();
    let app = axum::Router::new().fallback(post(move |headers: HeaderMap, body: Bytes| {
        let (secret, seen) = (secret.clone(), seen.clone());
        async move {
            let signature = headers
                .get(SIGNATURE_HEADER)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            // Verify the raw bytes first; parse only what is genuine.
            if let Err(e) = verify(
                signature,
                &body,
                &secret,
                SystemTime::now(),
                DEFAULT_TOLERANCE,
            ) {
                eprintln!("refused a delivery: {e}");
                return (StatusCode::BAD_REQUEST, e.to_string());
            }
            let event: Event = match serde_json::from_slice(&body) {
                Ok(event) => event,
                Err(e) => return (StatusCode::BAD_REQUEST, format!("not an event: {e}")),
            };
            if seen.lock().unwrap().insert(event.id.clone()) {
                println!("{}", event.to_json());
            } else {
                eprintln!("already seen {}: acknowledged again", event.id);
            }
            (StatusCode::OK, String::new())
        }
    }));
    let listener = tokio::net::TcpListener::bind(&addr).await.expect("bind");
    eprintln!(
        "receiving on http://{}",
        listener.local_addr().expect("addr")
    );
    axum::serve(listener, app).await.expect("serve");
}
