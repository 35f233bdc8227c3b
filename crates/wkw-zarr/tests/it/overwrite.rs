//! Never lose the user's data: a target that is its source, lies inside it or contains it is
//! refused in every mode (the source byte for byte unchanged, nothing created); an existing
//! target is replaced only once its replacement is complete: a cancelled or SIGKILLed
//! overwrite leaves the old target whole (or the new one), and resuming finishes the new one.
//! Locally and on the S3 test server.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::{TestResult, at, objects, tree};
use s3_testserver::TestServer;
use testkit::{Lcg, run_and_kill};
use wkw_zarr::{
    Cancel, ConvertOptions, Error, Existing, Format, MARKER, ZarrCodec, convert, verify,
};

/// The webKNOSSOS dataset webknossos-libs 4.3.3 made (two layers, several mags).
fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/wkw-zarr/multi/wkw")
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let dst = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &dst)?;
        } else {
            std::fs::copy(entry.path(), dst)?;
        }
    }
    Ok(())
}

/// A tree without the marker (a finished swap whose marker was not removed yet reads whole).
fn without_marker(mut t: BTreeMap<String, Vec<u8>>) -> BTreeMap<String, Vec<u8>> {
    t.remove(MARKER);
    t
}

/// A dataset tree with its `id.name` (the target directory's name) blanked, so that
/// conversions into differently named targets compare.
fn anonymous(mut t: BTreeMap<String, Vec<u8>>) -> BTreeMap<String, Vec<u8>> {
    if let Some(bytes) = t.get_mut(wkw_zarr::PROPERTIES_JSON)
        && let Ok(mut doc) = serde_json::from_slice::<serde_json::Value>(bytes)
    {
        doc["id"]["name"] = serde_json::Value::Null;
        *bytes = doc.to_string().into_bytes();
    }
    t
}

/// Whether two trees are equal but for the dataset name; else the keys that differ.
fn same(a: &BTreeMap<String, Vec<u8>>, b: &BTreeMap<String, Vec<u8>>) -> Result<(), String> {
    let (a, b) = (anonymous(a.clone()), anonymous(b.clone()));
    let differ: Vec<&String> = a
        .keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .collect();
    if differ.is_empty() {
        Ok(())
    } else {
        Err(format!("trees differ in {differ:?}"))
    }
}

/// The names in `dir` (to see that nothing was created beside a target).
fn names(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut v: Vec<String> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()?;
    v.sort();
    Ok(v)
}

fn zstd1() -> ConvertOptions {
    ConvertOptions::default().with_codec(ZarrCodec::Zstd { level: 1 })
}

