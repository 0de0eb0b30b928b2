//! `pora create --fill empty`: the file es-node writes for a miner's empty encodeType-3 shard.
//!
//! Worker threads compute masks in batches of consecutive KVs; the main thread writes them in
//! KV order (large sequential writes), syncs every few hundred MiB and only then writes those
//! KVs' meta entries `0^24 ‖ 0x80 ‖ 0^7`. So a meta entry marks a KV whose data is durable, the
//! header stays "incomplete" until the last KV and its meta are synced, and `--resume` knows
//! where to continue: KVs with an all-zero meta entry are filled, the last few filled ones are
//! recomputed and compared first (re-written if they differ).

use super::{open_for_create, thread_count, CreateArgs, EmptyFillArgs};
use crate::decode::{meta_offset, EMPTY_META};
use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use pora_core::header::{Header, HEADER_SIZE, META_SIZE, STATUS_INCOMPLETE, STATUS_READY};
use pora_core::EncodeType;
use pora_encode::{encode_key, MASK_BYTES};
use serde_json::json;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

/// KVs per batch handed to a worker (2 MiB of masks).
const BATCH_KVS: usize = 16;
/// KVs written between two syncs (256 MiB); their meta entries follow each sync.
const SYNC_EVERY_KVS: usize = 2048;
/// Filled KVs re-checked by `--resume` before continuing.
const RECHECK_KVS: usize = 32;
/// Byte offset of the header's status field.
const STATUS_AT: usize = 84;

pub fn run(args: &CreateArgs, opts: &EmptyFillArgs, header: &Header) -> anyhow::Result<()> {
    check_geometry(args, header)?;
    let threads = thread_count(opts.threads)?;
    let range = kv_range(args, opts, header)?;
    let path = &args.file;
    let ctx = || format!("writing {}", path.display());
    anyhow::ensure!(
        !(opts.resume && args.force),
        "--resume and --force exclude each other (--force starts over)"
    );
    let (mut file, todo) = if opts.resume {
        open_resume(args, header, range)?
    } else {
        let file = open_for_create(path, args.force)?;
        file.set_len(
            header
                .allocated_len()
                .context("file size overflows 64 bits")?,
        )
        .with_context(ctx)?;
        (file, range.collect())
    };
    write_header(&mut file, header, STATUS_INCOMPLETE).with_context(ctx)?;
    file.sync_all().with_context(ctx)?;
    let started = Instant::now();
    let cpu_before = pora_io::host::cpu_time::process_cpu_time().ok();
    fill(&mut file, header, &todo, threads, args.quiet)?;
    file.sync_all().with_context(ctx)?;
    write_header(&mut file, header, STATUS_READY).with_context(ctx)?;
    file.sync_all().with_context(ctx)?;
    let cpu_seconds = cpu_before.and_then(|before| {
        Some((pora_io::host::cpu_time::process_cpu_time().ok()? - before).as_secs_f64())
    });
    let timing = Timing {
        seconds: started.elapsed().as_secs_f64(),
        cpu_seconds,
    };
    summarize(args, opts, &todo, threads, timing)
}

fn check_geometry(args: &CreateArgs, header: &Header) -> anyhow::Result<()> {
    anyhow::ensure!(
        header.encode_type == EncodeType::BlobPoseidon,
        "--fill empty needs --encode-type 3 (blob-poseidon), got --encode-type {}",
        args.encode_type
    );
    anyhow::ensure!(
        header.max_kv_size == MASK_BYTES as u64 && header.chunk_size == MASK_BYTES as u64,
        "--fill empty needs 128 KiB KVs and chunks (--kv-size-bits 17, no --chunk-size), got \
         KV {} and chunk {} bytes",
        header.max_kv_size,
        header.chunk_size
    );
    Ok(())
}

/// `--kv-range`, checked against the shard, or the whole shard.
fn kv_range(
    args: &CreateArgs,
    opts: &EmptyFillArgs,
    header: &Header,
) -> anyhow::Result<Range<u64>> {
    let shard = header.chunk_idx_start..header.chunk_idx_start + header.chunk_idx_len;
    let Some(r) = opts.kv_range.clone() else {
        return Ok(shard);
    };
    anyhow::ensure!(
        r.start >= shard.start && r.end <= shard.end,
        "--kv-range {}..{} is outside shard {}, which holds KVs {}..{}",
        r.start,
        r.end,
        args.shard,
        shard.start,
        shard.end
    );
    Ok(r)
}

fn write_header(file: &mut File, header: &Header, status: u64) -> std::io::Result<()> {
    let mut h = header.clone();
    h.status = status;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(&h.encode())
}

