//! The JSON records every front end prints or returns — `pora mine --json` / `pora hash --json`,
//! the C ABI's results and the service's answers — defined once, so the doors cannot drift apart.
//! Field names are camelCase; 256-bit values are 0x-hex (hashes) or decimal strings
//! (`requiredDiff`), as es-node's tools print them.

use crate::steer::CandidateForecast;
use crate::{Bottleneck, ShardSlotReport, SlotReport};
use pora_core::difficulty::meets;
use pora_core::{Address, NonceProof, H256, U256};
use pora_io::host::memory::CacheRoom;
use pora_io::Method;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Instant;

/// One shard's result for one slot: one line of `pora mine --json`. The shard's own counts
/// ([`ShardSlotReport`]), then how its pool read and what limited the slot.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShardSlotRecord {
    /// Slot number within the run (0-based).
    pub slot: u64,
    #[serde(flatten)]
    pub report: ShardSlotReport,
    /// When the slot ended (its answer was built) against the caller's deadline, milliseconds:
    /// negative when it ended early (every nonce tried, a nonce found first, a stop), positive
    /// when late. Measured on the caller's clock from the deadline the door took at entry, so
    /// steering, stragglers and verification all count.
    pub end_late_ms: f64,
    pub method: Method,
    pub threads: usize,
    pub depth: usize,
    /// Where the method and knobs came from, one phrase (for `auto`, the slot's decision).
    pub why: String,
    /// How `auto` decided this slot's method; `null` when the method was given.
    pub steering: Option<SteeringRecord>,
    /// The device the shard's pool reads (`vda`, or `major:minor` for tmpfs); `null` when the
    /// OS does not tell.
    pub device: Option<String>,
    pub bottleneck: Bottleneck,
    pub io_wait_fraction: f64,
    pub cpu_busy_fraction: f64,
    pub interrupted: bool,
    pub leaked_backends: u64,
    pub stuck_backends: u64,
}

impl ShardSlotRecord {
    /// The record as `pora mine` prints it without `--json`: one line for the shard, then each
    /// nonce found with its samples.
    pub fn text_lines(&self) -> Vec<String> {
        let s = &self.report;
        let dropped = if s.io_errors > 0 {
            format!(", {} nonces dropped on read errors", s.io_errors)
        } else {
            String::new()
        };
        let mut lines = vec![format!(
            "slot {} shard {}: tried {}/{} nonces, mining power {:.2}% ({} bps), {:.3} s, {} samples ({:.0}/s), {} {}x{}, found {}{dropped}",
            self.slot,
            s.shard,
            s.nonces_tried,
            s.nonce_limit,
            s.mining_power * 100.0,
            (s.mining_power * 10_000.0).floor(),
            s.elapsed_sec,
            s.samples_read,
            s.samples_per_sec,
            self.method,
            self.threads,
            self.depth,
            s.found.len(),
        )];
        for p in &s.found {
            lines.push(format!("  nonce {} hash1 {}", p.nonce, p.hash1));
            for i in 0..p.sample_idxs.len() {
                lines.push(format!(
                    "    sample {i}: idx {} kv {} in-kv {} = {}",
                    p.sample_idxs[i], p.kv_idxs[i], p.sample_idxs_in_kv[i], p.encoded_samples[i]
                ));
            }
        }
        lines
    }

    /// The records of every shard of `report`, slot number `slot`, each mined with its device's
    /// choice among `choices` (one per device: `Session::choices`); a shard
    /// no choice names has no record. `end_late_ms`: [`ShardSlotRecord::end_late_ms`].
    pub fn from_report(
        slot: u64,
        report: &SlotReport,
        choices: &[Choice],
        end_late_ms: f64,
    ) -> Vec<ShardSlotRecord> {
        report
            .shards
            .iter()
            // A session's choices name every shard it mines.
            .filter_map(|shard| Some((shard, choice_for(choices, shard.shard)?)))
            .map(|(shard, choice)| ShardSlotRecord {
                slot,
                report: shard.clone(),
                end_late_ms,
                method: choice.method,
                threads: choice.threads,
                depth: choice.depth,
                why: choice.why.clone(),
                steering: choice.steering.clone(),
                device: choice.device.clone(),
                bottleneck: report.bottleneck,
                io_wait_fraction: report.io_wait_fraction,
                cpu_busy_fraction: report.cpu_busy_fraction,
                interrupted: report.interrupted,
                leaked_backends: report.leaked_backends,
                stuck_backends: report.stuck_backends,
            })
            .collect()
    }
}