#[test]
fn targets_overlapping_their_source_are_refused_in_every_mode() -> TestResult {
    let dir = tempfile::tempdir()?;
    let d = dir.path();
    let ds = d.join("ds");
    copy_tree(&fixture(), &ds)?;
    std::fs::create_dir(d.join("other"))?;
    #[cfg(unix)]
    std::os::unix::fs::symlink(&ds, d.join("link"))?;
    let before = tree(&ds)?;
    let listing = names(d)?;
    let mut cases: Vec<(PathBuf, PathBuf, &str)> = vec![
        (ds.clone(), ds.clone(), "is the input"),
        (ds.clone(), d.join("other/../ds"), "is the input"),
        (ds.clone(), ds.join("sub"), "is inside the input"),
        (ds.clone(), ds.join("color"), "is inside the input"),
        (ds.join("color/1"), ds.clone(), "is inside"),
        (
            ds.join("color/1"),
            ds.join("color/1/new"),
            "is inside the input",
        ),
    ];
    #[cfg(unix)]
    cases.extend([
        (ds.clone(), d.join("link"), "is the input"),
        (d.join("link"), ds.join("x"), "is inside the input"),
        (ds.join("color/1"), d.join("link"), "is inside"),
    ]);
    for (src, dst, says) in &cases {
        for existing in [Existing::Refuse, Existing::Overwrite, Existing::Resume] {
            let options = ConvertOptions::default().with_existing(existing);
            let err = convert(src, dst, Format::Zarr3, &options, &|_| {})
                .err()
                .ok_or_else(|| format!("{src:?} -> {dst:?} {existing:?} was not refused"))?;
            assert!(matches!(err, Error::Overlap(_)), "{err:?}");
            let message = err.to_string();
            assert!(message.contains(says), "{message}");
            assert!(message.contains("refused"), "{message}");
            assert_eq!(tree(&ds)?, before, "{src:?} -> {dst:?} {existing:?}");
            assert_eq!(names(d)?, listing, "nothing created beside the source");
        }
    }
    // The other direction, Zarr3 -> WKW, likewise.
    let z = d.join("z");
    convert(&ds, &z, Format::Zarr3, &ConvertOptions::default(), &|_| {})?;
    let zbefore = tree(&z)?;
    for dst in [z.clone(), z.join("w"), d.join("z/color/../")] {
        let options = ConvertOptions::default().with_existing(Existing::Overwrite);
        let err = convert(&z, &dst, Format::Wkw, &options, &|_| {}).err();
        assert!(matches!(err, Some(Error::Overlap(_))), "{dst:?}: {err:?}");
        assert_eq!(tree(&z)?, zbefore);
    }
    Ok(())
}

#[test]
fn an_overwrite_keeps_the_old_target_until_the_new_one_is_complete() -> TestResult {
    let dir = tempfile::tempdir()?;
    let d = dir.path();
    let ds = d.join("ds");
    copy_tree(&fixture(), &ds)?;
    // The wanted result: a clean conversion with the default codec.
    let clean = d.join("clean");
    convert(
        &ds,
        &clean,
        Format::Zarr3,
        &ConvertOptions::default(),
        &|_| {},
    )?;
    let new = tree(&clean)?;
    // The old target: the same dataset with another codec (other bytes, readable too).
    let out = d.join("out");
    convert(&ds, &out, Format::Zarr3, &zstd1(), &|_| {})?;
    let old = tree(&out)?;
    assert!(same(&old, &new).is_err());

    // Refused without a flag, the message saying what overwriting would delete.
    let err = convert(
        &ds,
        &out,
        Format::Zarr3,
        &ConvertOptions::default(),
        &|_| {},
    )
    .err();
    let Some(Error::TargetExists { files, bytes, .. }) = err else {
        return Err(format!("{err:?}").into());
    };
    assert_eq!(files, old.len() as u64);
    assert_eq!(bytes, old.values().map(|v| v.len() as u64).sum::<u64>());

    // Cancelled after the first unit: the old target is untouched, the new one waits beside it.
    let cancel = Cancel::new();
    let options = ConvertOptions::default()
        .with_threads(1)
        .with_existing(Existing::Overwrite)
        .with_cancel(cancel.clone());
    let err = convert(&ds, &out, Format::Zarr3, &options, &|_| cancel.cancel()).err();
    assert!(matches!(err, Some(Error::Cancelled)), "{err:?}");
    assert_eq!(tree(&out)?, old, "the old target is whole");
    let stage = d.join(".out.scifmt-overwrite");
    assert!(
        stage.join(MARKER).exists(),
        "the unfinished new target is beside it"
    );
    // A plain run is refused (naming the interrupted overwrite is not needed: the target exists).
    assert!(matches!(
        convert(
            &ds,
            &out,
            Format::Zarr3,
            &ConvertOptions::default(),
            &|_| {}
        ),
        Err(Error::TargetExists { .. })
    ));
    // Resuming finishes the new one and swaps it in.
    let resume = ConvertOptions::default().with_existing(Existing::Resume);
    let summary = convert(&ds, &out, Format::Zarr3, &resume, &|_| {})?;
    assert!(summary.shards_skipped > 0, "{summary:?}");
    same(&tree(&out)?, &new)?;
    assert_eq!(names(d)?, ["clean", "ds", "out"]);

    // Overwriting again (with other options) replaces it in one go.
    let options = zstd1().with_existing(Existing::Overwrite);
    convert(&ds, &out, Format::Zarr3, &options, &|_| {})?;
    same(&tree(&out)?, &old)?;
    assert_eq!(names(d)?, ["clean", "ds", "out"]);
    // An abandoned replacement is discarded by the next overwrite.
    let options = ConvertOptions::default()
        .with_threads(1)
        .with_existing(Existing::Overwrite)
        .with_cancel(cancel.clone());
    assert!(convert(&ds, &out, Format::Zarr3, &options, &|_| {}).is_err());
    let options = ConvertOptions::default().with_existing(Existing::Overwrite);
    convert(&ds, &out, Format::Zarr3, &options, &|_| {})?;
    same(&tree(&out)?, &new)?;
    assert_eq!(names(d)?, ["clean", "ds", "out"]);
    // A file where the target goes: refused as an existing target, replaced with overwrite.
    let file = d.join("file");
    std::fs::write(&file, b"not a dataset")?;
    let err = convert(
        &ds,
        &file,
        Format::Zarr3,
        &ConvertOptions::default(),
        &|_| {},
    )
    .err();
    assert!(
        matches!(
            err,
            Some(Error::TargetExists {
                files: 1,
                bytes: 13,
                ..
            })
        ),
        "{err:?}"
    );
    assert_eq!(std::fs::read(&file)?, b"not a dataset");
    let options = ConvertOptions::default().with_existing(Existing::Overwrite);
    convert(&ds, &file, Format::Zarr3, &options, &|_| {})?;
    same(&tree(&file)?, &new)?;
    std::fs::remove_dir_all(&file)?;
    // The dataset is named after the target, not the sibling it was built in.
    let props: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join(wkw_zarr::PROPERTIES_JSON))?)?;
    assert_eq!(props["id"]["name"], "out");
    Ok(())
}

