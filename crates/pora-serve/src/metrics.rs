//! The Prometheus metrics of a mining process (`pora serve`, `pora mine --metrics-listen`),
//! exposed in the Prometheus text format 0.0.4.
//!
//! Everything is fed once per slot from the slot's [`SlotReport`] (and once per RPC call), never
//! from the mining hot path: the workers gain no clock read, atomic or allocation. Labels are
//! low-cardinality: `shard` (the shards this process mines), `method` (the access method, or the
//! RPC method's name as the caller labels it — unknown names collapse to `unknown`), `outcome`.
//! Never nonces, randaos or block numbers. The meaning of each metric is in docs/serve.md.
//!
//! This layer knows nothing of JSON-RPC: the dispatch above it hands it the method's label.

use pora_io::Method;
use pora_mine::session::{choice_for, Choice};
use pora_mine::SlotReport;
use prometheus::{
    Encoder, Gauge, GaugeVec, Histogram, HistogramOpts, HistogramVec, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};

/// `Content-Type` of [`Metrics::encode`]'s output.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// How a slot ended (`pora_slots_total{outcome}`).
pub const OUTCOMES: [&str; 5] = ["found", "exhausted", "deadline", "cancelled", "error"];

/// Slot lengths, seconds: around es-node's 12 s slot and the short slots of tests.
const SLOT_BUCKETS_SEC: [f64; 14] = [
    0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 15.0, 30.0, 60.0,
];
/// Sample read latencies, seconds: page cache (microseconds) to a busy HDD (tens of ms).
const LATENCY_BUCKETS_SEC: [f64; 14] = [
    5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1,
];

/// The registry and its metrics.
pub struct Metrics {
    registry: Registry,
    samples_read: IntCounterVec,
    nonces_tried: IntCounterVec,
    found: IntCounterVec,
    nonces_dropped: IntCounterVec,
    /// `pora_read_errors_total`, the old name of `pora_nonces_dropped_total`, kept one release.
    read_errors_deprecated: IntCounterVec,
    changed_during_slot: IntCounterVec,
    mining_power: GaugeVec,
    slot_duration: Histogram,
    slots: IntCounterVec,
    sample_read_latency: HistogramVec,
    slot_running: IntGauge,
    leaked_backends: IntGauge,
    rpc_requests: IntCounterVec,
    last_slot_timestamp: Gauge,
    /// `auto` between slots (docs/mining.md), labelled by device.
    cached_ratio: GaugeVec,
    hit_ratio: GaugeVec,
    predicted_mining_power: GaugeVec,
    method_switches: IntCounterVec,
    exploring_slots: IntCounterVec,
}

