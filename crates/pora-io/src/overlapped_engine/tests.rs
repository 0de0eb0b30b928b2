//! Unit tests of the overlapped state machine and the Windows read units and sector rules, driven by a fake OS that
//! completes some reads at once and others later "on the port" — the path Wine never takes
//! (it completes every overlapped read asynchronously), tested here on every platform.

use super::*;
use crate::align::{power_of_two_read_unit, AlignedSlab, Misaligned, MAX_BLOCK_BYTES};
use crate::host::sector_size::sane_sector_size;
use crate::BlockSize;
use std::time::Duration;

/// The byte stored at file position `pos` of the fake file.
fn pattern(pos: u64) -> u8 {
    (pos.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8 ^ (pos as u8)
}

fn expected_sample(offset: u64) -> Sample {
    std::array::from_fn(|i| pattern(offset + i as u64))
}

/// How the fake OS treats a read starting at a given span offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Immediate,
    Pending,
    Fail(i32),
}

struct FakeOs {
    file_len: u64,
    slab: AlignedSlab,
    /// Added to every buffer address, to exercise the misalignment check.
    addr_skew: usize,
    mode: Box<dyn FnMut(u64) -> Mode>,
    /// Pending completions in arrival order.
    port: VecDeque<PortEvent>,
    /// When false the port delivers nothing (a slow disk): waits time out.
    deliver: bool,
    /// Deliver port events newest first, as a reordering disk would.
    reverse: bool,
    timeouts_ms: Vec<u32>,
    starts: usize,
    cancel_completes: bool,
    leaked: bool,
}

const ERROR_OPERATION_ABORTED: i32 = 995;

impl FakeOs {
    fn new(
        file_len: u64,
        depth: usize,
        plan: SpanPlan,
        align: usize,
        mode: impl FnMut(u64) -> Mode + 'static,
    ) -> FakeOs {
        FakeOs {
            file_len,
            slab: AlignedSlab::new(depth, plan.max_span_len() as usize, align).unwrap(),
            addr_skew: 0,
            mode: Box::new(mode),
            port: VecDeque::new(),
            deliver: true,
            reverse: false,
            timeouts_ms: Vec::new(),
            starts: 0,
            cancel_completes: true,
            leaked: false,
        }
    }

    /// What a read of `span` would return: bytes copied into the slot, or EOF.
    fn perform(&mut self, slot: u32, span: BlockRange) -> Result<u32, i32> {
        if span.start >= self.file_len {
            return Err(WIN32_ERROR_HANDLE_EOF);
        }
        let n = (self.file_len - span.start).min(u64::from(span.len)) as usize;
        let buf = self.slab.slot_bytes_mut(slot as usize);
        for (i, b) in buf[..n].iter_mut().enumerate() {
            *b = pattern(span.start + i as u64);
        }
        Ok(n as u32)
    }
}

impl OverlappedDriver for FakeOs {
    fn buffer_addr(&self, slot: u32) -> usize {
        self.slab.slot_ptr(slot as usize) as usize + self.addr_skew
    }
    fn buffer(&self, slot: u32, len: u32) -> &[u8] {
        self.slab.slot_bytes(slot as usize, len as usize)
    }
    fn start(&mut self, slot: u32, _file: u32, span: BlockRange) -> Started {
        self.starts += 1;
        match (self.mode)(span.start) {
            Mode::Fail(code) => Started::Failed { code },
            Mode::Immediate => match self.perform(slot, span) {
                Ok(bytes) => Started::CompletedNow { bytes },
                Err(code) => Started::Failed { code },
            },
            Mode::Pending => {
                let outcome = self.perform(slot, span);
                self.port.push_back(PortEvent { slot, outcome });
                Started::Pending
            }
        }
    }
    fn wait(&mut self, events: &mut [PortEvent], timeout_ms: u32) -> Result<usize, IoError> {
        self.timeouts_ms.push(timeout_ms);
        if !self.deliver {
            assert_ne!(
                timeout_ms, WAIT_INFINITE_MS,
                "an infinite wait on a silent port would hang"
            );
            // A silent port times out, as the real one does, after the time asked for.
            std::thread::sleep(Duration::from_millis(timeout_ms.into()));
            return Ok(0);
        }
        let mut n = 0;
        while n < events.len() {
            let next = if self.reverse {
                self.port.pop_back()
            } else {
                self.port.pop_front()
            };
            let Some(event) = next else { break };
            events[n] = event;
            n += 1;
        }
        Ok(n)
    }
    fn cancel_all(&mut self) {
        if self.cancel_completes {
            self.deliver = true;
            for event in self.port.iter_mut() {
                event.outcome = Err(ERROR_OPERATION_ABORTED);
            }
        }
    }
    fn leak_buffers(&mut self) {
        self.leaked = true;
    }
}

