//! Linux's methods: every Unix one (`unix.rs`) and io_uring where the kernel has it
//! (`uring.rs`).

use crate::method::{Method, Unavailable};
use crate::{FactoryResult, IoConfig};
use std::path::PathBuf;

/// Which methods Linux has: io_uring when the kernel offers what pora's rings need.
pub(crate) fn availability(method: Method) -> Result<(), Unavailable> {
    match method {
        Method::Uring | Method::UringDirect => crate::uring::probe().map_err(Unavailable),
        m => crate::unix::availability(m),
    }
}

/// Opens `method`'s factory over `paths` (available, checked by the caller).
pub(crate) fn open(method: Method, paths: &[PathBuf], config: &IoConfig) -> FactoryResult {
    match method {
        Method::Uring | Method::UringDirect => crate::uring::open(method, paths, config),
        m => crate::unix::open(m, paths, config),
    }
}
