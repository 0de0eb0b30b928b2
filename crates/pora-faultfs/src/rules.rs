//! The fault schedule: a small text file, one rule a line, re-read by the file system whenever
//! it changes, so a test steers faults while a reader runs (write a new file, rename it over the
//! old one).
//!
//! ```text
//! # comment
//! eio   START END            # reads overlapping [START, END) fail with EIO
//! short START END            # ... return half the bytes asked (a short read)
//! delay START END MS         # ... are answered after MS milliseconds
//! tail  START END MS         # ... after a heavy-tailed delay: Pareto, alpha 1.5, median MS
//! hold  START END            # ... wait until the rule is removed (or the disk vanishes)
//! stall MS                   # the whole mount pauses: every request (lookup, getattr, open,
//!                            #   read, flush, release, statfs, ...) arriving while this line is
//!                            #   in force is served MS milliseconds after it arrived
//! freeze                     # every request waits until this line is removed (or the disk
//!                            #   vanishes): a disk that stopped answering
//! vanish                     # the disk is unplugged: reads fail with ENXIO, the mount goes away
//! ```
//!
//! Offsets are bytes of the file (decimal, or hex with `0x`); `END` may be `end`. A range rule may
//! end with `p=F` (0 < F <= 1): it applies to that fraction of the matching reads, at random. The
//! first matching range rule wins. At most one `stall` or `freeze` line: a stall is the state of
//! the whole file system, not of a range, so two would contradict each other.
//!
//! A stalled request is served by the rules in force when its stall ends: a read stalled behind
//! `stall`/`freeze` may then meet a `hold` or `delay` of its range. A `stall MS` already begun is
//! not shortened by removing the line (as a `delay` is not); a `freeze` ends when its line goes.
//! A stall that starts or ends at a chosen moment is a test rewriting the file at that moment.

use std::fmt;
use std::ops::Range;
use std::time::Duration;

/// What a matching read gets.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fault {
    /// The read fails with EIO (a bad sector).
    Eio,
    /// The read returns half the bytes asked for.
    Short,
    /// The read is answered after this long.
    Delay(Duration),
    /// The read is answered after a Pareto-distributed delay (alpha 1.5) with this median.
    Tail(Duration),
    /// The read waits until its rule is gone.
    Hold,
}

/// One line of the schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub fault: Fault,
    /// File bytes the rule covers; a read overlapping them matches.
    pub range: Range<u64>,
    /// Fraction of matching reads the rule applies to.
    pub probability: f64,
}

/// The whole file system pausing (every request, not a byte range).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stall {
    /// Each request waits this long from its arrival.
    For(Duration),
    /// Each request waits until the `freeze` line is removed.
    Freeze,
}

/// A parsed schedule.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rules {
    pub rules: Vec<Rule>,
    /// The disk is gone.
    pub vanish: bool,
    /// The file system pauses every request (`stall MS` or `freeze`).
    pub stall: Option<Stall>,
}

/// A line that is not a rule, with its 1-based number.
#[derive(Debug, PartialEq, Eq)]
pub struct RuleError {
    pub line: usize,
    pub why: String,
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fault rules line {}: {}", self.line, self.why)
    }
}

impl std::error::Error for RuleError {}

