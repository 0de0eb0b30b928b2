//! `PORA_ENCODE_ARITH` picks the kernel of the whole process: set to `portable` (runs
//! everywhere), the default entry points run the portable kernel and still give the reference
//! mask. (Its own test binary: the choice is read once per process.)

use pora_encode::{mask, mask_with_kernel, reference, Kernel};

#[test]
fn the_variable_selects_the_kernel() {
    std::env::set_var("PORA_ENCODE_ARITH", " Portable ");
    assert_eq!(Kernel::selected().unwrap(), Kernel::Portable);
    let key = [0x5au8; 32];
    let want = reference::mask(&key);
    assert!(mask(&key)[..] == want[..]);
    assert!(mask_with_kernel(Kernel::best(), &key).unwrap()[..] == want[..]);
}
