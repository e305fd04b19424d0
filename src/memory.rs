//! Giving back to the system the memory a load freed.
//!
//! A load allocates and frees a great deal on its worker threads: read buffers, per-chunk
//! tables and posting buffers, sort keys. glibc keeps freed blocks in its arenas for reuse,
//! and their pages stay resident: after a million-card load, anything from a few MB to over
//! 100 MB, depending on how the threads' allocations interleave. The engine then holds
//! more resident memory than it uses, by a different amount from one run to the next.
//! [`release_free_memory`] asks the allocator to give the free pages back.

/// Returns to the system the free memory the C allocator keeps, as far as it can: on
/// GNU/Linux, glibc's `malloc_trim(0)`, which releases the free pages of every arena and
/// the top of each heap. Elsewhere (another C library, another system) it does nothing.
/// Blocks in use are not touched. It costs a walk over the allocator's free lists
/// (milliseconds after a large load).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub(crate) fn release_free_memory() {
    extern "C" {
        fn malloc_trim(pad: usize) -> std::ffi::c_int;
    }
    // SAFETY: on a GNU/Linux target the C library is glibc, whose `malloc_trim` has this
    // signature (`int malloc_trim(size_t pad)`). It takes no pointer and keeps none; it
    // works on the allocator's own state under the allocator's locks, so it may run beside
    // any other thread's malloc and free, as they may beside each other; and it frees no
    // block in use, only pages of free chunks and heap tops. Rust's global allocator on
    // this target is the system allocator, glibc's malloc, unless the program installs
    // another, in which case glibc's arenas simply hold little to give back.
    unsafe {
        malloc_trim(0);
    }
}

/// Returns to the system the free memory the C allocator keeps: nothing to do on this
/// target (see the GNU/Linux version).
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn release_free_memory() {}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::release_free_memory;

    /// This process's resident memory, in KiB.
    fn resident_kib() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").expect("proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS")
    }

    /// Memory freed in small blocks stays resident in the allocator's arenas until it is
    /// released.
    #[test]
    fn freed_small_blocks_go_back_to_the_system() {
        // 128 MiB in blocks of 2 KiB (far below the size glibc maps apart), touched, then
        // freed; a few kept at the end so the freed ones are not at the heap's top alone.
        let mut blocks: Vec<Vec<u8>> = (0..65_536).map(|i| vec![i as u8; 2048]).collect();
        let keep: Vec<Vec<u8>> = (0..64).map(|i| vec![i as u8; 2048]).collect();
        let mut sum = 0u64;
        for b in &blocks {
            sum += u64::from(b[7]);
        }
        blocks.clear();
        blocks.shrink_to_fit();
        let before = resident_kib();
        release_free_memory();
        let after = resident_kib();
        assert!(sum > 0 && keep.len() == 64);
        assert!(
            before.saturating_sub(after) >= 64 * 1024,
            "resident {before} KiB before the release, {after} KiB after"
        );
    }
}
