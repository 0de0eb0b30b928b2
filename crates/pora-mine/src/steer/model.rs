//! The mining-power model behind `auto` between slots: how many samples a read path delivers in
//! a slot given the device's reads/s, the share of the shard in the page cache now, the share
//! it can grow to in the memory there is, and the CPU each sample costs.
//!
//! Reads are uniform over the shard, so a buffered read hits the page cache with probability
//! equal to the cached fraction `f`; each miss costs the device one read and caches one more
//! page, so `f` grows by `1 / pages` per miss up to the cacheable fraction (the memory the
//! cache can grow into over the shard's size; LRU under uniform access keeps exactly that
//! share). A direct read always costs the device one read and caches nothing. A slot is
//! integrated in small steps; no clocks or I/O here, so the model is tested on its own.

/// The page size the model counts in (Linux and Windows cache 4 KiB pages).
pub(crate) const PAGE_BYTES: f64 = 4096.0;
/// Integration steps per slot.
const STEPS: usize = 48;

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
    /// The cached fraction when the slot ends.
    pub cached_fraction_end: f64,
    /// The hit ratio over the slot's reads.
    pub hit_ratio: f64,
}

/// One slot on `path` from `shape`.
pub(crate) fn forecast(path: ReadPath, rates: &PathRates, shape: &SlotShape) -> SlotForecast {
    let dt = shape.slot_sec / STEPS as f64;
    let cpu_rate = shape.cpus / rates.cpu_sec_per_sample.max(1e-9);
    let mut f = shape.cached_fraction.min(shape.cacheable_fraction).max(0.0);
    let (mut done, mut hits) = (0.0f64, 0.0f64);
    for _ in 0..STEPS {
        let hit = match path {
            ReadPath::Direct => 0.0,
            ReadPath::Buffered | ReadPath::Mapped => f,
        };
        let device_rate = if hit >= 0.999_999 {
            f64::INFINITY
        } else {
            rates.device_reads_per_sec / (1.0 - hit)
        };
        let take = device_rate.min(cpu_rate) * dt;
        let take = take.min(shape.samples_needed - done);
        done += take;
        hits += take * hit;
        if path != ReadPath::Direct && shape.pages > 0.0 {
            f = (f + take * (1.0 - hit) / shape.pages).min(shape.cacheable_fraction);
        }
        if done >= shape.samples_needed {
            break;
        }
    }
    SlotForecast {
        mining_power: if shape.samples_needed > 0.0 {
            (done / shape.samples_needed).min(1.0)
        } else {
            1.0
        },
        cached_fraction_end: f,
        hit_ratio: if done > 0.0 { hits / done } else { 0.0 },
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
    }
}

/// What choosing a path now is expected to earn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outlook {
    pub next: f64,
    pub horizon_mean: f64,
    pub steady: f64,
    pub next_hit_ratio: f64,
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
