//! The file es-node writes for a miner's empty encodeType-3 shard: every KV's BLOB_POSEIDON
//! mask, and every meta entry `0^24 ‖ 0x80 ‖ 0^7`.
//!
//! Worker threads compute masks in batches of consecutive KVs; the calling thread writes them in
//! KV order (large sequential writes), syncs every few hundred MiB and only then writes those
//! KVs' meta entries. So a meta entry marks a KV whose data is durable, the header stays
//! "incomplete" until the last KV and its meta are synced, and a resumed fill knows where to
//! continue: KVs with an all-zero meta entry are filled, the last few filled ones are recomputed
//! and compared first (re-written if they differ). A KV range fills only those KVs (the others
//! stay sparse, meta all zero).

use crate::create::{allocated_len, open_for_create, CreateSpec};
use crate::encoded::EMPTY_META;
use crate::error::{ensure, PrepareError, Result};
use crate::OnProgress;
use pora_core::header::{
    Header, HEADER_SIZE, META_SIZE, STATUS_INCOMPLETE, STATUS_OFFSET, STATUS_READY,
};
use pora_core::{EncodeType, Input};
use pora_encode::{encode_key, MASK_BYTES};
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

/// KVs per batch handed to a worker (2 MiB of masks).
const BATCH_KVS: usize = 16;
/// KVs written between two syncs (256 MiB); their meta entries follow each sync.
const SYNC_EVERY_KVS: usize = 2048;
/// Filled KVs re-checked by a resumed fill before continuing.
const RECHECK_KVS: usize = 32;

/// The options only the empty fill has.
#[derive(Clone, Debug, Default)]
pub struct EmptyFillOptions {
    /// Worker threads computing masks (at least one).
    pub threads: usize,
    /// Continue an interrupted fill of the file (or fill another KV range of it).
    pub resume: bool,
    /// Fill only these global KV indices of the shard.
    pub kv_range: Option<Range<u64>>,
}

/// An empty fill ready to run: the file open, its header checked, the KVs to fill known.
pub struct EmptyFill {
    path: PathBuf,
    file: File,
    header: Header,
    todo: Vec<u64>,
    threads: usize,
    /// KVs a resumed fill found filled but not holding their mask; they are filled again.
    pub refilled: usize,
    /// KVs of the requested range (or named) left alone.
    skipped: usize,
    /// The kernel checked when the fill was opened.
    kernel: pora_encode::Kernel,
}

/// Parses `--kv-range A..B`: global KV indices, end exclusive, not empty.
pub fn parse_kv_range(s: &str) -> Result<Range<u64>, String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("{} `{s}`: expected A..B (end exclusive)", Input::KvRange))?;
    let parse = |v: &str| {
        v.trim()
            .parse::<u64>()
            .map_err(|e| format!("{} `{s}`: `{v}` is not a KV index: {e}", Input::KvRange))
    };
    let (a, b) = (parse(a)?, parse(b)?);
    if a >= b {
        let range = Input::KvRange;
        return Err(format!("{range} `{s}`: empty range (A must be below B)"));
    }
    Ok(a..b)
}

/// How a fill went: the `pora create --fill empty --json` record.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FillSummary {
    /// KVs written.
    pub kvs: usize,
    /// KVs of the requested range left alone: already holding their mask, or a blob (a fill of
    /// named KVs skips none).
    pub skipped: usize,
    /// KVs marked filled that did not hold their mask and were written again (part of `kvs`).
    pub refilled: usize,
    /// The encoder's multiply kernel every mask ran on (`portable`, `adx`, `avx512f`, `ifma`).
    pub kernel: &'static str,
    pub seconds: f64,
    pub threads: usize,
    /// Wall time per KV times threads.
    pub ms_per_kv_per_core: f64,
    /// The process's CPU time (workers and writer), where the OS reports it.
    pub cpu_seconds: Option<f64>,
    /// CPU time per KV: comparable with the pure-compute cost however busy the machine is.
    pub cpu_ms_per_kv: Option<f64>,
}

