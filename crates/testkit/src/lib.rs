//! Test support shared by the integration tests of the scifmt crates. Not published: each crate
//! uses it as a path-only dev-dependency (stripped from the published manifest).
//!
//! * [`CountingAlloc`] and [`peak_during`]: measure the peak heap growth of a call, so limits
//!   tests can show that a hostile input is refused before any large allocation;
//! * [`regression_files`]: the kept fuzz findings of one crate and fuzz target;
//! * [`run_and_kill`], [`kill_child_step_done`]: one round of a kill test (a child process
//!   killed at a random point after its first completed step);
//! * [`Lcg`]: a small deterministic pseudo-random sequence for schedules and kill delays;
//! * [`ZARR_STORES`]: the Zarr fixtures read through the `offset` / `pad` codecs;
//! * [`assert_ordinary_mode`]: a written file has the permissions of any new file;
//! * [`plugin_fixtures`]: the C-Blosc2 plugin fixtures' manifest entries and files;
//! * `icechunk::open_main` (feature `icechunk`): zarrs' storage over an Icechunk repository;
//! * [`azurite::Azurite`]: the Azure Storage emulator's Blob service, run as a process;
//! * [`fake_gcs::FakeGcs`]: a Google Cloud Storage emulator (fake-gcs-server), run as a process.

mod alloc;
pub mod azurite;
pub mod fake_gcs;
#[cfg(feature = "icechunk")]
pub mod icechunk;
mod plugin_fixtures;
mod process;

pub use alloc::{CountingAlloc, lock_serial, peak_during};
pub use plugin_fixtures::{PluginFixture, plugin_fixtures};

use std::path::PathBuf;

/// The Zarr v3 stores among the fixtures (relative to `testdata/`) that zarrs reads with the
/// `offset` / `pad` codecs: Zarr arrays, and padded N5 datasets through their `zarr.json`.
pub const ZARR_STORES: &[&str] = &[
    "offset/zarr/tiff_u16_le.zarr",
    "offset/zarr/gzip_custom_header.zarr",
    "offset/zarr/zstd_zero_prefix.zarr",
    "offset/zarr/offset0_empty_prefix.zarr",
    "offset/zarr/n5_via_offset_zstd.n5",
    "offset/zarr/pad_start_gzip.zarr",
    "offset/zarr/pad_end_zero.zarr",
    "offset/n5/tensorstore_zstd.n5/data",
    "offset/n5/zarr2_gzip.n5/data",
];

/// The files of `testdata/regressions/<krate>/<target>/` (not `*.md`), sorted by path, with
/// their bytes; empty if the folder does not exist.
///
/// # Panics
/// If a listed file cannot be read (a broken checkout fails the test loudly).
#[must_use]
#[allow(
    clippy::expect_used,
    reason = "test support: a broken checkout is a failed test"
)]
pub fn regression_files(krate: &str, target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/regressions")
        .join(krate)
        .join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_none_or(|x| x != "md"))
        .map(|p| {
            let b = std::fs::read(&p).expect("read regression file");
            (p, b)
        })
        .collect();
    out.sort();
    out
}

/// Runs `f` on every regression file of `krate`/`target`, catching panics, and fails with the
/// list of files that panicked. Returns how many files were replayed.
///
/// # Panics
/// If any replay panicked.
pub fn replay_all(
    krate: &str,
    target: &str,
    f: impl Fn(&[u8]) + std::panic::RefUnwindSafe,
) -> usize {
    let files = regression_files(krate, target);
    let failed: Vec<String> = files
        .iter()
        .filter(|(_, data)| std::panic::catch_unwind(|| f(data)).is_err())
        .map(|(path, _)| path.display().to_string())
        .collect();
    assert!(failed.is_empty(), "regressions failing: {failed:#?}");
    files.len()
}

/// The line a kill test's child prints (through [`kill_child_step_done`]) each time it has
/// completed a step, e.g. a whole write.
pub const KILL_CHILD_STEP_DONE: &str = "kill-child: step done";

/// Called by a kill test's child after each completed step: tells [`run_and_kill`] that the
/// child is past its start-up and has changed the data at least once.
///
/// # Panics
/// If stdout cannot be written.
#[allow(
    clippy::expect_used,
    reason = "test support: a child that cannot report is a failed test"
)]
pub fn kill_child_step_done() {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{KILL_CHILD_STEP_DONE}").expect("report to the parent");
    out.flush().expect("report to the parent");
}

/// Starts this test binary again running only the test `child_test` with `var=value` in its
/// environment (the child test does its work only when it sees the variable), waits until the
/// child reports its first completed step ([`kill_child_step_done`]; or exits, or two minutes
/// pass), lets it run on for a pseudo-random 0–40 ms drawn from `rng`, then SIGKILLs it and
/// waits for it: one round of a kill test. Waiting for the report, not for a fixed time, makes
/// every kill land after the child has done real work, however slowly the machine starts
/// processes.
///
/// # Panics
/// If the child cannot be started, killed or waited for.
#[allow(
    clippy::expect_used,
    reason = "test support: a failed spawn is a failed test"
)]
pub fn run_and_kill(child_test: &str, var: &str, value: &str, rng: &mut Lcg) {
    use std::io::BufRead;
    let exe = std::env::current_exe().expect("current test binary");
    let mut child = std::process::Command::new(exe)
        .args(["--exact", child_test, "--nocapture", "--test-threads=1"])
        .env(var, value)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the child");
    let stdout = child.stdout.take().expect("the child's stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    // Reads the child's output to its end, so that the child never blocks on a full pipe.
    let reader = std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line == KILL_CHILD_STEP_DONE
                && let Some(tx) = tx.take()
            {
                let _ = tx.send(());
            }
        }
    });
    let _ = rx.recv_timeout(std::time::Duration::from_secs(120));
    std::thread::sleep(std::time::Duration::from_micros(rng.next_u64() % 40_000));
    child.kill().expect("SIGKILL the child");
    child.wait().expect("reap the child");
    reader.join().expect("the output reader");
}

/// A 64-bit linear congruential generator (Knuth's MMIX constants); `next_u64` yields 31 bits.
#[derive(Debug, Clone)]
pub struct Lcg(pub u64);

impl Lcg {
    /// The next pseudo-random value (31 bits).
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
}

/// Asserts that `path` has the permission bits of a file made by `std::fs::write` in the same
/// directory under the same umask (writers go through `tempfile`, whose own files are 0600).
///
/// # Panics
/// If the modes differ, or a file cannot be written or inspected.
#[cfg(unix)]
#[allow(
    clippy::expect_used,
    reason = "test support: a failed check is a failed test"
)]
pub fn assert_ordinary_mode(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    let dir = path.parent().expect("a file in a directory");
    let plain = dir.join(".testkit-plain-file");
    std::fs::write(&plain, b"").expect("write a plain file");
    let mode = |p: &std::path::Path| {
        std::fs::metadata(p)
            .expect("file metadata")
            .permissions()
            .mode()
            & 0o777
    };
    let (got, want) = (mode(path), mode(&plain));
    std::fs::remove_file(&plain).expect("remove the plain file");
    assert_eq!(
        got,
        want,
        "{}: mode {got:o}, a new file gets {want:o}",
        path.display()
    );
}

/// The names in `dir`, sorted (to see what a write left beside its target).
///
/// # Panics
/// If `dir` cannot be listed.
#[allow(
    clippy::expect_used,
    reason = "test support: an unreadable directory is a failed test"
)]
pub fn dir_names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("list the directory")
        .map(|e| {
            e.expect("a directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    v.sort();
    v
}
