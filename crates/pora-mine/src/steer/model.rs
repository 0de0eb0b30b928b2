//! The mining-power model behind `auto` between slots, and the first slot's forecast that `pora
//! tune`, `pora doctor` and `pora mine` print: how many samples a read path delivers in a slot
//! given the device's reads/s, the share of the shard in the page cache now, the share it can
//! grow to in the memory there is, and the CPU each sample costs.
//!
//! Reads are uniform over the shard's pages, so a buffered read hits the page cache with
//! probability equal to the cached fraction `f`. Each miss costs the device one read and brings
//! one page into the cache (every file pora reads through the cache is opened with
//! `POSIX_FADV_RANDOM` or mapped with `MADV_RANDOM`: no read-ahead, one 4 KiB page per miss), so
//! over the slot's reads `df/dn = (1 - f) / pages`: after `n` reads from `f0`,
//! `f = 1 - (1 - f0) e^(-n / pages)` (for a cold shard, the share of distinct pages `n` uniform
//! reads touch), up to the cacheable fraction (the memory the cache can grow into over the
//! shard's size; LRU under uniform access keeps exactly that share). Samples come at
//! `min(device reads/s / (1 - f), CPUs / CPU seconds per sample)`: the misses at the device's
//! cold rate, overlapped with the hits served at the CPU's rate. A direct read always costs the
//! device one read and caches nothing, so a direct path, or a shard far larger than memory (the
//! cacheable fraction near what is cached), keeps the cold forecast. A slot is integrated in
//! closed form, phase by phase (the device bounds, then the CPU, then the cache is full); no
//! clocks or I/O here, so the model is tested on its own.

/// The page size the model counts in (Linux and Windows cache 4 KiB pages).
pub(crate) const PAGE_BYTES: f64 = 4096.0;

/// How a method reads, as far as the model cares: stated by each method in pora-io
/// ([`pora_io::Method::read_path`]).
pub use pora_io::ReadPath;

/// What the model assumes of one read path on one device.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PathRates {
    /// Reads/s the device serves this path when every read misses the cache.
    pub device_reads_per_sec: f64,
    /// CPU seconds one sample costs on this path when it hits (hashing included).
    pub cpu_sec_per_sample: f64,
}

/// The state of the shard's pages and what one slot asks for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SlotShape {
    /// Pages of the pool's shards.
    pub pages: f64,
    /// Share of them in the page cache when the slot starts, 0..1.
    pub cached_fraction: f64,
    /// Share of them the page cache can hold, 0..1.
    pub cacheable_fraction: f64,
    /// Samples the slot needs to try every nonce of every shard of the pool.
    pub samples_needed: f64,
    pub slot_sec: f64,
    /// CPUs the workers can use.
    pub cpus: f64,
}

/// One slot predicted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SlotForecast {
    /// Nonces tried over nonces asked, 0..1.
    pub mining_power: f64,
    /// The cached fraction when the slot ends: the chance that a read at the slot's end hits
    /// (0 on a direct path, which never reads from the cache).
    pub cached_fraction_end: f64,
    /// The hit ratio over the slot's reads.
    pub hit_ratio: f64,
}

/// Below this gap to the cacheable fraction the cache counts as full (float dust).
const FULL_EPSILON: f64 = 1e-12;

