//! A door's vocabulary: inputs are named by key until the door sets its namer, then by the
//! door's names everywhere an error is displayed. Its own test binary, because the namer is
//! process-wide.

use pora_core::difficulty::{expected_diff, DiffParams};
use pora_core::input::{name_inputs, Input};
use pora_core::U256;
use std::borrow::Cow;

fn refused(cutoff: u64, diff_adj_divisor: u64) -> String {
    let p = DiffParams {
        difficulty: U256::from(5),
        interval: 1,
        cutoff,
        diff_adj_divisor,
        minimum_diff: U256::from(1),
    };
    expected_diff(&p).unwrap_err().to_string()
}

#[test]
fn inputs_are_named_by_key_until_a_door_names_them() {
    assert_eq!(Input::RandomChecks.to_string(), "random_checks");
    let e = refused(0, 32);
    assert!(e.contains("cutoff") && !e.contains("--"), "{e}");
    name_inputs(|i| Cow::Owned(format!("--{}", i.key().replace('_', "-"))));
    assert_eq!(Input::RandomChecks.to_string(), "--random-checks");
    let e = refused(7200, 0);
    assert!(e.contains("--diff-adj-divisor"), "{e}");
}
