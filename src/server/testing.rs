//! What the server's unit tests share: scratch folders and a served router.

use std::net::SocketAddr;
use std::path::PathBuf;

use axum::Router;

/// A fresh, empty folder for one test: `cardex-<module>-<name>-<pid>` under the system's
/// temporary folder.
pub(crate) fn scratch(module: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cardex-{module}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A multi-threaded runtime with every driver, for tests that serve and request.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Serves `app` on a free port of 127.0.0.1 (on the current runtime); returns where.
pub(crate) async fn serve(app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}
