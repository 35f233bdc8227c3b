//! dwe-format: the reference-made `.dwe` fixtures (stream files from the upstream master
//! builder, block files from the 2020 spec-era builder) — checksums, decoding to the recorded
//! inputs and residuals, layout detection, integrity, byte-identical re-encoding, and the
//! reference query outputs listed in `testdata/dwe/EXPECTED.md`.

use std::path::{Path, PathBuf};

use dwe_format::{Dims, DweFile, Layout, WriteLayout, encode};
use sha2::{Digest, Sha256};

use super::{Ctx, Row};

const SECTION: &str = "dwe";

struct Fixture {
    name: String,
    dims: Dims,
    stream: PathBuf,
    jump_interval: u32,
    block: PathBuf,
    chunk_size: u32,
}

pub(crate) fn rows(ctx: &Ctx) -> Vec<Row> {
    let dir = ctx.testdata("dwe");
    let mut checksums = Row::new(SECTION, "fixture sha256 (SHA256SUMS)");
    checksum_rows(&dir, &mut checksums);
    let mut decode = Row::new(SECTION, "files decode to inputs/*.i16 and *.diffs.i16");
    let mut detect = Row::new(SECTION, "layout detected structurally");
    let mut verify = Row::new(SECTION, "integrity (end states, jump-row continuity)");
    let mut access = Row::new(SECTION, "random access vector(word, t) == inputs");
    let mut write = Row::new(SECTION, "writer byte-identical to reference files");
    let mut queries = Row::new(SECTION, "EXPECTED.md query outputs reproduced");
    let fixtures = match fixtures(&dir) {
        Ok(f) => f,
        Err(e) => {
            decode.case("fixture discovery", Err(e));
            return vec![checksums, decode];
        }
    };
    for f in &fixtures {
        let values = read_i16(&dir.join(format!("inputs/{}.i16", f.name)));
        let diffs = read_i16(&dir.join(format!("inputs/{}.diffs.i16", f.name)));
        for (path, layout, param) in [
            (
                &f.stream,
                Layout::Stream,
                WriteLayout::Stream {
                    jump_interval: f.jump_interval,
                },
            ),
            (
                &f.block,
                Layout::Block,
                WriteLayout::Block {
                    chunk_size: f.chunk_size,
                },
            ),
        ] {
            let label = path
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            let bytes = match std::fs::read(path) {
                Ok(b) => b,
                Err(e) => {
                    decode.case(&label, Err(e.to_string()));
                    continue;
                }
            };
            let file = match DweFile::from_bytes(&bytes[..]) {
                Ok(file) => file,
                Err(e) => {
                    decode.case(&label, Err(e.to_string()));
                    continue;
                }
            };
            detect.check(&label, file.layout() == layout);
            decode.case(
                &label,
                match (file.decode_all(), file.all_residuals(), &values, &diffs) {
                    (Ok(x), Ok(r), Ok(v), Ok(d)) if x == *v && r == *d => Ok(()),
                    (Err(e), _, _, _) | (_, Err(e), _, _) => Err(e.to_string()),
                    _ => Err("mismatch".into()),
                },
            );
            verify.case(&label, file.verify().map_err(|e| e.to_string()));
            if let Ok(v) = &values {
                let k = f.dims.embedding_dim as usize;
                let vk = f.dims.vocab_size as usize * k;
                let ok = (0..f.dims.num_timesteps).all(|t| {
                    (0..f.dims.vocab_size).all(|w| {
                        let at = t as usize * vk + w as usize * k;
                        file.vector(w, t).ok().as_deref() == v.get(at..at + k)
                    })
                });
                access.check(&label, ok);
                let ours = encode(v, f.dims, file.scale_factor(), param);
                write.case(
                    &label,
                    match ours {
                        Ok(o) if o == bytes => Ok(()),
                        Ok(_) => Err("bytes differ".into()),
                        Err(e) => Err(e.to_string()),
                    },
                );
            }
        }
    }
    query_rows(&dir, &fixtures, &mut queries);
    vec![checksums, decode, detect, verify, access, write, queries]
}

fn read_i16(path: &Path) -> Result<Vec<i16>, String> {
    let b = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(b.chunks_exact(2)
        .map(|c| i16::from_le_bytes([c[0], c[1]]))
        .collect())
}

fn checksum_rows(dir: &Path, row: &mut Row) {
    let sums = match std::fs::read_to_string(dir.join("SHA256SUMS")) {
        Ok(s) => s,
        Err(e) => return row.case("SHA256SUMS", Err(e.to_string())),
    };
    for line in sums.lines().filter(|l| !l.trim().is_empty()) {
        let Some((want, name)) = line.split_once("  ") else {
            row.case(line, Err("malformed line".into()));
            continue;
        };
        let got = std::fs::read(dir.join(name.trim_start_matches("./")))
            .map(|b| hex::encode(Sha256::digest(&b)));
        row.case(
            name,
            match got {
                Ok(g) if g == want => Ok(()),
                Ok(g) => Err(format!("sha256 {g}")),
                Err(e) => Err(e.to_string()),
            },
        );
    }
}

/// `NAME_<letter>N.dwe` → (NAME, N)
fn split_param(file: &str, letter: char) -> Option<(String, u32)> {
    let stem = file.strip_suffix(".dwe")?;
    let (name, p) = stem.rsplit_once('_')?;
    Some((name.to_owned(), p.strip_prefix(letter)?.parse().ok()?))
}

fn list(dir: &Path) -> Result<Vec<String>, String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    names.sort();
    Ok(names)
}