fn read(tag: u32, offset: u64) -> SampleRead {
    SampleRead {
        tag,
        file: 0,
        offset,
    }
}

fn engine(
    fake: FakeOs,
    plan: SpanPlan,
    sector_rule: Option<u32>,
    depth: usize,
) -> OverlappedEngine<FakeOs> {
    OverlappedEngine::new(fake, plan, sector_rule, 1, depth)
}

/// Pushes `offsets` (tag = index), submits, reaps everything; returns completions by tag.
fn run_all(e: &mut OverlappedEngine<FakeOs>, offsets: &[u64]) -> Vec<Completion> {
    for (i, &o) in offsets.iter().enumerate() {
        e.push(read(i as u32, o)).unwrap();
    }
    e.submit().unwrap();
    let mut out = Vec::with_capacity(offsets.len());
    while out.len() < offsets.len() {
        let missing = offsets.len() - out.len();
        e.reap(&mut out, missing, None).unwrap();
    }
    out.sort_by_key(|c| c.tag);
    out
}

const MIB: u64 = 1 << 20;

#[test]
fn span_reads_exactly_the_sample_with_unit_one() {
    let plan = SpanPlan::new(1).unwrap();
    assert_eq!(plan.max_span_len(), 32);
    assert_eq!(
        plan.span(100),
        Some(BlockRange {
            start: 100,
            len: 32,
            sample_pos: 0
        })
    );
    assert_eq!(
        plan.span(u64::MAX - 32),
        Some(BlockRange {
            start: u64::MAX - 32,
            len: 32,
            sample_pos: 0
        })
    );
    assert_eq!(
        plan.span(u64::MAX - 31),
        None,
        "the sample would end at 2^64"
    );
}

#[test]
fn span_covers_whole_sectors_for_512_and_4096() {
    let s512 = SpanPlan::new(512).unwrap();
    assert_eq!(s512.max_span_len(), 1024);
    assert_eq!(
        s512.span(900),
        Some(BlockRange {
            start: 512,
            len: 512,
            sample_pos: 388
        })
    );
    assert_eq!(
        s512.span(1000),
        Some(BlockRange {
            start: 512,
            len: 1024,
            sample_pos: 488
        }),
        "1000..1032 crosses 1024"
    );
    assert_eq!(
        s512.span(480),
        Some(BlockRange {
            start: 0,
            len: 512,
            sample_pos: 480
        }),
        "ends exactly at the boundary"
    );
    assert_eq!(
        s512.span(500),
        Some(BlockRange {
            start: 0,
            len: 1024,
            sample_pos: 500
        }),
        "straddles two sectors"
    );
    let s4k = SpanPlan::new(4096).unwrap();
    assert_eq!(s4k.max_span_len(), 8192);
    assert_eq!(
        s4k.span(0),
        Some(BlockRange {
            start: 0,
            len: 4096,
            sample_pos: 0
        })
    );
    assert_eq!(
        s4k.span(3 * 4096 + 4064),
        Some(BlockRange {
            start: 3 * 4096,
            len: 4096,
            sample_pos: 4064
        })
    );
    assert_eq!(
        s4k.span(4095),
        Some(BlockRange {
            start: 0,
            len: 8192,
            sample_pos: 4095
        })
    );
    let big = (5u64 << 32) + 4096 * 7 + 12;
    assert_eq!(
        s4k.span(big),
        Some(BlockRange {
            start: (5u64 << 32) + 4096 * 7,
            len: 4096,
            sample_pos: 12
        })
    );
    assert_eq!(s4k.span(u64::MAX - 40), None, "rounding up past u64::MAX");
}

#[test]
fn small_units_never_overflow_the_slot_buffer() {
    for unit in [1u32, 2, 16, 32, 64, 512, 4096, 65536] {
        let plan = SpanPlan::new(unit).unwrap();
        for offset in 0..(3 * u64::from(unit) + 64) {
            let span = plan.span(offset).unwrap();
            assert!(
                span.len <= plan.max_span_len(),
                "unit {unit} offset {offset}"
            );
            assert_eq!(span.start + u64::from(span.sample_pos), offset);
            assert!(span.sample_pos + 32 <= span.len);
            assert_eq!(span.start % u64::from(unit), 0);
            assert_eq!(span.len % unit, 0);
        }
    }
}

