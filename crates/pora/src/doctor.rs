//! `pora doctor FILE... [--json]`: checks the files, their device and the OS, and explains what
//! limits mining power. The findings come from `pora_measure::doctor`; this file prints them, per
//! file, then for the shard and for each device, or as one JSON object.

use pora_io::probe::FileFacts;
use pora_measure::doctor::{bytes, Finding, Report};

pub type DoctorArgs = crate::common::FilesArgs;

pub fn run(args: DoctorArgs) -> anyhow::Result<()> {
    let report = Report::examine(&args.files, args.kv_entries_bits)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    for fact in &report.files {
        let path = fact.path.display().to_string();
        print_file(
            fact,
            report
                .findings
                .iter()
                .filter(|f| f.file.as_deref() == Some(&*path)),
        );
    }
    println!("shard");
    let whole = |f: &&Finding| f.file.is_none() && f.device.is_none();
    for f in report.findings.iter().filter(whole) {
        print_finding(f);
    }
    let mut devices: Vec<&str> = report
        .findings
        .iter()
        .filter_map(|f| f.device.as_deref())
        .collect();
    devices.dedup();
    for device in devices {
        println!("{device}");
        for f in report
            .findings
            .iter()
            .filter(|f| f.device.as_deref() == Some(device))
        {
            print_finding(f);
        }
    }
    println!(
        "summary: {} findings, worst: {}",
        report.findings.len(),
        report.worst().tag()
    );
    Ok(())
}

fn print_file<'a>(fact: &FileFacts, findings: impl Iterator<Item = &'a Finding>) {
    let fs = fact.fs_type.known().map_or("unknown fs", |s| s.as_str());
    let dev = fact
        .device
        .known()
        .map_or_else(|| "unknown device".to_string(), |d| d.name.clone());
    println!(
        "{} ({fs} on {dev}, {})",
        fact.path.display(),
        bytes(fact.size_bytes)
    );
    for f in findings {
        print_finding(f);
    }
}

fn print_finding(f: &Finding) {
    println!("  {:<4}  {:<12}  {}", f.severity.tag(), f.id, f.message);
    if let Some(r) = &f.remedy {
        println!("  {:<4}  {:<12}  -> {r}", "", "");
    }
}
