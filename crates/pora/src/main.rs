//! `pora`: the thin command-line edge. Parses flags, calls the library crates, prints results.
//! Library errors are typed; `anyhow` is used only here to add context and print them.

mod bench;
mod common;
mod create;
mod doctor;
mod hash;
mod info;
mod mine;
mod plot;
mod serve;
mod tune;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Read a proof-of-random-access shard as fast as the disk allows.
#[derive(Parser)]
#[command(name = "pora", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write an es-node v1 data file for one shard (random, zero or sparse).
    Create(create::CreateArgs),
    /// Print data-file headers and whether the files form a complete shard.
    Info(info::InfoArgs),
    /// Compute one nonce from the real files, exactly as es-node does.
    Hash(hash::HashArgs),
    /// Random-read benchmark of a file with any access method (fio-style).
    Bench(bench::BenchArgs),
    /// Mine slots over one or more shards with many nonces in flight.
    Mine(mine::MineArgs),
    /// Measure method x threads x depth on the real shard and write a profile.
    Tune(tune::TuneArgs),
    /// Check the files, the device and the OS and explain what limits mining power.
    Doctor(doctor::DoctorArgs),
    /// Serve the shards as a local JSON-RPC 2.0 mining service with Prometheus metrics.
    Serve(serve::ServeArgs),
}

fn main() -> ExitCode {
    pora_io::restore_default_sigpipe();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Create(a) => create::run(a),
        Command::Info(a) => info::run(a),
        Command::Hash(a) => hash::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Mine(a) => mine::run(a),
        Command::Tune(a) => tune::run(a),
        Command::Doctor(a) => doctor::run(a),
        Command::Serve(a) => serve::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pora: error: {}", error_chain(&e));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes, skipping a cause whose text the message already contains (typed
/// errors often embed their source, e.g. "file.dat: No such file or directory").
fn error_chain(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text = format!("{text}: {cause}");
        }
    }
    text
}