#[test]
fn span_plan_rejects_bad_units() {
    assert!(SpanPlan::new(0).is_err());
    assert!(SpanPlan::new(3000).is_err());
    assert!(SpanPlan::new(MAX_BLOCK_BYTES * 2).is_err());
}

#[test]
fn sector_rules_check_offset_length_and_buffer() {
    for sector in [512u32, 4096] {
        let ok = BlockRange {
            start: 7 * u64::from(sector),
            len: 2 * sector,
            sample_pos: 3,
        };
        assert_eq!(
            check_sector_alignment(ok, 16 * sector as usize, sector),
            Ok(())
        );
        let off = BlockRange {
            start: ok.start + 32,
            ..ok
        };
        assert_eq!(
            check_sector_alignment(off, 0, sector),
            Err(Misaligned::Offset(off.start))
        );
        let len = BlockRange {
            len: sector + 32,
            ..ok
        };
        assert_eq!(
            check_sector_alignment(len, 0, sector),
            Err(Misaligned::Length(sector + 32))
        );
        assert_eq!(
            check_sector_alignment(BlockRange { len: 0, ..ok }, 0, sector),
            Err(Misaligned::Length(0))
        );
        let addr = 3 * sector as usize + 256;
        assert_eq!(
            check_sector_alignment(ok, addr, sector),
            Err(Misaligned::Buffer(addr))
        );
    }
    // A 512-aligned span is not 4096-aligned.
    let span = BlockRange {
        start: 512,
        len: 512,
        sample_pos: 0,
    };
    assert_eq!(check_sector_alignment(span, 0, 512), Ok(()));
    assert!(check_sector_alignment(span, 0, 4096).is_err());
}

#[test]
fn sector_size_falls_back_to_4096() {
    assert_eq!(sane_sector_size(Some(512)), 512);
    assert_eq!(sane_sector_size(Some(4096)), 4096);
    assert_eq!(sane_sector_size(None), 4096);
    assert_eq!(sane_sector_size(Some(0)), 4096);
    assert_eq!(sane_sector_size(Some(520)), 4096);
    assert_eq!(sane_sector_size(Some(1 << 20)), 4096);
}

#[test]
fn timeout_rounds_up_to_whole_milliseconds() {
    let now = Instant::now();
    assert_eq!(timeout_ms(now, None), WAIT_INFINITE_MS);
    assert_eq!(timeout_ms(now, Some(now)), 0);
    assert_eq!(
        timeout_ms(now + Duration::from_millis(5), Some(now)),
        0,
        "deadline already passed"
    );
    assert_eq!(timeout_ms(now, Some(now + Duration::from_nanos(1))), 1);
    assert_eq!(timeout_ms(now, Some(now + Duration::from_micros(1200))), 2);
    assert_eq!(timeout_ms(now, Some(now + Duration::from_millis(5))), 5);
    assert_eq!(
        timeout_ms(now, Some(now + Duration::from_secs(100 * 86400))),
        WAIT_INFINITE_MS - 1
    );
}

#[test]
fn slab_slots_are_aligned_and_disjoint() {
    for align in [512usize, 4096] {
        let slab = AlignedSlab::new(5, 1000, align).unwrap();
        assert_eq!(slab.slot_len() % align, 0);
        assert!(slab.slot_len() >= 1000);
        for i in 0..5 {
            assert_eq!(slab.slot_ptr(i) as usize % align, 0);
            if i > 0 {
                assert_eq!(
                    slab.slot_ptr(i) as usize - slab.slot_ptr(i - 1) as usize,
                    slab.slot_len()
                );
            }
        }
    }
    assert!(AlignedSlab::new(0, 1, 512).is_err());
    assert!(AlignedSlab::new(1, 1, 3).is_err());
}

