//! The submission rhythm of O_DIRECT rings: up to which depth a ring hands each read to the
//! kernel in its own `io_uring_enter` rather than a batch in one, from the facts of the devices
//! under its files (read once by the caller, [`crate::IoConfig::devices`]).

use crate::host::block_device::DeviceFacts;

/// Deepest O_DIRECT ring that hands each read to the kernel in its own `io_uring_enter`, on a
/// device with its own hardware (virtio, NVMe, SCSI). A batch of SQEs in one enter is plugged and
/// reaches the device as one notification; at moderate depth that makes reads queue behind each
/// other, and per-read submission (fio's rhythm) measured up to 20% faster at depth 8, 3–5% at 32
/// and 7–10% at 64 on the virtio disk (docs/BENCHMARKS.md §16, §17, §32). At 128 the batch held
/// its own, and buffered rings lost badly per read (a cache miss is punted per enter).
pub(super) const SUBMIT_EACH_MAX_DEPTH: usize = 64;
/// The same on a device the host's own CPUs serve (a loop device over RAM, a RAM disk, zram:
/// [`DeviceFacts::served_by_host`]): there the kernel's work per read is the limit, not the
/// device's latency, and at depth 64 one enter per batch read 20% more at 0.6x the CPU per read
/// (§30), so rings deeper than 32 batch.
pub(super) const HOST_SERVED_SUBMIT_EACH_MAX_DEPTH: usize = 32;

/// The deepest ring that enters per read, for O_DIRECT reads of files on these devices
/// (`None`: unknown, as on tmpfs or outside Linux): the host-served limit only when every device
/// is known to be served by the host, since a slower device among them sets the pace.
pub(super) fn submit_each_max_depth<'a>(
    devices: impl IntoIterator<Item = Option<&'a DeviceFacts>>,
) -> usize {
    let mut devices = devices.into_iter().peekable();
    let any = devices.peek().is_some();
    let all_host_served = any && devices.all(|d| d.is_some_and(DeviceFacts::served_by_host));
    if all_host_served {
        HOST_SERVED_SUBMIT_EACH_MAX_DEPTH
    } else {
        SUBMIT_EACH_MAX_DEPTH
    }
}
