//! `cargo xtask conformance [--live]`: every crate checked against reference-made fixtures.
//!
//! Each format has a section module that returns rows (check, cases, passed, failed). The task
//! prints one table and fails if any row has failures. `--live` additionally drives the
//! reference implementations through Python where a section supports it (skipped with a message
//! when Python is unavailable).
//!
//! A fixture oracle is checked in one place. The manifests of blosc-chunk, blosc2-frame and wkw
//! (`testdata/blosc/manifest.json`, `testdata/wkw/expected.json`) are checked by those crates'
//! `tests/it/fixtures.rs` in `cargo test` (stricter, and also in the feature sets of `cargo xtask
//! features`), so their sections here keep only what the crate tests do not check, and the live
//! round trips.

mod blosc1_live;
mod blosc2_frame;
mod blosc_chunk;
mod blosc_chunk_live;
mod dwe;
mod morton;
mod offset;
mod wkw;
mod wkw_zarr;
mod zarr_live;

use std::path::PathBuf;

use crate::util::project_root;

/// What a section gets.
#[derive(Debug)]
pub(crate) struct Ctx {
    /// Workspace root.
    pub(crate) root: PathBuf,
    /// `--live`: also round-trip through the reference implementations.
    pub(crate) live: bool,
}

impl Ctx {
    /// `testdata/<rel>` under the workspace root.
    pub(crate) fn testdata(&self, rel: &str) -> PathBuf {
        self.root.join("testdata").join(rel)
    }
}

/// One line of the summary table.
#[derive(Debug, Default)]
pub(crate) struct Row {
    pub(crate) section: &'static str,
    pub(crate) check: String,
    pub(crate) cases: usize,
    pub(crate) passed: usize,
    pub(crate) failed: usize,
    /// First few failure descriptions, printed below the table.
    pub(crate) failures: Vec<String>,
}

impl Row {
    pub(crate) fn new(section: &'static str, check: impl Into<String>) -> Self {
        Self {
            section,
            check: check.into(),
            ..Self::default()
        }
    }

    /// Records one case: `Ok(())` passes, `Err(why)` fails and keeps the reason.
    pub(crate) fn case(&mut self, name: impl std::fmt::Display, result: Result<(), String>) {
        self.cases += 1;
        match result {
            Ok(()) => self.passed += 1,
            Err(why) => {
                self.failed += 1;
                if self.failures.len() < 10 {
                    self.failures.push(format!("{name}: {why}"));
                }
            }
        }
    }

    /// Records a boolean case.
    pub(crate) fn check(&mut self, name: impl std::fmt::Display, ok: bool) {
        self.case(name, if ok { Ok(()) } else { Err("mismatch".into()) });
    }
}

/// A section: name and function producing its rows.
type Section = (&'static str, fn(&Ctx) -> Vec<Row>);

const SECTIONS: &[Section] = &[
    ("morton", morton::rows),
    ("blosc-chunk", blosc_chunk::rows),
    ("blosc2-frame", blosc2_frame::rows),
    ("wkw", wkw::rows),
    ("wkw-zarr", wkw_zarr::rows),
    ("offset", offset::rows),
    ("dwe", dwe::rows),
];

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut live = false;
    let mut only: Option<&str> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--live" => live = true,
            "--only" => only = it.next().map(String::as_str),
            other => {
                return Err(format!(
                    "unexpected argument `{other}` (expected --live, --only SECTION)"
                ));
            }
        }
    }
    let ctx = Ctx {
        root: project_root(),
        live,
    };
    let mut rows = Vec::new();
    for (name, section) in SECTIONS {
        if only.is_some_and(|o| o != *name) {
            continue;
        }
        eprintln!("conformance: {name} …");
        rows.extend(section(&ctx));
    }
    print_table(&rows);
    let failed: usize = rows.iter().map(|r| r.failed).sum();
    let empty = rows.iter().filter(|r| r.cases == 0).count();
    if failed > 0 || empty > 0 {
        return Err(format!(
            "{failed} failed case(s), {empty} check(s) with no cases"
        ));
    }
    Ok(())
}

fn print_table(rows: &[Row]) {
    let w = rows
        .iter()
        .map(|r| r.section.len() + r.check.len() + 2)
        .max()
        .unwrap_or(10)
        .max(10);
    println!(
        "{:<w$} {:>8} {:>8} {:>8}",
        "check", "cases", "passed", "failed"
    );
    println!("{}", "-".repeat(w + 27));
    for r in rows {
        let name = format!("{}: {}", r.section, r.check);
        println!("{name:<w$} {:>8} {:>8} {:>8}", r.cases, r.passed, r.failed);
    }
    let (c, p, f) = rows.iter().fold((0, 0, 0), |(c, p, f), r| {
        (c + r.cases, p + r.passed, f + r.failed)
    });
    println!("{}", "-".repeat(w + 27));
    println!("{:<w$} {c:>8} {p:>8} {f:>8}", "total");
    println!("{p} passed, {f} failed");
    for r in rows.iter().filter(|r| !r.failures.is_empty()) {
        println!("\nfailures in {}: {}", r.section, r.check);
        for why in &r.failures {
            println!("  {why}");
        }
    }
}
