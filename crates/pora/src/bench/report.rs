//! Output of `pora bench`: a table row (or one JSON line) per combination as soon as it ends,
//! notes after the table, and a progress line on stderr while a combination runs (only when
//! stderr is a terminal).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pora_measure::bench::record::{BenchRecord, RunInfo};
use pora_measure::bench::{BenchResult, MeasureSpec, Progress};
use std::io::{IsTerminal, Write};
use std::time::Duration;

/// Prints results as they arrive.
pub struct Reporter {
    info: RunInfo,
    /// One JSON object per line instead of a table.
    json: bool,
    rows: usize,
    /// Distinct notes, each with the combinations (table rows) it applies to.
    notes: Vec<(String, Vec<usize>)>,
}

impl Reporter {
    pub fn new(info: RunInfo, json: bool) -> Reporter {
        if !json {
            println!(
                "pora bench {}: bytes {}..{} ({}), seed {}, {} per combination{}",
                info.file.display(),
                info.range.start,
                info.range.end,
                info.range_source,
                info.seed,
                format_seconds(info.duration),
                if info.cold { ", cold" } else { "" }
            );
        }
        Reporter {
            info,
            json,
            rows: 0,
            notes: Vec::new(),
        }
    }

    /// A progress line for the combination about to run.
    pub fn spinner(&self, spec: &MeasureSpec) -> Spinner {
        Spinner::new(self.rows + 1, spec)
    }

    /// Prints one combination's result; `eviction` describes the `--cold` eviction before it.
    pub fn result(&mut self, r: &BenchResult, eviction: Option<&str>) -> serde_json::Result<()> {
        self.rows += 1;
        if self.json {
            let record = BenchRecord::new(r, &self.info, eviction);
            println!("{}", serde_json::to_string(&record)?);
        } else {
            if self.rows == 1 {
                println!("{}", table_header());
            }
            println!("{}", table_row(self.rows, r));
            self.collect_notes(r, eviction);
        }
        let _ = std::io::stdout().flush();
        Ok(())
    }

    /// Prints the notes gathered under the table.
    pub fn finish(&self) {
        if self.json || self.notes.is_empty() {
            return;
        }
        println!("notes:");
        for (text, rows) in &self.notes {
            let rows: Vec<String> = rows.iter().map(|r| format!("#{r}")).collect();
            println!("  {} {text}", rows.join(","));
        }
        let _ = std::io::stdout().flush();
    }

    fn collect_notes(&mut self, r: &BenchResult, eviction: Option<&str>) {
        self.note(r.describe.clone());
        if let Some(e) = eviction {
            self.note(format!("cold: {e}"));
        }
        for note in &r.notes {
            self.note(note.clone());
        }
        if let Some(e) = &r.first_error {
            self.note(format!("{} read errors, first: {e}", r.read_errors));
        }
        if r.interrupted {
            self.note(format!(
                "interrupted: partial result over {:.2} s",
                r.seconds
            ));
        }
    }

    /// Adds `text` for the current row, merging identical notes of earlier rows.
    fn note(&mut self, text: String) {
        let row = self.rows;
        match self.notes.iter_mut().find(|(t, _)| *t == text) {
            Some((_, rows)) => rows.push(row),
            None => self.notes.push((text, vec![row])),
        }
    }
}

fn format_seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

fn table_header() -> String {
    format!(
        "{:>3} {:<15} {:>6} {:>5} {:>7} {:>6} {:>10} {:>9} {:>8} {:>8} {:>8} {:>8} {:>6} {:>9} {:>6}",
        "#", "method", "block", "depth", "threads", "secs", "reads", "IOPS", "MB/s", "p50 µs", "p99 µs", "p99.9 µs", "CPU%",
        "devReads", "errors"
    )
}

fn table_row(n: usize, r: &BenchResult) -> String {
    let or_unknown = |v: Option<String>| v.unwrap_or_else(|| "?".into());
    format!(
        "{:>3} {:<15} {:>6} {:>5} {:>7} {:>6.2} {:>10} {:>9.0} {:>8} {:>8.1} {:>8.1} {:>8.1} {:>6} {:>9} {:>6}{}",
        n,
        r.method.name(),
        or_unknown(r.block_bytes.map(|b| b.to_string())),
        r.depth,
        r.threads,
        r.seconds,
        r.reads,
        r.iops(),
        or_unknown(r.mbps().map(|m| format!("{m:.1}"))),
        r.latency_us(0.50),
        r.latency_us(0.99),
        r.latency_us(0.999),
        or_unknown(r.cpu_percent.map(|c| format!("{c:.1}"))),
        or_unknown(r.device_reads.map(|d| d.to_string())),
        r.read_errors,
        if r.interrupted { "  (interrupted)" } else { "" }
    )
}

/// The stderr progress line of one combination; hidden when stderr is not a terminal.
pub struct Spinner {
    bar: ProgressBar,
    label: String,
    duration: Duration,
}

impl Spinner {
    fn new(index: usize, spec: &MeasureSpec) -> Spinner {
        let target = match std::io::stderr().is_terminal() {
            true => ProgressDrawTarget::stderr(),
            false => ProgressDrawTarget::hidden(),
        };
        let bar = ProgressBar::with_draw_target(None, target);
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        let label = format!(
            "#{index} {} depth {} threads {}",
            spec.method, spec.depth, spec.threads
        );
        bar.set_message(format!("{label}: starting"));
        Spinner {
            bar,
            label,
            duration: spec.duration,
        }
    }

    pub fn update(&mut self, p: Progress) {
        let secs = p.elapsed.as_secs_f64();
        let iops = if secs > 0.0 {
            p.reads as f64 / secs
        } else {
            0.0
        };
        self.bar.set_message(format!(
            "{}: {secs:.1}/{:.1} s, {} reads, {iops:.0} reads/s",
            self.label,
            self.duration.as_secs_f64(),
            p.reads
        ));
        self.bar.tick();
    }

    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}
