//! The C structs callers fill in (open options, slot parameters, difficulty) and their checked
//! conversion into pora-mine's `OpenOptions` and `SlotRequest`. Enum-like inputs arrive as
//! plain integers and are validated here, because an out-of-range C enum read as a Rust enum is
//! undefined behaviour. An all-zero struct means "the defaults" wherever a default exists.

use crate::buf::PoraBytes;
use crate::failure::Failure;
use crate::{PORA_ADDRESS_LEN, PORA_RANDAO_LEN};
// es-node's defaults for the difficulty inputs, shared with every door.
use pora_core::difficulty::{
    expected_diff, required_diff, DiffParams, DEFAULT_CUTOFF, DEFAULT_DIFF_ADJ_DIVISOR,
    DEFAULT_MINIMUM_DIFF,
};
use pora_core::{Address, Input, H256, U256};
use pora_io::{Method, SimConfig};
use pora_mine::session::{OpenOptions, ProfileSource};
use pora_mine::{Find, OnIoError, SlotRequest, MAX_SLOT_LENGTH_MS};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Values of `PoraSlotParams.find`.
#[repr(C)]
pub enum PoraFind {
    /// Stop each shard's slot at its first valid nonce (es-node's behaviour).
    First = 0,
    /// Try every nonce, report the lowest hash1.
    Best = 1,
    /// Try every nonce, report every valid one.
    All = 2,
}

/// Values of `PoraDifficulty.kind`.
#[repr(C)]
pub enum PoraDiffKind {
    /// No difficulty: no nonce is valid (throughput runs).
    None = 0,
    /// `required_diff` is the threshold hash1 must not exceed.
    Required = 1,
    /// Compute requiredDiff from the contract's inputs (difficulty, interval, cutoff, ...).
    Inputs = 2,
}

/// Values of `PoraOpenOptions.on_io_error`.
#[repr(C)]
pub enum PoraOnIoError {
    /// Re-issue a failed read a few times, then drop the nonce.
    Retry = 0,
    /// Drop the nonce at once.
    Skip = 1,
    /// End the slot with PORA_STATUS_IO.
    Stop = 2,
}

/// Values of `PoraOpenOptions.profile`.
#[repr(C)]
pub enum PoraProfileSource {
    /// `<first file>.pora-profile.toml` when it exists (what `pora tune` writes).
    BesideFirstFile = 0,
    /// The file at `profile_path`, which must exist.
    At = 1,
    /// No profile.
    Ignore = 2,
}

/// How to open a shard set. All zero (and empty byte strings) = pora's defaults.
#[repr(C)]
#[derive(Default)]
pub struct PoraOpenOptions {
    /// Access method name as `pora mine --method` takes it ("auto", "pread", "uring-direct",
    /// "mmap", "sim", ...); empty = "auto".
    pub method: PoraBytes,
    /// Worker threads; 0 = the profile's, else the method's default.
    pub threads: u32,
    /// Reads in flight per thread; 0 = the profile's, else the method's default.
    pub depth: u32,
    /// Samples per nonce; 0 = `PORA_DEFAULT_RANDOM_CHECKS` (es-node's).
    pub random_checks: u32,
    /// A `PoraOnIoError` value.
    pub on_io_error: u32,
    /// Shard size as log2(KVs); 0 = inferred from the files.
    pub kv_entries_bits: u32,
    /// A `PoraProfileSource` value.
    pub profile: u32,
    /// The profile file for `PORA_PROFILE_SOURCE_AT`.
    pub profile_path: PoraBytes,
    /// Miner address for hash0 (20 bytes); empty = the files' miner.
    pub miner: PoraBytes,
    /// Simulated disk (`method` "sim", only in libraries built with the `sim` cargo feature)
    /// only: latency range of every read, microseconds.
    pub sim_latency_us_min: u32,
    pub sim_latency_us_max: u32,
    /// Simulated disk only: seed of its random choices.
    pub sim_seed: u64,
}