impl Rules {
    /// Parses a schedule; the whole text is refused at its first bad line.
    pub fn parse(text: &str) -> Result<Rules, RuleError> {
        let mut rules = Rules::default();
        // The line of the `stall`/`freeze` seen so far, to name it when a second one comes.
        let mut stall_line = 0;
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let err = |why: String| RuleError { line: i + 1, why };
            let mut words: Vec<&str> = line.split_whitespace().collect();
            let mut probability = 1.0;
            let mut has_probability = false;
            if let Some(last) = words.last() {
                if let Some(p) = last.strip_prefix("p=") {
                    probability = p
                        .parse::<f64>()
                        .ok()
                        .filter(|p| *p > 0.0 && *p <= 1.0)
                        .ok_or_else(|| err(format!("p={p}: not a fraction in (0, 1]")))?;
                    words.pop();
                    has_probability = true;
                }
            }
            let Some(&kind) = words.first() else {
                return Err(err("p= with no rule before it".into()));
            };
            let ranged = matches!(kind, "eio" | "short" | "hold" | "delay" | "tail");
            if !ranged && has_probability {
                // The probability is a draw per read of a range; a whole-disk state has none.
                return Err(err(format!("{kind}: p= applies to range rules only")));
            }
            match kind {
                "vanish" => {
                    if words.len() != 1 {
                        return Err(err("vanish takes no arguments".into()));
                    }
                    rules.vanish = true;
                    continue;
                }
                "stall" | "freeze" => {
                    let want = if kind == "stall" { 2 } else { 1 };
                    if words.len() != want {
                        return Err(err(format!(
                            "{kind} takes {} argument{}, got {}",
                            want - 1,
                            if want == 2 { "" } else { "s" },
                            words.len() - 1
                        )));
                    }
                    if stall_line != 0 {
                        return Err(err(format!(
                            "a second stall/freeze (line {stall_line} already stalls the file system)"
                        )));
                    }
                    stall_line = i + 1;
                    rules.stall = Some(if kind == "freeze" {
                        Stall::Freeze
                    } else {
                        let ms = words[1]
                            .parse::<u64>()
                            .map_err(|_| err(format!("{:?}: not milliseconds", words[1])))?;
                        Stall::For(Duration::from_millis(ms))
                    });
                    continue;
                }
                _ => {}
            }
            let want = match kind {
                "eio" | "short" | "hold" => 3,
                "delay" | "tail" => 4,
                _ => return Err(err(format!("unknown fault {kind:?}"))),
            };
            if words.len() != want {
                return Err(err(format!(
                    "{kind} takes {} arguments, got {}",
                    want - 1,
                    words.len() - 1
                )));
            }
            let start = offset(words[1]).map_err(&err)?;
            let end = offset(words[2]).map_err(&err)?;
            if start >= end {
                return Err(err(format!("empty range {start}..{end}")));
            }
            let millis = || {
                words[3]
                    .parse::<u64>()
                    .map(Duration::from_millis)
                    .map_err(|_| err(format!("{:?}: not milliseconds", words[3])))
            };
            let fault = match kind {
                "eio" => Fault::Eio,
                "short" => Fault::Short,
                "hold" => Fault::Hold,
                "delay" => Fault::Delay(millis()?),
                _ => Fault::Tail(millis()?),
            };
            rules.rules.push(Rule {
                fault,
                range: start..end,
                probability,
            });
        }
        Ok(rules)
    }

    /// The first rule matching a read of `len` bytes at `offset`; `draw` is a uniform number
    /// in [0, 1) for the rule's probability.
    pub fn matching(&self, offset: u64, len: u64, draw: f64) -> Option<&Rule> {
        let end = offset.saturating_add(len.max(1));
        self.rules
            .iter()
            .find(|r| r.range.start < end && offset < r.range.end && draw < r.probability)
    }

    /// Whether the file system is frozen (requests wait until the `freeze` line goes).
    pub fn frozen(&self) -> bool {
        !self.vanish && self.stall == Some(Stall::Freeze)
    }

    /// Whether a held read at `offset` (of `len` bytes) must go on waiting.
    pub fn still_held(&self, offset: u64, len: u64) -> bool {
        let end = offset.saturating_add(len.max(1));
        !self.vanish
            && self
                .rules
                .iter()
                .any(|r| r.fault == Fault::Hold && r.range.start < end && offset < r.range.end)
    }
}

fn offset(word: &str) -> Result<u64, String> {
    if word == "end" {
        return Ok(u64::MAX);
    }
    let parsed = match word.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => word.parse::<u64>(),
    };
    parsed.map_err(|_| format!("{word:?}: not an offset"))
}

