//! A whole bench run: every method x depth x threads combination over one file, one after
//! another, each on its own offset seed, optionally evicting the file first (`--cold`). A method
//! that cannot be opened here is skipped visibly, not fatally; the stop flag ends the run after
//! the combination in progress. What happens is told to a [`SweepObserver`] (the CLI prints it).

use super::input::combination_seed;
use super::record::RunInfo;
use super::{run_one, BenchResult, MeasureError, MeasureSpec, Progress, Target};
use pora_io::host::page_cache;
use pora_io::{BlockSize, IoError, Method};
use std::sync::atomic::{AtomicBool, Ordering};

/// The grid of one run and what every combination shares.
#[derive(Clone, Debug)]
pub struct Sweep {
    pub info: RunInfo,
    pub methods: Vec<Method>,
    pub block_size: BlockSize,
    pub depths: Vec<usize>,
    pub threads: Vec<usize>,
}

/// A combination, or a whole method, that could not be opened here.
#[derive(Debug)]
pub enum Skip<'a> {
    /// The method is not available on this machine: its other combinations are skipped too.
    Method { method: Method, error: &'a IoError },
    /// This depth and thread count could not be opened (e.g. an unsupported block size).
    Combination {
        method: Method,
        depth: usize,
        threads: usize,
        error: &'a IoError,
    },
}

/// An observer's own failure (printing a result), passed through the sweep.
pub type ObserverError = Box<dyn std::error::Error + Send + Sync>;

/// What a sweep tells as it goes.
pub trait SweepObserver {
    /// The `--cold` eviction before the next combination, described.
    fn evicted(&mut self, description: &str);
    /// A combination is about to run.
    fn starting(&mut self, spec: &MeasureSpec);
    /// Progress of the running combination, about five times a second.
    fn progress(&mut self, progress: Progress);
    /// The running combination ended (with a result or not; `finished` or `skipped` follows).
    fn ended(&mut self);
    /// A combination's result; `eviction` describes the eviction before it.
    fn finished(
        &mut self,
        result: &BenchResult,
        eviction: Option<&str>,
    ) -> Result<(), ObserverError>;
    /// A method or combination skipped.
    fn skipped(&mut self, skip: Skip<'_>);
}

/// Why a sweep stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SweepError {
    /// A combination failed other than by not opening.
    #[error("{method} depth {depth} threads {threads} on {file}: {source}")]
    Measure {
        method: Method,
        depth: usize,
        threads: usize,
        file: String,
        #[source]
        source: MeasureError,
    },
    /// The observer failed.
    #[error("{0}")]
    Observer(ObserverError),
}

/// What a sweep did.
#[derive(Debug, Default)]
pub struct SweepTotals {
    /// Combinations started (including skipped ones).
    pub combinations: u64,
    /// Every finished combination's result, in order.
    pub results: Vec<BenchResult>,
    pub read_errors: u64,
    /// The first read error of the run.
    pub first_error: Option<String>,
}

impl Sweep {
    /// Runs every combination until done or `stop` is set.
    pub fn run(
        &self,
        stop: &AtomicBool,
        observer: &mut dyn SweepObserver,
    ) -> Result<SweepTotals, SweepError> {
        let mut totals = SweepTotals::default();
        for &method in &self.methods {
            self.run_method(method, stop, observer, &mut totals)?;
            if stop.load(Ordering::Relaxed) {
                break;
            }
        }
        Ok(totals)
    }

    /// Runs every depth x threads combination of one method; skips the method (visibly) when
    /// it cannot be opened here.
    fn run_method(
        &self,
        method: Method,
        stop: &AtomicBool,
        observer: &mut dyn SweepObserver,
        totals: &mut SweepTotals,
    ) -> Result<(), SweepError> {
        let info = &self.info;
        for &depth in &self.depths {
            for &threads in &self.threads {
                if stop.load(Ordering::Relaxed) {
                    return Ok(());
                }
                let eviction = info.cold.then(|| {
                    let text = match page_cache::evict(&info.file) {
                        Ok(e) => e.describe(),
                        Err(e) => format!("eviction failed: {e}"),
                    };
                    observer.evicted(&text);
                    text
                });
                let spec = MeasureSpec {
                    targets: vec![Target {
                        path: info.file.clone(),
                        range: info.range.clone(),
                    }],
                    method,
                    block_size: self.block_size,
                    depth,
                    threads,
                    duration: info.duration,
                    seed: combination_seed(info.seed, totals.combinations),
                };
                totals.combinations += 1;
                observer.starting(&spec);
                let result = run_one(&spec, stop, &mut |p| observer.progress(p));
                observer.ended();
                match result {
                    Ok(r) => {
                        totals.read_errors += r.read_errors;
                        if totals.first_error.is_none() {
                            totals.first_error = r.first_error.clone();
                        }
                        observer
                            .finished(&r, eviction.as_deref())
                            .map_err(SweepError::Observer)?;
                        totals.results.push(r);
                    }
                    Err(MeasureError::Open(error @ IoError::Unavailable { .. })) => {
                        observer.skipped(Skip::Method {
                            method,
                            error: &error,
                        });
                        return Ok(());
                    }
                    Err(MeasureError::Open(error)) => observer.skipped(Skip::Combination {
                        method,
                        depth,
                        threads,
                        error: &error,
                    }),
                    Err(source) => {
                        return Err(SweepError::Measure {
                            method,
                            depth,
                            threads,
                            file: info.file.display().to_string(),
                            source,
                        })
                    }
                }
            }
        }
        Ok(())
    }
}
