//! The allocator of the `cardex` command (and of `benches/http.rs`, which measures the
//! service as the command runs it): mimalloc, with its options.

/// mimalloc serves the command's allocations. Under glibc's allocator the service's
/// workers contend for its arena locks when one frees what another allocated (a request's
/// buffers, after it waited for its charge): perf showed 6% of a metered search server's
/// time in those locks' waits and wakes. Set up by [`configure`].
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Has mimalloc commit memory when it is used, and give back what is freed at the earliest
/// 10 ms after it is freed (mimalloc's default delay; 100 ms for whole segments), when
/// the thread that holds it next allocates, frees or collects; [`give_back`] collects on
/// every thread of a load once it is over. With mimalloc's defaults a loaded engine stays
/// 1.7× as resident as under glibc's allocator for the Pokémon TCG data (what the
/// parallel load freed is kept), with these and [`give_back`] about 1.0× (SERVER.md,
/// Operations). A delay of 0 (freed memory given back at once) holds no less, but then
/// the service's workers give back and fault in again the pages of their requests'
/// buffers all the time: in `cargo bench --bench http` the delay serves about a tenth
/// more searches a second. Being set here, these options no longer follow the
/// `MIMALLOC_EAGER_COMMIT`, `MIMALLOC_ARENA_EAGER_COMMIT` and `MIMALLOC_PURGE_DELAY`
/// environment variables.
pub fn configure() {
    // The numbers of `mi_option_e` in mimalloc 2's `mimalloc.h`, which this build
    // compiles (the `v2` feature): `libmimalloc-sys` names only some of them.
    const EAGER_COMMIT: libmimalloc_sys::mi_option_t = 3;
    const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
    const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    for (option, value) in [
        (EAGER_COMMIT, 0),
        (ARENA_EAGER_COMMIT, 0),
        (PURGE_DELAY, 10),
    ] {
        // SAFETY: `mi_option_set` takes two integers and stores the value in mimalloc's
        // table of options, for an option number in range (these are); it reads and writes
        // no memory of ours. Its store is not synchronised with readers on other threads,
        // and there are none: this runs first in `main`, before any thread is started.
        // Every test that runs the `cardex` command runs it.
        #[allow(unsafe_code)]
        unsafe {
            libmimalloc_sys::mi_option_set(option, value);
        }
    }
}

/// Gives back to the system the memory a load freed, on each of rayon's threads (which
/// sleep once the load is over, so would never reach their delayed purges) and on the
/// calling thread. `cardex serve` calls it after each load (`ServeConfig::after_load`).
#[cfg_attr(not(feature = "server"), allow(dead_code))]
pub fn give_back() {
    #[cfg(feature = "parallel")]
    rayon::broadcast(|_| collect());
    collect();
}

/// Frees what this thread's heap holds free and purges it, delay or not.
#[cfg_attr(not(feature = "server"), allow(dead_code))]
fn collect() {
    // SAFETY: `mi_collect` takes a plain bool; it works on the calling thread's own heap
    // and on mimalloc's process-wide arenas under their own synchronisation, and reads or
    // writes no memory of ours: any thread may call it at any time. The server's tests
    // run the `cardex` command, which calls it after every load.
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_collect(true);
    }
}
