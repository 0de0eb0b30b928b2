//! `pora info FILE... [--json]`: prints headers, shard index, KV and sample ranges, and whether
//! the files form one complete shard (the record is `pora_prepare::info`'s).

use pora_prepare::info::{inspect, ShardOrProblem};

pub type InfoArgs = crate::common::FilesArgs;

pub fn run(args: InfoArgs) -> anyhow::Result<()> {
    let info = inspect(&args.files, args.kv_entries_bits)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&info)?);
        return Ok(());
    }
    for record in &info.files {
        println!("{}", record.path);
        print_fields(&serde_json::to_value(record)?, &["path"]);
    }
    match &info.shard {
        ShardOrProblem::Shard(_) => {
            println!("complete shard:");
            print_fields(&serde_json::to_value(&info.shard)?, &[]);
        }
        ShardOrProblem::Problem { problem } => println!("not a complete shard: {problem}"),
    }
    Ok(())
}

/// `  key              value` per field of a record, in order, but the `skip`ped ones.
fn print_fields(record: &serde_json::Value, skip: &[&str]) {
    for (k, v) in record
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| !skip.contains(&k.as_str()))
    {
        println!("  {k:<16} {v}");
    }
}