impl EmptyFill {
    /// Checks the request and opens the file: created (or, with `force`, truncated) at its full
    /// size, or with `resume` the existing file, whose header must be the one requested.
    pub fn open(spec: &CreateSpec, header: &Header, opts: &EmptyFillOptions) -> Result<EmptyFill> {
        // A bad PORA_ENCODE_ARITH is an error before any byte is written, not a panic in a
        // worker's `mask_into`.
        let kernel = pora_encode::Kernel::selected()?;
        check_geometry(spec, header)?;
        let range = kv_range(spec, opts, header)?;
        let requested = (range.end - range.start) as usize;
        ensure!(
            !(opts.resume && spec.force),
            "{} and {} exclude each other (the second starts over)",
            Input::Resume,
            Input::Force
        );
        ensure!(
            opts.threads > 0,
            "{} 0: need at least one thread",
            Input::Threads
        );
        let ctx = |e| PrepareError::io(format!("writing {}", spec.file.display()), e);
        let (file, todo, refilled) = if opts.resume {
            open_resume(&spec.file, header, range)?
        } else {
            let file = open_for_create(&spec.file, spec.force)?;
            file.set_len(allocated_len(header)?).map_err(ctx)?;
            (file, range.collect(), 0)
        };
        Ok(EmptyFill {
            path: spec.file.clone(),
            file,
            header: header.clone(),
            skipped: requested.saturating_sub(todo.len()),
            todo,
            threads: opts.threads,
            refilled,
            kernel,
        })
    }

    /// An empty fill of exactly the KVs `kvs` (global indices, any order, no repeats) of the
    /// existing file `path`: es-node's `CommitEmptyBlobs` view, where the contract says which
    /// KVs are empty and each is written with its mask and marked "filled, commit 0" whatever the
    /// file holds there (nothing is skipped by its meta entry). Checked as
    /// [`EmptyFill::open_existing`] checks, before the file is opened for writing: every KV
    /// inside the file, none listed twice, at least one.
    pub fn open_existing_kvs(path: &Path, kvs: &[u64], threads: usize) -> Result<EmptyFill> {
        ensure!(!kvs.is_empty(), "kv_idxs: no KV named");
        let mut todo = kvs.to_vec();
        todo.sort_unstable();
        if let Some(w) = todo.windows(2).find(|w| w[0] == w[1]) {
            return Err(PrepareError::Invalid(format!(
                "kv_idxs: KV {} is named twice",
                w[0]
            )));
        }
        // The whole span is checked (header, geometry, bounds, threads) as a range fill would;
        // then the KVs to write are exactly the named ones.
        let span = todo[0]..todo[todo.len() - 1] + 1;
        let mut fill = EmptyFill::open_existing(path, span, threads)?;
        fill.todo = todo;
        fill.refilled = 0;
        fill.skipped = 0;
        Ok(fill)
    }

