//! `pora doctor`.

use std::path::PathBuf;

#[derive(clap::Args)]
pub struct DoctorArgs {
    /// Data files.
    files: Vec<PathBuf>,
}

pub fn run(args: DoctorArgs) -> anyhow::Result<()> {
    let _ = args.files;
    anyhow::bail!("`pora doctor` is not implemented yet")
}
