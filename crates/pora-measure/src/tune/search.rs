//! The pure core of `pora tune`: the grid of arms (method x threads x depth), the sweep that
//! spends a time budget on them (a depth/thread ramp that stops once a line saturates, then
//! successive rounds that drop arms clearly worse than the best), the knee, and the mining-power
//! prediction. No I/O here: trials are run by a [`TrialRunner`], so tests drive the sweep with
//! a latency model.

use pora_io::Method;
use serde::Serialize;

/// One configuration to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Arm {
    pub method: Method,
    pub threads: usize,
    /// Chains (reads in flight) per worker.
    pub depth: usize,
}

impl Arm {
    /// Reads the arm keeps in flight at once.
    pub fn reads_in_flight(&self) -> usize {
        self.threads * self.depth
    }
}

/// Powers of two from 1 to `max` (inclusive when `max` is one).
pub fn powers_of_two(max: usize) -> Vec<usize> {
    std::iter::successors(Some(1usize), |p| p.checked_mul(2))
        .take_while(|p| *p <= max.max(1))
        .collect()
}

/// Grid limits.
#[derive(Clone, Copy, Debug)]
pub struct GridLimits {
    pub cpus: usize,
    pub max_depth: usize,
    pub max_threads_sync: usize,
}

/// The arms per method, grouped in lines that ramp one knob up: for asynchronous methods depth
/// (at 1 thread and at `cpus` threads), for methods that complete reads inline threads (depth 1).
pub fn grid(methods: &[Method], limits: GridLimits) -> Vec<Vec<Arm>> {
    let mut lines = Vec::new();
    for &method in methods {
        if !method.capabilities().completes_inline {
            let mut threads = vec![1, limits.cpus.max(1)];
            threads.dedup();
            for t in threads {
                lines.push(
                    powers_of_two(limits.max_depth)
                        .into_iter()
                        .map(|d| Arm {
                            method,
                            threads: t,
                            depth: d,
                        })
                        .collect(),
                );
            }
        } else {
            lines.push(
                powers_of_two(limits.max_threads_sync)
                    .into_iter()
                    .map(|t| Arm {
                        method,
                        threads: t,
                        depth: 1,
                    })
                    .collect(),
            );
        }
    }
    lines
}

/// What one trial measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrialResult {
    pub samples_per_sec: f64,
    /// Wall time the trial cost, including eviction and set-up.
    pub elapsed_sec: f64,
}

/// Why a sweep stopped early.
#[derive(Debug)]
#[non_exhaustive]
pub enum TrialError {
    /// Ctrl-C.
    Interrupted,
    /// The arm cannot run (e.g. too many threads); it is dropped with this reason.
    Arm(String),
}

/// Runs one trial of an arm for about `seconds`.
pub trait TrialRunner {
    fn run(&mut self, arm: &Arm, seconds: f64) -> Result<TrialResult, TrialError>;
}

/// Measurements of one arm.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArmStats {
    #[serde(flatten)]
    pub arm: Arm,
    /// Samples/s of each trial.
    pub trials: Vec<f64>,
    /// Why the arm stopped getting trials, if it was dropped.
    pub dropped: Option<String>,
    /// Samples/s rated against the knee on trials taken back to back with its own
    /// ([`super::paired`]): the knee's mean times the median per-round ratio.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paired_rate: Option<f64>,
}

impl ArmStats {
    /// An arm not yet measured.
    pub fn new(arm: Arm) -> ArmStats {
        ArmStats {
            arm,
            trials: Vec::new(),
            dropped: None,
            paired_rate: None,
        }
    }

    /// Samples/s as arms are compared: rated on the same moments as the knee when it was
    /// ([`Self::paired_rate`]), else the mean of its trials.
    pub fn rate(&self) -> f64 {
        self.paired_rate.unwrap_or_else(|| self.mean())
    }

    pub fn mean(&self) -> f64 {
        if self.trials.is_empty() {
            return 0.0;
        }
        self.trials.iter().sum::<f64>() / self.trials.len() as f64
    }

    /// Sample standard deviation / mean; 0 with fewer than two trials.
    pub fn cv(&self) -> f64 {
        let n = self.trials.len();
        let mean = self.mean();
        if n < 2 || mean <= 0.0 {
            return 0.0;
        }
        let var = self.trials.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        var.sqrt() / mean
    }
}