    /// An empty fill of KVs `kv_range` (global indices, end exclusive) of the existing file
    /// `path`, whose own header says the shard: what `pora create FILE --fill empty --resume
    /// --kv-range A..B` does with flags matching that header (the C ABI's `pora_fill_empty`).
    /// Everything is checked before the file is opened for writing: the header (encodeType 3,
    /// 128 KiB KVs and chunks), the range (not empty, inside the file's KVs) and the threads. As
    /// with `--resume`, KVs of the range already holding their mask are skipped (the last few
    /// re-checked) and KVs holding a blob are never overwritten.
    pub fn open_existing(path: &Path, kv_range: Range<u64>, threads: usize) -> Result<EmptyFill> {
        let name = path.display();
        let mut file =
            File::open(path).map_err(|e| PrepareError::io(format!("{name}: opening"), e))?;
        let header = read_header(&mut file, path, "")?;
        drop(file);
        let bad = |field: &'static str, offset: u64, why: String| {
            PrepareError::Format(pora_core::Error::BadHeader {
                path: path.into(),
                field,
                offset,
                why,
            })
        };
        if header.encode_type != EncodeType::BlobPoseidon {
            return Err(bad(
                "encodeType",
                32,
                format!(
                    "{} ({:?}), but an empty fill needs 3 (blob-poseidon)",
                    header.encode_type as u64, header.encode_type
                ),
            ));
        }
        if header.max_kv_size != MASK_BYTES as u64 || header.chunk_size != MASK_BYTES as u64 {
            return Err(bad(
                "maxKvSize",
                40,
                format!(
                    "KV {} and chunk {} bytes, but an empty fill needs {MASK_BYTES}-byte KVs \
                     and chunks",
                    header.max_kv_size, header.chunk_size
                ),
            ));
        }
        let held = header.chunk_idx_start..header.chunk_idx_start + header.chunk_idx_len;
        ensure!(
            kv_range.start < kv_range.end,
            "{name}: KV range {}..{} is empty (the end is exclusive and must be above the start)",
            kv_range.start,
            kv_range.end
        );
        ensure!(
            kv_range.start >= held.start && kv_range.end <= held.end,
            "{name}: KV range {}..{} is outside the file, which holds KVs {}..{}",
            kv_range.start,
            kv_range.end,
            held.start,
            held.end
        );
        ensure!(threads > 0, "threads 0: need at least one thread");
        // The spec only names things in messages here: the header comes from the file, and
        // `open` compares the file's header with it again (it is the same one).
        let spec = CreateSpec {
            file: path.into(),
            shard: header.chunk_idx_start / header.chunk_idx_len.max(1),
            kv_entries_bits: header.chunk_idx_len.max(1).ilog2(),
            kv_size_bits: header.kv_size_bits(),
            chunk_size: Some(header.chunk_size),
            miner: header.miner,
            encode_type: EncodeType::BlobPoseidon as u64,
            fill: crate::create::Fill::Empty,
            seed: 0,
            force: false,
        };
        let opts = EmptyFillOptions {
            threads,
            resume: true,
            kv_range: Some(kv_range),
        };
        EmptyFill::open(&spec, &header, &opts)
    }

    /// How many KVs [`EmptyFill::run`] fills.
    pub fn kvs(&self) -> usize {
        self.todo.len()
    }

    /// Fills the KVs and marks the file ready; `progress` counts KVs written.
    pub fn run(mut self, progress: OnProgress) -> Result<FillSummary> {
        let path = self.path.display().to_string();
        let ctx = |e| PrepareError::io(format!("writing {path}"), e);
        let file = &mut self.file;
        write_header(file, &self.header, STATUS_INCOMPLETE).map_err(ctx)?;
        file.sync_all().map_err(ctx)?;
        let started = Instant::now();
        let cpu_before = pora_io::host::cpu_time::process_cpu_time().ok();
        fill(
            &self.path,
            file,
            &self.header,
            &self.todo,
            self.threads,
            progress,
        )?;
        file.sync_all().map_err(ctx)?;
        write_header(file, &self.header, STATUS_READY).map_err(ctx)?;
        file.sync_all().map_err(ctx)?;
        let cpu_seconds = cpu_before.and_then(|before| {
            Some((pora_io::host::cpu_time::process_cpu_time().ok()? - before).as_secs_f64())
        });
        Ok(summarize(
            self.todo.len(),
            (self.skipped, self.refilled, self.kernel.name()),
            self.threads,
            started.elapsed().as_secs_f64(),
            cpu_seconds,
        ))
    }
}

