//! A bad `PORA_KECCAK` is refused by `pora_open` naming the variable, as the CLI refuses it,
//! instead of mining with a kernel the caller did not ask for. Its own test binary: the
//! variable is process-wide.

use pora_ffi::*;

fn open_missing_file() -> (PoraStatus, String) {
    let path = b"/nonexistent/pora-keccak-env/shard.dat";
    let files = [PoraBytes {
        ptr: path.as_ptr(),
        len: path.len(),
    }];
    let sizes = [1usize];
    let mut handle = 0u64;
    let mut out = PoraBuf {
        ptr: std::ptr::null_mut(),
        len: 0,
    };
    let status = unsafe {
        pora_open(
            files.as_ptr(),
            1,
            sizes.as_ptr(),
            1,
            std::ptr::null(),
            &mut handle,
            &mut out,
        )
    };
    let msg = unsafe { std::slice::from_raw_parts(out.ptr, out.len) };
    let msg = String::from_utf8_lossy(msg).into_owned();
    unsafe { pora_buf_free(&mut out) };
    (status, msg)
}

#[test]
fn a_bad_keccak_kernel_is_refused_at_open() {
    std::env::set_var("PORA_KECCAK", "bogus");
    let (status, msg) = open_missing_file();
    assert_eq!(status, PoraStatus::InvalidArgument, "{msg}");
    assert!(
        msg.contains("PORA_KECCAK") && msg.contains("bogus"),
        "{msg}"
    );
    std::env::remove_var("PORA_KECCAK");
    let (status, msg) = open_missing_file();
    assert_eq!(
        status,
        PoraStatus::Io,
        "unset, the file is what fails: {msg}"
    );
}
