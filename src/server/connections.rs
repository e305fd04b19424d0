//! Connections: the accept loop on hyper's HTTP/1 with a header-read timeout and
//! hyper-util's graceful shutdown, and the signals that start the shutdown.

use std::io;
use std::time::Duration;

use axum::Router;

use super::config::ServeConfig;
use super::log;
use super::metering::ClientAddr;

/// How the connections stood when the server stopped accepting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drained {
    /// Connections open when the shutdown signal came.
    pub in_flight: usize,
    /// Of those, the ones still open when the grace period ran out.
    pub cut_off: usize,
}

/// Accepts connections on `listener` and serves `app` on each with hyper's HTTP/1 (with
/// [`ServeConfig::header_read_timeout`]) until `shutdown` completes; then stops accepting,
/// lets every request in flight finish (idle keep-alive connections are closed at once)
/// for at most [`ServeConfig::shutdown_grace`], and returns. [`run`](super::run()) passes SIGINT/SIGTERM
/// as `shutdown`; the throughput bench serves through this too.
pub async fn serve_connections(
    listener: tokio::net::TcpListener,
    app: Router,
    config: &ServeConfig,
    shutdown: impl std::future::Future<Output = ()>,
) -> Drained {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(config.header_read_timeout);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, client) = match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of file descriptors and the like: say so, breathe, go on.
                        log::event("accept_error", &e.to_string());
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                // Each request carries its client's address (the `/v2` limit without a key).
                let app = tower::ServiceExt::map_request(app.clone(), move |mut request: hyper::Request<hyper::body::Incoming>| {
                    request.extensions_mut().insert(ClientAddr(client));
                    request
                });
                let service = hyper_util::service::TowerToHyperService::new(app);
                let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
                // A connection error (a client gone, a header read timeout) ends only that
                // connection; hyper has already answered what it could parse.
                tokio::spawn(connection);
            }
            _ = &mut shutdown => break,
        }
    }
    drop(listener);
    let in_flight = graceful.count();
    let cut_off = match tokio::time::timeout(config.shutdown_grace, graceful.shutdown()).await {
        Ok(()) => 0,
        Err(_) => in_flight.max(1),
    };
    Drained { in_flight, cut_off }
}

/// The shutdown signals, SIGINT and SIGTERM, listened for from the moment this returns:
/// a signal that comes while the server starts (the snapshot loading) is kept, and the
/// server stops without serving, rather than being killed by the signal's default action.
pub(super) fn shutdown_signal() -> io::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut term = signal(SignalKind::terminate())?;
        Ok(async move {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = term.recv() => {}
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
        })
    }
}
