//! blosc2-frame: region reads of the reference b2nd arrays, byte-exact rebuilds of python-blosc2
//! frames from their recorded calls, write round trips, and with `--live` python-blosc2 4.14.1
//! writing for us and reading our output.
//!
//! The fixture oracle `testdata/blosc/manifest.json` is checked once, by the crate's tests
//! (`crates/blosc2-frame/tests/it/fixtures.rs`, run by `cargo test`): every frame's header,
//! index, chunks, sha256 and (vl)metalayers from a file, a slice and an offset, and every b2nd
//! array's shape, chunks, blocks, dtype and C-order sha256.

use std::path::{Path, PathBuf};
use std::process::Command;

use blosc2_frame::blosc_chunk::{CParams, Codec, Filter, SplitMode};
use blosc2_frame::{
    B2ndArray, B2ndMeta, Durability, Fill, Frame, FrameParams, FrameWriter, b2nd_frame,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{Ctx, Row};

const SECTION: &str = "blosc2-frame";

pub(crate) fn rows(ctx: &Ctx) -> Vec<Row> {
    let mut rows = vec![b2nd(ctx), rebuilds(ctx), round_trips()];
    if ctx.live {
        rows.push(live(ctx));
    }
    rows
}

fn sha(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn entries(ctx: &Ctx) -> Result<Vec<Value>, String> {
    let raw = std::fs::read_to_string(ctx.testdata("blosc/manifest.json")).map_err(err)?;
    let m: Value = serde_json::from_str(&raw).map_err(err)?;
    Ok(m["entries"]
        .as_array()
        .ok_or("manifest has no entries")?
        .iter()
        .filter(|e| matches!(e["kind"].as_str(), Some("frame" | "b2nd")))
        .cloned()
        .collect())
}

fn b2nd(ctx: &Ctx) -> Row {
    let mut row = Row::new(
        SECTION,
        "reference b2nd: every axis-0 slab read == that slice of the whole",
    );
    let Ok(es) = entries(ctx) else {
        row.case("manifest", Err("unreadable".into()));
        return row;
    };
    for e in es.iter().filter(|e| e["kind"] == "b2nd") {
        let path = e["path"].as_str().unwrap_or("?");
        let r = (|| -> Result<(), String> {
            let a = B2ndArray::open(ctx.testdata(&format!("blosc/{path}"))).map_err(err)?;
            let all = a.read_all().map_err(err)?;
            // Every 1-item-thick slab along axis 0 must equal the matching slice of the whole.
            let shape = a.shape().to_vec();
            let row_bytes = all.len() / usize::try_from(shape[0]).map_err(err)?;
            for i in 0..shape[0] {
                let mut lo = vec![0; shape.len()];
                let mut hi = shape.clone();
                lo[0] = i;
                hi[0] = i + 1;
                let got = a.read_region(&lo, &hi).map_err(err)?;
                let k = usize::try_from(i).map_err(err)?;
                if got != all[k * row_bytes..(k + 1) * row_bytes] {
                    return Err(format!("slab {i} differs"));
                }
            }
            Ok(())
        })();
        row.case(path, r);
    }
    row
}

fn py_cparams(codec: Codec, typesize: usize, filters: &[Filter]) -> CParams {
    let mut c = CParams::default();
    c.codec = codec;
    c.clevel = 5;
    c.typesize = typesize;
    if !filters.is_empty() {
        c.filters = [Filter::NoFilter; 6];
        for (slot, f) in c.filters.iter_mut().zip(filters) {
            *slot = *f;
        }
    }
    c.splitmode = SplitMode::Auto;
    c.nthreads = 1;
    c
}

fn i32s(v: impl IntoIterator<Item = i32>) -> Vec<u8> {
    v.into_iter().flat_map(i32::to_le_bytes).collect()
}

fn rebuild(name: &str) -> Result<Vec<u8>, String> {
    match name {
        "lz4_shuffle_meta_vlmeta.b2frame" | "lz4_shuffle_meta_vlmeta.cframe.b2frame" => {
            let cp = py_cparams(Codec::Lz4, 4, &[Filter::Shuffle]);
            let mut p = FrameParams::new(cp, 100_000);
            if name.contains("cframe") {
                // to_cframe(): last compression's block size, threads 0/1, default vlmeta cparams.
                p.header_blocksize = Some(40_000);
                p.nthreads_compress = 0;
                p.vlmeta_cparams = CParams::default();
            }
            let mut w = FrameWriter::new(p).map_err(err)?;
            w.add_metalayer("m1", &[0x93, 1, 2, 3]).map_err(err)?;
            w.add_metalayer("mymeta", &[0x81, 0xa1, b'a', 1])
                .map_err(err)?;
            w.append_data(&i32s(0..25_000)).map_err(err)?;
            w.append_data(&i32s(std::iter::repeat_n(0, 25_000)))
                .map_err(err)?;
            w.append_data(&i32s((0..10_000).map(|i| i * 3)))
                .map_err(err)?;
            w.set_vlmetalayer("info", b"\x81\xa5hello\xa5world")
                .map_err(err)?;
            w.set_vlmetalayer("bin", &[0xc4, 3, 0, 1, 2]).map_err(err)?;
            w.to_bytes().map_err(err)
        }
        "zstd_delta_shuffle_many_chunks.b2frame" => {
            let cp = py_cparams(Codec::Zstd, 8, &[Filter::Delta, Filter::Shuffle]);
            let mut w = FrameWriter::new(FrameParams::new(cp, 8000)).map_err(err)?;
            for k in 0..40i64 {
                let d: Vec<u8> = (0..1000i64)
                    .flat_map(|i| (i * (k + 1) + k).to_le_bytes())
                    .collect();
                w.append_data(&d).map_err(err)?;
            }
            let d: Vec<u8> = (0..300i64).flat_map(i64::to_le_bytes).collect();
            w.append_data(&d).map_err(err)?;
            w.to_bytes().map_err(err)
        }
        "fill_special_zero.b2frame"
        | "fill_special_nan.b2frame"
        | "fill_special_uninit.b2frame"
        | "fill_special_value.b2frame" => {
            let (ts, cs, fill) = if name.contains("zero") {
                (4, 4000, Fill::Zeros)
            } else if name.contains("nan") {
                (8, 8000, Fill::Nan)
            } else if name.contains("uninit") {
                (4, 4000, Fill::Uninit)
            } else {
                (8, 8000, Fill::Value(3.5f64.to_le_bytes().to_vec()))
            };
            let mut cp = py_cparams(Codec::Zstd, ts, &[]);
            cp.filters = CParams::default().filters;
            let mut p = FrameParams::new(cp, cs);
            p.nthreads_decompress = 2;
            let mut w = FrameWriter::new(p).map_err(err)?;
            w.fill_special(2500, &fill).map_err(err)?;
            w.to_bytes().map_err(err)
        }
        "b2nd_f4_20x30.b2nd" => {
            let meta = B2ndMeta::new(&[20, 30], &[8, 16], &[4, 8], "<f4").map_err(err)?;
            let data: Vec<u8> = (0..600u16)
                .flat_map(|i| f32::from(i).to_le_bytes())
                .collect();
            let mut w =
                b2nd_frame(&data, &meta, 4, &py_cparams(Codec::Zstd, 4, &[])).map_err(err)?;
            w.set_vlmetalayer("note", &[0xa2, b'h', b'i'])
                .map_err(err)?;
            w.to_bytes().map_err(err)
        }
        "b2nd_u2_7x9x11.b2nd" => {
            let meta = B2ndMeta::new(&[7, 9, 11], &[4, 5, 6], &[2, 3, 4], "<u2").map_err(err)?;
            let data: Vec<u8> = (0..693u16).flat_map(|i| (i % 1000).to_le_bytes()).collect();
            let cp = py_cparams(Codec::BloscLz, 2, &[Filter::Shuffle]);
            b2nd_frame(&data, &meta, 2, &cp)
                .and_then(|w| w.to_bytes())
                .map_err(err)
        }
        _ => Err(format!("no recipe for {name}")),
    }
}

fn rebuilds(ctx: &Ctx) -> Row {
    let mut row = Row::new(SECTION, "byte-exact rebuilds of python-blosc2 frames");
    for name in [
        "lz4_shuffle_meta_vlmeta.b2frame",
        "lz4_shuffle_meta_vlmeta.cframe.b2frame",
        "zstd_delta_shuffle_many_chunks.b2frame",
        "fill_special_zero.b2frame",
        "fill_special_nan.b2frame",
        "fill_special_uninit.b2frame",
        "fill_special_value.b2frame",
        "b2nd_f4_20x30.b2nd",
        "b2nd_u2_7x9x11.b2nd",
    ] {
        let r = rebuild(name).and_then(|ours| {
            let theirs =
                std::fs::read(ctx.testdata(&format!("blosc/frames/{name}"))).map_err(err)?;
            if ours == theirs {
                Ok(())
            } else {
                let at = ours.iter().zip(&theirs).position(|(a, b)| a != b);
                Err(format!(
                    "{} vs {} bytes, first difference at {at:?}",
                    ours.len(),
                    theirs.len()
                ))
            }
        });
        row.case(name, r);
    }
    row
}

/// A frame built with every edit operation; returns it with its expected chunk contents.
fn edited_frame() -> Result<(FrameWriter, Vec<u8>), String> {
    let cp = py_cparams(Codec::Lz4, 4, &[Filter::Shuffle]);
    let mut w = FrameWriter::new(FrameParams::new(cp.clone(), 4000)).map_err(err)?;
    w.add_metalayer("m", &[0x92, 1, 2]).map_err(err)?;
    let chunk = |k: i32| i32s((0..1000).map(|i| i * k + (i >> 2)));
    let mut model: Vec<Vec<u8>> = Vec::new();
    for k in 1..=5 {
        w.append_data(&chunk(k)).map_err(err)?;
        model.push(chunk(k));
    }
    let compress = |d: &[u8]| blosc2_frame::blosc_chunk::compress(d, &cp).map_err(err);
    w.update_chunk(2, compress(&chunk(77))?).map_err(err)?;
    model[2] = chunk(77);
    w.insert_chunk(1, compress(&chunk(-3))?).map_err(err)?;
    model.insert(1, chunk(-3));
    w.delete_chunk(4).map_err(err)?;
    model.remove(4);
    w.reorder(&[4, 2, 0, 1, 3]).map_err(err)?;
    model = [4, 2, 0, 1, 3].iter().map(|&k| model[k].clone()).collect();
    w.append_data(&[0u8; 4000]).map_err(err)?;
    model.push(vec![0; 4000]);
    w.fill_special(1500, &Fill::Value(9i32.to_le_bytes().to_vec()))
        .map_err(err)?;
    model.push(i32s([9; 1000]));
    model.push(i32s([9; 500]));
    w.set_vlmetalayer("info", &[0x81, 0xa1, b'a', 0x93, 1, 2, 3])
        .map_err(err)?;
    w.set_vlmetalayer("gone", &[1]).map_err(err)?;
    w.delete_vlmetalayer("gone").map_err(err)?;
    Ok((w, model.concat()))
}

fn round_trips() -> Row {
    let mut row = Row::new(SECTION, "write round trips (edits, file, sparse, b2nd)");
    let Ok(tmp) = temp_dir("rt") else {
        row.case("tmp", Err("cannot create temp dir".into()));
        return row;
    };
    let r = edited_frame().and_then(|(w, want)| {
        let bytes = w.to_bytes().map_err(err)?;
        let f = Frame::from_slice(&bytes).map_err(err)?;
        if f.decompress_all().map_err(err)? != want {
            return Err("content differs".into());
        }
        let again = FrameWriter::from_frame(&f)
            .and_then(|w| w.to_bytes())
            .map_err(err)?;
        if again != bytes {
            return Err("re-encoding a read frame changed it".into());
        }
        let p = tmp.join("x.b2frame");
        w.write_file(&p, Durability::Fsync).map_err(err)?;
        let s = tmp.join("x_sparse.b2frame");
        w.write_sparse(&s, Durability::None).map_err(err)?;
        for path in [p, s] {
            let f = Frame::open(&path).map_err(err)?;
            if f.decompress_all().map_err(err)? != want || f.vlmetalayer("info").is_err() {
                return Err(format!("{} differs", path.display()));
            }
        }
        Ok(())
    });
    row.case("edits + to_bytes/write_file/write_sparse", r);
    let r = (|| -> Result<(), String> {
        let shape = [3u64, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 5];
        let meta = B2ndMeta::new(
            &shape,
            &[2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3],
            &[1; 16],
            "<i2",
        )
        .map_err(err)?;
        let data: Vec<u8> = (0..60i16)
            .flat_map(|i| (i * 3 - 50).to_le_bytes())
            .collect();
        let bytes = b2nd_frame(&data, &meta, 2, &py_cparams(Codec::Zstd, 2, &[]))
            .and_then(|w| w.to_bytes())
            .map_err(err)?;
        let a = B2ndArray::from_slice(&bytes).map_err(err)?;
        if a.read_all().map_err(err)? == data && a.meta() == &meta {
            Ok(())
        } else {
            Err("16-D array differs".into())
        }
    })();
    row.case("b2nd 16-D write/read", r);
    let _ = std::fs::remove_dir_all(&tmp);
    row
}

fn temp_dir(tag: &str) -> Result<PathBuf, String> {
    let d = std::env::temp_dir().join(format!("xtask-blosc2-frame-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).map_err(err)?;
    Ok(d)
}

/// What `live.py describe` prints, computed by this crate.
fn describe(path: &Path) -> Result<Value, String> {
    let f = Frame::open(path).map_err(err)?;
    let mut out = serde_json::Map::new();
    out.insert("nchunks".into(), json!(f.nchunks()));
    out.insert("nbytes".into(), json!(f.header().nbytes));
    out.insert(
        "sha256".into(),
        json!(sha(&f.decompress_all().map_err(err)?)),
    );
    let meta: serde_json::Map<String, Value> = f
        .metalayers()
        .iter()
        .filter(|l| l.name != "b2nd")
        .map(|l| (l.name.clone(), json!(hex::encode(&l.content))))
        .collect();
    out.insert("meta".into(), Value::Object(meta));
    let mut vl = serde_json::Map::new();
    for l in f.vlmetalayers() {
        vl.insert(
            l.name.clone(),
            json!(hex::encode(f.vlmetalayer(&l.name).map_err(err)?)),
        );
    }
    out.insert("vlmeta".into(), Value::Object(vl));
    if f.metalayer("b2nd").is_some() {
        let a = B2ndArray::new(f).map_err(err)?;
        let m = a.meta();
        out.insert(
            "b2nd".into(),
            json!({
                "shape": m.shape, "chunks": m.chunkshape, "blocks": m.blockshape,
                "dtype": m.dtype, "sha256_c": sha(&a.read_all().map_err(err)?),
            }),
        );
    }
    Ok(Value::Object(out))
}

fn py_describe(python: &Path, script: &Path, path: &Path) -> Result<Value, String> {
    let out = Command::new(python)
        .arg(script)
        .arg("describe")
        .arg(path)
        .output()
        .map_err(err)?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr)
            .lines()
            .last()
            .unwrap_or("failed")
            .to_string());
    }
    serde_json::from_slice(&out.stdout).map_err(err)
}

fn same(ours: &Value, theirs: &Value) -> Result<(), String> {
    if ours == theirs {
        Ok(())
    } else {
        Err(format!("ours {ours} != python {theirs}"))
    }
}

/// `--live`: python-blosc2 writes frames (contiguous, sparse, b2nd, edited), ours reads them;
/// ours writes frames, python-blosc2 reads them; both sides describe the data identically.
fn live(ctx: &Ctx) -> Row {
    let mut row = Row::new(SECTION, "live: python-blosc2 4.14.1 <-> ours");
    let python = match crate::util::python_venv(&["blosc2==4.14.1", "msgpack"]) {
        Ok(Some(p)) => p,
        Ok(None) => {
            row.case("python unavailable (skipped)", Ok(()));
            return row;
        }
        Err(e) => {
            row.case("venv", Err(e));
            return row;
        }
    };
    let script = ctx.root.join("testdata/generators/blosc2-frame/live.py");
    let Ok(tmp) = temp_dir("live") else {
        row.case("tmp", Err("cannot create temp dir".into()));
        return row;
    };
    // Python writes, we read.
    let theirs = tmp.join("theirs");
    let wrote = Command::new(&python)
        .arg(&script)
        .arg("write")
        .arg(&theirs)
        .output();
    match wrote {
        Ok(o) if o.status.success() => {
            for name in [
                "edited.b2frame",
                "edited_sparse.b2frame",
                "edges.b2nd",
                "zeros.b2nd",
            ] {
                let p = theirs.join(name);
                let r =
                    describe(&p).and_then(|ours| same(&ours, &py_describe(&python, &script, &p)?));
                row.case(format!("python writes {name}, ours reads"), r);
            }
        }
        Ok(o) => row.case(
            "python write",
            Err(String::from_utf8_lossy(&o.stderr).into_owned()),
        ),
        Err(e) => row.case("python write", Err(e.to_string())),
    }
    // We write, python reads.
    let ours = tmp.join("ours");
    let r = (|| -> Result<Vec<PathBuf>, String> {
        std::fs::create_dir_all(&ours).map_err(err)?;
        let (w, _) = edited_frame()?;
        let a = ours.join("edited.b2frame");
        w.write_file(&a, Durability::None).map_err(err)?;
        let b = ours.join("edited_sparse.b2frame");
        w.write_sparse(&b, Durability::None).map_err(err)?;
        let meta = B2ndMeta::new(&[11, 13, 7], &[4, 5, 3], &[2, 3, 2], "<i2").map_err(err)?;
        let data: Vec<u8> = (0..1001i16).flat_map(|i| (i % 977).to_le_bytes()).collect();
        let c = ours.join("edges.b2nd");
        b2nd_frame(&data, &meta, 2, &py_cparams(Codec::Lz4, 2, &[]))
            .and_then(|w| w.write_file(&c, Durability::None))
            .map_err(err)?;
        let meta = B2ndMeta::new(
            &[3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 5],
            &[2; 16],
            &[1; 16],
            "|u1",
        )
        .map_err(err)?;
        let data: Vec<u8> = (0..30u8).collect();
        let d = ours.join("sixteen.b2nd");
        b2nd_frame(&data, &meta, 1, &py_cparams(Codec::Zstd, 1, &[]))
            .and_then(|w| w.write_file(&d, Durability::None))
            .map_err(err)?;
        let meta = B2ndMeta::new(&[30, 20], &[10, 10], &[5, 5], "<f4").map_err(err)?;
        let e = ours.join("zeros.b2nd");
        blosc2_frame::b2nd_zeros(&meta, 4, &py_cparams(Codec::Zstd, 4, &[]))
            .and_then(|w| w.write_file(&e, Durability::None))
            .map_err(err)?;
        Ok(vec![a, b, c, d, e])
    })();
    match r {
        Ok(paths) => {
            for p in paths {
                let name = p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let r = describe(&p).and_then(|o| same(&o, &py_describe(&python, &script, &p)?));
                row.case(format!("ours writes {name}, python reads"), r);
            }
        }
        Err(e) => row.case("ours write", Err(e)),
    }
    // We write, python appends/inserts/adds a vlmetalayer in place, we read its edit.
    let p = ours.join("appendable.b2frame");
    let r = (|| -> Result<(), String> {
        let cp = py_cparams(Codec::Zstd, 4, &[Filter::Shuffle]);
        let mut w = FrameWriter::new(FrameParams::new(cp, 4000)).map_err(err)?;
        w.add_metalayer("m", &[0x92, 1, 2]).map_err(err)?;
        w.append_data(&i32s(0..3000)).map_err(err)?;
        w.write_file(&p, Durability::None).map_err(err)?;
        let out = Command::new(&python)
            .arg(&script)
            .arg("append")
            .arg(&p)
            .output()
            .map_err(err)?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        same(&describe(&p)?, &py_describe(&python, &script, &p)?)
    })();
    row.case(
        "ours writes, python appends and inserts in place, ours reads",
        r,
    );
    let _ = std::fs::remove_dir_all(&tmp);
    row
}