#[test]
fn reads_completed_at_once_need_no_port_wait() {
    let plan = SpanPlan::new(1).unwrap();
    let fake = FakeOs::new(64 * MIB, 8, plan, 64, |_| Mode::Immediate);
    let mut e = engine(fake, plan, None, 8);
    let offsets = [0, 32, 4096, 64 * MIB - 32, 12_345_678, 999];
    let out = run_all(&mut e, &offsets);
    for (c, &o) in out.iter().zip(&offsets) {
        assert_eq!(
            c.result.as_ref().unwrap(),
            &expected_sample(o),
            "offset {o}"
        );
    }
    assert!(
        e.driver().timeouts_ms.is_empty(),
        "inline completions must not touch the port"
    );
    assert_eq!(e.in_flight(), 0);
}

#[test]
fn mixed_immediate_and_pending_reads_all_complete_once() {
    let plan = SpanPlan::new(1).unwrap();
    // Every other 4 KiB page is "cached" (completes at once), the rest go to the port.
    let fake = FakeOs::new(64 * MIB, 16, plan, 64, |o| {
        if (o / 4096) % 2 == 0 {
            Mode::Immediate
        } else {
            Mode::Pending
        }
    });
    let mut e = engine(fake, plan, None, 16);
    e.driver.reverse = true;
    let offsets: Vec<u64> = (0..16).map(|i| i * 4096 + i * 32).collect();
    for (i, &o) in offsets.iter().enumerate() {
        e.push(read(i as u32, o)).unwrap();
    }
    e.submit().unwrap();
    assert_eq!(e.in_flight(), 16);
    // A non-blocking reap returns the inline half at once (and polls the port once).
    let mut out = Vec::with_capacity(16);
    let first = e.reap(&mut out, 0, None).unwrap();
    assert!(
        first >= 8,
        "the 8 inline completions are ready without waiting, got {first}"
    );
    assert_eq!(e.driver().timeouts_ms, vec![0]);
    while out.len() < 16 {
        e.reap(&mut out, 16, None).unwrap();
    }
    assert_eq!(e.in_flight(), 0);
    out.sort_by_key(|c| c.tag);
    for (i, c) in out.iter().enumerate() {
        assert_eq!(c.tag, i as u32);
        assert_eq!(c.result.as_ref().unwrap(), &expected_sample(offsets[i]));
    }
    assert_eq!(e.driver().starts, 16);
}

#[test]
fn slots_are_reused_across_many_batches() {
    let plan = SpanPlan::new(4096).unwrap();
    let mut n = 0u64;
    let fake = FakeOs::new(256 * MIB, 4, plan, 4096, move |_| {
        n += 1;
        // Every third read is "cached" and completes inside the call.
        match n % 3 {
            0 => Mode::Immediate,
            _ => Mode::Pending,
        }
    });
    let mut e = engine(fake, plan, Some(4096), 4);
    for batch in 0..50u64 {
        let offsets: Vec<u64> = (0..4)
            .map(|i| (batch * 7919 + i * 104_729) * 32 % (256 * MIB - 32))
            .collect();
        let out = run_all(&mut e, &offsets);
        for (c, &o) in out.iter().zip(&offsets) {
            assert_eq!(
                c.result.as_ref().unwrap(),
                &expected_sample(o),
                "batch {batch} offset {o}"
            );
        }
    }
}

#[test]
fn queue_full_counts_ready_but_unreaped_completions() {
    let plan = SpanPlan::new(1).unwrap();
    let fake = FakeOs::new(MIB, 3, plan, 64, |_| Mode::Immediate);
    let mut e = engine(fake, plan, None, 3);
    for i in 0..3 {
        e.push(read(i, u64::from(i) * 32)).unwrap();
    }
    assert_eq!(e.push(read(9, 0)), Err(QueueFull));
    e.submit().unwrap();
    assert_eq!(
        e.push(read(9, 0)),
        Err(QueueFull),
        "completed but not reaped still occupies the depth"
    );
    let mut out = Vec::new();
    assert_eq!(e.reap(&mut out, 1, None).unwrap(), 3);
    e.push(read(9, 0)).unwrap();
}