/// Opens an existing file for `--resume`, checks that its header is the one requested and
/// returns the KVs of `range` still to fill.
fn open_resume(
    args: &CreateArgs,
    want: &Header,
    range: Range<u64>,
) -> anyhow::Result<(File, Vec<u64>)> {
    let path = &args.file;
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .with_context(|| format!("--resume {}", path.display()))?;
    let mut buf = vec![0u8; HEADER_SIZE as usize];
    file.read_exact(&mut buf)
        .with_context(|| format!("--resume {}: reading the header", path.display()))?;
    // An interrupted fill has status "incomplete", which the parser rejects on purpose; here it
    // is expected, so parse a copy marked ready.
    if buf[STATUS_AT..STATUS_AT + 8] == STATUS_INCOMPLETE.to_be_bytes() {
        buf[STATUS_AT..STATUS_AT + 8].copy_from_slice(&STATUS_READY.to_be_bytes());
    }
    let found = Header::parse(path, &buf)?;
    check_same_shard(path, want, &found)?;
    let total = want
        .allocated_len()
        .context("file size overflows 64 bits")?;
    let len = file
        .metadata()
        .with_context(|| format!("{}", path.display()))?
        .len();
    if len < total {
        file.set_len(total)
            .with_context(|| format!("{}: extending to {total} bytes", path.display()))?;
    }
    let mut metas = vec![0u8; ((range.end - range.start) * META_SIZE) as usize];
    file.seek(SeekFrom::Start(meta_offset(want, range.start)))
        .and_then(|_| file.read_exact(&mut metas))
        .with_context(|| format!("{}: reading meta entries", path.display()))?;
    let mut todo = Vec::new();
    let mut filled = Vec::new();
    for (kv, meta) in range.zip(metas.chunks_exact(META_SIZE as usize)) {
        if meta.iter().all(|&b| b == 0) {
            todo.push(kv);
        } else if meta == EMPTY_META {
            filled.push(kv);
        } // else: a KV holding a real blob; never overwritten.
    }
    let recheck = &filled[filled.len().saturating_sub(RECHECK_KVS)..];
    let mut stale = recheck_filled(&mut file, want, recheck)?;
    if !stale.is_empty() && !args.quiet {
        eprintln!(
            "resume: {} filled KVs did not hold their mask; re-filling them",
            stale.len()
        );
    }
    stale.extend(todo);
    stale.sort_unstable();
    Ok((file, stale))
}

fn check_same_shard(path: &std::path::Path, want: &Header, found: &Header) -> anyhow::Result<()> {
    let name = path.display();
    let fields = [
        (
            "--shard",
            "chunkIdxStart",
            want.chunk_idx_start,
            found.chunk_idx_start,
        ),
        (
            "--kv-entries-bits",
            "chunkIdxLen",
            want.chunk_idx_len,
            found.chunk_idx_len,
        ),
        (
            "--kv-size-bits",
            "maxKvSize",
            want.max_kv_size,
            found.max_kv_size,
        ),
        (
            "--chunk-size",
            "chunkSize",
            want.chunk_size,
            found.chunk_size,
        ),
        (
            "--encode-type",
            "encodeType",
            want.encode_type as u64,
            found.encode_type as u64,
        ),
    ];
    for (flag, field, w, f) in fields {
        anyhow::ensure!(
            w == f,
            "--resume {name}: {flag} gives {field} {w}, but the file's header has {f}"
        );
    }
    anyhow::ensure!(
        want.miner == found.miner,
        "--resume {name}: --miner {} differs from the miner {} in the file's header",
        want.miner,
        found.miner
    );
    Ok(())
}

/// The KVs of `kvs` whose stored bytes are not their mask.
fn recheck_filled(file: &mut File, header: &Header, kvs: &[u64]) -> anyhow::Result<Vec<u64>> {
    let mut stored = vec![0u8; MASK_BYTES];
    let mut stale = Vec::new();
    for &kv in kvs {
        file.seek(SeekFrom::Start(data_offset(header, kv)))
            .and_then(|_| file.read_exact(&mut stored))
            .with_context(|| format!("re-checking KV {kv}"))?;
        let key = encode_key(&[], &header.miner.0, kv)?;
        if stored[..] != pora_encode::mask(&key)[..] {
            stale.push(kv);
        }
    }
    Ok(stale)
}

fn data_offset(header: &Header, kv: u64) -> u64 {
    HEADER_SIZE + (kv - header.chunk_idx_start) * header.chunk_size
}

/// One computed batch: its index and the masks of its KVs, back to back.
type Batch = (usize, Vec<u8>);

/// Computes the masks of `todo` on `threads` workers and writes them in order.
fn fill(
    file: &mut File,
    header: &Header,
    todo: &[u64],
    threads: usize,
    quiet: bool,
) -> anyhow::Result<()> {
    let batches: Vec<&[u64]> = todo.chunks(BATCH_KVS).collect();
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let progress = progress_bar(todo.len() as u64, quiet);
    let result = std::thread::scope(|s| {
        let (tx, rx) = mpsc::sync_channel::<Batch>(2 * threads);
        for _ in 0..threads {
            let tx = tx.clone();
            let (next, stop, batches) = (&next, &stop, &batches);
            s.spawn(move || compute_batches(header, batches, next, stop, tx));
        }
        drop(tx);
        let written = write_in_order(file, header, &batches, rx, &progress);
        stop.store(true, Ordering::Relaxed);
        written
    });
    progress.finish_and_clear();
    result
}