/// One slot on `path` from `shape`, integrated in closed form: while the cache fills, `f` after
/// `n` more reads is `1 - (1 - f) e^(-n / pages)` whatever sets the pace, and the time those
/// reads take is their misses over the device's rate (device-bound) or the reads over the
/// CPU's rate (CPU-bound); once full, the rate holds.
pub(crate) fn forecast(path: ReadPath, rates: &PathRates, shape: &SlotShape) -> SlotForecast {
    let pages = shape.pages.max(0.0);
    let cap = shape.cacheable_fraction.clamp(0.0, 1.0);
    let device = rates.device_reads_per_sec.max(0.0);
    let cpu = shape.cpus.max(0.0) / rates.cpu_sec_per_sample.max(1e-12);
    let need = shape.samples_needed.max(0.0);
    // The cached fraction from which hits come faster than the CPUs take them.
    let cpu_from = if cpu > device {
        1.0 - device / cpu
    } else {
        0.0
    };
    let fills = path != ReadPath::Direct && pages > 0.0;
    let mut f = match path {
        ReadPath::Direct => 0.0,
        ReadPath::Buffered | ReadPath::Mapped => shape.cached_fraction.clamp(0.0, cap),
    };
    let (mut t, mut done, mut hits) = (0.0f64, 0.0f64, 0.0f64);
    // At most three phases: device-bound filling, CPU-bound filling, full.
    for _ in 0..3 {
        let left_sec = shape.slot_sec - t;
        if left_sec <= 0.0 || done >= need {
            break;
        }
        // Samples/s with a share `f` of hits: misses at the device's rate, hits overlapped.
        let rate = if f >= 1.0 - FULL_EPSILON {
            cpu
        } else {
            (device / (1.0 - f)).min(cpu)
        };
        if !fills || f >= cap - FULL_EPSILON || rate <= 0.0 {
            let take = (rate * left_sec).min(need - done);
            done += take;
            hits += take * f;
            break;
        }
        let device_bound = f < cpu_from - FULL_EPSILON;
        // The cached fraction this phase ends at: full, or where the CPU takes over.
        let until = if device_bound { cap.min(cpu_from) } else { cap };
        // Reads and seconds to reach it, then cut to the time and the samples left.
        let reads_to = pages * ((1.0 - f) / (1.0 - until)).ln();
        let sec_of = |reads: f64, f_end: f64| {
            if device_bound {
                (f_end - f) * pages / device
            } else {
                reads / cpu
            }
        };
        let mut reads = reads_to.min(need - done);
        let mut f_end = 1.0 - (1.0 - f) * (-reads / pages).exp();
        if sec_of(reads, f_end) > left_sec {
            (reads, f_end) = if device_bound {
                let f_end = f + device * left_sec / pages;
                (pages * ((1.0 - f) / (1.0 - f_end)).ln(), f_end)
            } else {
                let reads = cpu * left_sec;
                (reads, 1.0 - (1.0 - f) * (-reads / pages).exp())
            };
        }
        let f_end = f_end.min(cap);
        t += sec_of(reads, f_end).min(left_sec);
        done += reads;
        hits += reads - (f_end - f) * pages;
        f = if f_end >= until - FULL_EPSILON {
            until
        } else {
            f_end
        };
    }
    SlotForecast {
        mining_power: if need > 0.0 {
            (done / need).min(1.0)
        } else {
            1.0
        },
        cached_fraction_end: f,
        hit_ratio: if done > 0.0 {
            (hits / done).clamp(0.0, 1.0)
        } else {
            0.0
        },
    }
}

/// The device reads `reads` uniform buffered reads cost, made from an empty page cache over
/// `pages` pages of which a share `cacheable_fraction` fits: the model's own fill turned around,
/// so that `pora tune` can take a buffered trial's samples back to the device's cold reads/s.
/// While the cache fills, a read misses with chance `1 - f` and `f = 1 - e^(-n / pages)`, so the
/// first `n` reads miss `pages (1 - e^(-n / pages))` times; once the cache holds its share `c`
/// (after `pages ln(1 / (1 - c))` reads), every read after it misses with chance `1 - c`.
pub fn cold_misses(reads: f64, pages: f64, cacheable_fraction: f64) -> f64 {
    let (reads, pages) = (reads.max(0.0), pages.max(0.0));
    let cap = cacheable_fraction.clamp(0.0, 1.0);
    if pages == 0.0 {
        return reads;
    }
    let reads_to_fill = if cap >= 1.0 {
        f64::INFINITY
    } else {
        pages * (1.0 / (1.0 - cap)).ln()
    };
    if reads <= reads_to_fill {
        pages * (1.0 - (-reads / pages).exp())
    } else {
        cap * pages + (reads - reads_to_fill) * (1.0 - cap)
    }
}