/// A Pareto (alpha 1.5) delay with the given median, from a uniform draw in [0, 1): most reads
/// wait about the median, a few wait far longer (a disk retrying a weak sector).
pub fn pareto_delay(median: Duration, draw: f64) -> Duration {
    const ALPHA: f64 = 1.5;
    // Median of Pareto(scale, alpha) is scale * 2^(1/alpha).
    let scale = median.as_secs_f64() / 2f64.powf(1.0 / ALPHA);
    let u = (1.0 - draw).max(1e-9);
    // Capped so one read cannot wait for hours.
    Duration::from_secs_f64((scale / u.powf(1.0 / ALPHA)).min(3600.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_parses_with_ranges_and_probability() {
        let rules = Rules::parse(
            "# bad KVs\neio 0 4096\nshort 0x1000 0x2000 p=0.5\ndelay 8192 end 250\ntail 1 2 10\nhold 5 6\n",
        )
        .unwrap();
        assert!(!rules.vanish);
        assert_eq!(rules.rules.len(), 5);
        assert_eq!(rules.rules[0].fault, Fault::Eio);
        assert_eq!(rules.rules[1].range, 4096..8192);
        assert_eq!(rules.rules[1].probability, 0.5);
        assert_eq!(
            rules.rules[2].fault,
            Fault::Delay(Duration::from_millis(250))
        );
        assert_eq!(rules.rules[2].range.end, u64::MAX);
        assert_eq!(rules.rules[3].fault, Fault::Tail(Duration::from_millis(10)));
        assert!(Rules::parse("vanish").unwrap().vanish);
    }

    #[test]
    fn bad_lines_are_named() {
        let e = Rules::parse("eio 0 10\nfry 0 1").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().contains("unknown fault \"fry\""), "{e}");
        assert!(Rules::parse("eio 10 10")
            .unwrap_err()
            .why
            .contains("empty range"));
        assert!(Rules::parse("delay 0 10")
            .unwrap_err()
            .why
            .contains("3 arguments"));
        assert!(Rules::parse("eio 0 x")
            .unwrap_err()
            .why
            .contains("not an offset"));
        assert!(Rules::parse("eio 0 1 p=2")
            .unwrap_err()
            .why
            .contains("fraction"));
    }

    #[test]
    fn overlap_decides_a_match_and_the_first_rule_wins() {
        let rules = Rules::parse("eio 100 200\nshort 0 end").unwrap();
        assert_eq!(rules.matching(90, 11, 0.0).unwrap().fault, Fault::Eio);
        assert_eq!(rules.matching(199, 1, 0.0).unwrap().fault, Fault::Eio);
        assert_eq!(rules.matching(200, 32, 0.0).unwrap().fault, Fault::Short);
        assert_eq!(rules.matching(90, 10, 0.0).unwrap().fault, Fault::Short);
        let sometimes = Rules::parse("eio 0 10 p=0.25").unwrap();
        assert!(sometimes.matching(0, 1, 0.2).is_some());
        assert!(sometimes.matching(0, 1, 0.3).is_none());
    }

    #[test]
    fn holds_last_while_their_rule_is_there_and_the_disk_is() {
        let held = Rules::parse("hold 0 4096").unwrap();
        assert!(held.still_held(100, 32));
        assert!(!held.still_held(4096, 32));
        assert!(!Rules::parse("hold 0 4096\nvanish")
            .unwrap()
            .still_held(100, 32));
        assert!(!Rules::default().still_held(100, 32));
    }

    #[test]
    fn stall_and_freeze_parse_once_and_without_a_probability() {
        let stalled = Rules::parse("stall 250\neio 0 10").unwrap();
        assert_eq!(stalled.stall, Some(Stall::For(Duration::from_millis(250))));
        assert!(!stalled.frozen());
        assert_eq!(stalled.rules.len(), 1);
        let frozen = Rules::parse("# the disk stops\nfreeze").unwrap();
        assert_eq!(frozen.stall, Some(Stall::Freeze));
        assert!(frozen.frozen());
        assert!(!Rules::parse("freeze\nvanish").unwrap().frozen());
        assert_eq!(Rules::default().stall, None);
        let e = Rules::parse("stall 10\nfreeze").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.why.contains("line 1 already stalls"), "{e}");
        let e = Rules::parse("eio 0 1\nstall").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.why.contains("stall takes 1 argument, got 0"), "{e}");
        assert!(Rules::parse("freeze 10")
            .unwrap_err()
            .why
            .contains("freeze takes 0 arguments"));
        assert!(Rules::parse("stall soon")
            .unwrap_err()
            .why
            .contains("not milliseconds"));
        assert!(Rules::parse("stall 10 p=0.5")
            .unwrap_err()
            .why
            .contains("range rules only"));
        assert!(Rules::parse("p=0.5").unwrap_err().why.contains("no rule"));
        assert!(Rules::parse("vanish p=0.5")
            .unwrap_err()
            .why
            .contains("range rules only"));
    }

    #[test]
    fn pareto_delays_have_the_median_and_a_heavy_tail() {
        let median = Duration::from_millis(10);
        let at_half = pareto_delay(median, 0.5).as_secs_f64();
        assert!((at_half - 0.010).abs() < 1e-6, "{at_half}");
        assert!(pareto_delay(median, 0.999) > 10 * median);
        assert!(pareto_delay(median, 0.0) < median);
    }
}