const ENV: &str = "WKW_ZARR_OVERWRITE_KILL_CHILD";
const ROUNDS: usize = 8;

/// The child: overwrites the target with one thread, reporting every unit, until done or
/// killed.
#[test]
fn overwrite_kill_child() -> TestResult {
    let Ok(spec) = std::env::var(ENV) else {
        return Ok(());
    };
    let mut parts = spec.splitn(3, '|');
    let (Some(after), Some(src), Some(dst)) = (parts.next(), parts.next(), parts.next()) else {
        return Err("bad spec".into());
    };
    // Reports its first step after `after` units: the later, the likelier the kill lands in
    // the swap or after it.
    let after: u64 = after.parse()?;
    let done = std::sync::atomic::AtomicU64::new(0);
    let options = ConvertOptions::default()
        .with_threads(1)
        .with_existing(Existing::Overwrite);
    convert(
        Path::new(src),
        Path::new(dst),
        Format::Zarr3,
        &options,
        &|_| {
            if done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1 >= after {
                testkit::kill_child_step_done();
            }
        },
    )?;
    Ok(())
}

#[test]
fn a_killed_overwrite_leaves_the_old_or_the_new_target_and_resumes() -> TestResult {
    let dir = tempfile::tempdir()?;
    let d = dir.path();
    let ds = d.join("ds");
    copy_tree(&fixture(), &ds)?;
    let clean = d.join("clean");
    convert(
        &ds,
        &clean,
        Format::Zarr3,
        &ConvertOptions::default(),
        &|_| {},
    )?;
    let new = tree(&clean)?;
    let original = d.join("original");
    convert(&ds, &original, Format::Zarr3, &zstd1(), &|_| {})?;
    let old = tree(&original)?;
    let units = wkw_zarr::plan(
        &ds,
        d.join("counted"),
        Format::Zarr3,
        &ConvertOptions::default(),
    )?
    .units()
    .len() as u64;
    let mut rng = Lcg(0x0dd5);
    let (mut saw_old, mut saw_new) = (0, 0);
    for round in 0..ROUNDS {
        let out = d.join(format!("out{round}"));
        copy_tree(&original, &out)?;
        run_and_kill(
            "overwrite::overwrite_kill_child",
            ENV,
            &format!(
                "{}|{}|{}",
                1 + round as u64 * units / ROUNDS as u64,
                ds.display(),
                out.display()
            ),
            &mut rng,
        );
        // Whatever the moment of the kill: the old target or the new one, whole and readable.
        let now = without_marker(tree(&out)?);
        if same(&now, &without_marker(old.clone())).is_ok() {
            saw_old += 1;
        } else if same(&now, &without_marker(new.clone())).is_ok() {
            saw_new += 1;
        } else {
            return Err(
                format!("round {round}: the target is neither the old nor the new one").into(),
            );
        }
        let report = verify(&ds, &out, &ConvertOptions::default(), &|_| {})?;
        assert_eq!(report.differing_blocks, 0, "round {round}: {report:?}");
        // Resuming finishes the new one; nothing is left beside it.
        let resume = ConvertOptions::default().with_existing(Existing::Resume);
        convert(&ds, &out, Format::Zarr3, &resume, &|_| {})?;
        same(&tree(&out)?, &new).map_err(|e| format!("round {round}: {e}"))?;
        assert!(!d.join(format!(".out{round}.scifmt-overwrite")).exists());
    }
    println!(
        "killed overwrites of {units} units: {saw_old} left the old target, {saw_new} the new one"
    );
    Ok(())
}

