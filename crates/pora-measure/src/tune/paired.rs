//! Methods compared on the same moments. When the knee's trials vary too much to be trusted (a
//! slow spell of the device landed in some of them), tune takes more trials; a method compared
//! with trials taken at other moments compares the device's moods as much as the methods (a
//! spell on one method's extra trials once made the forecast name the slower read path). So the
//! extra trials come in rounds: the knee, the best arm and the fastest arm of every other read
//! path, back to back, the order reversed every other round so a device drifting within a round
//! favours no one. Each arm is then rated against the knee on the same rounds: the knee's mean
//! times the median of the per-round ratios, which a spell that slows a whole round leaves
//! alone. A comparison whose rounds disagree on which is faster by more than the knee margin is
//! reported.

use super::search::{choose, one_more_trial, Arm, ArmStats, SweepPlan, TrialRunner};
use serde::Serialize;

/// One arm rated against the reference (the knee) on the rounds both took part in.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    pub arm: Arm,
    pub reference: Arm,
    /// The arm's samples/s over the reference's, round by round.
    pub ratios: Vec<f64>,
    pub median_ratio: f64,
    /// Some round put the arm ahead of the reference by more than the margin and another
    /// behind it by more: the device moved within the rounds.
    pub disagree: bool,
}

impl Comparison {
    /// One sentence for the notes when the rounds disagree.
    pub fn disagreement(&self, margin: f64) -> Option<String> {
        let show = |a: &Arm| format!("{} {}x{}", a.method, a.threads, a.depth);
        let (lo, hi) = self
            .ratios
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(lo, hi), r| {
                (lo.min(*r), hi.max(*r))
            });
        self.disagree.then(|| {
            format!(
                "paired trials disagree: {} read {lo:.2}-{hi:.2}x {} over {} rounds taken back to back (median {:.2}x), beyond the {:.0}% margin either way: the device moved during the comparison, so the choice between them is uncertain; re-run on a quiet device",
                show(&self.arm),
                show(&self.reference),
                self.ratios.len(),
                self.median_ratio,
                margin * 100.0
            )
        })
    }
}

/// What the paired rounds did: `Some(interrupted)` when the sweep must end at once (as
/// [`super::search`]'s phases say it), and the comparisons made.
pub(super) struct Rounds {
    pub end: Option<bool>,
    pub comparisons: Vec<Comparison>,
}

/// The reference (the knee, while its spread is not trusted) and the arms compared with it:
/// the best arm and, per other read path, the arm with the best mean there. `None` when there
/// is no knee or it is trusted.
fn targets(arms: &[ArmStats], plan: &SweepPlan) -> Option<(usize, Vec<usize>)> {
    let c = choose(arms, plan.knee_margin)?;
    if c.knee.cv() <= plan.trust_cv {
        return None;
    }
    let at = |arm: Arm| arms.iter().position(|a| a.arm == arm);
    let reference = at(c.knee.arm)?;
    let mut others: Vec<usize> = at(c.best.arm)
        .filter(|&i| i != reference)
        .into_iter()
        .collect();
    let knee_path = c.knee.arm.method.read_path();
    let mut paths: Vec<pora_io::ReadPath> = Vec::new();
    for a in arms.iter().filter(|a| !a.trials.is_empty()) {
        let path = a.arm.method.read_path();
        if path != knee_path && !paths.contains(&path) {
            paths.push(path);
        }
    }
    for path in paths {
        let fastest = arms
            .iter()
            .enumerate()
            .filter(|(_, a)| !a.trials.is_empty() && a.arm.method.read_path() == path)
            .max_by(|(_, a), (_, b)| a.mean().total_cmp(&b.mean()))
            .map(|(i, _)| i);
        others.extend(fastest.filter(|i| !others.contains(i)));
    }
    Some((reference, others))
}

/// Runs rounds while the knee is not trusted, has fewer than `max_trials_untrusted` trials and
/// the budget holds a whole round; then rates the knee and every arm compared against it
/// ([`ArmStats::paired_rate`]: from then on only these are compared, [`super::search::comparable`]).
/// An arm dropped earlier on trials of other moments is measured again here, so it is kept.
pub(super) fn run_rounds(
    arms: &mut [ArmStats],
    plan: &SweepPlan,
    runner: &mut dyn TrialRunner,
    spent: &mut f64,
    progress: &mut dyn FnMut(&ArmStats, f64),
) -> Rounds {
    let Some((reference, others)) = targets(arms, plan) else {
        return Rounds {
            end: None,
            comparisons: Vec::new(),
        };
    };
    let mut order: Vec<usize> = std::iter::once(reference)
        .chain(others.iter().copied())
        .collect();
    let mut rounds: Vec<Vec<(usize, f64)>> = Vec::new();
    let mut end = None;
    while arms[reference].cv() > plan.trust_cv
        && arms[reference].trials.len() < plan.max_trials_untrusted
        && arms[reference].dropped.is_none()
    {
        if *spent + order.len() as f64 * plan.trial_sec > plan.budget_sec {
            end = Some(false);
            break;
        }
        let mut round = Vec::with_capacity(order.len());
        for &i in &order {
            let before = arms[i].trials.len();
            if !one_more_trial(&mut arms[i], plan, runner, spent, progress) {
                return Rounds {
                    end: Some(true),
                    comparisons: Vec::new(),
                };
            }
            if arms[i].trials.len() > before {
                round.push((i, arms[i].trials[before]));
            }
        }
        rounds.push(round);
        order.reverse();
    }
    let comparisons = others
        .iter()
        .filter_map(|&i| compare(arms, &rounds, reference, i, plan.knee_margin))
        .collect::<Vec<_>>();
    let reference_rate = arms[reference].mean();
    if !comparisons.is_empty() {
        arms[reference].paired_rate = Some(reference_rate);
    }
    for c in &comparisons {
        if let Some(a) = arms.iter_mut().find(|a| a.arm == c.arm) {
            a.paired_rate = Some(reference_rate * c.median_ratio);
            a.dropped = None;
        }
    }
    Rounds { end, comparisons }
}

