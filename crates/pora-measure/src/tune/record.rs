//! The JSON shape of a `pora tune --json` run: the knee, the best arm, the raw ceiling and
//! latency, the prediction, every arm measured and the notes.

use super::raw::RawResult;
use super::search::ArmStats;
use super::{spread_trusted, Prediction, TuneOutcome};
use serde::Serialize;
use std::path::Path;

/// One tune run as printed by `pora tune --json`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TuneRecord<'a> {
    pub method: Option<&'static str>,
    pub threads: Option<usize>,
    pub depth: Option<usize>,
    pub samples_per_sec: Option<f64>,
    pub samples_per_sec_cv: Option<f64>,
    pub trials: Option<usize>,
    pub spread_trusted: Option<bool>,
    pub best: Option<BestArm>,
    pub latency_us: Option<KneeLatency>,
    pub device_ceiling_iops: Option<f64>,
    pub ceiling: &'a Option<RawResult>,
    pub ceiling_ratio: Option<f64>,
    pub verdict: String,
    pub predicted_mining_power: f64,
    pub shards: usize,
    pub required_samples_per_sec_per_shard: f64,
    pub es_node: EsNodeFlag,
    pub arms: &'a [ArmStats],
    pub latency_curve: &'a [RawResult],
    pub notes: &'a [String],
    pub spent_sec: f64,
    pub interrupted: bool,
    /// The profile written, if any.
    pub profile: Option<String>,
    /// What `pora mine` will do with the profile written: `auto`'s forecast from the rates this
    /// run measured (the same model and facts a session's first slot decides from). The headline;
    /// `predictedMiningPower` above is the knee method's alone, cold.
    pub forecast: Option<TuneForecast>,
    /// Arms rated against an untrusted knee on trials taken back to back, each with its
    /// per-round ratios and whether they disagree beyond the knee margin.
    pub paired_trials: &'a [super::paired::Comparison],
    /// Each read path's arm read for longer after the sweep, and the cold rate it showed: what
    /// the first slot's forecast starts from.
    pub sustained: &'a [super::sustained::SustainedRate],
}

/// `auto`'s forecast after a tune run: the method it starts with, the first slot (cold at its
/// start, its own reads filling the page cache) and the steady state once the cache has
/// settled, every candidate's figures, and what the first slot's figure was worked from.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TuneForecast {
    pub method: &'static str,
    pub first_slot_mining_power: f64,
    pub steady_mining_power: f64,
    pub candidates: Vec<pora_mine::steer::CandidateForecast>,
    /// The first slot model's inputs: cold rate, memory counted, expected hit ratio at the end.
    pub first_slot: pora_mine::session::FirstSlot,
}

impl TuneForecast {
    pub fn new(o: &pora_mine::session::FilesOutlook) -> TuneForecast {
        TuneForecast {
            method: o.decision.candidate.method.name(),
            first_slot_mining_power: o.decision.predicted.next,
            steady_mining_power: o.decision.predicted.steady,
            candidates: o.decision.forecasts.clone(),
            first_slot: o.first_slot(),
        }
    }
}

/// The fastest arm measured (the knee is the cheapest one close to it).
#[derive(Clone, Copy, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BestArm {
    pub method: &'static str,
    pub threads: usize,
    pub depth: usize,
    pub samples_per_sec: f64,
}

/// Raw read latency at the knee's reads in flight, microseconds.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct KneeLatency {
    pub p50: f64,
    pub p99: f64,
    pub p999: f64,
    pub source: &'static str,
}

/// es-node's closest flag and its value.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct EsNodeFlag {
    pub flag: &'static str,
    pub value: usize,
}