#[test]
fn deadline_is_the_wait_timeout_and_reap_returns_when_it_passes() {
    let plan = SpanPlan::new(1).unwrap();
    let fake = FakeOs::new(MIB, 4, plan, 64, |_| Mode::Pending);
    let mut e = engine(fake, plan, None, 4);
    e.driver.deliver = false; // a disk that does not answer in time
    for i in 0..4 {
        e.push(read(i, u64::from(i) * 64)).unwrap();
    }
    e.submit().unwrap();
    let mut out = Vec::new();
    let past = Instant::now() - Duration::from_millis(1);
    assert_eq!(e.reap(&mut out, 4, Some(past)).unwrap(), 0);
    assert_eq!(e.driver().timeouts_ms, vec![0]);
    let soon = Instant::now() + Duration::from_millis(250);
    assert_eq!(e.reap(&mut out, 4, Some(soon)).unwrap(), 0);
    let passed = *e.driver().timeouts_ms.last().unwrap();
    assert!(
        (1..=250).contains(&passed),
        "timeout {passed} ms should be the time left to the deadline"
    );
    assert_eq!(e.in_flight(), 4);
    e.driver.deliver = true;
    assert_eq!(e.reap(&mut out, 4, None).unwrap(), 4);
    assert_eq!(*e.driver().timeouts_ms.last().unwrap(), WAIT_INFINITE_MS);
}

#[test]
fn end_of_file_and_short_reads_are_read_errors() {
    let file_len = MIB + 16; // the last sample is cut in half
    for mode in [Mode::Immediate, Mode::Pending] {
        for (unit, rule) in [(1u32, None), (512, Some(512)), (4096, Some(4096))] {
            let plan = SpanPlan::new(unit).unwrap();
            let fake = FakeOs::new(file_len, 4, plan, 4096, move |_| mode);
            let mut e = engine(fake, plan, rule, 4);
            let out = run_all(&mut e, &[MIB - 32, MIB, MIB + 4096, 5 * MIB]);
            assert_eq!(
                out[0].result.as_ref().unwrap(),
                &expected_sample(MIB - 32),
                "{mode:?} unit {unit}"
            );
            let kinds: Vec<_> = out[1..]
                .iter()
                .map(|c| c.result.as_ref().unwrap_err().kind)
                .collect();
            assert_eq!(
                kinds[0],
                ReadErrorKind::ShortRead {
                    got: 16,
                    wanted: 32
                },
                "{mode:?} unit {unit}"
            );
            assert_eq!(
                kinds[1],
                ReadErrorKind::ShortRead { got: 0, wanted: 32 },
                "{mode:?} unit {unit}"
            );
            assert_eq!(
                kinds[2],
                ReadErrorKind::ShortRead { got: 0, wanted: 32 },
                "{mode:?} unit {unit}"
            );
            let err = out[3].result.as_ref().unwrap_err();
            assert_eq!(
                (err.file, err.offset),
                (0, 5 * MIB),
                "the error names the read"
            );
        }
    }
}

#[test]
fn os_errors_come_back_in_their_completion() {
    let plan = SpanPlan::new(1).unwrap();
    let fake = FakeOs::new(MIB, 4, plan, 64, |o| {
        if o == 64 {
            Mode::Fail(23)
        } else {
            Mode::Immediate
        }
    });
    let mut e = engine(fake, plan, None, 4);
    let out = run_all(&mut e, &[0, 64, 128]);
    assert!(out[0].result.is_ok() && out[2].result.is_ok());
    assert_eq!(
        out[1].result.as_ref().unwrap_err().kind,
        ReadErrorKind::Os(23)
    );
}

#[test]
fn unbuffered_reads_take_the_sample_from_inside_the_sectors() {
    for sector in [512u32, 4096] {
        let plan = SpanPlan::new(sector).unwrap();
        let fake = FakeOs::new(64 * MIB, 8, plan, sector as usize, |o| {
            if o % 8192 == 0 {
                Mode::Immediate
            } else {
                Mode::Pending
            }
        });
        let mut e = engine(fake, plan, Some(sector), 8);
        let s = u64::from(sector);
        // Start of a sector, end of a sector, straddling two, mid-file, last sample.
        let offsets = [0, s - 32, s - 16, 3 * s + 100, 64 * MIB - 32, 5 * s + 1];
        let out = run_all(&mut e, &offsets);
        for (c, &o) in out.iter().zip(&offsets) {
            assert_eq!(
                c.result.as_ref().unwrap(),
                &expected_sample(o),
                "sector {sector} offset {o}"
            );
        }
    }
}

#[test]
fn misaligned_unbuffered_buffer_is_refused_before_the_os_sees_it() {
    let plan = SpanPlan::new(4096).unwrap();
    let mut fake = FakeOs::new(MIB, 2, plan, 4096, |_| Mode::Immediate);
    fake.addr_skew = 512; // aligned for 512-byte sectors, not for 4096
    let mut e = engine(fake, plan, Some(4096), 2);
    e.push(read(0, 8192)).unwrap();
    let err = e.submit().unwrap_err().to_string();
    assert!(
        err.contains("sector rule") && err.contains("buffer address"),
        "{err}"
    );
    assert!(
        err.contains("offset 8192"),
        "the error names the read: {err}"
    );
    assert_eq!(e.driver().starts, 0, "nothing reached the OS");
}

