//! What the kernel's io_uring offers, probed once per process: whether rings can be made here
//! (and the reason when not, in the words a miner can act on), and whether the kernel can cancel
//! a read it holds.

use io_uring::{opcode, IoUring};
use std::sync::OnceLock;

/// What the kernel's io_uring offers beyond what pora needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct RingFeatures {
    /// `IORING_OP_ASYNC_CANCEL` (5.5+): in-flight reads can be withdrawn by `cancel_all`.
    pub async_cancel: bool,
}

/// The probe's answer, computed once per process.
pub(super) fn probed() -> &'static Result<RingFeatures, String> {
    static PROBE: OnceLock<Result<RingFeatures, String>> = OnceLock::new();
    PROBE.get_or_init(probe_uncached)
}

/// Whether io_uring can be used here; the reason when not. Probed once per process.
pub fn probe() -> Result<(), String> {
    probed().as_ref().map(|_| ()).map_err(Clone::clone)
}

/// Whether the kernel can cancel a read it holds (`IORING_OP_ASYNC_CANCEL`).
pub(super) fn kernel_cancels_reads() -> bool {
    probed().as_ref().is_ok_and(|f| f.async_cancel)
}

fn probe_uncached() -> Result<RingFeatures, String> {
    let disabled = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .ok()
        .and_then(|s| s.trim().parse::<u8>().ok())
        .unwrap_or(0);
    if disabled == 2 {
        return Err(
            "io_uring is disabled system-wide (sysctl kernel.io_uring_disabled = 2)".into(),
        );
    }
    let ring = IoUring::new(8).map_err(|e| setup_failure_reason(&e, disabled))?;
    let mut probe = io_uring::Probe::new();
    ring.submitter().register_probe(&mut probe).map_err(|e| {
        format!(
            "the kernel cannot list its io_uring opcodes ({e}): older than 5.6, which pora needs"
        )
    })?;
    let needed = [
        (opcode::Read::CODE, "READ"),
        (opcode::ReadFixed::CODE, "READ_FIXED"),
        (opcode::Timeout::CODE, "TIMEOUT"),
    ];
    let missing: Vec<&str> = needed
        .iter()
        .filter(|(code, _)| !probe.is_supported(*code))
        .map(|(_, name)| *name)
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "the kernel's io_uring lacks opcodes {}",
            missing.join(", ")
        ));
    }
    Ok(RingFeatures {
        async_cancel: probe.is_supported(opcode::AsyncCancel::CODE),
    })
}

/// A human reason for a failed `io_uring_setup`.
pub(super) fn setup_failure_reason(e: &std::io::Error, disabled: u8) -> String {
    match e.raw_os_error() {
        Some(libc::ENOSYS) => "io_uring_setup is not implemented (ENOSYS): kernel older than 5.1 \
                              or built without CONFIG_IO_URING"
            .into(),
        Some(libc::EPERM) if disabled == 1 => {
            let group = std::fs::read_to_string("/proc/sys/kernel/io_uring_group")
                .map(|g| g.trim().to_string())
                .unwrap_or_else(|_| "?".into());
            format!(
                "io_uring is restricted (sysctl kernel.io_uring_disabled = 1) and this process is \
                 neither privileged nor in group kernel.io_uring_group (gid {group})"
            )
        }
        Some(libc::EPERM) => "io_uring_setup was refused (EPERM): blocked by a seccomp filter (a \
                             container's default profile?) or a security module"
            .into(),
        Some(libc::ENOMEM) => "io_uring_setup failed (ENOMEM): locked-memory limit too low \
                              (ulimit -l; kernels before 5.12 charge rings to it)"
            .into(),
        _ => format!("io_uring_setup failed: {e}"),
    }
}