fn fixtures(dir: &Path) -> Result<Vec<Fixture>, String> {
    let blocks = list(&dir.join("block"))?;
    let mut out = Vec::new();
    for s in list(&dir.join("stream"))? {
        let (name, jump_interval) = split_param(&s, 'j').ok_or(format!("bad name {s}"))?;
        let (b, chunk_size) = blocks
            .iter()
            .find_map(|b| {
                split_param(b, 'c')
                    .filter(|p| p.0 == name)
                    .map(|p| (b.clone(), p.1))
            })
            .ok_or(format!("no block file for {name}"))?;
        let d: Vec<u32> = name
            .split('_')
            .skip(1)
            .filter_map(|x| x.parse().ok())
            .collect();
        let [t, v, k] = d[..] else {
            return Err(format!("no dimensions in {name}"));
        };
        out.push(Fixture {
            dims: Dims::new(t, v, k),
            stream: dir.join("stream").join(&s),
            jump_interval,
            block: dir.join("block").join(b),
            chunk_size,
            name,
        });
    }
    Ok(out)
}

/// Integers of a `[a, b, c]` list.
fn ints(s: &str) -> Vec<i64> {
    s.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .filter_map(|x| x.trim().parse().ok())
        .collect()
}

/// `name=[..]` or `name=3` inside a call's argument text.
fn arg(args: &str, name: &str) -> Vec<i64> {
    let Some(i) = args.find(&format!("{name}=")) else {
        return Vec::new();
    };
    let rest = &args[i + name.len() + 1..];
    if rest.starts_with('[') {
        ints(&rest[..rest.find(']').map_or(rest.len(), |e| e + 1)])
    } else {
        ints(rest.split(',').next().unwrap_or(""))
    }
}

fn to_u32s(v: &[i64]) -> Vec<u32> {
    v.iter().filter_map(|&x| u32::try_from(x).ok()).collect()
}

fn query_rows(dir: &Path, fixtures: &[Fixture], row: &mut Row) {
    let text = match std::fs::read_to_string(dir.join("EXPECTED.md")) {
        Ok(t) => t,
        Err(e) => return row.case("EXPECTED.md", Err(e.to_string())),
    };
    let mut dataset = "";
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if let Some(rest) = line.strip_prefix("## `") {
            dataset = rest.split('`').next().unwrap_or("");
            continue;
        }
        let Some(rest) = line.strip_prefix("- reference `") else {
            continue;
        };
        let Some((call, tail)) = rest.split_once('`') else {
            continue;
        };
        let Some((fname, args)) = call.split_once('(') else {
            continue;
        };
        let args = args.trim_end_matches(')');
        let want = tail.rsplit_once(": ").map_or("", |x| x.1);
        let Some(f) = fixtures.iter().find(|f| f.name == dataset) else {
            continue;
        };
        for path in [&f.stream, &f.block] {
            let name = format!(
                "{dataset} {call} ({})",
                path.parent()
                    .and_then(Path::file_name)
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
            );
            let file = match std::fs::read(path)
                .map_err(|e| e.to_string())
                .and_then(|b| DweFile::from_bytes(b).map_err(|e| e.to_string()))
            {
                Ok(file) => file,
                Err(e) => {
                    row.case(&name, Err(e));
                    continue;
                }
            };
            let result = match fname {
                "pairwise_trajectories" => {
                    let bits_line = lines
                        .get(i + 1)
                        .and_then(|l| l.split_once("bit patterns: "))
                        .map_or("", |x| x.1);
                    let want_bits: Vec<u32> = bits_line
                        .trim_matches(|c| c == '[' || c == ']')
                        .split(',')
                        .filter_map(|h| u32::from_str_radix(h.trim(), 16).ok())
                        .collect();
                    file.pairwise_trajectories(
                        &to_u32s(&arg(args, "words1")),
                        &to_u32s(&arg(args, "words2")),
                    )
                    .map(|v| {
                        v.iter().map(|x| x.to_bits()).collect::<Vec<_>>() == want_bits
                            && !want_bits.is_empty()
                    })
                }
                "most_related_to_at_t" => {
                    let t = arg(args, "t")
                        .first()
                        .and_then(|&t| u32::try_from(t).ok())
                        .unwrap_or(u32::MAX);
                    let amt = arg(args, "amt")
                        .first()
                        .and_then(|&a| usize::try_from(a).ok())
                        .unwrap_or(0);
                    file.most_related_to_at_t(&to_u32s(&arg(args, "target_words")), t, amt)
                        .map(|v| v == to_u32s(&ints(want)))
                }
                "largest_changes_wrt" => {
                    let a = |n| {
                        arg(args, n)
                            .first()
                            .and_then(|&x| usize::try_from(x).ok())
                            .unwrap_or(0)
                    };
                    let target = arg(args, "target_word")
                        .first()
                        .and_then(|&x| u32::try_from(x).ok())
                        .unwrap_or(u32::MAX);
                    file.largest_changes_wrt(
                        target,
                        a("amt"),
                        a("min_increasing"),
                        a("min_decreasing"),
                    )
                    .map(|v| v == to_u32s(&ints(want)))
                }
                other => {
                    row.case(&name, Err(format!("unknown call {other}")));
                    continue;
                }
            };
            row.case(
                &name,
                match result {
                    Ok(true) => Ok(()),
                    Ok(false) => Err("mismatch".into()),
                    Err(e) => Err(e.to_string()),
                },
            );
        }
    }
}
