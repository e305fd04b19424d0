//! JSON as cardex needs it: a one-pass transcoder from snapshot records to compact JSON
//! ([`transcode`], noting where the parts the load rules need are), the compact writer and
//! the marks of the members a request may leave out ([`write`]), and a walker over that
//! compact output ([`walk`]) used to index records and to read single fields back.
//!
//! Records are read once (by hand, or by serde_json where the hand-written reader gives
//! up) and written once in compact form, with no tree in between; keys keep their order. The compact text is what cardex serves and what it
//! indexes: the served card and the searched card are the same bytes.

pub(crate) mod scan;
pub(crate) mod transcode;
pub(crate) mod walk;
pub(crate) mod write;
