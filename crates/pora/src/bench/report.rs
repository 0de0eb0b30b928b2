//! Output of `pora bench`: a table row (or one JSON line) per combination as soon as it ends,
//! notes after the table, and a progress line on stderr while a combination runs (only when
//! stderr is a terminal).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pora_measure::bench::record::{result_notes, BenchRecord, RunInfo};
use pora_measure::bench::sweep::{ObserverError, Skip, SweepObserver};
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
    /// The stderr progress line of the running combination and its label; hidden when stderr
    /// is not a terminal.
    spinner: Option<(ProgressBar, String)>,
}

impl SweepObserver for Reporter {
    fn evicted(&mut self, description: &str) {
        if !description.starts_with("evicted") {
            eprintln!("pora bench: --cold: {description}");
        }
    }

    fn starting(&mut self, spec: &MeasureSpec) {
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
            "#{} {} depth {} threads {}",
            self.rows + 1,
            spec.method,
            spec.depth,
            spec.threads
        );
        bar.set_message(format!("{label}: starting"));
        self.spinner = Some((bar, label));
    }

    fn progress(&mut self, p: Progress) {
        let Some((bar, label)) = &self.spinner else {
            return;
        };
        let secs = p.elapsed.as_secs_f64();
        let iops = if secs > 0.0 {
            p.reads as f64 / secs
        } else {
            0.0
        };
        bar.set_message(format!(
            "{label}: {secs:.1}/{:.1} s, {} reads, {iops:.0} reads/s",
            self.info.duration.as_secs_f64(),
            p.reads
        ));
        bar.tick();
    }

    fn ended(&mut self) {
        if let Some((bar, _)) = self.spinner.take() {
            bar.finish_and_clear();
        }
    }

    fn finished(&mut self, r: &BenchResult, eviction: Option<&str>) -> Result<(), ObserverError> {
        Ok(self.result(r, eviction)?)
    }

    fn skipped(&mut self, skip: Skip<'_>) {
        match skip {
            Skip::Method { method, error } => eprintln!("SKIP {method}: {error}"),
            Skip::Combination {
                method,
                depth,
                threads,
                error,
            } => eprintln!("SKIP {method} depth {depth} threads {threads}: {error}"),
        }
    }
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
            spinner: None,
        }
    }

    /// Prints one combination's result; `eviction` describes the `--cold` eviction before it.
    fn result(&mut self, r: &BenchResult, eviction: Option<&str>) -> serde_json::Result<()> {
        self.rows += 1;
        if self.json {
            let record = BenchRecord::new(r, &self.info, eviction);
            println!("{}", serde_json::to_string(&record)?);
        } else {
            if self.rows == 1 {
                println!("{}", BenchResult::table_header());
            }
            println!("{}", r.table_row(self.rows));
            for text in result_notes(r, eviction) {
                self.note(text);
            }
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