/// The next slot, the mean over `horizon` slots and the steady state on `path` (the cache
/// carried from slot to slot): what choosing `path` now earns, over the run and once the cache
/// has settled. Slots are simulated until the cache stops moving; the rest of the horizon earns
/// the settled slot's power, so a long horizon costs no more than a short one.
pub(crate) fn outlook(
    path: ReadPath,
    rates: &PathRates,
    shape: &SlotShape,
    horizon: usize,
) -> Outlook {
    let horizon = horizon.max(1);
    let next = forecast(path, rates, shape);
    let (mut sum, mut last, mut s, mut counted) = (next.mining_power, next, *shape, 1usize);
    // Bounded: a cache that still moves after this many slots is taken as settled.
    const MAX_SIMULATED_SLOTS: usize = 4096;
    for _ in 1..MAX_SIMULATED_SLOTS {
        s.cached_fraction = last.cached_fraction_end;
        let again = forecast(path, rates, &s);
        let settled = (again.cached_fraction_end - last.cached_fraction_end).abs() < 1e-4;
        last = again;
        if counted < horizon {
            sum += last.mining_power;
            counted += 1;
        }
        if settled {
            break;
        }
    }
    sum += last.mining_power * (horizon - counted) as f64;
    Outlook {
        next: next.mining_power,
        horizon_mean: sum / horizon as f64,
        steady: last.mining_power,
        next_hit_ratio: next.hit_ratio,
        next_hit_ratio_end: next.cached_fraction_end,
    }
}

