//! cardex
#![deny(missing_docs)]
pub mod engine;
pub mod error;
pub mod index;
pub(crate) mod json;
pub mod load;
pub(crate) mod par;
pub mod plan;
pub mod query;
pub mod store;
pub mod text;

pub use engine::{Catalog, Engine, Item, ItemRequest, Page, SearchRequest};
pub use error::{Error, NotFound, ParameterError, ParameterErrorKind, Result};
pub use json::write::Include;
pub use load::LoadError;
