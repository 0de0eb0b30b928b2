//! Shards on raw block devices, and real I/O errors from a device (docs/RELIABILITY.md).
//!
//! - A shard copied to a read-only loop device is mined by every available method exactly like
//!   the file (es-node operators may put a shard on a raw partition; a block device's metadata
//!   length is 0, which `DataFile::open` and the mmap backend now handle).
//! - Over that loop device, a device-mapper table with an `error` target over 2 MiB of the data
//!   region: `pora hash` of a nonce sampling the bad range fails naming the device and offset;
//!   `pora mine --on-io-error skip` drops exactly the failing nonces (never counted, never
//!   reported) and goes on; `--on-io-error stop` exits non-zero naming the device and offset.
//!
//! Both need root and util-linux (`losetup`); the second also device-mapper in the kernel and
//! `dmsetup`. Without them each test prints a SKIP line with the reason and returns.
#![cfg(target_os = "linux")]

#[macro_use]
mod common;
mod reliability_common;

use pora_core::{hashimoto, ShardSet, H256};
use reliability_common::*;
use serde_json::Value;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const RANDAO: &str = "0x3333333333333333333333333333333333333333333333333333333333333333";
const NONCES: u64 = 3000;
/// Data region of the dm test's shard starts at byte 4096; bytes [4 MiB, 6 MiB) of it fail.
const BAD_START: u64 = 4096 + (4 << 20);
const BAD_LEN: u64 = 2 << 20;

/// A read-only loop device over a file, detached on drop (also when the test fails).
struct LoopDevice {
    dev: String,
}

