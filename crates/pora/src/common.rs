//! Flags shared by several commands (`hash`, `mine`, `serve`, `tune`, `create`, `scrub`) and
//! their parsers, so that a flag means the same thing everywhere.

use anyhow::Context;
use clap::ArgAction;
use pora_core::difficulty::{
    expected_diff, parse_u256, required_diff, DiffParams, DEFAULT_CUTOFF, DEFAULT_DIFF_ADJ_DIVISOR,
    DEFAULT_MINIMUM_DIFF,
};
use pora_core::{Address, Input, H256, U256};
use pora_io::Method;
use pora_mine::session::{OpenOptions, ProfileSource};
use pora_mine::{OnIoError, MAX_RANDOM_CHECKS, RANDOM_CHECKS};
use std::borrow::Cow;
use std::path::PathBuf;

/// Exit status of a command stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it),
/// after it printed its partial results.
pub const EXIT_INTERRUPTED: i32 = 130;

/// clap parser for `--randao 0x<32 bytes>`.
pub fn parse_randao(s: &str) -> Result<H256, String> {
    H256::parse("--randao", s).map_err(|e| e.to_string())
}

/// clap parser for `--miner 0x<20 bytes>`.
pub fn parse_miner(s: &str) -> Result<Address, String> {
    Address::parse(s).map_err(|e| e.to_string())
}

/// clap parser for 256-bit decimal or 0x-hex values.
pub fn parse_u256_flag(s: &str) -> Result<U256, String> {
    parse_u256("value", s).map_err(|e| e.to_string())
}

/// `--threads` of `create --fill empty` and `scrub`, defaulting to every core.
pub fn thread_count(threads: Option<usize>) -> anyhow::Result<usize> {
    match threads {
        Some(0) => anyhow::bail!("--threads 0: need at least one thread"),
        Some(n) => Ok(n),
        None => Ok(pora_mine::session::available_cpus()),
    }
}

/// The difficulty inputs: either `--required-diff` or the contract's parameters.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct DiffArgs {
    /// The threshold hash1 must not exceed (decimal or 0x hex); instead of --difficulty.
    #[arg(long, value_parser = parse_u256_flag, conflicts_with_all = ["difficulty", "interval"])]
    pub required_diff: Option<U256>,
    /// The storage contract's current difficulty (decimal or 0x hex).
    #[arg(long, value_parser = parse_u256_flag, requires = "interval")]
    pub difficulty: Option<U256>,
    /// Seconds since the shard was last mined (blockTime - lastMineTime).
    #[arg(long, requires = "difficulty")]
    pub interval: Option<u64>,
    /// Difficulty adjustment cutoff, seconds.
    #[arg(long, default_value_t = DEFAULT_CUTOFF)]
    pub cutoff: u64,
    /// Difficulty adjustment divisor.
    #[arg(long, default_value_t = DEFAULT_DIFF_ADJ_DIVISOR)]
    pub diff_adj_divisor: u64,
    /// Minimum difficulty (decimal or 0x hex).
    #[arg(long, value_parser = parse_u256_flag, default_value_t = U256::from(DEFAULT_MINIMUM_DIFF))]
    pub minimum_diff: U256,
}

impl DiffArgs {
    /// `requiredDiff` when any difficulty input was given.
    pub fn required(&self) -> anyhow::Result<Option<U256>> {
        if let Some(r) = self.required_diff {
            return Ok(Some(r));
        }
        let (Some(difficulty), Some(interval)) = (self.difficulty, self.interval) else {
            return Ok(None);
        };
        let params = DiffParams {
            difficulty,
            interval,
            cutoff: self.cutoff,
            diff_adj_divisor: self.diff_adj_divisor,
            minimum_diff: self.minimum_diff,
        };
        let expected = expected_diff(&params)?;
        Ok(Some(
            required_diff(expected).context("computing requiredDiff")?,
        ))
    }
}

/// `--random-checks`, as `mine`, `serve`, `hash` and `tune` take it.
#[derive(clap::Args)]
pub struct RandomChecksArg {
    /// Samples per nonce.
    #[arg(long, default_value_t = RANDOM_CHECKS,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_RANDOM_CHECKS)))]
    pub random_checks: u32,
}