fn compute_batches(
    header: &Header,
    batches: &[&[u64]],
    next: &AtomicUsize,
    stop: &AtomicBool,
    tx: mpsc::SyncSender<Batch>,
) {
    while !stop.load(Ordering::Relaxed) {
        let b = next.fetch_add(1, Ordering::Relaxed);
        let Some(kvs) = batches.get(b) else {
            return;
        };
        let mut buf = vec![0u8; kvs.len() * MASK_BYTES];
        for (out, &kv) in buf.chunks_exact_mut(MASK_BYTES).zip(kvs.iter()) {
            let key = encode_key(&[], &header.miner.0, kv).expect("an empty commit is valid");
            let out: &mut [u8; MASK_BYTES] = out.try_into().expect("MASK_BYTES long");
            pora_encode::mask::mask_into(&key, out);
        }
        if tx.send((b, buf)).is_err() {
            return; // the writer stopped (an error): nothing more to do
        }
    }
}

/// Receives batches, writes them in batch order, syncs and writes meta entries.
fn write_in_order(
    file: &mut File,
    header: &Header,
    batches: &[&[u64]],
    rx: mpsc::Receiver<Batch>,
    progress: &ProgressBar,
) -> anyhow::Result<()> {
    let mut pending: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
    let mut next_batch = 0;
    let mut unsynced: Vec<u64> = Vec::new();
    let ctx = "writing masks";
    while next_batch < batches.len() {
        let Some(buf) = pending.remove(&next_batch) else {
            let (b, buf) = rx
                .recv()
                .map_err(|_| anyhow::anyhow!("a mask worker stopped early"))?;
            pending.insert(b, buf);
            continue;
        };
        let kvs = batches[next_batch];
        for (run, bytes) in runs(kvs, &buf, MASK_BYTES) {
            file.seek(SeekFrom::Start(data_offset(header, run)))
                .and_then(|_| file.write_all(bytes))
                .context(ctx)?;
        }
        unsynced.extend_from_slice(kvs);
        progress.inc(kvs.len() as u64);
        next_batch += 1;
        if unsynced.len() >= SYNC_EVERY_KVS || next_batch == batches.len() {
            file.sync_data().context(ctx)?;
            write_metas(file, header, &unsynced).context("writing meta entries")?;
            unsynced.clear();
        }
    }
    Ok(())
}

/// Splits `kvs` (ascending) into runs of consecutive indices, with each run's bytes from `buf`
/// (`per_kv` bytes per KV, back to back).
fn runs<'a>(kvs: &[u64], buf: &'a [u8], per_kv: usize) -> Vec<(u64, &'a [u8])> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=kvs.len() {
        if i == kvs.len() || kvs[i] != kvs[i - 1] + 1 {
            out.push((kvs[start], &buf[start * per_kv..i * per_kv]));
            start = i;
        }
    }
    out
}

fn write_metas(file: &mut File, header: &Header, kvs: &[u64]) -> std::io::Result<()> {
    let metas: Vec<u8> = kvs.iter().flat_map(|_| EMPTY_META).collect();
    for (first, bytes) in runs(kvs, &metas, META_SIZE as usize) {
        file.seek(SeekFrom::Start(meta_offset(header, first)))?;
        file.write_all(bytes)?;
    }
    Ok(())
}

fn progress_bar(kvs: u64, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(kvs);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} KVs {per_sec} eta {eta}")
            .expect("static template")
            .progress_chars("=> "),
    );
    bar.set_message("masking");
    bar
}

/// How long the fill took: wall time, and the process's CPU time where the OS reports it.
struct Timing {
    seconds: f64,
    cpu_seconds: Option<f64>,
}

fn summarize(
    args: &CreateArgs,
    opts: &EmptyFillArgs,
    todo: &[u64],
    threads: usize,
    timing: Timing,
) -> anyhow::Result<()> {
    let Timing {
        seconds,
        cpu_seconds,
    } = timing;
    let kvs = todo.len();
    // CPU time of the whole process (workers and the writer) per KV: comparable with the
    // pure-compute cost per KV however busy the machine is.
    let cpu_ms_per_kv = cpu_seconds
        .filter(|_| kvs > 0)
        .map(|c| c * 1e3 / kvs as f64);
    let ms_per_kv_per_core = if kvs == 0 {
        0.0
    } else {
        seconds * 1e3 * threads as f64 / kvs as f64
    };
    if opts.json {
        let out = json!({
            "kvs": kvs,
            "seconds": seconds,
            "threads": threads,
            "msPerKvPerCore": ms_per_kv_per_core,
            "cpuSeconds": cpu_seconds,
            "cpuMsPerKv": cpu_ms_per_kv,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else if !args.quiet {
        eprintln!(
            "filled {kvs} KVs of {} in {seconds:.2} s on {threads} threads \
             ({ms_per_kv_per_core:.2} ms per KV per core)",
            args.file.display()
        );
    }
    Ok(())
}