/// The difficulty of a slot (or of one hashed nonce). 256-bit values are big-endian.
#[repr(C)]
pub struct PoraDifficulty {
    /// A `PoraDiffKind` value.
    pub kind: u32,
    /// For `PORA_DIFF_KIND_REQUIRED`.
    pub required_diff: [u8; 32],
    /// For `PORA_DIFF_KIND_INPUTS`: the contract's difficulty.
    pub difficulty: [u8; 32],
    /// For `PORA_DIFF_KIND_INPUTS`: blockTime - lastMineTime, seconds.
    pub interval: u64,
    /// For `PORA_DIFF_KIND_INPUTS`: 0 = `PORA_DEFAULT_CUTOFF`.
    pub cutoff: u64,
    /// For `PORA_DIFF_KIND_INPUTS`: 0 = `PORA_DEFAULT_DIFF_ADJ_DIVISOR`.
    pub diff_adj_divisor: u64,
    /// For `PORA_DIFF_KIND_INPUTS`: all zero = `PORA_DEFAULT_MINIMUM_DIFF`.
    pub minimum_diff: [u8; 32],
}

/// One slot to mine on every shard of a handle.
#[repr(C)]
pub struct PoraSlotParams {
    /// The randao mix digest, exactly `PORA_RANDAO_LEN` bytes.
    pub randao: PoraBytes,
    /// Nonces `nonce_start .. nonce_end` (end exclusive, start < end).
    pub nonce_start: u64,
    pub nonce_end: u64,
    /// The time from this call's entry to the caller's deadline, nanoseconds, as the caller
    /// measured it immediately before calling (1 ..= `PORA_MAX_SLOT_LENGTH_MS` x 1,000,000; a
    /// whole es-node slot is `PORA_DEFAULT_SLOT_LENGTH_MS` x 1,000,000). The call takes its clock
    /// first, before anything else: deciding the method, switching it and taking the backends
    /// spend the slot's own time, no read is issued after the deadline, and the call returns by
    /// it plus the bounded straggler and verification waits (1 s in all).
    pub deadline_remaining_ns: u64,
    /// A `PoraFind` value.
    pub find: u32,
    /// The slot's number, written into each record's `slot` field.
    pub slot_number: u64,
    pub difficulty: PoraDifficulty,
    /// An overlay from `pora_overlay_new` whose KVs this slot samples from memory; 0 = none.
    pub overlay: u64,
}

/// A 32-byte randao from borrowed bytes.
///
/// # Safety
/// `bytes` must be a valid borrowed byte string.
pub(crate) unsafe fn randao(bytes: &PoraBytes) -> Result<H256, Failure> {
    let raw = bytes.as_slice("randao")?;
    let arr: [u8; PORA_RANDAO_LEN] = raw.try_into().map_err(|_| {
        Failure::invalid(format!(
            "randao: {} bytes, expected {PORA_RANDAO_LEN}",
            raw.len()
        ))
    })?;
    Ok(H256(arr))
}

impl PoraDifficulty {
    /// `requiredDiff`, if any.
    pub(crate) fn required(&self) -> Result<Option<U256>, Failure> {
        match self.kind {
            0 => Ok(None),
            1 => Ok(Some(U256::from_be_bytes(self.required_diff))),
            2 => {
                let or = |v: u64, d: u64| if v == 0 { d } else { v };
                let minimum = U256::from_be_bytes(self.minimum_diff);
                let params = DiffParams {
                    difficulty: U256::from_be_bytes(self.difficulty),
                    interval: self.interval,
                    cutoff: or(self.cutoff, DEFAULT_CUTOFF),
                    diff_adj_divisor: or(self.diff_adj_divisor, DEFAULT_DIFF_ADJ_DIVISOR),
                    minimum_diff: if minimum.is_zero() {
                        U256::from(DEFAULT_MINIMUM_DIFF)
                    } else {
                        minimum
                    },
                };
                let expected =
                    expected_diff(&params).map_err(|e| Failure::invalid(e.to_string()))?;
                let required =
                    required_diff(expected).map_err(|e| Failure::invalid(e.to_string()))?;
                Ok(Some(required))
            }
            k => Err(Failure::invalid(format!(
                "difficulty.kind {k}: one of 0 (none), 1 (required), 2 (inputs)"
            ))),
        }
    }
}

