//! `PORA_ENCODE_ARITH` with a value that names no kernel: the fallible entry points return an
//! error naming the variable, the infallible ones panic with that message. (Its own test binary:
//! the choice is read once per process.)

use pora_encode::{mask, mask_word, Kernel};

#[test]
fn a_bad_value_is_an_error_naming_the_variable() {
    std::env::set_var("PORA_ENCODE_ARITH", "avx1024");
    let err = Kernel::selected().unwrap_err().to_string();
    assert!(
        err.contains("PORA_ENCODE_ARITH") && err.contains("avx1024"),
        "{err}"
    );
    let err = mask_word(&[1u8; 32], 0).unwrap_err().to_string();
    assert!(err.contains("PORA_ENCODE_ARITH"), "{err}");
    let panic = std::panic::catch_unwind(|| mask(&[1u8; 32])).unwrap_err();
    let msg = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("PORA_ENCODE_ARITH"), "{msg}");
}
