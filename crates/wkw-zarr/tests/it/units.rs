//! A conversion split into units (`plan`, `convert_units`, `finish`): any split of the units,
//! in any order, repeated or concurrent, gives the bytes of one `convert`.

use crate::common;

use std::path::{Path, PathBuf};

use common::{TestResult, lz4_mag_and_its_zarr3, tree};
use wkw_zarr::{
    ConvertOptions, Error, Existing, Format, MARKER, Plan, ZarrCodec, convert, convert_units,
    finish, plan,
};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/wkw-zarr")
}

/// The sources of every direction: `(source, format to convert into)`, a single mag or array
/// and a whole dataset of several layers and mags each way.
fn sources(dir: &Path) -> Result<Vec<(PathBuf, Format)>, Box<dyn std::error::Error>> {
    let (wkw_mag, zarr_array) = lz4_mag_and_its_zarr3(dir)?;
    Ok(vec![
        (wkw_mag, Format::Zarr3),
        (zarr_array, Format::Wkw),
        (fixtures().join("multi/wkw"), Format::Zarr3),
        (fixtures().join("multi/zarr3"), Format::Wkw),
    ])
}

fn ids(plan: &Plan) -> Vec<String> {
    plan.units().iter().map(|u| u.id().to_owned()).collect()
}

#[test]
fn units_in_two_halves_and_one_twice_give_the_bytes_of_convert() -> TestResult {
    let dir = tempfile::tempdir()?;
    for (n, (src, to)) in sources(dir.path())?.into_iter().enumerate() {
        let options = ConvertOptions::default().with_threads(2);
        // Same directory names: a dataset's properties name the target directory.
        let whole = dir.path().join(format!("whole-{n}/out"));
        let expected = convert(&src, &whole, to, &options, &|_| {})?;
        let split = dir.path().join(format!("split-{n}/out"));

        let planned = plan(&src, &split, to, &options)?;
        let all = ids(&planned);
        assert!(all.len() > 2, "{}: {} units", src.display(), all.len());
        // Whole files (headers and jump tables too) against the blocks read.
        assert!(
            planned
                .units()
                .iter()
                .map(|u| u.source_bytes())
                .sum::<u64>()
                >= expected.bytes_in
        );
        // The second half runs from the plan as another process gets it: its JSON.
        let (first, second) = all.split_at(all.len() / 2);
        let elsewhere = Plan::from_json(&planned.to_json())?;
        assert_eq!(elsewhere, planned);
        let a = convert_units(&src, &split, &elsewhere, second, &options, &|_| {})?;
        assert!(split.join(MARKER).exists(), "no metadata before finish");
        let b = convert_units(&src, &split, &planned, first, &options, &|_| {})?;
        // The first unit again: kept as it is.
        let again = convert_units(&src, &split, &planned, &all[..1], &options, &|_| {})?;
        assert_eq!(again.shards_written, 0);
        assert_eq!(again.shards_skipped + again.shards_empty, 1);
        finish(&src, &split, &planned, &options)?;

        assert_eq!(a.shards_written + b.shards_written, expected.shards_written);
        assert_eq!(a.blocks + b.blocks, expected.blocks);
        assert_eq!(a.bytes_out + b.bytes_out, expected.bytes_out);
        assert!(!split.join(MARKER).exists());
        assert_eq!(tree(&split)?, tree(&whole)?, "{}", src.display());
    }
    Ok(())
}

#[test]
fn two_runners_of_the_same_units_at_once_give_the_bytes_of_convert() -> TestResult {
    let dir = tempfile::tempdir()?;
    for (n, (src, to)) in sources(dir.path())?.into_iter().enumerate() {
        let options = ConvertOptions::default().with_threads(1);
        let whole = dir.path().join(format!("whole-{n}/out"));
        convert(&src, &whole, to, &options, &|_| {})?;
        let split = dir.path().join(format!("split-{n}/out"));
        let planned = plan(&src, &split, to, &options)?;
        let all = ids(&planned);
        // Both runners convert every unit, one forwards and one backwards.
        let backwards: Vec<String> = all.iter().rev().cloned().collect();
        std::thread::scope(|s| -> TestResult {
            let one = s.spawn(|| convert_units(&src, &split, &planned, &all, &options, &|_| {}));
            let two =
                s.spawn(|| convert_units(&src, &split, &planned, &backwards, &options, &|_| {}));
            for runner in [one, two] {
                runner.join().map_err(|_| "a runner panicked")??;
            }
            Ok(())
        })?;
        finish(&src, &split, &planned, &options)?;
        assert_eq!(tree(&split)?, tree(&whole)?, "{}", src.display());
    }
    Ok(())
}

