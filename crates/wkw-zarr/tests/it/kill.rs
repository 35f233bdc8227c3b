//! Kill and resume: a child process converts a WKW mag to Zarr3 (and a Zarr3 array back to
//! WKW) and is SIGKILLed at pseudo-random moments after its first shard; the parent then
//! resumes the conversion, which must finish with exactly the bytes of an uninterrupted run.
//!
//! The test binary is its own child: `kill_child` does nothing unless `WKW_ZARR_KILL_CHILD`
//! is set (to `zarr3:SRC:DST` or `wkw:SRC:DST`).

use crate::common;

use std::path::Path;

use common::{TestResult, lz4_mag_and_its_zarr3, tree};
use testkit::{Lcg, run_and_kill};
use wkw_zarr::{ConvertOptions, Existing, Format, MARKER, convert};

const ENV: &str = "WKW_ZARR_KILL_CHILD";
const ROUNDS: usize = 6;

/// The child: converts with one thread, reporting every shard, until done or killed.
#[test]
fn kill_child() -> TestResult {
    let Ok(spec) = std::env::var(ENV) else {
        return Ok(());
    };
    let mut parts = spec.splitn(3, '|');
    let (Some(to), Some(src), Some(dst)) = (parts.next(), parts.next(), parts.next()) else {
        return Err("bad spec".into());
    };
    let to = if to == "zarr3" {
        Format::Zarr3
    } else {
        Format::Wkw
    };
    let options = ConvertOptions::default()
        .with_threads(1)
        .with_existing(Existing::Resume);
    convert(Path::new(src), Path::new(dst), to, &options, &|_| {
        testkit::kill_child_step_done();
    })?;
    Ok(())
}

#[test]
fn a_killed_conversion_resumes_to_the_bytes_of_an_uninterrupted_one() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (wkw_src, zarr_src) = lz4_mag_and_its_zarr3(dir.path())?;
    let mut rng = Lcg(0x5eed);
    for (to, src) in [(Format::Zarr3, &wkw_src), (Format::Wkw, &zarr_src)] {
        let clean = dir.path().join(format!("clean-{}", to.name()));
        convert(src, &clean, to, &ConvertOptions::default(), &|_| {})?;
        let want = tree(&clean)?;
        let mut interrupted = 0;
        for round in 0..ROUNDS {
            let dst = dir.path().join(format!("dst-{}-{round}", to.name()));
            let spec = format!("{}|{}|{}", to.name(), src.display(), dst.display());
            run_and_kill("kill::kill_child", ENV, &spec, &mut rng);
            if dst.join(MARKER).exists() {
                interrupted += 1;
            }
            let resume = ConvertOptions::default().with_existing(Existing::Resume);
            convert(src, &dst, to, &resume, &|_| {})?;
            assert_eq!(tree(&dst)?, want, "{to:?} round {round}");
        }
        println!("{to:?}: {interrupted} of {ROUNDS} runs were killed before they finished");
    }
    Ok(())
}
