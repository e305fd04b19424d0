//! The allocator of the `cardex` command (and of `benches/http.rs`, which measures the
//! service as the command runs it): mimalloc, with its options.

/// mimalloc serves the command's allocations. Under glibc's allocator the service's
/// workers contend for its arena locks when one frees what another allocated (a request's
/// buffers, after it waited for its charge): with mimalloc `cargo bench --bench http`
/// serves about a fifth more searches a second (BENCHMARKS.md). Set up by [`configure`].
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Has mimalloc commit memory when it is used and give it back as soon as it is free:
/// with its defaults a loaded engine stays 1.7× as resident as under glibc's allocator
/// for the Pokémon TCG data (what the parallel load freed is kept), with these about
/// 1.1× (SERVER.md, Operations). Being set here, these options no longer follow the
/// `MIMALLOC_EAGER_COMMIT`, `MIMALLOC_ARENA_EAGER_COMMIT` and `MIMALLOC_PURGE_DELAY`
/// environment variables.
pub fn configure() {
    // The numbers of `mi_option_e` in mimalloc 2's `mimalloc.h`, which this build
    // compiles (the `v2` feature): `libmimalloc-sys` names only some of them.
    const EAGER_COMMIT: libmimalloc_sys::mi_option_t = 3;
    const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
    const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    for option in [EAGER_COMMIT, ARENA_EAGER_COMMIT, PURGE_DELAY] {
        // SAFETY: `mi_option_set` takes two integers and stores the value in mimalloc's
        // table of options, for an option number in range (these are); it reads and writes
        // no memory of ours. Its store is not synchronised with readers on other threads,
        // and there are none: this runs first in `main`, before any thread is started.
        // Every test that runs the `cardex` command runs it.
        #[allow(unsafe_code)]
        unsafe {
            libmimalloc_sys::mi_option_set(option, 0);
        }
    }
}
