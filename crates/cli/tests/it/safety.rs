//! No command deletes or overwrites its own input, and no output replaces an existing file,
//! object or dataset without `--overwrite`.
//!
//! For every writing command: the output spelled as the input itself (`./`, absolute, `..`,
//! a symlink, a symlinked parent, a hard link, a `file://` URL), inside a directory input and
//! around the input is refused with and without `--overwrite` (exit 2, one line naming both);
//! an existing output is refused without `--overwrite` (naming the flag and what is there) and
//! replaced by the new content with it. After every refusal the whole case directory is as it
//! was (every file hashed with its relative path, symlinks by target): nothing was written or
//! deleted, no temporary file left. After every run the input is unchanged.
//!
//! The URL cases run against the S3 test server (one per test function): an output key that is
//! the input's key, inside its prefix or around it is refused; an existing object or prefix is
//! refused without `--overwrite` and replaced with it (never for a WKW dataset at a URL).

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::{sha, testdata, tmp};
use s3_testserver::TestServer;

/// Runs `scifmt args…` in `cwd` with `env` added and stdin closed.
fn run_at(cwd: &Path, env: &[(String, String)], args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_scifmt"))
        .args(args)
        .current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .output()
        .expect("spawn scifmt")
}

/// Asserts success with an empty stderr.
fn assert_ok(out: &Output, args: &[String]) {
    assert!(
        out.status.success(),
        "{args:?} failed ({:?}): {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{args:?}: stderr {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Asserts exit status 2 with one stderr line holding every needle; returns the line.
fn assert_refused(out: &Output, args: &[String], needles: &[&str]) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: not one line: {err}");
    assert!(err.starts_with("scifmt: "), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: `{n}` not in {err}");
    }
    err
}

/// Every entry below `root` (or `root` itself if it is no directory) by path relative to
/// `root`: files by the sha256 of their bytes, symlinks by their target, directories as such.
fn snapshot(root: &Path) -> BTreeMap<String, String> {
    fn entry(path: &Path) -> String {
        let meta = std::fs::symlink_metadata(path).unwrap();
        if meta.is_symlink() {
            format!("-> {}", std::fs::read_link(path).unwrap().display())
        } else if meta.is_dir() {
            "dir".to_owned()
        } else {
            sha(&std::fs::read(path).unwrap())
        }
    }
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            out.insert(rel, entry(&p));
            if meta.is_dir() && !meta.is_symlink() {
                walk(root, &p, out);
            }
        }
    }
    let mut out = BTreeMap::new();
    let meta = std::fs::symlink_metadata(root).unwrap();
    if meta.is_dir() && !meta.is_symlink() {
        walk(root, root, &mut out);
    } else {
        out.insert(String::new(), entry(root));
    }
    out
}

/// Asserts that no hidden file (a staged temporary file or directory) is left below `dir`.
fn assert_no_leftovers(dir: &Path, what: &str) {
    for rel in snapshot(dir).keys() {
        assert!(
            !rel.split('/').any(|c| c.starts_with('.')),
            "{what}: {rel} left behind"
        );
    }
}

/// The arguments of `template` with `IN` and `OUT` replaced, and `--overwrite` if asked.
fn argv(template: &[&str], input: &str, output: &str, overwrite: bool) -> Vec<String> {
    let mut v: Vec<String> = template
        .iter()
        .map(|a| match *a {
            "IN" => input.to_owned(),
            "OUT" => output.to_owned(),
            a => a.to_owned(),
        })
        .collect();
    if overwrite {
        v.push("--overwrite".into());
    }
    v
}

fn abs(dir: &Path, rel: &str) -> String {
    dir.join(rel).display().to_string()
}

fn symlink(target: impl AsRef<Path>, link: impl AsRef<Path>) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

/// Sets up one overlap case in the case directory for the input `IN` (relative); returns the
/// IN and OUT arguments.
type Setup = fn(&Path, &str) -> (String, String);