/// The state a kill between the swap and its clean-up leaves (the kill test rarely lands
/// there, so it is made here): the new target in place still marked as a staged run, the old
/// content in the sibling. Resuming, refusing and overwriting each see it for what it is.
#[test]
fn a_swap_interrupted_before_its_clean_up_is_finished_by_the_next_run() -> TestResult {
    let dir = tempfile::tempdir()?;
    let d = dir.path();
    let ds = d.join("ds");
    copy_tree(&fixture(), &ds)?;
    let old_dir = d.join("old");
    convert(&ds, &old_dir, Format::Zarr3, &zstd1(), &|_| {})?;
    let old = tree(&old_dir)?;
    let new_dir = d.join("new");
    convert(
        &ds,
        &new_dir,
        Format::Zarr3,
        &ConvertOptions::default(),
        &|_| {},
    )?;
    let new = tree(&new_dir)?;
    // The marker of a staged run, as a cancelled overwrite writes it.
    let out = d.join("out");
    copy_tree(&old_dir, &out)?;
    let cancel = Cancel::new();
    cancel.cancel();
    let options = ConvertOptions::default()
        .with_existing(Existing::Overwrite)
        .with_cancel(cancel);
    assert!(convert(&ds, &out, Format::Zarr3, &options, &|_| {}).is_err());
    let stage = d.join(".out.scifmt-overwrite");
    let marker = std::fs::read(stage.join(MARKER))?;
    assert!(String::from_utf8_lossy(&marker).contains("\"replaces\""));
    let swapped = || -> TestResult {
        std::fs::remove_dir_all(&out)?;
        std::fs::remove_dir_all(&stage).ok();
        copy_tree(&new_dir, &out)?;
        std::fs::write(out.join(MARKER), &marker)?;
        copy_tree(&old_dir, &stage)?;
        Ok(())
    };
    swapped()?;
    let resume = ConvertOptions::default().with_existing(Existing::Resume);
    convert(&ds, &out, Format::Zarr3, &resume, &|_| {})?;
    same(&tree(&out)?, &new)?;
    assert!(!stage.exists());
    // Refused as an existing target (the clean-up done first).
    swapped()?;
    let err = convert(
        &ds,
        &out,
        Format::Zarr3,
        &ConvertOptions::default(),
        &|_| {},
    )
    .err();
    assert!(matches!(err, Some(Error::TargetExists { .. })), "{err:?}");
    same(&tree(&out)?, &new)?;
    assert!(!stage.exists());
    // Overwritten again.
    swapped()?;
    convert(
        &ds,
        &out,
        Format::Zarr3,
        &zstd1().with_existing(Existing::Overwrite),
        &|_| {},
    )?;
    same(&tree(&out)?, &old)?;
    assert!(!stage.exists());
    Ok(())
}

