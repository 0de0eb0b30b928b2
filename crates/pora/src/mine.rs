//! `pora mine`.

use std::path::PathBuf;

#[derive(clap::Args)]
pub struct MineArgs {
    /// Data files.
    files: Vec<PathBuf>,
}

pub fn run(args: MineArgs) -> anyhow::Result<()> {
    let _ = args.files;
    anyhow::bail!("`pora mine` is not implemented yet")
}