/// How the sweep spends its budget.
#[derive(Clone, Copy, Debug)]
pub struct SweepPlan {
    pub budget_sec: f64,
    /// Length of each trial.
    pub trial_sec: f64,
    /// Trials an arm gets at most in the rounds.
    pub max_trials: usize,
    /// A knee whose trials vary more than this (coefficient of variation) is not trusted.
    pub trust_cv: f64,
    /// Trials the knee and the best arm get at most while the knee is not trusted and budget
    /// is left after the rounds.
    pub max_trials_untrusted: usize,
    /// A line stops ramping after this many steps without beating its best by `knee_margin`.
    pub ramp_patience: usize,
    /// Arms this far below the best mean are dropped after a round (0.10 = 10%).
    pub drop_margin: f64,
    /// "Within ~3% of the best" for the knee.
    pub knee_margin: f64,
}

impl SweepPlan {
    /// Trial length from the budget and grid size: the first round should take about half of it.
    pub fn for_budget(budget_sec: f64, arms: usize) -> SweepPlan {
        let trial_sec = (0.5 * budget_sec / arms.max(1) as f64).clamp(0.25, 2.0);
        SweepPlan {
            budget_sec,
            trial_sec,
            max_trials: 4,
            trust_cv: super::CV_TRUST,
            max_trials_untrusted: 12,
            ramp_patience: 2,
            drop_margin: 0.10,
            knee_margin: 0.03,
        }
    }
}

/// Every arm's measurements and whether the sweep was cut short.
#[derive(Clone, Debug)]
pub struct Sweep {
    pub arms: Vec<ArmStats>,
    pub interrupted: bool,
    pub spent_sec: f64,
    /// Arms compared with the untrusted knee on trials taken back to back ([`super::paired`]).
    pub paired: Vec<super::paired::Comparison>,
}

/// Runs the sweep: round 1 ramps each line until it saturates; later rounds give one more trial
/// to every arm not clearly worse than the best, until arms have `max_trials` or the budget is
/// spent; then, while the knee's spread is not trusted, the knee, the best arm and the fastest
/// arm of each other read path get more in rounds taken back to back, up to
/// `max_trials_untrusted` or the budget, and are rated against the knee on those rounds
/// ([`super::paired`]). `progress` sees each finished trial.
pub fn sweep(
    lines: &[Vec<Arm>],
    plan: &SweepPlan,
    runner: &mut dyn TrialRunner,
    progress: &mut dyn FnMut(&ArmStats, f64),
) -> Sweep {
    let mut arms: Vec<ArmStats> = Vec::new();
    let mut spent = 0.0;
    let over = |spent: f64| no_room(plan, spent);
    'lines: for line in lines {
        let mut line_best = 0.0f64;
        let mut stale = 0;
        for (i, arm) in line.iter().enumerate() {
            if over(spent) {
                break 'lines;
            }
            let mut stats = ArmStats::new(*arm);
            match runner.run(arm, plan.trial_sec) {
                Ok(r) => {
                    spent += r.elapsed_sec;
                    stats.trials.push(r.samples_per_sec);
                }
                Err(TrialError::Interrupted) => {
                    return Sweep {
                        arms,
                        interrupted: true,
                        spent_sec: spent,
                        paired: Vec::new(),
                    }
                }
                Err(TrialError::Arm(why)) => {
                    stats.dropped = Some(why);
                    arms.push(stats);
                    continue;
                }
            }
            progress(&stats, spent);
            let sps = stats.mean();
            arms.push(stats);
            if sps > line_best * (1.0 + plan.knee_margin) {
                stale = 0;
            } else {
                stale += 1;
            }
            line_best = line_best.max(sps);
            if stale >= plan.ramp_patience {
                for rest in &line[i + 1..] {
                    let why = format!(
                        "not run: the line saturated by {} in flight",
                        arm.reads_in_flight()
                    );
                    arms.push(ArmStats {
                        dropped: Some(why),
                        ..ArmStats::new(*rest)
                    });
                }
                break;
            }
        }
    }
    // The later rounds, each giving one more trial to the arms it picks until it picks none;
    // then, while the knee is not trusted, rounds of trials back to back ([`super::paired`]).
    loop {
        let next = next_round_arms(&mut arms, plan);
        if next.is_empty() {
            break;
        }
        if let Some(interrupted) = more_trials(&mut arms, &next, plan, runner, &mut spent, progress)
        {
            return Sweep {
                arms,
                interrupted,
                spent_sec: spent,
                paired: Vec::new(),
            };
        }
    }
    let rounds = super::paired::run_rounds(&mut arms, plan, runner, &mut spent, progress);
    Sweep {
        arms,
        interrupted: rounds.end == Some(true),
        spent_sec: spent,
        paired: rounds.comparisons,
    }
}