/// The shards and how to open them for mining: the flags `pora mine` and `pora serve` share.
#[derive(clap::Args)]
pub struct SessionArgs {
    #[command(flatten)]
    pub files: ShardFiles,
    #[command(flatten)]
    pub checks: RandomChecksArg,
    /// Shard size as log2(KVs); inferred from the files when omitted.
    #[arg(long)]
    pub kv_entries_bits: Option<u32>,
    /// Access method (auto picks the best available; see `pora bench`).
    #[arg(long, default_value = "auto")]
    pub method: Method,
    /// Worker threads [default: the tune profile's for its method; else CPUs for asynchronous
    /// methods, and for synchronous ones on a shard cached in memory (90% or more in the page
    /// cache; `auto`'s mmap always); max(64, CPUs) for synchronous ones on a cold shard].
    #[arg(long)]
    pub threads: Option<usize>,
    /// Nonces (reads) in flight per thread [default: the tune profile's for its method; else 256
    /// for asynchronous methods (for those that read around the page cache, at most each
    /// thread's share of the device queues the threads reach), and for synchronous ones on a
    /// shard cached in memory (90% or more in the page cache; `auto`'s mmap always); 1 for
    /// synchronous ones on a cold shard].
    #[arg(long)]
    pub depth: Option<usize>,
    /// What a failed sample read does: retry (3 times, then drop the nonce), skip (drop the
    /// nonce), stop (end with an error naming file and offset).
    #[arg(long, value_parser = parse_on_io_error, default_value = "retry")]
    pub on_io_error: OnIoError,
    /// Miner address used in hash0; defaults to the files' header.
    #[arg(long, value_parser = parse_miner)]
    pub miner: Option<Address>,
    /// Tune profile to use (default: `<first file>.pora-profile.toml` when present).
    #[arg(long)]
    pub profile: Option<PathBuf>,
}

impl SessionArgs {
    /// The options `pora_mine::session::Session::open` takes for these flags.
    pub fn open_options(&self) -> OpenOptions {
        let profile = match &self.profile {
            Some(path) => ProfileSource::At(path.clone()),
            None => ProfileSource::BesideFirstFile,
        };
        OpenOptions::default()
            .with_method(self.method)
            .with_threads(self.threads)
            .with_depth(self.depth)
            .with_random_checks(self.checks.random_checks)
            .with_on_io_error(self.on_io_error)
            .with_miner(self.miner)
            .with_kv_entries_bits(self.kv_entries_bits)
            .with_profile(profile)
    }
}

fn parse_on_io_error(s: &str) -> Result<OnIoError, String> {
    match s {
        "retry" => Ok(OnIoError::Retry),
        "skip" => Ok(OnIoError::Skip),
        "stop" => Ok(OnIoError::Stop),
        _ => Err(format!("--on-io-error {s}: one of retry, skip, stop")),
    }
}

/// `--file A B --file C`: one group of paths per occurrence, one shard per group. clap's derive
/// cannot group values by occurrence, so this small part is written against the builder API.
///
/// At least one `--file` is required, except by `pora mine --demo` (which makes its own shard)
/// and by `pora tune` given its files the older way (positional); that is checked here rather than with clap's `required_unless_present("demo")`, because
/// commands without `--demo` share this flag.
#[derive(Clone, Debug, Default)]
pub struct ShardFiles(pub Vec<Vec<PathBuf>>);

impl clap::FromArgMatches for ShardFiles {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let groups: Vec<Vec<PathBuf>> = matches
            .get_occurrences::<PathBuf>("file")
            .map(|occ| occ.map(|g| g.cloned().collect()).collect())
            .unwrap_or_default();
        let demo = matches!(matches.try_get_one::<bool>("demo"), Ok(Some(true)));
        // `pora tune`'s positional FILE... (the older form of --file) stands in for it there.
        let positional = matches!(matches.try_get_many::<PathBuf>("files"), Ok(Some(_)));
        if groups.is_empty() && !demo && !positional {
            return Err(clap::Error::raw(
                clap::error::ErrorKind::MissingRequiredArgument,
                "the following required argument was not provided: --file <FILE>...",
            ));
        }
        Ok(ShardFiles(groups))
    }
    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl clap::Args for ShardFiles {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        cmd.arg(
            clap::Arg::new("file")
                .long("file")
                .value_name("FILE")
                .num_args(1..)
                .action(ArgAction::Append)
                .value_parser(clap::value_parser!(PathBuf))
                .help("Data files of one shard; repeat --file for each further shard mined in the same slot"),
        )
    }
    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

/// How the library's errors name an input here: by the flag that sets it.
pub fn flag_name(input: Input) -> Cow<'static, str> {
    match input {
        Input::Files => "--file".into(),
        Input::SlotLength => "--slot".into(),
        // Set by no flag: the library's own words.
        Input::Overlay | Input::Pools => input.key().into(),
        _ => format!("--{}", input.key().replace('_', "-")).into(),
    }
}

/// The data files of one shard, and `--json`: what `info` and `doctor` take.
#[derive(clap::Args)]
pub struct FilesArgs {
    /// Data files (one shard may span several).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Shard size as log2(KVs); inferred from the files when omitted.
    #[arg(long)]
    pub kv_entries_bits: Option<u32>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}
