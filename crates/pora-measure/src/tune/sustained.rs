//! The device's cold rate held over a longer read, per read path, for the first slot's forecast.
//!
//! The sweep's trials are short (0.25-2 s, each after an eviction and a pause to set up), and a
//! device can serve a short read faster than a slot-long one: a throttled or rate-limited disk
//! (a cgroup's blkio limit, a cloud volume's token bucket, this project's VM disk) lets each new
//! burst through a slice ahead of its rate. On a RAM-backed device held to 80,000 reads/s the
//! sweep's trials measured 92-113k, and the first slot forecast from them 1.00 where `pora mine`
//! mined 0.53 (docs/BENCHMARKS.md "tune's first slot against slot 1"). So after the sweep, the
//! arm each read path would mine with is read once more for [`sustained_sec`] seconds, and that
//! rate, not the sweep's, is what the forecast and the profile's first slot start from.
//!
//! A buffered or mapped trial fills the page cache as it reads (the files are evicted before
//! it), so its samples are more than the device's reads: they are taken back to the device's
//! cold reads/s with the model's own fill ([`pora_mine::steer::cold_misses`]).

use super::search::{comparable, Arm, ArmStats, Choice, TrialError, TrialRunner};
use pora_io::{Method, ReadPath};
use serde::Serialize;

/// One read path's arm read for longer, and the device rate it showed.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SustainedRate {
    #[serde(flatten)]
    pub arm: Arm,
    pub seconds: f64,
    /// Samples/s the trial read (hits included on a buffered path).
    pub samples_per_sec: f64,
    /// The device's reads/s with every read missing the cache: the samples on a direct path,
    /// the misses on a buffered or mapped one.
    pub cold_reads_per_sec: f64,
    /// The rate the sweep's short trials gave the same arm.
    pub sweep_samples_per_sec: f64,
}

impl SustainedRate {
    /// One line for the run's notes.
    pub fn line(&self) -> String {
        format!(
            "{} {} x {} read for {:.1} s: {:.1}k cold reads/s ({:.1}k samples/s; the sweep's short trials {:.1}k): the first slot is forecast from it",
            self.arm.method,
            self.arm.threads,
            self.arm.depth,
            self.seconds,
            self.cold_reads_per_sec / 1e3,
            self.samples_per_sec / 1e3,
            self.sweep_samples_per_sec / 1e3
        )
    }
}

/// How long each read path's longer read lasts: 5% of the budget, 1 to 3 s (a burst the size
/// of a tenth of a second's reads is then a few percent of it).
pub fn sustained_sec(budget_sec: f64) -> f64 {
    (budget_sec * 0.05).clamp(1.0, 3.0)
}

/// The read paths the sweep measured.
pub const READ_PATHS: usize = 3;

/// The arm each read path mines with: the knee for its own path, and for every other path the
/// fastest arm the sweep compared ([`comparable`]); one per path, the knee's first.
pub fn arms_per_path(choice: &Choice, arms: &[ArmStats]) -> Vec<ArmStats> {
    let mut out = vec![choice.knee.clone()];
    let mut others: Vec<&ArmStats> = comparable(arms).filter(|a| !a.trials.is_empty()).collect();
    others.sort_by(|a, b| b.rate().total_cmp(&a.rate()));
    for a in others {
        if !out
            .iter()
            .any(|o| o.arm.method.read_path() == a.arm.method.read_path())
        {
            out.push(a.clone());
        }
    }
    out
}

/// Reads each of `arms` once for `seconds` from a cold cache over `pages` pages, of which the
/// memory holds a share `cacheable_fraction`; an arm that cannot run is left out, an
/// interruption ends the pass.
pub fn measure(
    runner: &mut dyn TrialRunner,
    arms: &[ArmStats],
    seconds: f64,
    pages: f64,
    cacheable_fraction: f64,
) -> Result<Vec<SustainedRate>, TrialError> {
    let mut out = Vec::new();
    for a in arms {
        let trial = match runner.run(&a.arm, seconds) {
            Ok(t) => t,
            Err(TrialError::Interrupted) => return Err(TrialError::Interrupted),
            Err(TrialError::Arm(_)) => continue,
        };
        out.push(SustainedRate {
            arm: a.arm,
            seconds,
            samples_per_sec: trial.samples_per_sec,
            cold_reads_per_sec: cold_reads_per_sec(
                a.arm.method,
                trial.samples_per_sec,
                seconds,
                pages,
                cacheable_fraction,
            ),
            sweep_samples_per_sec: a.rate(),
        });
    }
    Ok(out)
}