/// The arms of a later round: every arm not clearly worse than the best (the others are
/// dropped first) and short of `max_trials`.
fn next_round_arms(arms: &mut [ArmStats], plan: &SweepPlan) -> Vec<usize> {
    drop_clearly_worse(arms, plan);
    (0..arms.len())
        .filter(|&i| arms[i].dropped.is_none() && arms[i].trials.len() < plan.max_trials)
        .collect()
}

/// Whether the budget has no room for another trial after `spent` seconds.
fn no_room(plan: &SweepPlan, spent: f64) -> bool {
    spent + plan.trial_sec > plan.budget_sec
}

/// One more trial of each arm of `next`, in turn, while the budget lasts. `Some(interrupted)`
/// when the sweep must end now: the budget has no room for another trial (`false`), or the
/// run was interrupted (`true`); `None` when every arm had its trial.
fn more_trials(
    arms: &mut [ArmStats],
    next: &[usize],
    plan: &SweepPlan,
    runner: &mut dyn TrialRunner,
    spent: &mut f64,
    progress: &mut dyn FnMut(&ArmStats, f64),
) -> Option<bool> {
    for &i in next {
        if no_room(plan, *spent) {
            return Some(false);
        }
        if !one_more_trial(&mut arms[i], plan, runner, spent, progress) {
            return Some(true);
        }
    }
    None
}

/// Runs one more trial of `stats` and reports it to `progress`; an arm that fails is dropped
/// with the reason. `false` when the run was interrupted.
pub(super) fn one_more_trial(
    stats: &mut ArmStats,
    plan: &SweepPlan,
    runner: &mut dyn TrialRunner,
    spent: &mut f64,
    progress: &mut dyn FnMut(&ArmStats, f64),
) -> bool {
    match runner.run(&stats.arm, plan.trial_sec) {
        Ok(r) => {
            *spent += r.elapsed_sec;
            stats.trials.push(r.samples_per_sec);
            progress(stats, *spent);
            true
        }
        Err(TrialError::Interrupted) => false,
        Err(TrialError::Arm(why)) => {
            stats.dropped = Some(why);
            true
        }
    }
}

/// Marks arms clearly worse than the best as dropped, then, when more than half survive, the
/// lower half too, but never an arm within `knee_margin` of the best (the knee candidates).
/// "Clearly" widens with the noise: the margin is `drop_margin` or three times the median
/// coefficient of variation of repeated arms, and 50% while no arm has been repeated, so one
/// unlucky trial on a busy machine does not eliminate an arm.
fn drop_clearly_worse(arms: &mut [ArmStats], plan: &SweepPlan) {
    let best = best_mean(arms);
    if best <= 0.0 {
        return;
    }
    let margin = match median_cv(arms) {
        Some(noise) => plan.drop_margin.max(3.0 * noise).min(0.9),
        None => plan.drop_margin.max(0.5),
    };
    let mut alive: Vec<usize> = Vec::new();
    for (i, a) in arms.iter_mut().enumerate() {
        if a.dropped.is_some() {
            continue;
        }
        if a.mean() < best * (1.0 - margin) {
            a.dropped = Some(format!(
                "dropped: {:.0}% below the best",
                100.0 * (1.0 - a.mean() / best)
            ));
        } else {
            alive.push(i);
        }
    }
    if alive.len() > 2 {
        alive.sort_by(|&a, &b| arms[b].mean().total_cmp(&arms[a].mean()));
        let keep = alive.len().div_ceil(2);
        for &i in &alive[keep..] {
            if arms[i].mean() < best * (1.0 - plan.knee_margin) {
                arms[i].dropped = Some(format!(
                    "dropped: lower half of a round ({:.0}% below the best)",
                    100.0 * (1.0 - arms[i].mean() / best)
                ));
            }
        }
    }
}

