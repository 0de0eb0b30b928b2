//! Absurd configurations are refused before anything is allocated, naming the input (each door
//! names inputs in its own words; the library's are their keys).

mod common;

use common::*;
use pora_core::Input;
use pora_io::SimConfig;
use pora_mine::{MineError, Miner};
use std::time::Duration;

type Mutation = Box<dyn FnOnce(&mut TestConfig)>;

fn refused(mutate: Mutation) -> (Input, String) {
    let dir = tempfile::tempdir().unwrap();
    let paths = vec![write_shard(dir.path(), 0, 4, 1)];
    let mut cfg = config(1, 1, 0..100);
    mutate(&mut cfg);
    // Knobs are refused when the miner is built, a slot's nonces and length when it starts.
    let built = Miner::new(
        vec![open_shard(&paths[0])],
        sim_factory(&paths, SimConfig::default()),
        cfg.mine(),
    );
    let mined = built.and_then(|m| m.mine_slot(&cfg.request(randao(1)), &Default::default()));
    match mined {
        Err(e @ MineError::Config { input, .. }) => (input, e.to_string()),
        Err(e) => panic!("expected a configuration error, got {e}"),
        Ok(_) => panic!("configuration accepted"),
    }
}

#[test]
fn absurd_values_name_their_input() {
    use Input::*;
    let cases: [(Input, &str, Mutation); 9] = [
        (Depth, "depth 0", Box::new(|c| c.depth = 0)),
        (
            Depth,
            "depth 1000000000",
            Box::new(|c| c.depth = 1_000_000_000),
        ),
        (
            Threads,
            "threads 1000000",
            Box::new(|c| c.threads = 1_000_000),
        ),
        (Threads, "threads 0", Box::new(|c| c.threads = 0)),
        (
            Threads,
            "threads 1024 x depth 65536",
            Box::new(|c| (c.threads, c.depth) = (1024, 65536)),
        ),
        (
            RandomChecks,
            "random_checks 0",
            Box::new(|c| c.random_checks = 0),
        ),
        (
            RandomChecks,
            "random_checks 65",
            Box::new(|c| c.random_checks = 65),
        ),
        (Nonces, "nonces 5..5", Box::new(|c| c.nonces = 5..5)),
        (
            SlotLength,
            "deadline_remaining_ns 8640000",
            Box::new(|c| c.slot = Duration::from_millis(86_400_001)),
        ),
    ];
    for (input, text, mutate) in cases {
        let (refused_input, msg) = refused(mutate);
        assert_eq!(refused_input, input, "{msg}");
        let msg = msg.trim_start_matches("invalid mining configuration: ");
        assert!(
            msg.starts_with(text),
            "message for {text} should name it: {msg}"
        );
    }
}

#[test]
fn no_shard_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let paths = vec![write_shard(dir.path(), 0, 4, 1)];
    let err = Miner::new(
        Vec::new(),
        sim_factory(&paths, SimConfig::default()),
        config(1, 1, 0..10).mine(),
    )
    .err()
    .unwrap();
    assert!(err.to_string().contains("files: no shard to mine"), "{err}");
}