/// The summary of `kvs` KVs written; `(skipped, refilled, kernel)` as [`FillSummary`] has them.
fn summarize(
    kvs: usize,
    (skipped, refilled, kernel): (usize, usize, &'static str),
    threads: usize,
    seconds: f64,
    cpu_seconds: Option<f64>,
) -> FillSummary {
    let cpu_ms_per_kv = cpu_seconds
        .filter(|_| kvs > 0)
        .map(|c| c * 1e3 / kvs as f64);
    let ms_per_kv_per_core = if kvs == 0 {
        0.0
    } else {
        seconds * 1e3 * threads as f64 / kvs as f64
    };
    FillSummary {
        kvs,
        skipped,
        refilled,
        kernel,
        seconds,
        threads,
        ms_per_kv_per_core,
        cpu_seconds,
        cpu_ms_per_kv,
    }
}

fn check_geometry(spec: &CreateSpec, header: &Header) -> Result<()> {
    ensure!(
        header.encode_type == EncodeType::BlobPoseidon,
        "{fill} empty needs {encode} 3 (blob-poseidon), got {encode} {}",
        spec.encode_type,
        fill = Input::Fill,
        encode = Input::EncodeType
    );
    ensure!(
        header.max_kv_size == MASK_BYTES as u64 && header.chunk_size == MASK_BYTES as u64,
        "{} empty needs 128 KiB KVs and chunks ({} 17, no {}), got KV {} and chunk {} bytes",
        Input::Fill,
        Input::KvSizeBits,
        Input::ChunkSize,
        header.max_kv_size,
        header.chunk_size
    );
    Ok(())
}

/// The KV range asked for, checked against the shard, or the whole shard.
fn kv_range(spec: &CreateSpec, opts: &EmptyFillOptions, header: &Header) -> Result<Range<u64>> {
    let shard = header.chunk_idx_start..header.chunk_idx_start + header.chunk_idx_len;
    let Some(r) = opts.kv_range.clone() else {
        return Ok(shard);
    };
    ensure!(
        r.start >= shard.start && r.end <= shard.end,
        "{} {}..{} is outside shard {}, which holds KVs {}..{}",
        Input::KvRange,
        r.start,
        r.end,
        spec.shard,
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

/// Opens an existing file to resume, checks that its header is the one requested and returns
/// the KVs of `range` still to fill, and how many of them were filled but stale.
fn open_resume(path: &Path, want: &Header, range: Range<u64>) -> Result<(File, Vec<u64>, usize)> {
    let name = path.display();
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| PrepareError::io(format!("{} {name}", Input::Resume), e))?;
    let found = read_header(&mut file, path, &format!("{} ", Input::Resume))?;
    check_same_shard(path, want, &found)?;
    let total = allocated_len(want)?;
    let len = file
        .metadata()
        .map_err(|e| PrepareError::io(name.to_string(), e))?
        .len();
    if len < total {
        file.set_len(total)
            .map_err(|e| PrepareError::io(format!("{name}: extending to {total} bytes"), e))?;
    }
    let mut metas = vec![0u8; ((range.end - range.start) * META_SIZE) as usize];
    file.seek(SeekFrom::Start(want.kv_meta_offset(range.start)))
        .and_then(|_| file.read_exact(&mut metas))
        .map_err(|e| PrepareError::io(format!("{name}: reading meta entries"), e))?;
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
    let refilled = stale.len();
    stale.extend(todo);
    stale.sort_unstable();
    Ok((file, stale, refilled))
}

/// The header of `file` (read from offset 0), accepting the "incomplete" status an interrupted
/// fill leaves; `what` starts the error messages.
fn read_header(file: &mut File, path: &Path, what: &str) -> Result<Header> {
    let name = path.display();
    let mut buf = Vec::with_capacity(HEADER_SIZE as usize);
    file.seek(SeekFrom::Start(0))
        .and_then(|_| Read::take(&mut *file, HEADER_SIZE).read_to_end(&mut buf))
        .map_err(|e| PrepareError::io(format!("{what}{name}: reading the header"), e))?;
    // An interrupted fill has status "incomplete", which the parser rejects on purpose; here it
    // is expected, so parse a copy marked ready. (A file too short for a header is the
    // parser's `Truncated`.)
    let status = STATUS_OFFSET as usize..STATUS_OFFSET as usize + 8;
    if buf.get(status.clone()) == Some(&STATUS_INCOMPLETE.to_be_bytes()[..]) {
        buf[status].copy_from_slice(&STATUS_READY.to_be_bytes());
    }
    Ok(Header::parse(path, &buf)?)
}

fn check_same_shard(path: &Path, want: &Header, found: &Header) -> Result<()> {
    let name = path.display();
    let fields = [
        (
            Input::Shard,
            "chunkIdxStart",
            want.chunk_idx_start,
            found.chunk_idx_start,
        ),
        (
            Input::KvEntriesBits,
            "chunkIdxLen",
            want.chunk_idx_len,
            found.chunk_idx_len,
        ),
        (
            Input::KvSizeBits,
            "maxKvSize",
            want.max_kv_size,
            found.max_kv_size,
        ),
        (
            Input::ChunkSize,
            "chunkSize",
            want.chunk_size,
            found.chunk_size,
        ),
        (
            Input::EncodeType,
            "encodeType",
            want.encode_type as u64,
            found.encode_type as u64,
        ),
    ];
    for (input, field, w, f) in fields {
        ensure!(
            w == f,
            "{} {name}: {input} gives {field} {w}, but the file's header has {f}",
            Input::Resume
        );
    }
    ensure!(
        want.miner == found.miner,
        "{} {name}: {} {} differs from the miner {} in the file's header",
        Input::Resume,
        Input::Miner,
        want.miner,
        found.miner
    );
    Ok(())
}

/// The KVs of `kvs` whose stored bytes are not their mask.
fn recheck_filled(file: &mut File, header: &Header, kvs: &[u64]) -> Result<Vec<u64>> {
    let mut stored = vec![0u8; MASK_BYTES];
    let mut stale = Vec::new();
    for &kv in kvs {
        file.seek(SeekFrom::Start(header.kv_data_offset(kv)))
            .and_then(|_| file.read_exact(&mut stored))
            .map_err(|e| PrepareError::io(format!("re-checking KV {kv}"), e))?;
        let key = encode_key(&[], &header.miner.0, kv)?;
        if stored[..] != pora_encode::mask(&key)[..] {
            stale.push(kv);
        }
    }
    Ok(stale)
}

/// One computed batch: its index and the masks of its KVs, back to back.
type Batch = (usize, Vec<u8>);

/// Computes the masks of `todo` on `threads` workers and writes them in order.
fn fill(
    path: &Path,
    file: &mut File,
    header: &Header,
    todo: &[u64],
    threads: usize,
    progress: OnProgress,
) -> Result<()> {
    let batches: Vec<&[u64]> = todo.chunks(BATCH_KVS).collect();
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let (tx, rx) = mpsc::sync_channel::<Batch>(2 * threads);
        for _ in 0..threads {
            let tx = tx.clone();
            let (next, stop, batches) = (&next, &stop, &batches);
            s.spawn(move || compute_batches(header, batches, next, stop, tx));
        }
        drop(tx);
        let written = write_in_order(path, file, header, &batches, rx, progress);
        stop.store(true, Ordering::Relaxed);
        written
    })
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
    path: &Path,
    file: &mut File,
    header: &Header,
    batches: &[&[u64]],
    rx: mpsc::Receiver<Batch>,
    progress: OnProgress,
) -> Result<()> {
    let mut pending: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
    let mut next_batch = 0;
    let mut unsynced: Vec<u64> = Vec::new();
    while next_batch < batches.len() {
        let Some(buf) = pending.remove(&next_batch) else {
            let (b, buf) = rx
                .recv()
                .map_err(|_| PrepareError::Worker("a mask worker stopped early"))?;
            pending.insert(b, buf);
            continue;
        };
        let kvs = batches[next_batch];
        for (run, bytes) in runs(kvs, &buf, MASK_BYTES) {
            let offset = header.kv_data_offset(run);
            file.seek(SeekFrom::Start(offset))
                .and_then(|_| file.write_all(bytes))
                .map_err(|e| {
                    let kvs = run..run + (bytes.len() / MASK_BYTES) as u64;
                    write_error(
                        path,
                        &format!("writing the masks of KVs {kvs:?} at offset {offset}"),
                        e,
                    )
                })?;
        }
        unsynced.extend_from_slice(kvs);
        progress(kvs.len() as u64);
        next_batch += 1;
        if unsynced.len() >= SYNC_EVERY_KVS || next_batch == batches.len() {
            file.sync_data()
                .map_err(|e| write_error(path, "syncing the masks", e))?;
            write_metas(file, header, &unsynced)
                .map_err(|e| write_error(path, "writing meta entries", e))?;
            unsynced.clear();
        }
    }
    Ok(())
}

/// A failed write of the fill, naming the file; a full file system also says how to go on
/// (what was synced is kept: `--resume` continues from it).
fn write_error(path: &Path, what: &str, e: std::io::Error) -> PrepareError {
    let full = if e.kind() == std::io::ErrorKind::StorageFull {
        format!(
            " (the file system is full: free space, then run the same command with {} to continue from the KVs already written)",
            Input::Resume
        )
    } else {
        String::new()
    };
    PrepareError::io(format!("{}: {what}{full}", path.display()), e)
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
        file.seek(SeekFrom::Start(header.kv_meta_offset(first)))?;
        file.write_all(bytes)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::runs;

    #[test]
    fn runs_split_at_gaps() {
        let buf: Vec<u8> = (0..5).collect();
        let got = runs(&[1, 2, 4, 5, 9], &buf, 1);
        assert_eq!(got, vec![(1, &buf[0..2]), (4, &buf[2..4]), (9, &buf[4..5])]);
    }
}
