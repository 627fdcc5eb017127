//! Links the `strata` binary as a fixed-address executable on Linux.
//!
//! As a position-independent executable (rustc's default), the dynamic loader
//! writes every pointer of the binary's 4 MB of relocated read-only data
//! (DataFusion's and arrow's vtables and tables) at each start: ~224k
//! relocations and ~1,000 copy-on-write page faults, about 6 ms of the 10-16 ms
//! that `strata --version` took, paid again by every `strata sql` a script runs.
//! Linked at a fixed address, that data is mapped from the page cache as it is
//! and only the pages used are touched (`--version` 9.7 → 3.7 ms, `strata sql
//! "SELECT 1"` 16.0 → 10.5 ms on the 2-core development machine, 2026-11-27).
//!
//! The cost is that the executable's own code is not at a random address
//! (the stack, heap, memory maps and shared libraries still are). A build that
//! wants it anyway sets `STRATA_PIE=1`.

fn main() {
    println!("cargo:rerun-if-env-changed=STRATA_PIE");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let pie_wanted = std::env::var("STRATA_PIE").is_ok_and(|v| v == "1");
    if linux && !pie_wanted {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