/// Arm `other` against `reference` on the rounds both took part in; `None` without one.
fn compare(
    arms: &[ArmStats],
    rounds: &[Vec<(usize, f64)>],
    reference: usize,
    other: usize,
    margin: f64,
) -> Option<Comparison> {
    let value = |round: &[(usize, f64)], i: usize| round.iter().find(|(j, _)| *j == i).map(|x| x.1);
    let ratios: Vec<f64> = rounds
        .iter()
        .filter_map(|r| match (value(r, other), value(r, reference)) {
            (Some(o), Some(k)) if k > 0.0 => Some(o / k),
            _ => None,
        })
        .collect();
    if ratios.is_empty() {
        return None;
    }
    Some(Comparison {
        arm: arms[other].arm,
        reference: arms[reference].arm,
        median_ratio: median(&ratios),
        disagree: ratios.iter().any(|r| *r > 1.0 + margin)
            && ratios.iter().any(|r| *r < 1.0 - margin),
        ratios,
    })
}

/// The median (the mean of the middle two for an even count); `values` is not empty.
fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pora_io::Method;

    #[test]
    fn the_median_ratio_ignores_a_spell_that_slows_whole_rounds() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        let arm = |method, trials: Vec<f64>| ArmStats {
            arm: Arm {
                method,
                threads: 1,
                depth: 8,
            },
            trials,
            dropped: None,
            paired_rate: None,
        };
        // Four rounds, the last two in a spell at half speed for both: 0.8 every round.
        let arms = vec![
            arm(Method::UringDirect, vec![1000.0, 1000.0, 500.0, 500.0]),
            arm(Method::Uring, vec![800.0, 800.0, 400.0, 400.0]),
        ];
        let rounds: Vec<Vec<(usize, f64)>> = (0..4)
            .map(|r| vec![(0, arms[0].trials[r]), (1, arms[1].trials[r])])
            .collect();
        let c = compare(&arms, &rounds, 0, 1, 0.03).unwrap();
        assert_eq!(c.ratios, vec![0.8; 4]);
        assert!((c.median_ratio - 0.8).abs() < 1e-12 && !c.disagree);
        assert!(c.disagreement(0.03).is_none());
        // Rounds that disagree beyond the margin either way are said.
        let rounds = vec![
            vec![(0, 1000.0), (1, 1100.0)],
            vec![(0, 1000.0), (1, 900.0)],
        ];
        let c = compare(&arms, &rounds, 0, 1, 0.03).unwrap();
        assert!(c.disagree);
        let said = c.disagreement(0.03).unwrap();
        assert!(
            said.contains("0.90-1.10x") && said.contains("2 rounds"),
            "{said}"
        );
    }

    /// A runner that records which arm ran when, each method at a fixed rate.
    struct Recorder(Vec<Method>);

    impl TrialRunner for Recorder {
        fn run(
            &mut self,
            arm: &Arm,
            seconds: f64,
        ) -> Result<super::super::search::TrialResult, super::super::search::TrialError> {
            self.0.push(arm.method);
            let samples_per_sec = match arm.method {
                Method::UringDirect => 1000.0,
                _ => 600.0,
            };
            Ok(super::super::search::TrialResult {
                samples_per_sec,
                elapsed_sec: seconds,
            })
        }
    }

    /// The knee's spread is not trusted: its extra trials come in rounds with the other read
    /// path's fastest arm (dropped earlier, measured again here), back to back, the order
    /// reversed every other round, until the knee has `max_trials_untrusted`; the competitor is
    /// then rated against the knee on those rounds.
    #[test]
    fn the_extra_trials_come_in_rounds_back_to_back() {
        let arm = |method| Arm {
            method,
            threads: 1,
            depth: 8,
        };
        let mut arms = vec![
            ArmStats {
                trials: vec![1000.0, 1000.0, 500.0, 500.0],
                ..ArmStats::new(arm(Method::UringDirect))
            },
            ArmStats {
                trials: vec![600.0],
                dropped: Some("dropped: 50% below the best".into()),
                ..ArmStats::new(arm(Method::Uring))
            },
        ];
        let plan = SweepPlan {
            max_trials_untrusted: 8,
            ..SweepPlan::for_budget(100.0, 2)
        };
        let mut runner = Recorder(Vec::new());
        let mut spent = 0.0;
        let rounds = run_rounds(&mut arms, &plan, &mut runner, &mut spent, &mut |_, _| {});
        use Method::{Uring as B, UringDirect as D};
        assert_eq!(runner.0, [D, B, B, D, D, B, B, D]);
        assert_eq!(rounds.end, None);
        let [c] = &rounds.comparisons[..] else {
            panic!("{:?}", rounds.comparisons);
        };
        assert_eq!((c.arm, c.reference), (arm(B), arm(D)));
        assert_eq!(c.ratios, vec![0.6; 4]);
        // The knee's mean over its 8 trials is 875; buffered is rated at 0.6 of it.
        assert_eq!(arms[0].paired_rate, Some(875.0));
        assert!((arms[1].paired_rate.unwrap() - 525.0).abs() < 1e-9);
        assert!(arms[1].dropped.is_none());
    }
}