/// What choosing a path now is expected to earn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outlook {
    /// Mining power of the next slot.
    pub next: f64,
    pub horizon_mean: f64,
    pub steady: f64,
    /// The hit ratio over the next slot's reads.
    pub next_hit_ratio: f64,
    /// The chance that a read hits the cache at the next slot's end (the cached fraction then;
    /// 0 on a direct path).
    pub next_hit_ratio_end: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: f64 = (1u64 << 30) as f64;

    /// The machine: ~100k reads/s, 8 GiB shard, 2^21 samples a slot, 2 CPUs.
    fn shape(cached: f64, cacheable: f64) -> SlotShape {
        SlotShape {
            pages: 8.0 * GIB / PAGE_BYTES,
            cached_fraction: cached,
            cacheable_fraction: cacheable,
            samples_needed: (2u64 << 20) as f64,
            slot_sec: 12.0,
            cpus: 2.0,
        }
    }

    const RATES: PathRates = PathRates {
        device_reads_per_sec: 85_000.0,
        cpu_sec_per_sample: 1.4e-6,
    };

    /// The first slot worked by hand. A 1 GiB shard is 262,144 pages of 4 KiB; the device
    /// serves 20,000 cold reads/s; the CPUs are never the limit; a slot of 12 s asks 2^21
    /// samples (more than it can read). Buffered, cold, with room for all of it:
    ///
    /// - each miss caches one page and the device serves misses at 20,000/s, so in 12 s it makes
    ///   240,000 misses and the cache ends at 240,000 / 262,144 = 0.915527 of the shard: the
    ///   chance that the slot's last read hits;
    /// - the share of distinct pages `n` uniform reads touch is `1 - e^(-n / pages)`, so the slot
    ///   read n = 262,144 x ln(1 / (1 - 0.915527)) = 262,144 x 2.471327 = 647,844 samples:
    ///   mining power 647,844 / 2,097,152 = 0.308916, hit ratio over the slot
    ///   1 - 240,000 / 647,844 = 0.629540;
    /// - cold, as a direct path reads it: 240,000 / 2,097,152 = 0.114441.
    ///
    /// With room for half the shard (a memory cgroup): the cache fills to 0.5 after
    /// 0.5 x 262,144 / 20,000 = 6.5536 s and 262,144 x ln 2 = 181,704 reads; then every read
    /// hits with chance 0.5, so 40,000 samples/s for the 5.4464 s left (217,856): 399,560 in
    /// all, mining power 0.190525, the last read hitting with chance 0.5.
    #[test]
    fn the_first_slot_worked_by_hand() {
        let shape = |cacheable: f64| SlotShape {
            pages: 262_144.0,
            cached_fraction: 0.0,
            cacheable_fraction: cacheable,
            samples_needed: 2_097_152.0,
            slot_sec: 12.0,
            cpus: 2.0,
        };
        let rates = PathRates {
            device_reads_per_sec: 20_000.0,
            cpu_sec_per_sample: 1e-12,
        };
        let close = |got: f64, want: f64| (got - want).abs() < 2e-6;
        let fits = forecast(ReadPath::Buffered, &rates, &shape(1.0));
        assert!(close(fits.cached_fraction_end, 0.915_527), "{fits:?}");
        assert!(close(fits.mining_power, 0.308_916), "{fits:?}");
        assert!(close(fits.hit_ratio, 0.629_540), "{fits:?}");
        let direct = forecast(ReadPath::Direct, &rates, &shape(1.0));
        assert!(close(direct.mining_power, 0.114_441), "{direct:?}");
        assert_eq!((direct.hit_ratio, direct.cached_fraction_end), (0.0, 0.0));
        let half = forecast(ReadPath::Buffered, &rates, &shape(0.5));
        assert!(close(half.mining_power, 0.190_525), "{half:?}");
        assert!(close(half.cached_fraction_end, 0.5), "{half:?}");
        // A shard far larger than memory (room for 1% of it) keeps about the cold forecast.
        let large = forecast(ReadPath::Buffered, &rates, &shape(0.01));
        assert!(
            large.mining_power < direct.mining_power * 1.011,
            "{large:?}"
        );
    }

    /// Where the CPUs cap the cached reads the slot turns CPU-bound once the hits are fast
    /// enough, and the cache keeps filling at the CPU's pace: checked against the same sum
    /// taken in a million small steps.
    /// The misses of a buffered trial from a cold cache, worked by hand: 1,000 pages read 1,000
    /// times miss 1000 (1 - e^-1) = 632.12 times with room for all of them; with room for half,
    /// the cache is full after 1000 ln 2 = 693.15 reads (500 misses) and the other 306.85 reads
    /// miss half the time (153.43): 653.43. No room: every read misses.
    #[test]
    fn cold_misses_worked_by_hand() {
        let close = |a: f64, b: f64| (a - b).abs() < 0.01;
        assert!(close(cold_misses(1000.0, 1000.0, 1.0), 632.12));
        assert!(close(cold_misses(1000.0, 1000.0, 0.5), 653.43));
        assert!(close(cold_misses(1000.0, 1000.0, 0.0), 1000.0));
        assert!(close(cold_misses(100.0, 0.0, 1.0), 100.0));
        // The model's own slot agrees: a cold slot's misses are its reads less its hits.
        let rates = PathRates {
            device_reads_per_sec: 20_000.0,
            cpu_sec_per_sample: 1e-6,
        };
        let s = shape(0.0, 0.5);
        let f = forecast(ReadPath::Buffered, &rates, &s);
        let reads = f.mining_power * s.samples_needed;
        let misses = reads * (1.0 - f.hit_ratio);
        assert!((cold_misses(reads, s.pages, 0.5) - misses).abs() < 1e-6 * misses);
    }

    #[test]
    fn the_closed_form_matches_small_steps() {
        let rates = PathRates {
            device_reads_per_sec: 120_000.0,
            cpu_sec_per_sample: 10e-6,
        };
        // 200,000 samples/s on 2 CPUs: device-bound until 40% is cached, CPU-bound after.
        let s = SlotShape {
            samples_needed: (8u64 << 20) as f64,
            ..shape(0.1, 0.8)
        };
        let got = forecast(ReadPath::Buffered, &rates, &s);
        let (steps, cpu) = (1_000_000, s.cpus / rates.cpu_sec_per_sample);
        let dt = s.slot_sec / steps as f64;
        let (mut f, mut done) = (s.cached_fraction, 0.0);
        for _ in 0..steps {
            let rate = (rates.device_reads_per_sec / (1.0 - f)).min(cpu);
            done += rate * dt;
            f = (f + rate * dt * (1.0 - f) / s.pages).min(s.cacheable_fraction);
        }
        let want = done / s.samples_needed;
        assert!((got.mining_power - want).abs() < 1e-4, "{got:?} vs {want}");
        assert!((got.cached_fraction_end - f).abs() < 1e-4, "{got:?} vs {f}");
    }

    #[test]
    fn a_cold_shard_that_fits_in_memory_is_read_buffered() {
        let direct = outlook(ReadPath::Direct, &RATES, &shape(0.0, 1.0), 6);
        let buffered = outlook(ReadPath::Buffered, &RATES, &shape(0.0, 1.0), 6);
        // Direct: 85k x 12 s of 2^21 samples, every slot alike.
        assert!((direct.next - 0.486).abs() < 0.01, "{direct:?}");
        assert_eq!(direct.next, direct.steady);
        // Buffered gains within the first slot already and reaches 100%.
        assert!(buffered.next > direct.next * 1.15, "{buffered:?}");
        assert!(buffered.steady > 0.999, "{buffered:?}");
        assert!(buffered.next_hit_ratio > 0.1 && buffered.next_hit_ratio < 0.5);
    }

    #[test]
    fn a_shard_four_times_memory_gains_only_its_cached_share() {
        let buffered = outlook(ReadPath::Buffered, &RATES, &shape(0.25, 0.25), 6);
        let direct = outlook(ReadPath::Direct, &RATES, &shape(0.25, 0.25), 6);
        let gain = buffered.steady / direct.steady;
        assert!((gain - 1.0 / 0.75).abs() < 0.01, "{gain}");
    }

    #[test]
    fn memory_taken_away_caps_what_is_cached() {
        // 90% cached, but only half fits now: the forecast starts at half.
        let f = forecast(ReadPath::Buffered, &RATES, &shape(0.9, 0.5));
        assert!(f.hit_ratio <= 0.5 + 1e-9, "{f:?}");
        assert!(f.cached_fraction_end <= 0.5 + 1e-9);
    }

    #[test]
    fn on_a_slow_device_the_long_run_still_sees_the_cache_fill() {
        // 12k reads/s (a throttled disk): the shard takes ~15 slots to come into the cache.
        let slow = PathRates {
            device_reads_per_sec: 12_000.0,
            ..RATES
        };
        let buffered = outlook(ReadPath::Buffered, &slow, &shape(0.06, 1.0), 300);
        let direct = outlook(ReadPath::Direct, &slow, &shape(0.06, 1.0), 300);
        assert!(
            buffered.next < 0.1 && direct.next < 0.1,
            "{buffered:?} {direct:?}"
        );
        assert!(buffered.steady > 0.999, "{buffered:?}");
        assert!(buffered.horizon_mean > 0.9, "{buffered:?}");
        assert!(
            (direct.horizon_mean - direct.next).abs() < 1e-9,
            "{direct:?}"
        );
        // The simulated part and the settled rest add up as a slot-by-slot sum does.
        let mut s = shape(0.06, 1.0);
        let mut sum = 0.0;
        for _ in 0..300 {
            let f = forecast(ReadPath::Buffered, &slow, &s);
            sum += f.mining_power;
            s.cached_fraction = f.cached_fraction_end;
        }
        assert!(
            (sum / 300.0 - buffered.horizon_mean).abs() < 1e-3,
            "{}",
            sum / 300.0
        );
    }

    #[test]
    fn cached_reads_are_bounded_by_the_cpu() {
        let slow_cpu = PathRates {
            device_reads_per_sec: 85_000.0,
            cpu_sec_per_sample: 20e-6,
        };
        let f = forecast(ReadPath::Buffered, &slow_cpu, &shape(1.0, 1.0));
        // 2 CPUs / 20 us = 100k samples/s, 1.2M of 2^21 in 12 s.
        assert!((f.mining_power - 100_000.0 * 12.0 / (2u64 << 20) as f64).abs() < 1e-6);
    }
}
