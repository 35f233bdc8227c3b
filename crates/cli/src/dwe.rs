//! `scifmt dwe …`.

use std::path::Path;

use dwe_format::{Dims, DweFile, Layout, OpenOptions, WriteLayout};
use serde_json::{Map, Value, json};

use crate::util::{At, CliResult, Fail, Output, print_object, progress, read_input};

fn open(path: &Path) -> CliResult<DweFile<Vec<u8>>> {
    OpenOptions::new().read_file(path).at(path)
}

/// Layout, header and model sizes of a `.dwe` file.
pub(crate) fn info_map(path: &Path) -> CliResult<Map<String, Value>> {
    let f = open(path)?;
    let h = f.header();
    let mut m = Map::new();
    m.insert("format".into(), json!("dwe"));
    let layout = match f.layout() {
        Layout::Block => "block",
        Layout::Stream => "stream",
        _ => "other",
    };
    m.insert("layout".into(), json!(layout));
    m.insert("file_len".into(), json!(f.as_bytes().len()));
    m.insert("major_version".into(), json!(dwe_format::MAJOR_VERSION));
    m.insert("minor_version".into(), json!(h.minor_version));
    m.insert("file_size_words".into(), json!(h.file_size));
    let section = match f.layout() {
        Layout::Block => "meta_size",
        _ => "jump_table_address",
    };
    m.insert(section.into(), json!(h.section_address));
    m.insert("num_timesteps".into(), json!(h.num_timesteps));
    m.insert("vocab_size".into(), json!(h.vocab_size));
    m.insert("embedding_dim".into(), json!(h.embedding_dim));
    let interval = match f.layout() {
        Layout::Block => "chunk_size",
        _ => "jump_interval",
    };
    m.insert(interval.into(), json!(h.interval));
    m.insert("scale_factor".into(), json!(h.scale_factor));
    m.insert(
        "scale_factor_bits".into(),
        json!(format!("{:08x}", h.scale_factor.to_bits())),
    );
    let sizes: Vec<Option<usize>> = (0..f.num_timesteps())
        .map(|t| f.model(t).map(|e| e.symbols().len()))
        .collect();
    m.insert("model_num_symbols".into(), json!(sizes));
    Ok(m)
}

/// `dwe info FILE [--json]`.
pub(crate) fn info(path: &Path, json: bool) -> CliResult {
    print_object(info_map(path)?, json);
    Ok(())
}

/// `dwe decode FILE OUT`: time step by time step.
pub(crate) fn decode(path: &Path, output: &Path) -> CliResult {
    let f = open(path)?;
    let t_count = f.num_timesteps();
    let bar = progress(u64::from(t_count), "decode");
    let mut out = Output::create(output)?;
    let mut bytes = Vec::new();
    for t in 0..t_count {
        let values = f.timestep(t).map_err(|e| {
            Fail::input(
                path,
                format!("time step {t}: {}", crate::util::describe(&e)),
            )
        })?;
        bytes.clear();
        bytes.extend(values.iter().flat_map(|v| v.to_le_bytes()));
        out.write(&bytes)?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    out.commit()
}

/// `dwe vector FILE --word W --t T [--f32]`.
pub(crate) fn vector(path: &Path, word: u32, t: u32, as_f32: bool) -> CliResult {
    let f = open(path)?;
    let mut s = String::new();
    if as_f32 {
        for v in f.vector_f32(word, t).at(path)? {
            s.push_str(&format!("{v}\n"));
        }
    } else {
        for v in f.vector(word, t).at(path)? {
            s.push_str(&format!("{v}\n"));
        }
    }
    print!("{s}");
    Ok(())
}

/// `dwe related FILE --words … --t T --amt N`: one line per target.
pub(crate) fn related(path: &Path, words: &[u32], t: u32, amt: usize) -> CliResult {
    let f = open(path)?;
    if amt == 0 {
        return Err(Fail::usage("--amt must be at least 1"));
    }
    let ids = f.most_related_to_at_t(words, t, amt).at(path)?;
    for row in ids.chunks(amt) {
        let line: Vec<String> = row
            .iter()
            .map(|&w| {
                if w == u32::MAX {
                    "-".to_owned()
                } else {
                    w.to_string()
                }
            })
            .collect();
        println!("{}", line.join(" "));
    }
    Ok(())
}

/// `dwe trajectories FILE --words1 … --words2 …`: one line per pair, T values.
pub(crate) fn trajectories(path: &Path, words1: &[u32], words2: &[u32]) -> CliResult {
    if words1.len() != words2.len() {
        return Err(Fail::usage(format!(
            "--words1 has {} words, --words2 has {}: they form pairs",
            words1.len(),
            words2.len()
        )));
    }
    let f = open(path)?;
    let values = f.pairwise_trajectories(words1, words2).at(path)?;
    let t = usize::try_from(f.num_timesteps())
        .unwrap_or(usize::MAX)
        .max(1);
    for row in values.chunks(t) {
        let line: Vec<String> = row.iter().map(f32::to_string).collect();
        println!("{}", line.join(" "));
    }
    Ok(())
}

/// Arguments of `dwe create`.
#[derive(Debug)]
pub(crate) struct CreateArgs<'a> {
    pub(crate) input: &'a Path,
    pub(crate) output: &'a Path,
    pub(crate) shape: &'a [u32],
    pub(crate) scale: f32,
    pub(crate) chunk_size: Option<u32>,
    pub(crate) jump_interval: Option<u32>,
}

/// `dwe create IN.i16 OUT --shape T,V,K --scale S (--chunk-size C | --jump-interval J)`.
pub(crate) fn create(a: &CreateArgs<'_>) -> CliResult {
    let &[t, v, k] = a.shape else {
        return Err(Fail::usage(format!(
            "--shape needs T,V,K, got {} values",
            a.shape.len()
        )));
    };
    let layout = match (a.chunk_size, a.jump_interval) {
        (Some(c), None) => WriteLayout::Block { chunk_size: c },
        (None, Some(j)) => WriteLayout::Stream { jump_interval: j },
        _ => {
            return Err(Fail::usage(
                "give exactly one of --chunk-size and --jump-interval",
            ));
        }
    };
    let bytes = read_input(a.input)?;
    let want = [u64::from(v), u64::from(k), 2]
        .iter()
        .try_fold(u64::from(t), |a, &b| a.checked_mul(b));
    if want != Some(bytes.len() as u64) {
        let want = want.map_or_else(|| "more than 2^64".to_owned(), |w| w.to_string());
        return Err(Fail::input(
            a.input,
            format!(
                "holds {} bytes, shape {t},{v},{k} of i16 needs {want}",
                bytes.len()
            ),
        ));
    }
    let values: Vec<i16> = bytes
        .chunks_exact(2)
        .map(|p| {
            i16::from_le_bytes([
                p.first().copied().unwrap_or(0),
                p.get(1).copied().unwrap_or(0),
            ])
        })
        .collect();
    // Two steps per time step: its entropy model, then its encoding.
    let bar = progress(2 * u64::from(t), "encode");
    let result = dwe_format::write_file_with_progress(
        a.output,
        &values,
        Dims::new(t, v, k),
        a.scale,
        layout,
        false,
        &mut |done, _| bar.set_position(done),
    );
    bar.finish_and_clear();
    result.map_err(|e| match e {
        dwe_format::Error::Io(_) => Fail::input(a.output, crate::util::describe(&e)),
        other => Fail::input(a.input, crate::util::describe(&other)),
    })
}