/// The device's cold reads/s behind `samples_per_sec` read for `seconds` by `method` from a
/// cold cache.
fn cold_reads_per_sec(
    method: Method,
    samples_per_sec: f64,
    seconds: f64,
    pages: f64,
    cacheable_fraction: f64,
) -> f64 {
    match method.read_path() {
        // The simulated disk has no page cache: every sample is one of its reads.
        _ if method == Method::Sim => samples_per_sec,
        ReadPath::Direct => samples_per_sec,
        ReadPath::Buffered | ReadPath::Mapped if seconds > 0.0 => {
            pora_mine::steer::cold_misses(samples_per_sec * seconds, pages, cacheable_fraction)
                / seconds
        }
        ReadPath::Buffered | ReadPath::Mapped => samples_per_sec,
    }
}

#[cfg(test)]
mod tests {
    use super::super::search::TrialResult;
    use super::*;

    fn stats(method: Method, threads: usize, depth: usize, rate: f64) -> ArmStats {
        ArmStats {
            arm: Arm {
                method,
                threads,
                depth,
            },
            trials: vec![rate],
            dropped: None,
            paired_rate: None,
        }
    }

    /// A device held to 80,000 reads/s that lets 8,000 reads through at the start of each read
    /// (a throttle's first slice): a 0.5 s read sees 96,000/s, a 3 s one 82,667/s.
    struct Throttled;
    impl TrialRunner for Throttled {
        fn run(&mut self, arm: &Arm, seconds: f64) -> Result<TrialResult, TrialError> {
            if arm.method == Method::Mmap {
                return Err(TrialError::Arm("cannot map".into()));
            }
            Ok(TrialResult {
                samples_per_sec: (80_000.0 * seconds + 8_000.0) / seconds,
                elapsed_sec: seconds,
            })
        }
    }

    /// One arm per read path, the knee's first, the fastest compared arm for each other path;
    /// the longer read gives the held rate within the burst's share, and a buffered read's
    /// samples are taken back to the device's reads by the cache's fill, worked by hand.
    #[test]
    fn each_read_path_is_read_longer_and_taken_back_to_the_device() {
        let knee = stats(Method::Uring, 2, 16, 109_000.0);
        let arms = vec![
            knee.clone(),
            stats(Method::Uring, 2, 64, 120_000.0),
            stats(Method::UringDirect, 2, 16, 100_000.0),
            stats(Method::Direct, 8, 1, 105_000.0),
            stats(Method::Mmap, 2, 256, 90_000.0),
        ];
        let choice = Choice {
            best: arms[1].clone(),
            knee,
        };
        let per_path = arms_per_path(&choice, &arms);
        let picked: Vec<(Method, usize)> = per_path
            .iter()
            .map(|a| (a.arm.method, a.arm.depth))
            .collect();
        assert_eq!(
            picked,
            [
                (Method::Uring, 16),
                (Method::Direct, 1),
                (Method::Mmap, 256)
            ]
        );
        // 1,000,000 pages, all cacheable: 3 s at 82,667 samples/s is 248,000 reads, which miss
        // 1e6 (1 - e^-0.248) = 219,631 times: 73,210 cold reads/s.
        let rates = measure(&mut Throttled, &per_path, 3.0, 1e6, 1.0).unwrap();
        assert_eq!(rates.len(), 2, "the map that cannot run is left out");
        let buffered = &rates[0];
        assert!((buffered.samples_per_sec - 82_666.7).abs() < 1.0);
        assert!(
            (buffered.cold_reads_per_sec - 73_210.0).abs() < 5.0,
            "{buffered:?}"
        );
        assert_eq!(buffered.sweep_samples_per_sec, 109_000.0);
        let direct = &rates[1];
        assert!((direct.cold_reads_per_sec - 82_666.7).abs() < 1.0);
    }

    #[test]
    fn the_longer_read_takes_a_small_share_of_the_budget() {
        assert_eq!(sustained_sec(10.0), 1.0);
        assert!((sustained_sec(40.0) - 2.0).abs() < 1e-9);
        assert_eq!(sustained_sec(60.0), 3.0);
        assert_eq!(sustained_sec(120.0), 3.0);
    }
}
