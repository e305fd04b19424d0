//! JSON as cardex needs it: a borrowed tree for snapshot records ([`Node`]), a compact
//! writer that marks the members a request may leave out ([`write`]), and a walker over
//! that compact output ([`walk`]) used to index records and to read single fields back.
//!
//! Records are parsed once with serde into [`Node`] (strings borrowed from the file where
//! they hold no escapes, objects as ordered member lists, so keys keep their order), then
//! written once in compact form. The compact text is what cardex serves and what it
//! indexes: the served card and the searched card are the same bytes.

mod node;
pub(crate) mod walk;
pub(crate) mod write;

pub(crate) use node::Node;