/// The median coefficient of variation over arms measured at least twice.
pub fn median_cv(arms: &[ArmStats]) -> Option<f64> {
    let mut cvs: Vec<f64> = arms
        .iter()
        .filter(|a| a.trials.len() >= 2)
        .map(ArmStats::cv)
        .collect();
    if cvs.is_empty() {
        return None;
    }
    cvs.sort_by(f64::total_cmp);
    Some(cvs[cvs.len() / 2])
}

fn best_mean(arms: &[ArmStats]) -> f64 {
    arms.iter()
        .filter(|a| a.dropped.is_none())
        .map(ArmStats::mean)
        .fold(0.0, f64::max)
}

/// The choice: the best arm, and the knee (fewest reads in flight within the margin of the
/// best, on the best arm's method).
#[derive(Clone, Debug)]
pub struct Choice {
    pub best: ArmStats,
    pub knee: ArmStats,
}

/// The arms to compare: those rated on the same moments ([`ArmStats::paired_rate`]) once any
/// was (an arm measured only before or after a slow spell would be compared with the device's
/// mood), else all.
pub fn comparable(arms: &[ArmStats]) -> impl Iterator<Item = &ArmStats> {
    let paired = arms.iter().any(|a| a.paired_rate.is_some());
    arms.iter()
        .filter(move |a| !paired || a.paired_rate.is_some())
}

/// Picks the best arm among those still alive (all measured arms if none is), then the knee on
/// its method: fewest reads in flight, then fewest threads. Arms are compared by
/// [`ArmStats::rate`], among the [`comparable`] ones.
pub fn choose(arms: &[ArmStats], knee_margin: f64) -> Option<Choice> {
    let measured = |a: &&ArmStats| !a.trials.is_empty();
    let arms: Vec<ArmStats> = comparable(arms).cloned().collect();
    let alive: Vec<&ArmStats> = arms
        .iter()
        .filter(measured)
        .filter(|a| a.dropped.is_none())
        .collect();
    let pool: Vec<&ArmStats> = if alive.is_empty() {
        arms.iter().filter(measured).collect()
    } else {
        alive
    };
    let best = *pool.iter().max_by(|a, b| a.rate().total_cmp(&b.rate()))?;
    let knee = pool
        .iter()
        .filter(|a| {
            a.arm.method == best.arm.method && a.rate() >= best.rate() * (1.0 - knee_margin)
        })
        .min_by_key(|a| (a.arm.reads_in_flight(), a.arm.threads))
        .copied()
        .unwrap_or(best);
    Some(Choice {
        best: best.clone(),
        knee: knee.clone(),
    })
}

/// Samples/s one shard needs for 100% mining power: `nonceLimit * randomChecks / slot`.
pub fn required_samples_per_sec(nonce_limit: u64, random_checks: u32, slot_sec: f64) -> f64 {
    nonce_limit as f64 * f64::from(random_checks) / slot_sec
}

/// Expected mining power per shard when `shards` share the device's `samples_per_sec`.
pub fn predicted_power(samples_per_sec: f64, shards: usize, required_per_shard: f64) -> f64 {
    if required_per_shard <= 0.0 {
        return 1.0;
    }
    (samples_per_sec / shards.max(1) as f64 / required_per_shard).clamp(0.0, 1.0)
}