impl PoraSlotParams {
    /// The slot request these parameters describe, for a call entered at `entered`.
    ///
    /// # Safety
    /// `randao` must be a valid borrowed byte string.
    pub(crate) unsafe fn request(&self, entered: Instant) -> Result<SlotRequest, Failure> {
        let find = match self.find {
            0 => Find::First,
            1 => Find::Best,
            2 => Find::All,
            f => {
                return Err(Failure::invalid(format!(
                    "find {f}: one of 0 (first), 1 (best), 2 (all)"
                )))
            }
        };
        let remaining = self.deadline_remaining_ns;
        if remaining == 0 || remaining > MAX_SLOT_LENGTH_MS * 1_000_000 {
            // Named in the door's words: `deadline_remaining_ns` in C, `SlotLength` in Go.
            return Err(Failure::invalid(format!(
                "{} {remaining} ns to the deadline: must be between 1 and {} (PORA_MAX_SLOT_LENGTH_MS in nanoseconds)",
                Input::SlotLength,
                MAX_SLOT_LENGTH_MS * 1_000_000
            )));
        }
        // The nonce range is checked by the library, naming these fields.
        Ok(SlotRequest::new(randao(&self.randao)?)
            .with_entered(entered)
            .with_deadline(entered + Duration::from_nanos(remaining))
            .with_nonces(self.nonce_start..self.nonce_end)
            .with_find(find)
            .with_required_diff(self.difficulty.required()?)
            .with_overlay(crate::registry::overlay_snapshot(self.overlay)?))
    }
}

impl PoraOpenOptions {
    /// The session options these describe.
    ///
    /// # Safety
    /// Every byte string must be valid.
    pub(crate) unsafe fn options(&self) -> Result<OpenOptions, Failure> {
        let name = std::str::from_utf8(self.method.as_slice("method")?)
            .map_err(|_| Failure::invalid("method: not UTF-8"))?;
        let method: Method = if name.is_empty() {
            Method::Auto
        } else {
            name.parse()
                .map_err(|e: String| Failure::invalid(format!("method: {e}")))?
        };
        let on_io_error = match self.on_io_error {
            0 => OnIoError::Retry,
            1 => OnIoError::Skip,
            2 => OnIoError::Stop,
            v => {
                return Err(Failure::invalid(format!(
                    "on_io_error {v}: one of 0 (retry), 1 (skip), 2 (stop)"
                )))
            }
        };
        let profile = match self.profile {
            0 => ProfileSource::BesideFirstFile,
            1 => ProfileSource::At(path(&self.profile_path, "profile_path")?),
            2 => ProfileSource::Ignore,
            v => {
                return Err(Failure::invalid(format!(
                    "profile {v}: one of 0 (beside the first file), 1 (at profile_path), 2 (ignore)"
                )))
            }
        };
        let miner = self.miner.as_slice("miner")?;
        let miner = match miner.len() {
            0 => None,
            PORA_ADDRESS_LEN => Some(Address(miner.try_into().expect("length checked"))),
            n => {
                return Err(Failure::invalid(format!(
                    "miner: {n} bytes, expected {PORA_ADDRESS_LEN} or none"
                )))
            }
        };
        let nonzero = |v: u32| (v != 0).then_some(v as usize);
        let mut options = OpenOptions::default()
            .with_method(method)
            .with_threads(nonzero(self.threads))
            .with_depth(nonzero(self.depth))
            .with_random_checks(match self.random_checks {
                0 => pora_mine::RANDOM_CHECKS,
                n => n,
            })
            .with_on_io_error(on_io_error)
            .with_miner(miner)
            .with_kv_entries_bits((self.kv_entries_bits != 0).then_some(self.kv_entries_bits))
            .with_profile(profile);
        if self.sim_latency_us_max > 0 {
            if self.sim_latency_us_min > self.sim_latency_us_max {
                return Err(Failure::invalid(format!(
                    "sim latency {}..{} us: min is above max",
                    self.sim_latency_us_min, self.sim_latency_us_max
                )));
            }
            options.io.sim = SimConfig {
                seed: self.sim_seed,
                latency_us: (self.sim_latency_us_min, self.sim_latency_us_max),
                ..SimConfig::default()
            };
        }
        Ok(options)
    }
}

/// A path from borrowed bytes: raw bytes on Unix, UTF-8 elsewhere.
///
/// # Safety
/// `bytes` must be a valid borrowed byte string.
pub(crate) unsafe fn path(bytes: &PoraBytes, what: &str) -> Result<PathBuf, Failure> {
    let raw = bytes.as_slice(what)?;
    if raw.is_empty() {
        return Err(Failure::invalid(format!("{what}: empty path")));
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Ok(PathBuf::from(std::ffi::OsStr::from_bytes(raw)))
    }
    #[cfg(not(unix))]
    {
        std::str::from_utf8(raw)
            .map(PathBuf::from)
            .map_err(|_| Failure::invalid(format!("{what}: not UTF-8")))
    }
}