/// One slot's answer, as the C ABI's `pora_mine_slot` and the service's `pora_mineSlot` give it:
/// `{"shards": [...], "ioErrorMessages": [...]}`, the shard objects exactly the lines of
/// `pora mine --json`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SlotRecord {
    pub shards: Vec<ShardSlotRecord>,
    /// The first few read errors, naming file and offset.
    pub io_error_messages: Vec<String>,
}

impl SlotRecord {
    /// Slot number `slot` of a session with `choices`: see [`ShardSlotRecord::from_report`].
    pub fn new(slot: u64, report: &SlotReport, choices: &[Choice], end_late_ms: f64) -> Self {
        SlotRecord {
            shards: ShardSlotRecord::from_report(slot, report, choices, end_late_ms),
            io_error_messages: report.io_error_messages.clone(),
        }
    }
}

/// `now - deadline` in milliseconds, signed: how late (positive) or early (negative) something
/// ended against a deadline.
pub fn late_ms(deadline: Instant, now: Instant) -> f64 {
    match now.checked_duration_since(deadline) {
        Some(late) => late.as_secs_f64() * 1e3,
        None => -(deadline - now).as_secs_f64() * 1e3,
    }
}

/// One nonce computed from the real files: what `pora hash --json` prints.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HashRecord {
    #[serde(flatten)]
    pub proof: NonceProof,
    pub shard: u64,
    pub miner: Address,
    pub randao: H256,
    /// Decimal, when a difficulty was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required_diff: Option<String>,
    /// Whether hash1 meets `requiredDiff`, when a difficulty was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid: Option<bool>,
}

impl HashRecord {
    pub fn new(
        proof: NonceProof,
        shard: u64,
        miner: Address,
        randao: H256,
        required: Option<U256>,
    ) -> Self {
        let valid = required.map(|r| meets(&proof.hash1.0, &r));
        HashRecord {
            proof,
            shard,
            miner,
            randao,
            required_diff: required.map(|r| r.to_string()),
            valid,
        }
    }
}

/// One opened shard: its index, files, miner and size.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShardRecord {
    pub shard: u64,
    pub files: Vec<std::path::PathBuf>,
    pub miner: Address,
    pub kv_entries_bits: u32,
    pub kv_size_bits: u32,
}

/// What a session opened, and how: `pora_open`'s answer, and the body of `pora_status`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord<'a> {
    /// In the order slots report them: device by device, in the given order within a device
    /// (the given order when all sit on one device).
    pub shards: Vec<ShardRecord>,
    /// The first device's choice (the only one when all shards sit on one device).
    pub choice: Choice,
    /// One choice per device, each naming its device and shards.
    pub choices: Vec<Choice>,
    pub random_checks: u32,
    /// Things the user should know about how the session was opened, one line each.
    pub notes: &'a [String],
}

impl<'a> SessionRecord<'a> {
    /// The record of a session mining `shards` with `choices` (at least one) and `notes`.
    pub fn new(
        shards: &[pora_core::ShardSet],
        choices: Vec<Choice>,
        random_checks: u32,
        notes: &'a [String],
    ) -> Self {
        let shards = shards
            .iter()
            .map(|s| ShardRecord {
                shard: s.geometry.shard_idx,
                files: s.paths(),
                miner: s.miner,
                kv_entries_bits: s.geometry.kv_entries_bits,
                kv_size_bits: s.geometry.kv_size_bits,
            })
            .collect();
        SessionRecord {
            shards,
            // A session opens only with at least one shard, so with at least one choice.
            choice: choices[0].clone(),
            choices,
            random_checks,
            notes,
        }
    }
}