/// es-node's closest knob: it does one blocking read per goroutine, so threads-per-shard that
/// keeps the knee's reads in flight across `shards` shards.
pub fn esnode_threads_per_shard(knee: &Arm, shards: usize) -> usize {
    knee.reads_in_flight().div_ceil(shards.max(1)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A disk model: each read takes `latency_us`, the device serves at most `iops_cap`, and a
    /// worker thread hashes at most `cpu_cap_per_thread` samples/s; deterministic +-`noise`.
    struct Model {
        latency_us: f64,
        iops_cap: f64,
        cpu_cap_per_thread: f64,
        cpus: usize,
        noise: f64,
        calls: u64,
        async_penalty: f64,
        /// Calls (counted from 1) during which the device reads at `slow_factor` of its rate.
        slow: std::ops::Range<u64>,
        slow_factor: f64,
    }

    impl Model {
        fn truth(&self, arm: &Arm) -> f64 {
            let by_latency = arm.reads_in_flight() as f64 * 1e6 / self.latency_us;
            let cpu = self.cpu_cap_per_thread * arm.threads.min(self.cpus) as f64;
            let m = if !arm.method.capabilities().completes_inline {
                1.0
            } else {
                self.async_penalty
            };
            by_latency.min(self.iops_cap).min(cpu) * m
        }
    }

    impl TrialRunner for Model {
        fn run(&mut self, arm: &Arm, seconds: f64) -> Result<TrialResult, TrialError> {
            self.calls += 1;
            let wobble = if self.calls.is_multiple_of(2) {
                1.0 + self.noise
            } else {
                1.0 - self.noise
            };
            let spell = if self.slow.contains(&self.calls) {
                self.slow_factor
            } else {
                1.0
            };
            Ok(TrialResult {
                samples_per_sec: self.truth(arm) * wobble * spell,
                elapsed_sec: seconds,
            })
        }
    }

    fn model() -> Model {
        Model {
            latency_us: 100.0,
            iops_cap: 200_000.0,
            cpu_cap_per_thread: 1e9,
            cpus: 2,
            noise: 0.005,
            calls: 0,
            async_penalty: 0.6,
            slow: 0..0,
            slow_factor: 1.0,
        }
    }

    const LIMITS: GridLimits = GridLimits {
        cpus: 2,
        max_depth: 256,
        max_threads_sync: 128,
    };

    #[test]
    fn picks_the_knee_of_a_saturating_device() {
        // 100 µs per read, 200k IOPS: 20 reads in flight saturate, so the knee is 1 thread at
        // depth 32 (16 gives 160k, 20% short).
        let lines = grid(&[Method::Pread, Method::UringDirect], LIMITS);
        let plan = SweepPlan::for_budget(120.0, lines.iter().map(Vec::len).sum());
        let mut m = model();
        let s = sweep(&lines, &plan, &mut m, &mut |_, _| {});
        assert!(!s.interrupted);
        assert!(s.spent_sec <= plan.budget_sec + 1e-9);
        let c = choose(&s.arms, plan.knee_margin).unwrap();
        assert_eq!(
            c.knee.arm,
            Arm {
                method: Method::UringDirect,
                threads: 1,
                depth: 32
            }
        );
        assert!((c.best.mean() - 200_000.0).abs() < 200_000.0 * 0.02);
        assert!(
            c.knee.trials.len() >= 2,
            "the knee gets repeated trials: {:?}",
            c.knee.trials
        );
        // pread (60% of the model) is dropped as clearly worse.
        assert!(s
            .arms
            .iter()
            .filter(|a| a.arm.method == Method::Pread && !a.trials.is_empty())
            .all(|a| a.dropped.is_some()));
    }

    #[test]
    fn cpu_bound_model_prefers_more_threads() {
        // Each thread hashes at most 50k samples/s; the device allows 200k: 2 threads needed.
        let lines = grid(&[Method::Uring], LIMITS);
        let plan = SweepPlan::for_budget(60.0, lines.iter().map(Vec::len).sum());
        let mut m = Model {
            cpu_cap_per_thread: 50_000.0,
            ..model()
        };
        let s = sweep(&lines, &plan, &mut m, &mut |_, _| {});
        let c = choose(&s.arms, plan.knee_margin).unwrap();
        // 2 threads x depth 4 = 8 in flight -> 80k; x 8 -> 100k cpu-capped at 2 x 50k.
        assert_eq!(
            c.knee.arm,
            Arm {
                method: Method::Uring,
                threads: 2,
                depth: 8
            }
        );
        assert!((c.knee.mean() - 100_000.0).abs() < 2_000.0);
    }

    #[test]
    fn ramp_stops_once_a_line_saturates_and_budget_is_respected() {
        let lines = grid(&[Method::UringDirect], LIMITS);
        let plan = SweepPlan {
            budget_sec: 5.0,
            trial_sec: 0.5,
            ..SweepPlan::for_budget(5.0, 18)
        };
        let mut m = model();
        let s = sweep(&lines, &plan, &mut m, &mut |_, _| {});
        assert!(s.spent_sec <= 5.0);
        assert!(m.calls <= 10);
        let skipped = s.arms.iter().filter(|a| a.trials.is_empty()).count();
        assert!(skipped > 0, "depths past saturation are not run");
    }

    /// A slow spell of the device during the repeat rounds leaves the knee's trials too spread
    /// to trust; with budget left, the knee gets more trials and its mean comes nearer what the
    /// device reads. Without the extra trials (`max_trials_untrusted` = `max_trials`) the
    /// spell's weight stays.
    #[test]
    fn an_untrusted_knee_gets_more_trials_while_budget_is_left() {
        let lines = grid(&[Method::UringDirect], LIMITS);
        let run = |max_trials_untrusted: usize, slow: std::ops::Range<u64>| {
            let plan = SweepPlan {
                max_trials_untrusted,
                ..SweepPlan::for_budget(60.0, lines.iter().map(Vec::len).sum())
            };
            let mut m = Model {
                slow,
                slow_factor: 0.6,
                ..model()
            };
            let s = sweep(&lines, &plan, &mut m, &mut |_, _| {});
            assert!(s.spent_sec <= plan.budget_sec + 1e-9);
            let c = choose(&s.arms, plan.knee_margin).unwrap();
            let error = (c.knee.mean() / m.truth(&c.knee.arm) - 1.0).abs();
            (c.knee, error)
        };
        let (rounds_only, rounds_only_error) = run(4, 12..22);
        assert_eq!(rounds_only.trials.len(), 4);
        assert!(
            rounds_only.cv() > 0.10,
            "the spell spreads the knee's trials"
        );
        assert!(
            rounds_only_error > 0.05,
            "the spell moves the mean: {rounds_only_error}"
        );
        let (extended, extended_error) = run(12, 12..22);
        assert!(
            extended.trials.len() > 4 && extended.trials.len() <= 12,
            "{:?}",
            extended.trials
        );
        assert!(
            extended_error < 0.05 && extended_error < rounds_only_error,
            "more trials bring the knee nearer the device: {extended_error} vs {rounds_only_error}"
        );
        let (quiet, quiet_error) = run(12, 0..0);
        assert!(
            quiet.trials.len() <= 4,
            "a trusted knee gets no more: {:?}",
            quiet.trials
        );
        assert!(quiet_error < 0.01);
    }

    struct Interrupting(u32);
    impl TrialRunner for Interrupting {
        fn run(&mut self, _arm: &Arm, seconds: f64) -> Result<TrialResult, TrialError> {
            self.0 += 1;
            if self.0 > 3 {
                return Err(TrialError::Interrupted);
            }
            Ok(TrialResult {
                samples_per_sec: 1000.0 * f64::from(self.0),
                elapsed_sec: seconds,
            })
        }
    }

    #[test]
    fn interruption_keeps_partial_results() {
        let lines = grid(&[Method::Uring], LIMITS);
        let s = sweep(
            &lines,
            &SweepPlan::for_budget(100.0, 18),
            &mut Interrupting(0),
            &mut |_, _| {},
        );
        assert!(s.interrupted);
        assert_eq!(s.arms.iter().filter(|a| !a.trials.is_empty()).count(), 3);
        assert!(choose(&s.arms, 0.03).is_some());
    }

    #[test]
    fn statistics_and_prediction() {
        let a = ArmStats {
            trials: vec![90.0, 110.0],
            ..ArmStats::new(Arm {
                method: Method::Sim,
                threads: 1,
                depth: 1,
            })
        };
        assert_eq!(a.mean(), 100.0);
        assert!((a.cv() - 0.141_42).abs() < 1e-4);
        let req = required_samples_per_sec(1_048_576, 2, 12.0);
        assert!((req - 174_762.67).abs() < 0.01);
        assert_eq!(predicted_power(req * 3.0, 2, req), 1.0);
        assert!((predicted_power(req, 2, req) - 0.5).abs() < 1e-12);
        assert_eq!(
            esnode_threads_per_shard(
                &Arm {
                    method: Method::Uring,
                    threads: 2,
                    depth: 64
                },
                3
            ),
            43
        );
        assert_eq!(powers_of_two(100), vec![1, 2, 4, 8, 16, 32, 64]);
        assert_eq!(
            grid(
                &[Method::Pread],
                GridLimits {
                    cpus: 1,
                    max_depth: 4,
                    max_threads_sync: 4
                }
            )[0]
            .len(),
            3
        );
        assert_eq!(
            grid(
                &[Method::Sim],
                GridLimits {
                    cpus: 1,
                    max_depth: 4,
                    max_threads_sync: 4
                }
            )
            .len(),
            1
        );
    }
}
