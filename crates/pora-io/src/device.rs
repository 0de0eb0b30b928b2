//! Facts about the device under a file that benchmarks need: the kernel's read counters, page
//! cache eviction, logical block size.