/// Ways of naming the input (or a place inside it or around it) as the output, for any input.
fn overlaps_any() -> Vec<(&'static str, Setup)> {
    vec![
        ("same", |_, i| (i.into(), i.into())),
        ("./ spelling", |_, i| (i.into(), format!("./{i}"))),
        ("absolute output", |d, i| (i.into(), abs(d, i))),
        ("absolute input", |d, i| (abs(d, i), i.into())),
        ("through ..", |d, i| {
            std::fs::create_dir(d.join("sub")).unwrap();
            (i.into(), format!("sub/../{i}"))
        }),
        ("through a missing folder and ..", |_, i| {
            (i.into(), format!("nowhere/../{i}"))
        }),
        ("symlink to the input", |d, i| {
            symlink(i, d.join("link"));
            (i.into(), "link".into())
        }),
        ("input through a symlink", |d, i| {
            symlink(i, d.join("link"));
            ("link".into(), i.into())
        }),
        ("symlinked parent", |d, i| {
            symlink(d, d.join("here"));
            (i.into(), format!("here/{i}"))
        }),
        ("file URL", |d, i| {
            (i.into(), format!("file://{}", abs(d, i)))
        }),
        ("input inside the output", |_, i| (i.into(), ".".into())),
        ("input inside the absolute output", |d, i| {
            (i.into(), d.display().to_string())
        }),
    ]
}

/// Overlaps only a file input has.
fn overlaps_file() -> Vec<(&'static str, Setup)> {
    vec![("hard link", |d, i| {
        std::fs::hard_link(d.join(i), d.join("hard")).unwrap();
        (i.into(), "hard".into())
    })]
}

/// Overlaps only a directory input has: outputs inside it.
fn overlaps_dir() -> Vec<(&'static str, Setup)> {
    vec![
        ("output inside the input", |_, i| {
            (i.into(), format!("{i}/out.new"))
        }),
        ("output deep inside the input", |_, i| {
            (i.into(), format!("{i}/new/deeper/out.new"))
        }),
        ("output inside through a symlink", |d, i| {
            symlink(i, d.join("link"));
            (i.into(), "link/out.new".into())
        }),
        ("output inside, absolute", |d, i| {
            (i.into(), abs(d, &format!("{i}/out.new")))
        }),
        ("output inside, through ..", |_, i| {
            (i.into(), format!("{i}/../{i}/out.new"))
        }),
        ("output inside, file URL", |d, i| {
            (i.into(), format!("file://{}/out.new", abs(d, i)))
        }),
    ]
}

/// A command's case directory: a fresh directory holding the input (made by `make`, which
/// returns its name relative to the directory).
fn case(make: fn(&Path) -> String) -> (tempfile::TempDir, String) {
    let t = tmp();
    let input = make(t.path());
    (t, input)
}

/// Every overlap of `template`'s output with its input is refused, with and without
/// `--overwrite`, and leaves the case directory as it was.
fn overlaps_are_refused(template: &[&str], make: fn(&Path) -> String) {
    let (probe, input) = case(make);
    let is_dir = probe.path().join(&input).is_dir();
    let mut cases = overlaps_any();
    cases.extend(if is_dir {
        overlaps_dir()
    } else {
        overlaps_file()
    });
    for (what, setup) in cases {
        for overwrite in [false, true] {
            let (t, input) = case(make);
            let (i, o) = setup(t.path(), &input);
            let before = snapshot(t.path());
            let args = argv(template, &i, &o, overwrite);
            let out = run_at(t.path(), &[], &args);
            let o_shown = o.trim_end_matches('/');
            assert_refused(&out, &args, &["refused", o_shown, &i]);
            assert_eq!(snapshot(t.path()), before, "{what}: {args:?} changed files");
        }
    }
}

