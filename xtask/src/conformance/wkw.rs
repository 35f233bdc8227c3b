//! wkw: the corrupt-file error cases (strict errors, zeros only where the reference reads zeros),
//! and with `--live` round trips through the reference `wkw==1.1.24` Python package.
//!
//! The fixture oracle `testdata/wkw/expected.json` is checked once, by the crate's tests
//! (`crates/wkw/tests/it/fixtures.rs`, run by `cargo test`): every read in both layouts, `verify`
//! on every fixture, the byte-exact replays of the reference's raw writes (F1, F4, F5, in both
//! orders) and more.

use std::path::{Path, PathBuf};
use std::process::Command;

use wkw::{Array, BlockType, Dataset, Header, MissingOrCorrupt, Options, Order, VoxelType};

use super::{Ctx, Row};

const SECTION: &str = "wkw";

pub(crate) fn rows(ctx: &Ctx) -> Vec<Row> {
    let mut rows = vec![error_cases(ctx)];
    if ctx.live {
        rows.push(live(ctx));
    }
    rows
}

/// A (C, X, Y, Z) array from `f(c, X, Y, Z)` (absolute coordinates), `n` bytes per value.
fn build(
    vt: VoxelType,
    channels: u8,
    off: [u32; 3],
    shape: [u32; 3],
    order: Order,
    f: &dyn Fn(u32, u64, u64, u64) -> Vec<u8>,
) -> Result<Array, String> {
    let mut bytes = Vec::new();
    for z in 0..shape[2] {
        for y in 0..shape[1] {
            for x in 0..shape[0] {
                for c in 0..u32::from(channels) {
                    bytes.extend(f(
                        c,
                        u64::from(off[0] + x),
                        u64::from(off[1] + y),
                        u64::from(off[2] + z),
                    ));
                }
            }
        }
    }
    let a =
        Array::from_bytes(vt, channels, shape, Order::Fortran, bytes).map_err(|e| e.to_string())?;
    Ok(a.to_order(order))
}

fn temp_dir(tag: &str) -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("xtask-wkw-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    Ok(dir)
}

