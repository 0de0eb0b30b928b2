//! `pora bench`.

use std::path::PathBuf;

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Data files.
    files: Vec<PathBuf>,
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    let _ = args.files;
    anyhow::bail!("`pora bench` is not implemented yet")
}
