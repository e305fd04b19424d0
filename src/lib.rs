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
//! The core is a pipeline, and the module tree follows it:
//!
//! - [`query`]: `q` text → [`query::Query`], the syntax tree (no catalog knowledge), with
//!   typed errors that point at the place ([`query::ParseError`]).
//! - [`plan`]: a query resolved against a collection → [`plan::Plan`] (fields found,
//!   values folded and looked up, normalised, ordered by cost) → a bitmap of matches.
//! - [`index`]: the inverted indexes a plan reads ([`index::Index`]): per field, folded
//!   keyword values or text words, numbers, and existence, each with a
//!   [`roaring::RoaringBitmap`] of record ids.
//! - [`store`]: the records of a collection ([`store::Collection`]) as pre-rendered JSON
//!   in default order, so record ids are positions in that order and a page of results
//!   is the first set bits of the result, copied out without re-serialising.
//! - [`load`]: a snapshot folder → catalogs, read in parallel, validated whole.
//! - [`engine`]: [`Engine`] and [`Catalog`], the small public surface: search cards,
//!   get a card, list and search expansions, the cards of an expansion, each answering
//!   with a [`Page`] or an [`Item`].
//! - [`text`]: folding, words and natural order, shared by all of the above.
//! - [`import`]: public data sets converted into snapshots (the Pokémon TCG API's data).
//! - [`live`]: an engine that reloads its snapshot and swaps it in atomically, and what
//!   changed between two loads (prices and pop reports per expansion) as webhook events.
//! - `webhook` (feature `webhook`): signing webhook deliveries and verifying them on the
//!   receiving side.
//!
//! Frontends (the `cardex` binary and its HTTP service, module `server`) sit around this
//! core and depend on it, never the other way.
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

// Every public item is documented: the docs are the reference of the query language and
// of the decisions the contract leaves open.
#![deny(missing_docs)]
// Debug output helps embedders when they log requests and plans.
#![warn(missing_debug_implementations)]
// No unsafe code: the whole engine is safe Rust, but for one call into the C library after
// a load (`memory::release_free_memory`, glibc's `malloc_trim`), allowed there alone and
// argued sound where it is.
#![deny(unsafe_code)]

pub mod engine;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod generate;
pub mod import;
pub mod index;
pub(crate) mod json;
pub mod live;
pub mod load;
pub(crate) mod memory;
pub(crate) mod par;
pub mod plan;
pub mod query;
#[cfg(feature = "server")]
pub mod server;
pub mod store;
pub mod text;
#[cfg(feature = "webhook")]
pub mod webhook;

/// The README's library example, compiled and run as a doc test so it cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExample;

pub use engine::{Catalog, Engine, Hits, Item, ItemRequest, Page, SearchRequest};
pub use error::{Error, NotFound, ParameterError, ParameterErrorKind, Result};
pub use json::write::Include;
pub use load::{LoadError, LoadErrorKind};
