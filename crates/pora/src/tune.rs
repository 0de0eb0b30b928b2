//! `pora tune`.

use std::path::PathBuf;

#[derive(clap::Args)]
pub struct TuneArgs {
    /// Data files.
    files: Vec<PathBuf>,
}

pub fn run(args: TuneArgs) -> anyhow::Result<()> {
    let _ = args.files;
    anyhow::bail!("`pora tune` is not implemented yet")
}
