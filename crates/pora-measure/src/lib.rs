//! Measurements behind the `pora` commands that explain performance, as library code the CLI,
//! the C ABI and the service can share: [`bench`](mod@bench) is the one fio-style random-read pass (used by
//! `pora bench` and by `pora tune`'s raw passes), [`tune`] the method x threads x depth search on
//! the production mining path with its prediction and profile, [`doctor`] turns host facts into
//! explained findings. Printing, flags and charts stay in the `pora` binary.

pub mod bench;
pub mod doctor;
pub mod shards;
pub mod tune;

pub use bench::{BenchResult, MeasureError, MeasureSpec, Progress, Target};
pub use shards::{open_files_as_shards, ShardsError};