impl Metrics {
    /// Metrics for the shards `choices` mine (one choice per device, with its method); every
    /// series that can appear is created at 0 now, so rates and alerts see it from the first
    /// scrape.
    pub fn new(choices: &[Choice]) -> Result<Metrics, prometheus::Error> {
        let registry = Registry::new();
        let counter = |name: &str, help: &str, labels: &[&str]| {
            let c = IntCounterVec::new(Opts::new(name, help), labels)?;
            registry.register(Box::new(c.clone()))?;
            Ok::<_, prometheus::Error>(c)
        };
        let m = Metrics {
            samples_read: counter(
                "pora_samples_read_total",
                "32-byte samples read from the shard files by mining slots.",
                &["shard", "method"],
            )?,
            nonces_tried: counter(
                "pora_nonces_tried_total",
                "Nonces fully tried (all samples read and hashed) by mining slots.",
                &["shard"],
            )?,
            found: counter(
                "pora_found_total",
                "Valid nonces reported by mining slots (re-verified from the files).",
                &["shard"],
            )?,
            nonces_dropped: counter(
                "pora_nonces_dropped_total",
                "Nonces dropped because a sample read failed (after the retries the I/O error policy allows).",
                &["shard"],
            )?,
            read_errors_deprecated: counter(
                "pora_read_errors_total",
                "Deprecated: the same as pora_nonces_dropped_total, under its old name; removed in the next release.",
                &["shard"],
            )?,
            changed_during_slot: counter(
                "pora_changed_during_slot_total",
                "Candidate nonces whose samples changed under the slot (blobs written into a live shard).",
                &["shard"],
            )?,
            mining_power: GaugeVec::new(
                Opts::new(
                    "pora_mining_power_ratio",
                    "Share of the slot's nonces tried in the last slot, 0 to 1.",
                ),
                &["shard"],
            )?,
            slot_duration: Histogram::with_opts(
                HistogramOpts::new(
                    "pora_slot_duration_seconds",
                    "Wall time of each mining slot, from its first read to its last.",
                )
                .buckets(SLOT_BUCKETS_SEC.to_vec()),
            )?,
            slots: counter(
                "pora_slots_total",
                "Mining slots by how they ended: found, exhausted (all nonces tried), deadline, cancelled, error.",
                &["outcome"],
            )?,
            sample_read_latency: HistogramVec::new(
                HistogramOpts::new(
                    "pora_sample_read_latency_seconds",
                    "Mean time one sample read took in a slot, one observation per slot, estimated from the slot's totals (see docs/serve.md).",
                )
                .buckets(LATENCY_BUCKETS_SEC.to_vec()),
                &["method"],
            )?,
            slot_running: IntGauge::new(
                "pora_slot_running",
                "1 while a mining slot runs, else 0.",
            )?,
            leaked_backends: IntGauge::new(
                "pora_leaked_backends",
                "I/O backends given up with reads stuck in the kernel (a dead or very slow device), left allocated rather than waited for; 0 on a healthy device.",
            )?,
            rpc_requests: counter(
                "pora_rpc_requests_total",
                "JSON-RPC calls answered, by method and outcome (ok, error).",
                &["method", "outcome"],
            )?,
            last_slot_timestamp: Gauge::new(
                "pora_last_slot_timestamp_seconds",
                "Unix time at which the last mining slot ended.",
            )?,
            cached_ratio: GaugeVec::new(
                Opts::new(
                    "pora_page_cache_cached_ratio",
                    "Share of the device's shards in the page cache when the last slot started (auto only), 0 to 1.",
                ),
                &["device"],
            )?,
            hit_ratio: GaugeVec::new(
                Opts::new(
                    "pora_page_cache_hit_ratio",
                    "Share of the last slot's sample reads served by the page cache (auto only; 0 for unbuffered methods), 0 to 1.",
                ),
                &["device"],
            )?,
            predicted_mining_power: GaugeVec::new(
                Opts::new(
                    "pora_predicted_mining_power_ratio",
                    "auto's forecast for the method it chose: the last slot (horizon=slot) and once the page cache has settled (horizon=steady), 0 to 1.",
                ),
                &["device", "horizon"],
            )?,
            method_switches: counter(
                "pora_method_switches_total",
                "Times auto changed a device's access method between slots.",
                &["device"],
            )?,
            exploring_slots: counter(
                "pora_exploring_slots_total",
                "Slots auto ran on a method only to measure it (the model could not tell the candidates apart).",
                &["device"],
            )?,
            registry,
        };
        for c in [
            Box::new(m.mining_power.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(m.slot_duration.clone()),
            Box::new(m.sample_read_latency.clone()),
            Box::new(m.slot_running.clone()),
            Box::new(m.leaked_backends.clone()),
            Box::new(m.last_slot_timestamp.clone()),
            Box::new(m.cached_ratio.clone()),
            Box::new(m.hit_ratio.clone()),
            Box::new(m.predicted_mining_power.clone()),
        ] {
            m.registry.register(c)?;
        }
        m.register_build_info()?;
        for choice in choices {
            m.create_series(&choice.shards, choice.method);
            if choice.steering.is_some() {
                let device = device_label(choice);
                m.method_switches.with_label_values(&[&device]);
                m.exploring_slots.with_label_values(&[&device]);
            }
        }
        Ok(m)
    }

    fn register_build_info(&self) -> Result<(), prometheus::Error> {
        let info = IntGaugeVec::new(
            Opts::new(
                "pora_build_info",
                "Always 1; the labels say which pora build runs.",
            ),
            &["version"],
        )?;
        info.with_label_values(&[env!("CARGO_PKG_VERSION")]).set(1);
        self.registry.register(Box::new(info))?;
        Ok(())
    }

    fn create_series(&self, shards: &[u64], method: Method) {
        let method = method.to_string();
        for shard in shards {
            let shard = shard.to_string();
            self.samples_read.with_label_values(&[&shard, &method]);
            for c in [
                &self.nonces_tried,
                &self.found,
                &self.nonces_dropped,
                &self.read_errors_deprecated,
                &self.changed_during_slot,
            ] {
                c.with_label_values(&[&shard]);
            }
            self.mining_power.with_label_values(&[&shard]);
        }
        for outcome in OUTCOMES {
            self.slots.with_label_values(&[outcome]);
        }
        self.sample_read_latency.with_label_values(&[&method]);
    }

    /// Marks a slot as running (`pora_slot_running`).
    pub fn slot_started(&self) {
        self.slot_running.set(1);
    }

    /// Adds one finished slot mined with `choices` (one per device).
    pub fn record_slot(&self, report: &SlotReport, choices: &[Choice]) {
        for s in &report.shards {
            let shard = s.shard.to_string();
            let method =
                choice_for(choices, s.shard).map_or("unknown".into(), |c| c.method.to_string());
            self.samples_read
                .with_label_values(&[&shard, &method])
                .inc_by(s.samples_read);
            self.nonces_tried
                .with_label_values(&[&shard])
                .inc_by(s.nonces_tried);
            self.found
                .with_label_values(&[&shard])
                .inc_by(s.found.len() as u64);
            for dropped in [&self.nonces_dropped, &self.read_errors_deprecated] {
                dropped.with_label_values(&[&shard]).inc_by(s.io_errors);
            }
            self.changed_during_slot
                .with_label_values(&[&shard])
                .inc_by(s.changed_during_slot);
            self.mining_power
                .with_label_values(&[&shard])
                .set(s.mining_power);
        }
        self.slot_duration.observe(report.elapsed_sec);
        self.leaked_backends.set(report.leaked_backends as i64);
        self.slots.with_label_values(&[outcome(report)]).inc();
        for choice in choices {
            if let Some(latency) = mean_read_latency_sec(report, choice) {
                self.sample_read_latency
                    .with_label_values(&[&choice.method.to_string()])
                    .observe(latency);
            }
            self.record_steering(choice);
        }
        self.slot_ended();
    }

    /// What `auto` decided and measured for the slot of `choice`'s device.
    fn record_steering(&self, choice: &Choice) {
        let Some(steering) = &choice.steering else {
            return;
        };
        let device = device_label(choice);
        self.cached_ratio
            .with_label_values(&[&device])
            .set(steering.cached_fraction);
        if let Some(hit) = steering.hit_ratio {
            self.hit_ratio.with_label_values(&[&device]).set(hit);
        }
        for (horizon, value) in [
            ("slot", steering.predicted_mining_power),
            ("steady", steering.predicted_steady_mining_power),
        ] {
            self.predicted_mining_power
                .with_label_values(&[&device, horizon])
                .set(value);
        }
        if steering.switched_from.is_some() {
            self.method_switches.with_label_values(&[&device]).inc();
        }
        if steering.exploring {
            self.exploring_slots.with_label_values(&[&device]).inc();
        }
    }

    /// Counts a slot that failed with an error.
    pub fn record_slot_error(&self) {
        self.slots.with_label_values(&["error"]).inc();
        self.slot_ended();
    }

    fn slot_ended(&self) {
        self.slot_running.set(0);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        self.last_slot_timestamp.set(now);
    }

    /// Counts one answered RPC call of `method`: the caller's label for a method it serves
    /// (a fixed set, so the label stays low-cardinality), `None` for a name it does not know.
    pub fn record_rpc(&self, method: Option<&'static str>, ok: bool) {
        let method = method.unwrap_or("unknown");
        let outcome = if ok { "ok" } else { "error" };
        self.rpc_requests
            .with_label_values(&[method, outcome])
            .inc();
    }

    /// The Prometheus text exposition of every metric.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 * 1024);
        // Encoding into a Vec fails only on metric families the registry itself rejects.
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            out.extend_from_slice(format!("# encoding failed: {e}\n").as_bytes());
        }
        out
    }
}