/// `template` writes a fresh output; an existing file, a file behind a `file://` URL and a
/// symlink are refused without `--overwrite` and replaced with it; a directory never.
fn existing_outputs(template: &[&str], make: fn(&Path) -> String) {
    let (t, input) = case(make);
    let args = argv(template, &input, "fresh.out", false);
    assert_ok(&run_at(t.path(), &[], &args), &args);
    let want = std::fs::read(t.path().join("fresh.out")).unwrap();
    assert_no_leftovers(t.path(), "fresh");
    // Spelled plainly and as a file:// URL.
    for url in [false, true] {
        for overwrite in [false, true] {
            let (t, input) = case(make);
            let input_before = snapshot(&t.path().join(&input));
            std::fs::write(t.path().join("old.out"), b"old content").unwrap();
            let o = if url {
                format!("file://{}", abs(t.path(), "old.out"))
            } else {
                "old.out".to_owned()
            };
            let before = snapshot(t.path());
            let args = argv(template, &input, &o, overwrite);
            let out = run_at(t.path(), &[], &args);
            if overwrite {
                assert_ok(&out, &args);
                assert!(
                    std::fs::read(t.path().join("old.out")).unwrap() == want,
                    "{args:?}: not the new content"
                );
                assert_eq!(snapshot(&t.path().join(&input)), input_before, "{args:?}");
                assert_no_leftovers(t.path(), &format!("{args:?}"));
            } else {
                let needle = if url {
                    "old.out exists (an object of 11 bytes)"
                } else {
                    "old.out exists (a file of 11 bytes)"
                };
                assert_refused(&out, &args, &[needle, "add --overwrite to replace it"]);
                assert_eq!(snapshot(t.path()), before, "{args:?}");
            }
        }
    }
    // A symlink to another file: replaced itself (the file it points to stays).
    for overwrite in [false, true] {
        let (t, input) = case(make);
        std::fs::write(t.path().join("other"), b"other").unwrap();
        symlink("other", t.path().join("lnk"));
        let before = snapshot(t.path());
        let args = argv(template, &input, "lnk", overwrite);
        let out = run_at(t.path(), &[], &args);
        if overwrite {
            assert_ok(&out, &args);
            assert!(std::fs::read(t.path().join("lnk")).unwrap() == want);
            assert_eq!(std::fs::read(t.path().join("other")).unwrap(), b"other");
        } else {
            assert_refused(&out, &args, &["lnk exists", "--overwrite"]);
            assert_eq!(snapshot(t.path()), before, "{args:?}");
        }
    }
    // A directory is never replaced by a file.
    for overwrite in [false, true] {
        let (t, input) = case(make);
        std::fs::create_dir(t.path().join("olddir")).unwrap();
        std::fs::write(t.path().join("olddir/keep"), b"keep me").unwrap();
        let before = snapshot(t.path());
        let args = argv(template, &input, "olddir", overwrite);
        let out = run_at(t.path(), &[], &args);
        assert_refused(
            &out,
            &args,
            &[
                "olddir: exists as a directory, 1 file, 7 bytes",
                "never replaces a directory",
            ],
        );
        assert_eq!(snapshot(t.path()), before, "{args:?}");
    }
}

/// The full local matrix of a command writing one file.
fn file_command(template: &[&str], make: fn(&Path) -> String) {
    overlaps_are_refused(template, make);
    existing_outputs(template, make);
}

/// Copies `testdata/<rel>` (a file or directory) into `dir` as `name`; returns `name`.
fn fixture(dir: &Path, rel: &str, name: &str) -> String {
    let src = testdata(rel);
    if src.is_dir() {
        common::copy_dir(&src, &dir.join(name));
    } else {
        std::fs::copy(&src, dir.join(name)).unwrap();
    }
    name.to_owned()
}

/// Deterministic bytes.
fn pattern(n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| u8::try_from((i * 31 + i / 7) % 251).unwrap())
        .collect()
}

fn raw_input(dir: &Path) -> String {
    std::fs::write(dir.join("in.raw"), pattern(10_000)).unwrap();
    "in.raw".into()
}

const OFFSET16: &str = r#"{"name":"offset","configuration":{"offset":16}}"#;

#[test]
fn blosc_compress_and_decompress() {
    file_command(
        &["blosc", "compress", "IN", "OUT", "--typesize", "4"],
        raw_input,
    );
    file_command(&["blosc", "decompress", "IN", "OUT"], |d| {
        fixture(d, "blosc/chunks/lz4_shuffle_ts4.cdata", "in.cdata")
    });
}

#[test]
fn frame_extract_from_files_and_directories() {
    file_command(&["frame", "extract", "IN", "OUT"], |d| {
        fixture(
            d,
            "blosc/frames/lz4_shuffle_meta_vlmeta.b2frame",
            "in.b2frame",
        )
    });
    file_command(&["frame", "extract", "IN", "OUT"], |d| {
        fixture(d, "blosc/frames/sparse_lz4.b2frame", "sparse")
    });
}

