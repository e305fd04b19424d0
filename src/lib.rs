//! cardex is an embedded, in-process query engine for trading-card data: cards,
//! expansions, variants, printings, prices and population reports, searched with the
//! Lucene-like `q` language of the card-data service (and of the Pokémon TCG API).
//! It loads JSON snapshots into memory, indexes every field in roaring bitmaps, and
//! answers a search with a page of pre-rendered JSON in microseconds.
//!
//! ```
//! use cardex::{Engine, SearchRequest};
//!
//! let engine = Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data"))?;
//! let onepiece = engine.catalog("onepiece").expect("a bundled catalog");
//!
//! // Every card reprinted in PRB01 that is a Super Rare, whatever set it debuted in.
//! let page = onepiece.search(&SearchRequest::new("printings:PRB01 AND rarity_code:SR").select("name"))?;
//! assert_eq!(page.total_count(), 2);
//! assert_eq!(
//!     page.to_json(),
//!     r#"{"data":[{"id":"OP01-013","name":"Roronoa Zoro"},{"id":"OP02-013","name":"Portgas.D.Ace"}],"page":1,"page_size":100,"count":2,"total_count":2}"#
//! );
//!
//! // Japanese Pokémon cards, found by their English rarity through `translation.en`.
//! let pokemon = engine.catalog("pokemon").unwrap();
//! let page = pokemon.search(&SearchRequest::new(r#"rarity:"Illustration Rare""#).lang("ja").select("name"))?;
//! assert_eq!(page.items().collect::<Vec<_>>(), [r#"{"id":"bfl_ja-78","name":"ゼニガメ"}"#]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Core concepts
//!
//! An [`Engine`] holds the catalogs of one snapshot folder, loaded in memory and indexed;
//! a [`Catalog`] answers searches ([`SearchRequest`]) and lookups ([`ItemRequest`]) with a
//! [`Page`] or an [`Item`] of pre-rendered JSON, or with [`Hits`] (a count and record ids)
//! for callers that render their own output. Every failure of a request is an [`Error`],
//! whose variants hold typed errors that say what went wrong and where:
//! [`query::ParseError`] (the `q` text), [`PlanError`] (the query against the catalog's
//! fields), [`ParameterError`] and [`NotFound`]. Opening or reloading a snapshot fails
//! with a [`LoadError`] (which converts into an [`Error`]). A [`LiveEngine`] reloads its
//! snapshot and swaps the new one in atomically, reporting what changed as [`Event`]s.
//!
//! The public modules are the concepts a user works with directly:
//!
//! - [`query`]: the `q` language, parsed into a syntax tree (no catalog knowledge), and
//!   the folding and word rules values are matched by.
//! - [`import`]: public data sets converted into snapshots (the Pokémon TCG API's data).
//! - `webhook` (feature `webhook`): signing webhook deliveries and verifying them on the
//!   receiving side.
//! - `server` (feature `server`): the HTTP service of `cardex serve`.
//! - `generate` (feature `generate`): seeded synthetic snapshots for benchmarks and tests.
//!
//! Inside, the crate is a pipeline: `q` text → syntax tree → plan (resolved against a
//! collection's schema) → bitmaps → a page of pre-rendered JSON, over a store the loader
//! builds. ARCHITECTURE.md draws its layers.
//!
//! # Crate features
//!
//! - **parallel** (enabled by default) — loads files and builds indexes with rayon.
//!   Without it, loading runs on the calling thread and builds the same store.
//! - **cli** (enabled by default) — builds the `cardex` binary (with clap). Embedders can
//!   use `default-features = false`: the library needs no async runtime, HTTP stack or
//!   argument parser.
//! - **server** (enabled by default) — the HTTP service `cardex serve` (tokio, axum,
//!   hyper, tower-http, reqwest for webhook deliveries): module `server`.
//! - **webhook** (enabled by default, part of `server`) — `webhook::sign` and
//!   `webhook::verify` (HMAC-SHA256); no async runtime or HTTP stack.
//! - **generate** (not enabled by default) — `generate`: seeded synthetic snapshots of any
//!   size, shaped like real catalogs, for benchmarks and tests (and `cardex generate`).

// Every public item is documented: the docs are the reference of the query language and
// of the decisions the contract leaves open.
#![deny(missing_docs)]
// Debug output helps embedders when they log requests and plans.
#![warn(missing_debug_implementations)]
// No unsafe code: the whole engine is safe Rust, but for one call into the C library after
// a load (`memory::release_free_memory`, glibc's `malloc_trim`), allowed there alone and
// argued sound where it is.
#![deny(unsafe_code)]

// The public modules: concepts a user works with directly.
/// The checks the fuzz targets run, shared with the seed replay test; not an API.
#[doc(hidden)]
pub mod fuzzing;
#[cfg(feature = "generate")]
pub mod generate;
pub mod import;
pub mod query;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "webhook")]
pub mod webhook;

// The engine's insides, from the top layer down (ARCHITECTURE.md draws them).
mod engine;
mod error;
mod fxhash;
mod index;
mod json;
mod live;
mod load;
mod memory;
mod naming;
mod par;
mod plan;
mod schema;
mod store;
mod text;

/// The README's library example, compiled and run as a doc test so it cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExample;

pub use engine::{
    Catalog, Engine, Hits, Item, ItemRequest, OpenOptions, Page, SearchRequest,
    EXPANSION_ITEM_PARAMETERS, EXPANSION_LIST_PARAMETERS, ITEM_PARAMETERS, LIST_PARAMETERS,
    MAX_PAGE_SIZE,
};
pub use error::{
    error_body, error_code, error_status, Error, NotFound, ParameterError, ParameterErrorKind,
    Result,
};
pub use live::{
    events, CatalogChanges, ChangeKind, Event, EventData, LiveEngine, Marks, ReloadError,
    ReloadReport,
};
pub use load::{LoadError, LoadErrorKind, LoadProgress, RecordAt};
pub use naming::{camel_case, field_kind, snake_case, suggest, FieldKind};
pub use plan::{Holds, PlanError, PlanErrorKind};
pub use query::{ParseError, ParseErrorKind};
pub use schema::FieldInfo;
pub use store::{Collection, StoreKind};