#[test]
fn a_unit_smaller_than_the_sector_is_refused() {
    // A 512-byte block size on a 4096-byte-sector volume: the span itself breaks the rule.
    let plan = SpanPlan::new(512).unwrap();
    let fake = FakeOs::new(MIB, 2, plan, 4096, |_| Mode::Immediate);
    let mut e = engine(fake, plan, Some(4096), 2);
    e.push(read(0, 512 + 64)).unwrap();
    let err = e.submit().unwrap_err().to_string();
    assert!(err.contains("offset 512 is not a multiple"), "{err}");
}

#[test]
fn reads_naming_an_unopened_file_fail_alone() {
    let plan = SpanPlan::new(1).unwrap();
    let fake = FakeOs::new(MIB, 2, plan, 64, |_| Mode::Immediate);
    let mut e = engine(fake, plan, None, 2);
    e.push(SampleRead {
        tag: 0,
        file: 1,
        offset: 64,
    })
    .unwrap();
    e.push(read(1, 64)).unwrap();
    e.submit().unwrap();
    let mut out = Vec::new();
    e.reap(&mut out, 2, None).unwrap();
    out.sort_by_key(|c| c.tag);
    let err = out[0].result.as_ref().unwrap_err();
    assert_eq!((err.file, err.offset), (1, 64));
    assert_eq!(err.kind, ReadErrorKind::Os(WIN32_ERROR_INVALID_HANDLE));
    assert_eq!(out[1].result.as_ref().unwrap(), &expected_sample(64));
    assert_eq!(e.driver().starts, 1, "the bad read never reached the OS");
}

#[test]
fn block_sizes_are_checked_against_the_sector() {
    assert_eq!(power_of_two_read_unit(BlockSize::Natural, None).unwrap(), 1);
    assert_eq!(
        power_of_two_read_unit(BlockSize::Natural, Some(512)).unwrap(),
        512
    );
    assert_eq!(
        power_of_two_read_unit(BlockSize::Bytes(4096), None).unwrap(),
        4096
    );
    assert_eq!(
        power_of_two_read_unit(BlockSize::Bytes(4096), Some(512)).unwrap(),
        4096
    );
    assert_eq!(
        power_of_two_read_unit(BlockSize::Bytes(32), None).unwrap(),
        32
    );
    for bad in [0u32, 16, 3000, MAX_BLOCK_BYTES * 2, 1 << 30] {
        let err = power_of_two_read_unit(BlockSize::Bytes(bad), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains(&bad.to_string()), "{err}");
    }
    let err = power_of_two_read_unit(BlockSize::Bytes(512), Some(4096))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("512") && err.contains("4096-byte sector"),
        "{err}"
    );
}

#[test]
fn unknown_slot_from_the_port_is_an_error_not_a_panic() {
    let plan = SpanPlan::new(1).unwrap();
    let fake = FakeOs::new(MIB, 2, plan, 64, |_| Mode::Pending);
    let mut e = engine(fake, plan, None, 2);
    e.push(read(0, 0)).unwrap();
    e.submit().unwrap();
    e.driver.port.push_back(PortEvent {
        slot: 1,
        outcome: Ok(32),
    });
    e.driver.reverse = true;
    let mut out = Vec::new();
    assert!(e.reap(&mut out, 2, None).is_err());
}

#[test]
fn shutdown_cancels_and_drains_pending_reads() {
    let plan = SpanPlan::new(1).unwrap();
    let fake = FakeOs::new(MIB, 4, plan, 64, |_| Mode::Pending);
    let mut e = engine(fake, plan, None, 4);
    e.driver.deliver = false;
    for i in 0..3 {
        e.push(read(i, 0)).unwrap();
    }
    e.submit().unwrap();
    assert!(e.shutdown());
    assert_eq!(e.in_flight(), 0);
    assert!(!e.driver().leaked);
}