#[test]
fn on_a_store_overlaps_are_refused_and_overwrites_are_staged() -> TestResult {
    let dir = tempfile::tempdir()?;
    let d = dir.path();
    let ds = d.join("ds");
    copy_tree(&fixture(), &ds)?;
    let clean = d.join("clean");
    convert(
        &ds,
        &clean,
        Format::Zarr3,
        &ConvertOptions::default(),
        &|_| {},
    )?;
    let new = tree(&clean)?;
    let old_local = d.join("old");
    convert(&ds, &old_local, Format::Zarr3, &zstd1(), &|_| {})?;
    let old = tree(&old_local)?;

    let server = TestServer::start()?;
    server.upload_dir(&ds, "ds")?;
    let source = objects(&server, "ds")?;
    for (src, dst) in [
        ("ds", "ds"),
        ("ds", "ds/sub"),
        ("ds/color/1", "ds"),
        ("ds", "ds/"),
    ] {
        for existing in [Existing::Refuse, Existing::Overwrite, Existing::Resume] {
            let options = ConvertOptions::default().with_existing(existing);
            let err = convert(
                at(&server, src),
                at(&server, dst),
                Format::Zarr3,
                &options,
                &|_| {},
            )
            .err();
            assert!(
                matches!(err, Some(Error::Overlap(_))),
                "{src} -> {dst}: {err:?}"
            );
        }
    }
    // `ds2` is not inside `ds`.
    convert(
        at(&server, "ds"),
        at(&server, "ds2"),
        Format::Zarr3,
        &zstd1(),
        &|_| {},
    )?;
    same(&objects(&server, "ds2")?, &old)?;
    assert_eq!(objects(&server, "ds")?, source, "the source is unchanged");

    // A cancelled overwrite leaves the old target; resuming copies the new one over it.
    let cancel = Cancel::new();
    let options = ConvertOptions::default()
        .with_threads(1)
        .with_existing(Existing::Overwrite)
        .with_cancel(cancel.clone());
    let err = convert(
        at(&server, "ds"),
        at(&server, "ds2"),
        Format::Zarr3,
        &options,
        &|_| {
            cancel.cancel();
        },
    )
    .err();
    assert!(matches!(err, Some(Error::Cancelled)), "{err:?}");
    same(&objects(&server, "ds2")?, &old)?;
    assert!(!objects(&server, ".ds2.scifmt-overwrite")?.is_empty());
    let resume = ConvertOptions::default().with_existing(Existing::Resume);
    convert(
        at(&server, "ds"),
        at(&server, "ds2"),
        Format::Zarr3,
        &resume,
        &|_| {},
    )?;
    same(&objects(&server, "ds2")?, &new)?;
    assert!(objects(&server, ".ds2.scifmt-overwrite")?.is_empty());
    // And a plain overwrite back to the old settings.
    let options = zstd1().with_existing(Existing::Overwrite);
    convert(
        at(&server, "ds"),
        at(&server, "ds2"),
        Format::Zarr3,
        &options,
        &|_| {},
    )?;
    same(&objects(&server, "ds2")?, &old)?;
    assert!(objects(&server, ".ds2.scifmt-overwrite")?.is_empty());
    assert_eq!(objects(&server, "ds")?, source, "the source is unchanged");
    Ok(())
}
