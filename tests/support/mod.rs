//! Helpers shared by the integration tests: the bundled snapshot, searches that return
//! record ids, and an independent naive evaluator of the `q` language ([`oracle`]).
#![allow(dead_code)]

pub mod oracle;

use std::path::PathBuf;
use std::sync::OnceLock;

use cardex::{Catalog, Engine, Page, SearchRequest};

/// The bundled `data/` snapshot.
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data")
}

/// The engine over `data/`, loaded once per test binary.
pub fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| Engine::open(data_dir()).expect("the bundled snapshot loads"))
}

/// A catalog of the bundled snapshot.
pub fn catalog(name: &str) -> &'static Catalog {
    engine()
        .catalog(name)
        .unwrap_or_else(|| panic!("no catalog {name}"))
}

/// The `id`s of a page's records, in page order.
pub fn page_ids(catalog: &Catalog, page: &Page) -> Vec<String> {
    page.record_ids()
        .iter()
        .map(|&i| catalog.cards().record_id(i).into_owned())
        .collect()
}

/// The ids of every card matching `q` (all pages), in result order.
#[track_caller]
pub fn ids(catalog_name: &str, q: &str) -> Vec<String> {
    ids_with(catalog_name, SearchRequest::new(q))
}

/// The ids of every card matching a request (all pages), in result order.
#[track_caller]
pub fn ids_with(catalog_name: &str, req: SearchRequest<'_>) -> Vec<String> {
    let catalog = catalog(catalog_name);
    all_pages(catalog, req, page_ids)
}

/// Runs a search page by page until the end and collects what `f` extracts.
#[track_caller]
pub fn all_pages(
    catalog: &Catalog,
    req: SearchRequest<'_>,
    f: impl Fn(&Catalog, &Page) -> Vec<String>,
) -> Vec<String> {
    let mut out = Vec::new();
    for page in 1.. {
        let p = catalog
            .search(&req.page(page))
            .unwrap_or_else(|e| panic!("{:?} failed:\n{e}", req.q));
        if p.count() == 0 {
            assert_eq!(
                out.len() as u64,
                p.total_count(),
                "pages add up to total_count"
            );
            break;
        }
        out.extend(f(catalog, &p));
    }
    out
}

/// The error a search gives, rendered.
#[track_caller]
pub fn search_error(catalog_name: &str, req: SearchRequest<'_>) -> String {
    match catalog(catalog_name).search(&req) {
        Ok(page) => panic!("{:?} succeeded with {} results", req.q, page.total_count()),
        Err(e) => e.to_string(),
    }
}

/// Parses one record JSON text.
pub fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).expect("valid JSON")
}

/// A fresh temporary folder, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("cardex-test-{label}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }

    pub fn path(&self) -> &std::path::Path {
        &self.0
    }

    /// Writes `text` at `rel`, creating folders.
    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.0.join(rel);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create folders");
        std::fs::write(&path, text).expect("write file");
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Copies a folder tree.
pub fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("create");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}