#[test]
fn shutdown_leaks_buffers_when_the_os_never_answers() {
    let plan = SpanPlan::new(1).unwrap();
    let fake = FakeOs::new(MIB, 2, plan, 64, |_| Mode::Pending);
    let mut e = engine(fake, plan, None, 2);
    e.driver.deliver = false;
    e.driver.cancel_completes = false;
    e.teardown_wait = Duration::from_millis(30);
    e.push(read(0, 0)).unwrap();
    e.submit().unwrap();
    let leaked_before = crate::leaked_backends();
    assert!(!e.shutdown());
    assert!(
        e.driver().leaked,
        "memory the OS may still write must never be freed"
    );
    assert!(crate::leaked_backends() > leaked_before);
    // Every wait was bounded by what was left of the teardown time, ending with a poll.
    let timeouts = &e.driver().timeouts_ms;
    assert!(timeouts.iter().all(|&t| t <= 30), "{timeouts:?}");
    assert_eq!(timeouts.last(), Some(&0));
}

#[test]
fn cancel_all_discards_queued_ready_and_cancelled_reads_and_leaves_the_engine_reusable() {
    let plan = SpanPlan::new(1).unwrap();
    let fake = FakeOs::new(MIB, 4, plan, 64, |offset| {
        if offset == 0 {
            Mode::Immediate
        } else {
            Mode::Pending
        }
    });
    let mut e = engine(fake, plan, None, 4);
    e.driver.deliver = false;
    e.push(read(0, 0)).unwrap(); // completes at once: ready
    e.push(read(1, 64)).unwrap(); // pending in the OS
    e.submit().unwrap();
    e.push(read(2, 128)).unwrap(); // queued, never started
    let starts = e.driver().starts;
    let outcome = e.cancel_all(Duration::from_secs(1));
    assert_eq!(
        outcome,
        CancelOutcome {
            discarded: 3,
            still_in_flight: 0
        }
    );
    assert_eq!(e.in_flight(), 0);
    assert_eq!(
        e.driver().starts,
        starts,
        "the queued read was never started"
    );
    let mut out = Vec::new();
    assert_eq!(e.reap(&mut out, 1, Some(Instant::now())).unwrap(), 0);
    // Reusable: every slot is free again.
    for i in 0..4 {
        e.push(read(10 + i, 64 * u64::from(i))).unwrap();
    }
    e.submit().unwrap();
    while e.in_flight() > 0 {
        e.reap(&mut out, 1, None).unwrap();
    }
    assert_eq!(out.len(), 4);
    assert!(out.iter().all(|c| c.result.is_ok()));
}

#[test]
fn a_cancel_that_gave_up_makes_shutdown_leak_without_waiting_again() {
    let plan = SpanPlan::new(1).unwrap();
    let fake = FakeOs::new(MIB, 2, plan, 64, |_| Mode::Pending);
    let mut e = engine(fake, plan, None, 2);
    e.driver.deliver = false;
    e.driver.cancel_completes = false;
    e.push(read(0, 0)).unwrap();
    e.submit().unwrap();
    assert_eq!(e.cancel_all(Duration::from_millis(10)).still_in_flight, 1);
    let waits = e.driver().timeouts_ms.len();
    assert!(!e.shutdown());
    assert!(e.driver().leaked);
    assert_eq!(&e.driver().timeouts_ms[waits..], &[0], "one poll, no wait");
}

/// `drop_queued` forgets reads pushed since the last submit without starting them, leaves the
/// ones already with the OS alone, and the dropped slots are reused.
#[test]
fn drop_queued_never_starts_the_dropped_reads() {
    let plan = SpanPlan::new(1).unwrap();
    let fake = FakeOs::new(MIB, 4, plan, 64, |_| Mode::Pending);
    let mut e = engine(fake, plan, None, 4);
    e.push(read(0, 0)).unwrap();
    e.submit().unwrap();
    e.push(read(1, 64)).unwrap();
    e.push(read(2, 128)).unwrap();
    let starts = e.driver().starts;
    assert_eq!(e.drop_queued(), 2);
    assert_eq!(e.in_flight(), 1);
    e.submit().unwrap();
    assert_eq!(e.driver().starts, starts, "a dropped read was started");
    let mut out = Vec::new();
    while e.in_flight() > 0 {
        e.reap(&mut out, 1, None).unwrap();
    }
    assert_eq!(out.iter().map(|c| c.tag).collect::<Vec<_>>(), [0]);
    for i in 0..4 {
        e.push(read(10 + i, 64 * u64::from(i))).unwrap();
    }
    assert_eq!(e.drop_queued(), 4);
    assert_eq!(e.drop_queued(), 0);
}