#[test]
fn frame_create_contiguous() {
    file_command(
        &[
            "frame",
            "create",
            "IN",
            "OUT",
            "--typesize",
            "4",
            "--chunksize",
            "4000",
        ],
        raw_input,
    );
}

#[test]
fn b2nd_read_and_zarr_read() {
    file_command(&["b2nd", "read", "IN", "OUT"], |d| {
        fixture(d, "blosc/frames/b2nd_u2_7x9x11.b2nd", "in.b2nd")
    });
    file_command(&["zarr", "read", "IN", "OUT", "--region", "0:8,0:8"], |d| {
        fixture(d, "offset/zarr/gzip_custom_header.zarr", "store.zarr")
    });
}

#[test]
fn dwe_decode_and_create() {
    file_command(&["dwe", "decode", "IN", "OUT"], |d| {
        fixture(d, "dwe/stream/random_6_100_16_j20.dwe", "in.dwe")
    });
    file_command(
        &[
            "dwe",
            "create",
            "IN",
            "OUT",
            "--shape",
            "6,100,16",
            "--scale",
            "0.015074313",
            "--jump-interval",
            "20",
        ],
        |d| fixture(d, "dwe/inputs/random_6_100_16.i16", "in.i16"),
    );
}

#[test]
fn offset_encode_and_decode() {
    file_command(
        &["offset", "decode", "IN", "OUT", "--codec", OFFSET16],
        |d| fixture(d, "offset/zarr/gzip_custom_header.zarr/c/0/0", "chunk"),
    );
    file_command(
        &["offset", "encode", "IN", "OUT", "--codec", OFFSET16],
        raw_input,
    );
}

#[test]
fn wkw_read() {
    file_command(
        &[
            "wkw", "read", "IN", "OUT", "--offset", "0,0,0", "--shape", "8,8,8",
        ],
        |d| fixture(d, "wkw/i8_raw_b8_f2", "ds"),
    );
}

/// A directory's snapshot without the hidden entries of readers and writers (`.wkw-locks`).
fn content(dir: &Path) -> BTreeMap<String, String> {
    snapshot(dir)
        .into_iter()
        .filter(|(k, _)| !k.split('/').any(|c| c.starts_with('.')))
        .collect()
}

/// The local matrix of a command writing a directory of `kind` (`a WKW dataset`): overlaps
/// refused; an existing one of the same kind (`old`, made by `make_old`) refused without
/// `--overwrite` (the message says what is there) and replaced with it; a directory of another
/// kind and a file refused either way; an empty directory filled.
fn dir_command(
    template: &[&str],
    make: fn(&Path) -> String,
    make_old: fn(&Path) -> String,
    kind: &str,
) {
    overlaps_are_refused(template, make);
    let (t, input) = case(make);
    let args = argv(template, &input, "fresh", false);
    assert_ok(&run_at(t.path(), &[], &args), &args);
    let want = content(&t.path().join("fresh"));
    assert_no_leftovers(t.path(), "fresh");
    for overwrite in [false, true] {
        let (t, input) = case(make);
        let old = make_old(t.path());
        let input_before = snapshot(&t.path().join(&input));
        let before = snapshot(t.path());
        let args = argv(template, &input, &old, overwrite);
        let out = run_at(t.path(), &[], &args);
        if overwrite {
            assert_ok(&out, &args);
            assert_eq!(content(&t.path().join(&old)), want, "{args:?}");
            assert_eq!(snapshot(&t.path().join(&input)), input_before, "{args:?}");
            assert_no_leftovers(t.path(), &format!("{args:?}"));
        } else {
            let err = assert_refused(
                &out,
                &args,
                &[
                    &format!("{old} exists ({kind}, "),
                    "add --overwrite to replace it",
                    "built beside it",
                ],
            );
            assert!(err.contains(" files, ") || err.contains(" file, "), "{err}");
            assert_eq!(snapshot(t.path()), before, "{args:?}");
        }
    }
    // Another kind of directory, and a file: never replaced.
    for overwrite in [false, true] {
        for (what, needles) in [
            (
                "notes",
                &["notes exists (a directory, 1 file, 4 bytes), which is not"][..],
            ),
            (
                "file",
                &["file: exists as a file of 4 bytes", "never replaces a file"][..],
            ),
        ] {
            let (t, input) = case(make);
            if what == "notes" {
                std::fs::create_dir(t.path().join("notes")).unwrap();
                std::fs::write(t.path().join("notes/keep"), b"keep").unwrap();
            } else {
                std::fs::write(t.path().join("file"), b"keep").unwrap();
            }
            let before = snapshot(t.path());
            let args = argv(template, &input, what, overwrite);
            let out = run_at(t.path(), &[], &args);
            assert_refused(&out, &args, needles);
            assert_eq!(snapshot(t.path()), before, "{args:?}");
        }
    }
    // An empty directory is no dataset to lose.
    let (t, input) = case(make);
    std::fs::create_dir(t.path().join("empty")).unwrap();
    let args = argv(template, &input, "empty", false);
    assert_ok(&run_at(t.path(), &[], &args), &args);
    assert_eq!(content(&t.path().join("empty")), want);
    assert_no_leftovers(t.path(), "empty");
}

