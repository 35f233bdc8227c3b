//! wkw: every read of the reference-made fixtures (both layouts), `verify` on every fixture,
//! byte-exact replays of the reference's raw writes, the corrupt-file error cases, and with `--live`
//! round trips through the reference `wkw==1.1.24` Python package.

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};
use wkw::{Array, BlockType, Dataset, Header, MissingOrCorrupt, Options, Order, VoxelType};

use super::{Ctx, Row};

const SECTION: &str = "wkw";

pub(crate) fn rows(ctx: &Ctx) -> Vec<Row> {
    let mut rows = vec![
        fixture_reads(ctx),
        verify_fixtures(ctx),
        raw_replays(ctx),
        error_cases(ctx),
    ];
    if ctx.live {
        rows.push(live(ctx));
    }
    rows
}

fn sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn expected(ctx: &Ctx) -> Result<serde_json::Value, String> {
    let text =
        std::fs::read_to_string(ctx.testdata("wkw/expected.json")).map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

fn xyz(v: &serde_json::Value) -> Result<[u32; 3], String> {
    let a = v.as_array().ok_or("not an array")?;
    let mut out = [0u32; 3];
    for (o, x) in out.iter_mut().zip(a) {
        *o = x
            .as_u64()
            .and_then(|x| u32::try_from(x).ok())
            .ok_or("bad coordinate")?;
    }
    Ok(out)
}

fn datasets(exp: &serde_json::Value) -> Vec<String> {
    exp.as_object()
        .map(|o| o.keys().filter(|k| !k.starts_with('_')).cloned().collect())
        .unwrap_or_default()
}

fn fixture_reads(ctx: &Ctx) -> Row {
    let mut row = Row::new(SECTION, "fixture reads == reference sha256 (F and C order)");
    let exp = match expected(ctx) {
        Ok(e) => e,
        Err(e) => {
            row.case("expected.json", Err(e));
            return row;
        }
    };
    for name in datasets(&exp) {
        let ds = match Dataset::open(ctx.testdata(&format!("wkw/{name}"))) {
            Ok(ds) => ds,
            Err(e) => {
                row.case(&name, Err(e.to_string()));
                continue;
            }
        };
        for r in exp[&name]["reads"].as_array().into_iter().flatten() {
            let (Ok(off), Ok(shape)) = (xyz(&r["offset_xyz"]), xyz(&r["shape_xyz"])) else {
                row.case(&name, Err("bad read entry".into()));
                continue;
            };
            for (order, key) in [
                (Order::Fortran, "sha256_fortran_bytes"),
                (Order::C, "sha256_c_bytes"),
            ] {
                let result = ds
                    .read(off, shape, order)
                    .map_err(|e| e.to_string())
                    .and_then(|a| {
                        if r[key] == sha(a.as_bytes()).as_str() {
                            Ok(())
                        } else {
                            Err("hash differs".into())
                        }
                    });
                row.case(format!("{name} {off:?}+{shape:?} {order:?}"), result);
            }
        }
    }
    row
}

fn verify_fixtures(ctx: &Ctx) -> Row {
    let mut row = Row::new(SECTION, "verify: every fixture file sound");
    let names = expected(ctx).map(|e| datasets(&e)).unwrap_or_default();
    for name in names {
        let result = wkw::verify(
            ctx.testdata(&format!("wkw/{name}")),
            Options::default(),
            &|_| {},
        )
        .map_err(|e| e.to_string())
        .and_then(|r| {
            if r.is_ok() {
                Ok(())
            } else {
                Err(format!("{} problem file(s)", r.problems().count()))
            }
        });
        row.case(&name, result);
    }
    row
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

type Write = (
    [u32; 3],
    [u32; 3],
    Order,
    Box<dyn Fn(u32, u64, u64, u64) -> Vec<u8>>,
);

/// Replays a fixture's writes into a temporary dataset and compares every file's sha256.
fn replay(ctx: &Ctx, name: &str, header: Header, writes: Vec<Write>) -> Result<(), String> {
    let exp = expected(ctx)?;
    let tmp = temp_dir(&format!("replay-{name}"))?;
    let root = tmp.join("ds");
    let ds = Dataset::create(&root, header).map_err(|e| e.to_string())?;
    for (off, shape, order, f) in writes {
        let a = build(
            header.voxel_type(),
            header.num_channels(),
            off,
            shape,
            order,
            &*f,
        )?;
        ds.write(off, &a.view()).map_err(|e| e.to_string())?;
    }
    let files = exp[name]["files"].as_object().ok_or("no files")?;
    let listed = ds.list_files().map_err(|e| e.to_string())?;
    if listed.len() + 1 != files.len() {
        return Err(format!(
            "{} files written, reference has {}",
            listed.len() + 1,
            files.len()
        ));
    }
    for (rel, f) in files {
        let bytes = std::fs::read(root.join(rel)).map_err(|e| format!("{rel}: {e}"))?;
        if f["sha256"] != sha(&bytes).as_str() {
            return Err(format!("{rel} differs"));
        }
    }
    std::fs::remove_dir_all(&tmp).map_err(|e| e.to_string())
}

fn temp_dir(tag: &str) -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("xtask-wkw-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    Ok(dir)
}

#[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)] // the fixture formulas wrap like numpy
fn raw_replays(ctx: &Ctx) -> Row {
    let mut row = Row::new(SECTION, "raw writes byte-exact vs reference (F1, F4, F5)");
    let h = |vt, ch, b, f| Header::new(vt, ch, b, f, BlockType::Raw).map_err(|e| e.to_string());
    for order in [Order::C, Order::Fortran] {
        let other = if order == Order::C {
            Order::Fortran
        } else {
            Order::C
        };
        let f1 = h(VoxelType::U8, 1, 8, 4).and_then(|hd| {
            replay(
                ctx,
                "u8_raw_b8_f4",
                hd,
                vec![(
                    [0; 3],
                    [32; 3],
                    order,
                    Box::new(|_, x, y, z| vec![((x + 3 * y + 7 * z) % 256) as u8]),
                )],
            )
        });
        row.case(format!("F1 {order:?}"), f1);
        let f4 = h(VoxelType::U64, 1, 4, 2).and_then(|hd| {
            replay(
                ctx,
                "u64_raw_b4_f2_multi",
                hd,
                vec![
                    (
                        [5, 3, 10],
                        [13, 7, 9],
                        order,
                        Box::new(|_, x, y, z| {
                            ((1u64 << 40) + x + 1000 * y + 1_000_000 * z)
                                .to_le_bytes()
                                .to_vec()
                        }),
                    ),
                    (
                        [0; 3],
                        [6, 4, 11],
                        other,
                        Box::new(|_, x, y, z| {
                            ((1u64 << 63) + x + 100 * y + 10_000 * z)
                                .to_le_bytes()
                                .to_vec()
                        }),
                    ),
                ],
            )
        });
        row.case(format!("F4 {order:?}"), f4);
        let f5 = h(VoxelType::I16, 2, 8, 2).and_then(|hd| {
            replay(
                ctx,
                "i16_2ch_raw_b8_f2",
                hd,
                vec![(
                    [3, 5, 7],
                    [10, 6, 4],
                    order,
                    Box::new(|c, x, y, z| {
                        let v = x as i64 - 7 * y as i64 + 13 * z as i64;
                        let v = if c == 0 { v } else { -v };
                        (v as i16).to_le_bytes().to_vec()
                    }),
                )],
            )
        });
        row.case(format!("F5 {order:?}"), f5);
    }
    row
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