#[test]
fn an_interrupted_plan_resumes_keeping_its_converted_units() -> TestResult {
    let dir = tempfile::tempdir()?;
    for (n, (src, to)) in sources(dir.path())?.into_iter().enumerate() {
        let options = ConvertOptions::default();
        let whole = dir.path().join(format!("whole-{n}/out"));
        let expected = convert(&src, &whole, to, &options, &|_| {})?;
        let split = dir.path().join(format!("split-{n}/out"));
        let planned = plan(&src, &split, to, &options)?;
        let all = ids(&planned);
        let done = convert_units(
            &src,
            &split,
            &planned,
            &all[..all.len() / 2],
            &options,
            &|_| {},
        )?;
        // Stopped before the rest and `finish`: the target is marked unfinished.
        assert!(split.join(MARKER).exists());
        let err = convert(&src, &split, to, &options, &|_| {}).err();
        assert!(matches!(err, Some(Error::TargetExists { .. })), "{err:?}");

        let resume = options.clone().with_existing(Existing::Resume);
        let rest = convert(&src, &split, to, &resume, &|_| {})?;
        assert_eq!(rest.shards_skipped, done.shards_written);
        assert_eq!(
            rest.shards_written + done.shards_written,
            expected.shards_written
        );
        assert_eq!(tree(&split)?, tree(&whole)?, "{}", src.display());
    }
    Ok(())
}

#[test]
fn unit_ids_name_the_source_files() -> TestResult {
    let dir = tempfile::tempdir()?;
    let src = fixtures().join("multi/wkw");
    let planned = plan(
        &src,
        dir.path().join("out"),
        Format::Zarr3,
        &ConvertOptions::default(),
    )?;
    assert_eq!(planned.arrays(), 5);
    assert_eq!(planned.format(), Format::Zarr3);
    for unit in planned.units() {
        assert!(src.join(unit.id()).is_file(), "{}", unit.id());
        assert!(unit.id().ends_with(".wkw"));
    }
    let mut listed = Vec::new();
    for layer in ["color", "segmentation", "float"] {
        for entry in walk(&src.join(layer))? {
            listed.push(entry);
        }
    }
    let mut ids: Vec<String> = planned.units().iter().map(|u| u.id().to_owned()).collect();
    ids.sort();
    listed.sort();
    assert_eq!(ids, listed);
    Ok(())
}

/// The keys of the `.wkw` data files below `dir` (not `header.wkw`), relative to its parent.
fn walk(dir: &Path) -> std::io::Result<Vec<String>> {
    let base = dir.parent().unwrap_or(dir);
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "wkw")
                && path.file_name().is_some_and(|n| n != "header.wkw")
            {
                let rel = path.strip_prefix(base).map_err(std::io::Error::other)?;
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    Ok(out)
}

/// Checks that `r` is an `InvalidArgument` whose message holds `what`.
fn invalid<T: std::fmt::Debug>(r: wkw_zarr::Result<T>, what: &str) -> TestResult {
    match r {
        Err(Error::InvalidArgument(m)) if m.contains(what) => Ok(()),
        other => Err(format!("{other:?}, expected an InvalidArgument naming {what:?}").into()),
    }
}

#[test]
fn wrong_units_options_or_targets_are_errors() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (src, _) = lz4_mag_and_its_zarr3(dir.path())?;
    let dst = dir.path().join("out");
    let options = ConvertOptions::default();
    let planned = plan(&src, &dst, Format::Zarr3, &options)?;
    invalid(
        convert_units(&src, &dst, &planned, &["z9/y9/x9.wkw"], &options, &|_| {}),
        "z9/y9/x9.wkw",
    )?;
    let zstd = options.clone().with_codec(ZarrCodec::Zstd { level: 1 });
    invalid(
        convert_units(&src, &dst, &planned, &ids(&planned), &zstd, &|_| {}),
        "zstd:1",
    )?;
    invalid(finish(&src, &dst, &planned, &zstd), "zstd:1")?;
    // A target that was not planned (no marker).
    invalid(
        convert_units(
            &src,
            dir.path().join("elsewhere"),
            &planned,
            &ids(&planned),
            &options,
            &|_| {},
        ),
        MARKER,
    )?;
    // A plan for a target that exists is refused like `convert`.
    let err = plan(&src, &dst, Format::Zarr3, &options).err();
    assert!(matches!(err, Some(Error::TargetExists { .. })), "{err:?}");
    let err = plan(&src, dir.path().join("x"), Format::Wkw, &options).err();
    assert!(matches!(err, Some(Error::InvalidArgument(_))), "{err:?}");
    // Hostile plan documents.
    let json = planned.to_json();
    let escape = json.replacen("\"dst\":\"\"", "\"dst\":\"../escaped\"", 1);
    assert_ne!(escape, json);
    for doc in [
        String::new(),
        "{}".to_owned(),
        "[1, 2]".to_owned(),
        json.replacen("\"version\":1", "\"version\":2", 1),
        json.replacen("\"to\":\"zarr3\"", "\"to\":\"n5\"", 1),
        json.replacen("\"array\":0", "\"array\":7", 1),
        json.replacen("\"end\":[", "\"end\":[100000000000000", 1),
        json.replacen("\"id\":\"z0", "\"id\":\"../z0", 1),
        escape,
    ] {
        invalid(Plan::from_json(&doc), "not a conversion plan")?;
    }
    Ok(())
}
