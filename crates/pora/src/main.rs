//! `pora`: the thin command-line edge. Parses flags, calls the library crates, prints results.
//! Library errors are typed; `anyhow` is used only here to add context and print them.

mod bench;
mod common;
mod create;
mod decode;
mod doctor;
mod hash;
mod info;
mod mask;
mod mine;
mod plot;
mod scrub;
mod serve;
mod signals;
mod tune;
mod version;

use clap::error::ErrorKind;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
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
    Create(create::CreateCommand),
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
    /// One KV's BLOB_POSEIDON mask: encode key, SHA-256, one word, or the whole mask.
    Mask(mask::MaskArgs),
    /// Check that the empty-filled KVs of encodeType-3 files hold their masks (read-only).
    Scrub(scrub::ScrubArgs),
    /// Decode one KV (or one word) of an encodeType-3 file (read-only).
    Decode(decode::DecodeArgs),
    /// Serve the shards as a local JSON-RPC 2.0 mining service with Prometheus metrics.
    Serve(serve::ServeArgs),
}

fn main() {
    exit_now(run());
}

fn run() -> ExitCode {
    pora_io::restore_default_sigpipe();
    // A slot's allocations must not wait for a stalled mapped read (see the function).
    pora_io::reserve_heap_ahead();
    pora_core::input::name_inputs(common::flag_name);
    // clap prints only its version string; `--version` (and `-V`, on every subcommand too) gets
    // the build's kernel and I/O facts instead, computed only when asked (the io_uring probe
    // creates a ring).
    let matches = match Cli::command().try_get_matches() {
        Ok(matches) => matches,
        Err(e) if e.kind() == ErrorKind::DisplayVersion => return print_version(),
        Err(e) => e.exit(),
    };
    let name = matches.subcommand_name().unwrap_or_default().to_string();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    if let Err(e) = version::check_keccak_env() {
        eprintln!("pora {name}: error: {e}");
        return ExitCode::FAILURE;
    }
    let done = |()| ExitCode::SUCCESS;
    let result = match cli.command {
        Command::Create(a) => create::run_command(a).map(done),
        Command::Info(a) => info::run(a).map(done),
        Command::Hash(a) => hash::run(a).map(done),
        Command::Bench(a) => bench::run(a),
        Command::Mine(a) => mine::run(a),
        Command::Tune(a) => tune::run(a),
        Command::Doctor(a) => doctor::run(a).map(done),
        Command::Mask(a) => mask::run(a).map(done),
        Command::Scrub(a) => scrub::run(a).map(done),
        Command::Decode(a) => decode::run(a).map(done),
        Command::Serve(a) => serve::run(a),
    };
    result.unwrap_or_else(|e| {
        eprintln!("pora {name}: error: {}", error_chain(&e));
        ExitCode::FAILURE
    })
}

/// Ends the process once its output is flushed, without the runtime's cleanup: after a stalled
/// disk, threads may still wait inside reads the kernel holds, and a fault on a mapped file holds
/// the process's memory map, so the cleanup's unmapping (the main thread's signal stack) would
/// wait as long as the device (docs/spec/stalls.md). The kernel releases everything else.
fn exit_now(code: ExitCode) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    let value = if code == ExitCode::SUCCESS {
        0
    } else if code == signals::interrupted() {
        common::EXIT_INTERRUPTED
    } else {
        1
    };
    pora_io::exit_at_once(value)
}

fn print_version() -> ExitCode {
    match version::text() {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("pora: error: {e}");
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