/// The `device` label: the pool's device, `unknown` where the OS does not tell.
fn device_label(choice: &Choice) -> String {
    choice.device.clone().unwrap_or_else(|| "unknown".into())
}

/// `pora_slots_total`'s outcome of a finished slot.
pub fn outcome(report: &SlotReport) -> &'static str {
    if report.interrupted {
        "cancelled"
    } else if report.shards.iter().any(|s| !s.found.is_empty()) {
        "found"
    } else if report.bottleneck == pora_mine::Bottleneck::None {
        "exhausted"
    } else {
        "deadline"
    }
}

/// The slot's mean time per sample read, from its totals (no per-read clock):
///
/// - methods that complete reads inline (pread, direct, mmap): a worker performs its reads one
///   after another while it waits, so its wait time divided by its reads is the mean read time:
///   `io_wait_fraction x threads x elapsed / samples`;
/// - asynchronous methods (io_uring, IOCP): every chain keeps one read in flight, so by Little's
///   law the mean time in flight is `threads x depth / samples per second` (an upper bound: it
///   includes the time a completed read waits to be reaped when the CPU is the limit).
///
/// Counted over the shards of `choice` (one device's pool); `None` when they read nothing.
pub fn mean_read_latency_sec(report: &SlotReport, choice: &Choice) -> Option<f64> {
    let samples: u64 = report
        .shards
        .iter()
        .filter(|s| choice.shards.contains(&s.shard))
        .map(|s| s.samples_read)
        .sum();
    if samples == 0 || report.elapsed_sec <= 0.0 {
        return None;
    }
    let threads = choice.threads as f64;
    let latency = if choice.method.capabilities().completes_inline {
        report.io_wait_fraction * threads * report.elapsed_sec / samples as f64
    } else {
        threads * choice.depth as f64 * report.elapsed_sec / samples as f64
    };
    Some(latency)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pora_mine::{Bottleneck, ShardSlotReport};

    fn report(samples: u64, io_wait: f64, interrupted: bool) -> SlotReport {
        SlotReport {
            shards: vec![ShardSlotReport {
                shard: 3,
                randao: pora_core::H256([1; 32]),
                nonce_limit: 100,
                nonces_tried: samples / 2,
                mining_power: (samples / 2) as f64 / 100.0,
                elapsed_sec: 2.0,
                samples_read: samples,
                samples_per_sec: samples as f64 / 2.0,
                samples_from_overlay: 0,
                io_errors: 1,
                changed_during_slot: 0,
                found: Vec::new(),
            }],
            elapsed_sec: 2.0,
            deadline_overshoot_sec: 0.0,
            bottleneck: Bottleneck::Disk,
            io_wait_fraction: io_wait,
            cpu_busy_fraction: 0.1,
            io_error_messages: Vec::new(),
            interrupted,
            leaked_backends: 0,
            stuck_backends: 0,
        }
    }

    fn choice(method: Method, threads: usize, depth: usize) -> Choice {
        Choice {
            method,
            threads,
            depth,
            profile: None,
            why: String::new(),
            device: None,
            shards: vec![3, 4],
            io: String::new(),
            steering: None,
        }
    }

    #[test]
    fn latency_estimate_per_method_kind() {
        // 4 threads waiting half of 2 s (4 s in all) for 1000 reads done one at a time: 4 ms each.
        let inline = mean_read_latency_sec(&report(1000, 0.5, false), &choice(Method::Pread, 4, 1));
        assert!((inline.unwrap() - 0.004).abs() < 1e-12);
        // 2 x 8 reads always in flight, 1000 reads in 2 s: 32 ms in flight each.
        let uring = mean_read_latency_sec(&report(1000, 0.5, false), &choice(Method::Uring, 2, 8));
        assert!((uring.unwrap() - 0.032).abs() < 1e-12);
        assert_eq!(
            mean_read_latency_sec(&report(0, 0.5, false), &choice(Method::Pread, 4, 1)),
            None
        );
    }

    #[test]
    fn a_slot_adds_to_its_shard_series_only() {
        let metrics = Metrics::new(&[choice(Method::Pread, 1, 1)]).unwrap();
        metrics.record_slot(&report(10, 0.5, true), &[choice(Method::Pread, 1, 1)]);
        let text = String::from_utf8(metrics.encode()).unwrap();
        for line in [
            "pora_nonces_tried_total{shard=\"3\"} 5",
            "pora_nonces_tried_total{shard=\"4\"} 0",
            "pora_samples_read_total{method=\"pread\",shard=\"3\"} 10",
            "pora_nonces_dropped_total{shard=\"3\"} 1",
            "pora_read_errors_total{shard=\"3\"} 1",
            "pora_slots_total{outcome=\"cancelled\"} 1",
            "pora_slots_total{outcome=\"found\"} 0",
            "pora_mining_power_ratio{shard=\"3\"} 0.05",
            "pora_slot_duration_seconds_count 1",
            "pora_sample_read_latency_seconds_count{method=\"pread\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
        }
        assert_eq!(outcome(&report(10, 0.5, false)), "deadline");
    }
}