/// Corrupt files are errors (not zeros), zeros only with `MissingOrCorrupt::Zeros`
/// where the reference reads zeros.
fn error_cases(ctx: &Ctx) -> Row {
    let mut row = Row::new(SECTION, "corrupt files: Err (zeros only if lenient policy)");
    type Mutation = (&'static str, fn(&mut Vec<u8>), bool);
    let cases: [Mutation; 8] = [
        ("file of 10 bytes", |b| b.truncate(10), true),
        ("bad magic", |b| b[0] = b'X', true),
        ("bad version", |b| b[3] = 2, true),
        ("bad voxel type", |b| b[6] = 11, true),
        ("truncated jump table", |b| b.truncate(40), true),
        ("truncated block data", |b| b.truncate(b.len() - 10), false),
        ("zeroed jump table", |b| b[16..80].fill(0), false),
        ("garbage lz4 block", |b| b[80..90].fill(0xff), false),
    ];
    for (what, mutate, zeros_when_lenient) in cases {
        let result = (|| -> Result<(), String> {
            let tmp = temp_dir("err")?;
            let root = tmp.join("ds");
            copy_dir(&ctx.testdata("wkw/f32_lz4hc_b16_f2"), &root)?;
            let file = root.join("z1/y0/x1.wkw");
            let mut b = std::fs::read(&file).map_err(|e| e.to_string())?;
            mutate(&mut b);
            std::fs::write(&file, b).map_err(|e| e.to_string())?;
            let strict = Dataset::open(&root).map_err(|e| e.to_string())?;
            if strict.read([32, 0, 32], [32; 3], Order::Fortran).is_ok() {
                return Err("strict read succeeded".into());
            }
            let lenient = Dataset::open_with(
                &root,
                Options::default().with_missing_or_corrupt(MissingOrCorrupt::Zeros),
            )
            .map_err(|e| e.to_string())?;
            let r = lenient.read([32, 0, 32], [32; 3], Order::Fortran);
            let ok = match (r, zeros_when_lenient) {
                (Ok(a), true) => a.as_bytes().iter().all(|&v| v == 0),
                (Err(_), false) => true,
                _ => false,
            };
            std::fs::remove_dir_all(&tmp).map_err(|e| e.to_string())?;
            if ok {
                Ok(())
            } else {
                Err("lenient policy result differs from the reference".into())
            }
        })();
        row.case(what, result);
    }
    row
}

fn copy_dir(src: &Path, dst: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dst).map_err(|e| e.to_string())?;
    for e in std::fs::read_dir(src).map_err(|e| e.to_string())? {
        let e = e.map_err(|e| e.to_string())?;
        let to = dst.join(e.file_name());
        if e.file_type().map_err(|e| e.to_string())?.is_dir() {
            copy_dir(&e.path(), &to)?;
        } else {
            std::fs::copy(e.path(), &to).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// `--live`: the reference writes datasets (generators/wkw/live.py write), ours reads and checks
/// them against the formula; ours writes, the reference reads (live.py check).
#[allow(clippy::cast_possible_truncation)] // u8 formula
fn live(ctx: &Ctx) -> Row {
    let mut row = Row::new(SECTION, "live: reference wkw==1.1.24 <-> ours");
    let python = match crate::util::python_venv(&["wkw==1.1.24", "numpy"]) {
        Ok(Some(p)) => p,
        Ok(None) => {
            row.case("python", Ok(()));
            return row;
        }
        Err(e) => {
            row.case("venv", Err(e));
            return row;
        }
    };
    let script = ctx.root.join("testdata/generators/wkw/live.py");
    let Ok(tmp) = temp_dir("live") else {
        row.case("tmp", Err("cannot create temp dir".into()));
        return row;
    };
    let formula = |_: u32, x: u64, y: u64, z: u64| vec![((x + 3 * y + 7 * z) % 256) as u8];
    for (bt, name) in [(1u8, "raw"), (2, "lz4"), (3, "lz4hc")] {
        // Reference writes, we read.
        let theirs = tmp.join(format!("theirs-{name}"));
        let r = run(
            &python,
            &script,
            &["write", &theirs.to_string_lossy(), &bt.to_string()],
        )
        .and_then(|()| {
            let ds = Dataset::open(&theirs).map_err(|e| e.to_string())?;
            let got = ds
                .read([3, 5, 7], [40, 30, 20], Order::Fortran)
                .map_err(|e| e.to_string())?;
            let want = build(
                VoxelType::U8,
                1,
                [3, 5, 7],
                [40, 30, 20],
                Order::Fortran,
                &formula,
            )?;
            if got == want {
                Ok(())
            } else {
                Err("content differs".into())
            }
        });
        row.case(format!("reference writes {name}, ours reads"), r);
        // We write (unaligned, also for compressed), reference reads.
        let ours = tmp.join(format!("ours-{name}"));
        let r = (|| -> Result<(), String> {
            let bt = match bt {
                1 => BlockType::Raw,
                2 => BlockType::Lz4,
                _ => BlockType::Lz4Hc,
            };
            let h = Header::new(VoxelType::U8, 1, 8, 4, bt).map_err(|e| e.to_string())?;
            let ds = Dataset::create(&ours, h).map_err(|e| e.to_string())?;
            let a = build(
                VoxelType::U8,
                1,
                [3, 5, 7],
                [40, 30, 20],
                Order::C,
                &formula,
            )?;
            ds.write([3, 5, 7], &a.view()).map_err(|e| e.to_string())?;
            run(&python, &script, &["check", &ours.to_string_lossy()])
        })();
        row.case(format!("ours writes {name}, reference reads"), r);
    }
    let _ = std::fs::remove_dir_all(&tmp);
    row
}

fn run(python: &Path, script: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new(python)
        .arg(script)
        .args(args)
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr)
            .lines()
            .last()
            .unwrap_or("failed")
            .to_string())
    }
}