/// The method and knobs one device's shards run with, and why.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Choice {
    pub method: Method,
    pub threads: usize,
    pub depth: usize,
    /// The profile used, if any.
    pub profile: Option<PathBuf>,
    /// One phrase: where the method and knobs came from.
    pub why: String,
    /// The device these shards sit on (`vda`, or `major:minor` for tmpfs), when known.
    pub device: Option<String>,
    /// The shards mined with this choice.
    pub shards: Vec<u64>,
    /// The backend factory's one-line description (method, alignment, ring features).
    pub io: String,
    /// How `auto` chose for this slot; `None` when the method was given.
    pub steering: Option<SteeringRecord>,
}

/// What `auto` saw, forecast and measured for one device's slot: every slot's record carries
/// it, so a user can see why the method is what it is.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SteeringRecord {
    /// Slot of the session this decision was made for (0-based).
    pub slot: u64,
    /// Share of the device's shards in the page cache when the slot started (the model's own
    /// estimate where the OS does not tell: `cachedFractionMeasured` false).
    pub cached_fraction: f64,
    pub cached_fraction_measured: bool,
    /// Share of them the page cache can hold: the memory it can grow into, shared by every
    /// shard of the process, over their size; `null` where memory is not known.
    pub cacheable_fraction: Option<f64>,
    /// `MemAvailable` (Windows: `GlobalMemoryStatusEx`'s available physical memory), and the
    /// cgroup's limit and the room inside it, when known.
    pub mem_available_bytes: Option<u64>,
    pub cgroup_limit_bytes: Option<u64>,
    pub cache_room_bytes: Option<u64>,
    /// The chosen method's forecast for this slot and once the cache has settled.
    pub predicted_mining_power: f64,
    pub predicted_steady_mining_power: f64,
    /// The share of the slot's reads the page cache served, measured after the slot (the
    /// device's completed reads against the samples read; else the backends' own count of the
    /// reads the cache served, Windows; else the residency before and after); `null` before the
    /// slot ends or where nothing tells.
    pub hit_ratio: Option<f64>,
    /// Tried for one slot because the model could not tell the candidates apart.
    pub exploring: bool,
    /// The method of the previous slot when this slot switched.
    pub switched_from: Option<Method>,
    /// Time spent deciding (facts and model) and switching backends: the slot's own time,
    /// before its workers start.
    pub decision_ms: f64,
    pub switch_ms: f64,
    /// Switches and exploring slots of this device so far.
    pub switches: u64,
    pub exploring_slots: u64,
    /// Every candidate's forecast.
    pub candidates: Vec<CandidateForecast>,
}

impl SteeringRecord {
    /// The record of `decision` for slot 0 with the facts of `room` and `(decision, switch)`
    /// milliseconds; the caller sets the slot, counts and switch.
    pub(crate) fn new(
        decision: &crate::steer::Decision,
        room: Option<&CacheRoom>,
        ms: (f64, f64),
    ) -> Self {
        SteeringRecord {
            slot: 0,
            cached_fraction: decision.cached_fraction,
            cached_fraction_measured: true,
            cacheable_fraction: decision.cacheable_fraction,
            mem_available_bytes: room.map(|r| r.mem_available_bytes),
            cgroup_limit_bytes: room.and_then(|r| r.cgroup_limit_bytes),
            cache_room_bytes: room.map(|r| r.room_bytes),
            predicted_mining_power: decision.predicted.next,
            predicted_steady_mining_power: decision.predicted.steady,
            hit_ratio: None,
            exploring: decision.exploring,
            switched_from: None,
            decision_ms: ms.0,
            switch_ms: ms.1,
            switches: 0,
            exploring_slots: 0,
            candidates: decision.forecasts.clone(),
        }
    }
}

/// The choice among `choices` that mines shard `shard`.
pub fn choice_for(choices: &[Choice], shard: u64) -> Option<&Choice> {
    choices.iter().find(|c| c.shards.contains(&shard))
}