#[test]
fn wkw_compress() {
    dir_command(
        &["wkw", "compress", "IN", "OUT", "--block-type", "lz4"],
        |d| fixture(d, "wkw/i8_raw_b8_f2", "src"),
        |d| fixture(d, "wkw/f32_lz4hc_b16_f2", "old"),
        "a WKW dataset",
    );
}

#[test]
fn frame_create_sparse() {
    dir_command(
        &[
            "frame",
            "create",
            "IN",
            "OUT",
            "--sparse",
            "--typesize",
            "4",
            "--chunksize",
            "4000",
        ],
        raw_input,
        |d| fixture(d, "blosc/frames/sparse_lz4.b2frame", "old"),
        "a sparse Blosc2 frame",
    );
}

#[test]
fn wkw_create() {
    let create = |ds: &str, overwrite: bool| {
        argv(
            &["wkw", "create", "OUT", "--voxel-type", "u8"],
            "",
            ds,
            overwrite,
        )
    };
    let t = tmp();
    let args = create("fresh", false);
    assert_ok(&run_at(t.path(), &[], &args), &args);
    let want = content(&t.path().join("fresh"));
    for overwrite in [false, true] {
        let t = tmp();
        fixture(t.path(), "wkw/i8_raw_b8_f2", "ds");
        let before = snapshot(t.path());
        let args = create("ds", overwrite);
        let out = run_at(t.path(), &[], &args);
        if overwrite {
            // The old dataset, data files and all, is replaced by the new empty one.
            assert_ok(&out, &args);
            assert_eq!(content(&t.path().join("ds")), want);
            assert_no_leftovers(t.path(), "overwrite");
        } else {
            assert_refused(
                &out,
                &args,
                &[
                    "ds exists (a WKW dataset, 3 files, ",
                    "add --overwrite to replace it",
                ],
            );
            assert_eq!(snapshot(t.path()), before);
        }
    }
    // Through a symlink and as a file URL: the same dataset (a URL's is never replaced).
    for url in [false, true] {
        let t = tmp();
        fixture(t.path(), "wkw/i8_raw_b8_f2", "ds");
        symlink("ds", t.path().join("link"));
        let before = snapshot(t.path());
        let (spelled, needles) = if url {
            (
                format!("file://{}", abs(t.path(), "ds")),
                ["exists (a WKW dataset, 3 objects, ", "never replaced"],
            )
        } else {
            (
                "link".to_owned(),
                ["link exists (a WKW dataset, 3 files, ", "--overwrite"],
            )
        };
        let args = create(&spelled, false);
        let out = run_at(t.path(), &[], &args);
        assert_refused(&out, &args, &needles);
        assert_eq!(snapshot(t.path()), before);
    }
    // A directory that is no dataset gets header.wkw added, nothing else changes.
    let t = tmp();
    std::fs::create_dir(t.path().join("mag")).unwrap();
    std::fs::write(t.path().join("mag/notes.txt"), b"keep").unwrap();
    let args = create("mag", false);
    assert_ok(&run_at(t.path(), &[], &args), &args);
    let mut got = content(&t.path().join("mag"));
    assert_eq!(got.remove("notes.txt").unwrap(), sha(b"keep"));
    assert_eq!(got, want);
    // A file is never replaced.
    for overwrite in [false, true] {
        let t = tmp();
        std::fs::write(t.path().join("ds"), b"keep").unwrap();
        let args = create("ds", overwrite);
        let out = run_at(t.path(), &[], &args);
        assert_refused(&out, &args, &["ds: exists as a file of 4 bytes"]);
        assert_eq!(std::fs::read(t.path().join("ds")).unwrap(), b"keep");
    }
}