impl<'a> TuneRecord<'a> {
    pub fn new(
        o: &'a TuneOutcome,
        p: &Prediction,
        profile: Option<&Path>,
        forecast: Option<&pora_mine::session::FilesOutlook>,
    ) -> TuneRecord<'a> {
        let knee = o.choice.as_ref().map(|c| &c.knee);
        TuneRecord {
            method: knee.map(|k| k.arm.method.name()),
            threads: knee.map(|k| k.arm.threads),
            depth: knee.map(|k| k.arm.depth),
            samples_per_sec: knee.map(ArmStats::rate),
            samples_per_sec_cv: knee.map(ArmStats::cv),
            trials: knee.map(|k| k.trials.len()),
            spread_trusted: knee.map(spread_trusted),
            best: o.choice.as_ref().map(|c| BestArm {
                method: c.best.arm.method.name(),
                threads: c.best.arm.threads,
                depth: c.best.arm.depth,
                samples_per_sec: c.best.rate(),
            }),
            latency_us: o.knee_latency.as_ref().map(|l| KneeLatency {
                p50: l.latency_us_p50,
                p99: l.latency_us_p99,
                p999: l.latency_us_p999,
                source: "raw read pass at the chosen reads in flight",
            }),
            device_ceiling_iops: o.ceiling.as_ref().map(|c| c.iops),
            ceiling: &o.ceiling,
            ceiling_ratio: p.ceiling_ratio,
            verdict: p.verdict(),
            predicted_mining_power: p.power,
            shards: p.shards,
            required_samples_per_sec_per_shard: p.required_per_shard,
            es_node: EsNodeFlag {
                flag: "--miner.threads-per-shard",
                value: p.esnode_threads,
            },
            arms: &o.sweep.arms,
            latency_curve: &o.latency_curve,
            notes: &o.notes,
            spent_sec: o.sweep.spent_sec,
            interrupted: o.interrupted,
            profile: profile.map(|p| p.display().to_string()),
            forecast: forecast.map(TuneForecast::new),
            paired_trials: &o.sweep.paired,
            sustained: &o.sustained,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::search::{choose, Arm, Sweep};
    use pora_io::Method;

    /// The `--json` object keeps the field names and order scripts already parse, and its
    /// figures come from the knee.
    #[test]
    fn json_has_the_documented_fields_in_order() {
        let arm = |depth, trials: Vec<f64>| ArmStats {
            trials,
            ..ArmStats::new(Arm {
                method: Method::Sim,
                threads: 1,
                depth,
            })
        };
        let arms = vec![arm(8, vec![990.0, 1010.0]), arm(16, vec![1010.0, 1020.0])];
        let outcome = TuneOutcome {
            choice: choose(&arms, 0.03),
            sweep: Sweep {
                arms,
                interrupted: false,
                spent_sec: 3.0,
                paired: Vec::new(),
            },
            ceiling: None,
            knee_latency: None,
            latency_curve: Vec::new(),
            notes: vec!["a note".into()],
            interrupted: false,
            devices: Default::default(),
            sustained: Vec::new(),
        };
        let p = Prediction::new(&outcome, 1, 2000.0);
        let v = serde_json::to_value(TuneRecord::new(&outcome, &p, None, None)).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "method",
                "threads",
                "depth",
                "samplesPerSec",
                "samplesPerSecCv",
                "trials",
                "spreadTrusted",
                "best",
                "latencyUs",
                "deviceCeilingIops",
                "ceiling",
                "ceilingRatio",
                "verdict",
                "predictedMiningPower",
                "shards",
                "requiredSamplesPerSecPerShard",
                "esNode",
                "arms",
                "latencyCurve",
                "notes",
                "spentSec",
                "interrupted",
                "profile",
                "forecast",
                "pairedTrials",
                "sustained"
            ]
        );
        // Depth 8 is within 3% of depth 16's mean, so it is the knee; 16 is the best.
        assert_eq!(
            (v["method"].as_str(), v["depth"].as_u64()),
            (Some("sim"), Some(8))
        );
        assert_eq!(v["best"]["depth"], 16);
        assert_eq!(v["predictedMiningPower"], 0.5);
        assert_eq!(v["esNode"]["value"], 8);
        assert_eq!(v["arms"][1]["trials"], serde_json::json!([1010.0, 1020.0]));
        assert!(v["ceiling"].is_null() && v["profile"].is_null());
    }
}