impl LoopDevice {
    fn attach(file: &Path) -> Result<LoopDevice, String> {
        let out = Command::new("losetup")
            .args(["--find", "--show", "--read-only", s(file)])
            .output()
            .map_err(|e| format!("losetup not runnable: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "losetup failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(LoopDevice {
            dev: String::from_utf8_lossy(&out.stdout).trim().to_string(),
        })
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

/// A device-mapper device, removed on drop (declare it after the loop device it sits on, so it
/// is dropped first).
struct DmDevice {
    name: String,
}

impl DmDevice {
    fn path(&self) -> PathBuf {
        PathBuf::from(format!("/dev/mapper/{}", self.name))
    }
}

impl Drop for DmDevice {
    fn drop(&mut self) {
        for _ in 0..20 {
            let removed = Command::new("dmsetup")
                .args(["remove", &self.name])
                .stderr(Stdio::null())
                .status();
            if matches!(removed, Ok(s) if s.success()) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        eprintln!("warning: could not remove dm device {}", self.name);
    }
}

fn needs_root_and_losetup(test: &str) -> bool {
    if !is_root() {
        skip_note!("SKIP {test}: needs root (loop devices)");
        return false;
    }
    if !Path::new("/dev/loop-control").exists() {
        skip_note!("SKIP {test}: no /dev/loop-control (loop driver missing)");
        return false;
    }
    true
}

/// `pora mine` on `file` with `method`: the one JSON line (exit status checked by the caller).
fn mine(file: &Path, method: &str, on_io_error: &str) -> std::process::Output {
    let nonces = format!("0..{NONCES}");
    let args = [
        "mine",
        "--file",
        s(file),
        "--method",
        method,
        "--randao",
        RANDAO,
        "--nonces",
        &nonces,
        "--on-io-error",
        on_io_error,
    ];
    run(&[&args[..], &SMALL_POOL, &FIND_ALL_EASY].concat())
}

fn found_nonces(line: &Value) -> Vec<u64> {
    line["found"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["nonce"].as_u64().unwrap())
        .collect()
}

fn one_line(out: &std::process::Output, what: &str) -> Value {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json_lines(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(lines.len(), 1, "{what}");
    lines[0].clone()
}

#[test]
fn shard_on_a_loop_device_mines_like_the_file_with_every_method() {
    if !needs_root_and_losetup("loop device") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let shard = create(dir.path(), "shard.dat", 4, 7);
    let dev = match LoopDevice::attach(&shard) {
        Ok(d) => d,
        Err(why) => {
            skip_note!("SKIP loop device: {why}");
            return;
        }
    };
    let dev_path = PathBuf::from(&dev.dev);
    let info = run(&["info", &dev.dev, "--json"]);
    assert!(
        info.status.success(),
        "info on {}: {}",
        dev.dev,
        String::from_utf8_lossy(&info.stderr)
    );
    let want = one_line(&mine(&shard, "pread", "retry"), "file");
    assert!(!found_nonces(&want).is_empty());
    for method in pora_io::Method::available_real() {
        let got = one_line(&mine(&dev_path, method.name(), "retry"), method.name());
        assert_eq!(got["noncesTried"], NONCES, "{method}: {got}");
        assert_eq!(got["ioErrors"], 0, "{method}: {got}");
        assert_eq!(found_nonces(&got), found_nonces(&want), "{method}");
    }
}

/// Whether this kernel has device-mapper, and `dmsetup` exists.
fn device_mapper_missing() -> Option<String> {
    let devices = std::fs::read_to_string("/proc/devices").unwrap_or_default();
    if !devices.lines().any(|l| l.ends_with(" device-mapper")) {
        return Some(
            "this kernel has no device-mapper (not in /proc/devices; modprobe dm_mod)".into(),
        );
    }
    match Command::new("dmsetup").arg("version").output() {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "dmsetup version failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Some(format!("dmsetup not runnable: {e}")),
    }
}

/// linear | error over [BAD_START, BAD_START + BAD_LEN) | linear, all in 512-byte sectors.
fn error_table(loop_dev: &str, file_len: u64) -> String {
    let (bad, bad_len, total) = (BAD_START / 512, BAD_LEN / 512, file_len / 512);
    let after = bad + bad_len;
    format!(
        "0 {bad} linear {loop_dev} 0\n{bad} {bad_len} error\n{after} {} linear {loop_dev} {after}\n",
        total - after
    )
}

fn create_dm(name: &str, table: &str) -> Result<DmDevice, String> {
    let mut child = Command::new("dmsetup")
        .args(["create", name, "--readonly"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("dmsetup: {e}"))?;
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(table.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    if !out.status.success() {
        return Err(format!(
            "dmsetup create: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let dm = DmDevice { name: name.into() };
    // Without udev (containers) the node may need creating by hand.
    if !dm.path().exists() {
        let _ = Command::new("dmsetup").args(["mknodes", name]).status();
    }
    Ok(dm)
}

/// Nonces of `0..NONCES` whose samples (read from the intact file) touch the bad range.
fn nonces_touching_bad_range(intact: &Path) -> Vec<u64> {
    let shard = ShardSet::open(&[intact.to_path_buf()], None).unwrap();
    let file = std::fs::File::open(intact).unwrap();
    let randao = H256::parse("randao", RANDAO).unwrap();
    (0..NONCES)
        .filter(|&nonce| {
            let mut bad = false;
            hashimoto(&shard.geometry, 2, &shard.miner, &randao, nonce, |idx| {
                let offset = shard.locate(idx).unwrap().offset;
                bad |= (BAD_START..BAD_START + BAD_LEN).contains(&offset);
                let mut buf = [0u8; 32];
                file.read_exact_at(&mut buf, offset).unwrap();
                Ok::<_, std::io::Error>(buf)
            })
            .unwrap();
            bad
        })
        .collect()
}

#[test]
fn device_mapper_error_range_is_reported_and_its_nonces_dropped() {
    if !needs_root_and_losetup("device-mapper error target") {
        return;
    }
    if let Some(why) = device_mapper_missing() {
        skip_note!("SKIP device-mapper error target: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // 16 MiB of data; the bad range is 1/8 of it.
    let intact = create(dir.path(), "intact.dat", 7, 21);
    let backing = dir.path().join("backing.dat");
    std::fs::copy(&intact, &backing).unwrap();
    let file_len = std::fs::metadata(&intact).unwrap().len();
    let loop_dev = LoopDevice::attach(&backing).expect("losetup");
    let name = format!("pora-rel-{}", std::process::id());
    let dm = create_dm(&name, &error_table(&loop_dev.dev, file_len)).expect("dmsetup create");
    let dev = dm.path();
    assert!(dev.exists(), "{} was not created", dev.display());

    let bad = nonces_touching_bad_range(&intact);
    assert!(
        !bad.is_empty() && (bad.len() as u64) < NONCES,
        "{} of {NONCES} nonces touch the bad range",
        bad.len()
    );

    // pora hash on a nonce that samples the bad range: a clear error with device and offset.
    let hashed = run(&[
        "hash",
        "--file",
        s(&dev),
        "--randao",
        RANDAO,
        "--nonce",
        &bad[0].to_string(),
    ]);
    let err = String::from_utf8_lossy(&hashed.stderr);
    assert!(
        !hashed.status.success(),
        "hash of nonce {} succeeded",
        bad[0]
    );
    assert!(
        err.contains(s(&dev)) && err.contains("offset") && !err.contains("panicked"),
        "{err}"
    );

    for method in pora_io::Method::available_real() {
        let m = method.name();
        // skip: the nonces on the bad range are dropped, the rest mined and verified.
        let out = mine(&dev, m, "skip");
        let line = one_line(&out, m);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let (tried, dropped) = (
            line["noncesTried"].as_u64().unwrap(),
            line["ioErrors"].as_u64().unwrap(),
        );
        assert_eq!(tried + dropped, NONCES, "{m}: every nonce tried or dropped");
        if method == pora_io::Method::Mmap {
            // A fault on the map is contained like a truncation: the bound drops to the faulting
            // page, so reads past it fail too (docs/RELIABILITY.md).
            assert!(dropped >= bad.len() as u64, "{m}: the bad nonces dropped");
        } else {
            assert_eq!(
                dropped,
                bad.len() as u64,
                "{m}: exactly the bad nonces dropped"
            );
        }
        let found = found_nonces(&line);
        assert!(
            found.iter().all(|n| !bad.contains(n)),
            "{m}: a nonce on the bad range was reported: {found:?}"
        );
        assert_found_are_valid(&line, &intact, EASY_DIFF, 3);
        assert!(
            stderr.contains("read error") && stderr.contains(s(&dev)) && stderr.contains("offset"),
            "{m}: {stderr}"
        );
        // stop: exits non-zero naming the device and offset.
        let out = mine(&dev, m, "stop");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{m}: --on-io-error stop exited 0");
        assert!(
            stderr.contains(s(&dev)) && stderr.contains("offset") && !stderr.contains("panicked"),
            "{m}: {stderr}"
        );
    }
    drop(dm);
    drop(loop_dev);
}