#[test]
fn wkw_write_never_reads_from_inside_its_dataset() {
    let write = |ds: &str, input: &str| -> Vec<String> {
        [
            "wkw", "write", ds, input, "--offset", "0,0,0", "--shape", "8,8,8",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
    };
    let make = |t: &Path| {
        fixture(t, "wkw/i8_raw_b8_f2", "ds");
        std::fs::write(t.join("ds/box.raw"), pattern(512)).unwrap();
        symlink("ds", t.join("link"));
    };
    for (ds, input, needles) in [
        (
            "ds",
            "ds/box.raw",
            &["refused: the input ds/box.raw is inside ds"][..],
        ),
        (
            "ds",
            "link/box.raw",
            &["the input link/box.raw is inside ds"],
        ),
        (
            "link",
            "ds/box.raw",
            &["the input ds/box.raw is inside link"],
        ),
        ("ds/", "./ds/z0/../box.raw", &["is inside ds"]),
        ("ds", "ds", &["refused: ds is the input ds itself"]),
    ] {
        let t = tmp();
        make(t.path());
        let before = snapshot(t.path());
        let args = write(ds, input);
        let out = run_at(t.path(), &[], &args);
        assert_refused(&out, &args, needles);
        assert_eq!(snapshot(t.path()), before, "{args:?}");
    }
    // From outside the dataset (the same bytes): written, the input unchanged.
    let t = tmp();
    make(t.path());
    std::fs::copy(t.path().join("ds/box.raw"), t.path().join("box.raw")).unwrap();
    let args = write("ds", "box.raw");
    assert_ok(&run_at(t.path(), &[], &args), &args);
    assert_eq!(
        std::fs::read(t.path().join("box.raw")).unwrap(),
        pattern(512)
    );
}

// ---- URLs on the S3 test server ----

/// The objects below `prefix` on the server, downloaded and snapshot (empty if none).
fn remote_snapshot(s: &TestServer, prefix: &str) -> BTreeMap<String, String> {
    let d = tmp();
    s.download_prefix(prefix, d.path()).unwrap();
    snapshot(d.path())
}

/// Runs on the server's environment in a fresh directory holding `in.raw`.
fn run_s3(s: &TestServer, cwd: &Path, args: &[&str]) -> (Output, Vec<String>) {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    (run_at(cwd, &s.env(), &args), args)
}

/// A server holding, under `t/`: in.raw, ds/ (a WKW dataset with box.raw inside), sparse/ and
/// old_sparse/ (sparse frames), oldds/ (another dataset) and old.cdata (3 bytes).
fn s3_fixtures() -> (TestServer, tempfile::TempDir) {
    let s = TestServer::start().expect("start the S3 test server");
    let local = tmp();
    let d = local.path();
    raw_input(d);
    fixture(d, "wkw/i8_raw_b8_f2", "ds");
    std::fs::write(d.join("ds/box.raw"), pattern(512)).unwrap();
    fixture(d, "blosc/frames/sparse_lz4.b2frame", "sparse");
    fixture(d, "blosc/frames/sparse_lz4.b2frame", "old_sparse");
    fixture(d, "wkw/f32_lz4hc_b16_f2", "oldds");
    std::fs::write(d.join("old.cdata"), b"old").unwrap();
    s.upload_dir(d, "t").unwrap();
    (s, local)
}

#[test]
fn urls_are_compared_by_key_and_existing_objects_kept() {
    let (s, local) = s3_fixtures();
    let u = |k: &str| s.url(&format!("t/{k}"));
    let work = tmp();
    let w = work.path();
    // Overlaps: refused with and without --overwrite, nothing on the server changes.
    let overlap_cases: Vec<Vec<String>> = vec![
        vec!["blosc".into(), "compress".into(), u("in.raw"), u("in.raw")],
        vec!["blosc".into(), "compress".into(), u("in.raw"), u("in.raw/")],
        vec![
            "blosc".into(),
            "compress".into(),
            u("in.raw"),
            s.url("t//x/../in.raw"),
        ],
        vec!["blosc".into(), "compress".into(), u("in.raw"), s.url("t")],
        vec![
            "frame".into(),
            "extract".into(),
            u("sparse"),
            u("sparse/out.raw"),
        ],
        vec![
            "frame".into(),
            "create".into(),
            u("in.raw"),
            u("in.raw"),
            "--chunksize".into(),
            "4000".into(),
        ],
        vec![
            "wkw".into(),
            "read".into(),
            u("ds"),
            u("ds/box2.raw"),
            "--offset".into(),
            "0,0,0".into(),
            "--shape".into(),
            "8,8,8".into(),
        ],
        vec!["wkw".into(), "compress".into(), u("ds"), u("ds/lz4")],
        vec!["wkw".into(), "compress".into(), u("ds"), s.url("t")],
        vec!["wkw".into(), "compress".into(), u("ds"), u("./ds/")],
        vec!["zarr".into(), "read".into(), u("ds"), u("ds/z.raw")],
        vec![
            "dwe".into(),
            "create".into(),
            u("in.raw"),
            u("in.raw"),
            "--shape".into(),
            "1,1,1".into(),
            "--scale".into(),
            "1".into(),
            "--chunk-size".into(),
            "1".into(),
        ],
        vec![
            "offset".into(),
            "encode".into(),
            u("in.raw"),
            u("in.raw"),
            "--codec".into(),
            OFFSET16.into(),
        ],
    ];
    let before = remote_snapshot(&s, "t");
    for args in &overlap_cases {
        for overwrite in [false, true] {
            let mut args = args.clone();
            if overwrite {
                args.push("--overwrite".into());
            }
            let out = run_at(w, &s.env(), &args);
            assert_refused(&out, &args, &["refused", "s3://"]);
            assert!(!String::from_utf8_lossy(&out.stderr).contains(s.secret_key()));
        }
    }
    // wkw write: the raw input is an object inside the dataset.
    let (out, args) = run_s3(
        &s,
        w,
        &[
            "wkw",
            "write",
            &u("ds"),
            &u("ds/box.raw"),
            "--offset",
            "0,0,0",
            "--shape",
            "8,8,8",
        ],
    );
    assert_refused(&out, &args, &["refused", "is inside"]);
    assert_eq!(
        remote_snapshot(&s, "t"),
        before,
        "an overlap changed objects"
    );

    // An existing object: refused without --overwrite, replaced with it.
    std::fs::write(
        w.join("in.raw"),
        std::fs::read(local.path().join("in.raw")).unwrap(),
    )
    .unwrap();
    let (out, args) = run_s3(
        &s,
        w,
        &[
            "blosc",
            "compress",
            "in.raw",
            "want.cdata",
            "--typesize",
            "4",
        ],
    );
    assert_ok(&out, &args);
    let want = std::fs::read(w.join("want.cdata")).unwrap();
    let old = u("old.cdata");
    let (out, args) = run_s3(
        &s,
        w,
        &["blosc", "compress", &u("in.raw"), &old, "--typesize", "4"],
    );
    assert_refused(
        &out,
        &args,
        &[
            &format!("{old} exists (an object of 3 bytes)"),
            "add --overwrite",
        ],
    );
    assert_eq!(remote_snapshot(&s, "t"), before);
    let (out, args) = run_s3(
        &s,
        w,
        &[
            "blosc",
            "compress",
            &u("in.raw"),
            &old,
            "--typesize",
            "4",
            "--overwrite",
        ],
    );
    assert_ok(&out, &args);
    let mut after = remote_snapshot(&s, "t");
    assert_eq!(after.remove("old.cdata").unwrap(), sha(&want));
    let mut expected = before.clone();
    expected.remove("old.cdata");
    assert_eq!(after, expected, "only old.cdata changed");

    // A new object without --overwrite: a create-only put.
    let (out, args) = run_s3(&s, w, &["dwe", "decode", "in.dwe", &u("new.i16")]);
    // (No such local file: the input's error, and nothing written.)
    assert_refused(&out, &args, &["in.dwe"]);
    let (out, args) = run_s3(
        &s,
        w,
        &[
            "frame",
            "create",
            "in.raw",
            &u("new.b2frame"),
            "--typesize",
            "4",
            "--chunksize",
            "4000",
        ],
    );
    assert_ok(&out, &args);
    let (out, args) = run_s3(
        &s,
        w,
        &[
            "frame",
            "create",
            "in.raw",
            &u("new.b2frame"),
            "--typesize",
            "4",
            "--chunksize",
            "4000",
        ],
    );
    assert_refused(
        &out,
        &args,
        &["new.b2frame exists (an object of ", "--overwrite"],
    );
}

#[test]
fn url_datasets_and_sparse_frames() {
    let (s, local) = s3_fixtures();
    let u = |k: &str| s.url(&format!("t/{k}"));
    let work = tmp();
    let w = work.path();
    std::fs::write(
        w.join("in.raw"),
        std::fs::read(local.path().join("in.raw")).unwrap(),
    )
    .unwrap();
    let before = remote_snapshot(&s, "t");

    // A WKW dataset at a URL is never replaced: with or without --overwrite.
    for args in [
        vec!["wkw", "compress", "ds-local", "OUT"],
        vec!["wkw", "create", "OUT", "--voxel-type", "u8"],
    ] {
        fixture(w, "wkw/i8_raw_b8_f2", "ds-local");
        for overwrite in [false, true] {
            let oldds = u("oldds");
            let mut a: Vec<&str> = args
                .iter()
                .map(|x| if *x == "OUT" { oldds.as_str() } else { *x })
                .collect();
            if overwrite {
                a.push("--overwrite");
            }
            let (out, a) = run_s3(&s, w, &a);
            assert_refused(
                &out,
                &a,
                &[
                    &format!("{oldds} exists (a WKW dataset, 2 objects, "),
                    "never replaced",
                ],
            );
        }
    }
    assert_eq!(remote_snapshot(&s, "t"), before);
    // Into a new prefix: written.
    let (out, args) = run_s3(
        &s,
        w,
        &[
            "wkw",
            "compress",
            &u("ds"),
            &u("lz4"),
            "--block-type",
            "lz4",
        ],
    );
    assert_ok(&out, &args);
    let (out, args) = run_s3(
        &s,
        w,
        &[
            "wkw",
            "compress",
            &u("ds"),
            &u("lz4"),
            "--block-type",
            "lz4",
        ],
    );
    assert_refused(&out, &args, &["exists (a WKW dataset, "]);

    // A sparse frame at a URL: refused without --overwrite, replaced with it (new chunks
    // uploaded, then the index, then the old chunks deleted).
    let sparse = u("old_sparse");
    let create = |overwrite: bool| {
        let mut a = vec![
            "frame",
            "create",
            "in.raw",
            sparse.as_str(),
            "--sparse",
            "--typesize",
            "4",
            "--chunksize",
            "4000",
        ];
        if overwrite {
            a.push("--overwrite");
        }
        run_s3(&s, w, &a)
    };
    let (out, args) = create(false);
    assert_refused(
        &out,
        &args,
        &[
            &format!("{sparse} exists (a sparse Blosc2 frame, 5 objects, "),
            "add --overwrite",
        ],
    );
    assert_eq!(
        remote_snapshot(&s, "t/old_sparse"),
        remote_snapshot(&s, "t/sparse")
    );
    let (out, args) = create(true);
    assert_ok(&out, &args);
    let names: Vec<String> = remote_snapshot(&s, "t/old_sparse").into_keys().collect();
    assert_eq!(
        names,
        [
            "00000004.chunk",
            "00000005.chunk",
            "00000006.chunk",
            "chunks.b2frame"
        ],
        "new chunks above the old ones, the old ones deleted"
    );
    let (out, args) = run_s3(&s, w, &["frame", "extract", &sparse, "back.raw"]);
    assert_ok(&out, &args);
    assert_eq!(std::fs::read(w.join("back.raw")).unwrap(), pattern(10_000));
}
