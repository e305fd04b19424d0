//! The elements of arrays of objects in cardex's compact JSON: where each object that is
//! an element of an array starts and ends, at which dotted path, and inside which other
//! such element. The store numbers these elements to answer nested queries
//! (`variants.prices:(currency:USD AND market>=100)`); the walk that indexes the records
//! reports them (see [`super::walk::Visit::element_open`]), so the text is read once.
//!
//! Arrays are looked through: the elements of an array of arrays of objects are elements
//! at the array's path.

/// Receives the elements of a record, properly nested: every `open` is matched by one
/// `close` before the enclosing element's.
pub(crate) trait ElementVisit {
    /// An object that is an element of an array at `path` (dotted, keys as written)
    /// starts at byte `start`; `number` numbers the paths of one walk in the order it
    /// first meets them (0, 1, ...), so a path is known again without comparing text.
    fn open(&mut self, path: &str, number: u32, start: usize);
    /// The element opened last ends just before byte `end`.
    fn close(&mut self, end: usize);
    /// An object at `path` (not the record itself) that is not an element of an array.
    fn plain(&mut self, path: &str) {
        let _ = path;
    }
}
