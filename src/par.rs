//! The two ways of mapping over work items: with rayon (feature `parallel`, the default)
//! or on the calling thread. Results come back in input order either way, so what is built
//! never depends on the thread count.

/// Maps `f` over `items`, in parallel when the `parallel` feature is on.
#[cfg(feature = "parallel")]
pub(crate) fn map<T: Send, U: Send>(items: Vec<T>, f: impl Fn(T) -> U + Sync + Send) -> Vec<U> {
    use rayon::prelude::*;
    items.into_par_iter().map(f).collect()
}

/// Maps `f` over `items`, in parallel when the `parallel` feature is on.
#[cfg(not(feature = "parallel"))]
pub(crate) fn map<T: Send, U: Send>(items: Vec<T>, f: impl Fn(T) -> U + Sync + Send) -> Vec<U> {
    items.into_iter().map(f).collect()
}

/// Maps `f` over a slice, in parallel when the `parallel` feature is on.
#[cfg(feature = "parallel")]
pub(crate) fn map_slice<T: Sync, U: Send>(
    items: &[T],
    f: impl Fn(&T) -> U + Sync + Send,
) -> Vec<U> {
    use rayon::prelude::*;
    items.par_iter().map(f).collect()
}

/// Maps `f` over a slice, in parallel when the `parallel` feature is on.
#[cfg(not(feature = "parallel"))]
pub(crate) fn map_slice<T: Sync, U: Send>(
    items: &[T],
    f: impl Fn(&T) -> U + Sync + Send,
) -> Vec<U> {
    items.iter().map(f).collect()
}

/// Appends `f(i, &items[i])` for every item to `out`, computed (and written in place) in
/// parallel when the `parallel` feature is on.
#[cfg(feature = "parallel")]
pub(crate) fn extend_indexed<T: Sync, U: Send>(
    out: &mut Vec<U>,
    items: &[T],
    f: impl Fn(usize, &T) -> U + Sync + Send,
) {
    use rayon::prelude::*;
    out.par_extend(items.par_iter().enumerate().map(|(i, t)| f(i, t)));
}

/// Appends `f(i, &items[i])` for every item to `out`, computed (and written in place) in
/// parallel when the `parallel` feature is on.
#[cfg(not(feature = "parallel"))]
pub(crate) fn extend_indexed<T: Sync, U: Send>(
    out: &mut Vec<U>,
    items: &[T],
    f: impl Fn(usize, &T) -> U + Sync + Send,
) {
    out.extend(items.iter().enumerate().map(|(i, t)| f(i, t)));
}

/// Runs both closures, in parallel when the `parallel` feature is on.
#[cfg(feature = "parallel")]
pub(crate) fn join<A: Send, B: Send>(
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    rayon::join(a, b)
}

/// Runs both closures, in parallel when the `parallel` feature is on.
#[cfg(not(feature = "parallel"))]
pub(crate) fn join<A: Send, B: Send>(
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    (a(), b())
}

/// Sorts a slice by a key comparison, in parallel when the `parallel` feature is on.
#[cfg(feature = "parallel")]
pub(crate) fn sort_by<T: Send>(items: &mut [T], cmp: impl Fn(&T, &T) -> std::cmp::Ordering + Sync) {
    use rayon::prelude::*;
    items.par_sort_unstable_by(cmp);
}

/// Sorts a slice by a key comparison, in parallel when the `parallel` feature is on.
#[cfg(not(feature = "parallel"))]
pub(crate) fn sort_by<T: Send>(items: &mut [T], cmp: impl Fn(&T, &T) -> std::cmp::Ordering + Sync) {
    items.sort_unstable_by(cmp);
}

/// Buffers lent to parallel tasks and given back, so that a load reuses a few large
/// buffers instead of allocating and freeing one per task. Freeing large blocks in the
/// middle of a load makes the system allocator (glibc) raise its mmap threshold, after
/// which later transient buffers come from the heap and their pages are kept after the
/// load: reusing them keeps resident memory close to what the engine holds.
#[derive(Debug, Default)]
pub(crate) struct Pool<T> {
    spare: std::sync::Mutex<Vec<T>>,
}

impl<T: Default> Pool<T> {
    /// A buffer: a spare one, or a new one.
    pub(crate) fn take(&self) -> T {
        self.spare
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop()
            .unwrap_or_default()
    }

    /// Gives a buffer back for another task.
    pub(crate) fn give(&self, buffer: T) {
        self.spare
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(buffer);
    }
}
