//! `scifmt dwe …`: `.dwe` compressed dynamic word embeddings.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use dwe_format::{Dims, DweFile, Layout, OpenOptions, WriteLayout};
use serde_json::{Map, Number, Value, json};

use crate::fail::{At, CliResult, Fail, describe};
use crate::guard::{OverwriteFlag, file_output};
use crate::inout::{Output, in_name, need_path, read_whole, write_output};
use crate::print::{JsonFlag, emit, emit_json, emit_object, to_object};
use crate::progress::progress;

/// `scifmt dwe`.
#[derive(Debug, Subcommand)]
pub(crate) enum Cmd {
    /// Print layout (block|stream), header and per-time-step model sizes.
    #[command(
        after_help = "Examples:\n  scifmt dwe info words.dwe --json\n  scifmt dwe info https://example.org/words.dwe"
    )]
    Info(InfoArgs),
    /// Write all values: i16 little-endian, shape (T, V, K), C order.
    #[command(
        after_help = "Examples:\n  scifmt dwe decode words.dwe values.i16\n  cat words.dwe | scifmt dwe decode - - | sha256sum\n  scifmt dwe decode gs://bucket/words.dwe values.i16"
    )]
    Decode(DecodeArgs),
    /// Print one embedding vector, one value per line.
    #[command(after_help = "Example:\n  scifmt dwe vector words.dwe --word 12 --t 3 --f32")]
    Vector(VectorArgs),
    /// For each target word, the AMT most related words at time step T (one line per target,
    /// `WORD: RELATED…`; `-` marks ranks the vocabulary cannot fill).
    #[command(after_help = "Example:\n  scifmt dwe related words.dwe --words 0,2 --t 0 --amt 5")]
    Related(RelatedArgs),
    /// Dot-product trajectories of word pairs: one line per pair, T values.
    #[command(
        after_help = "Example:\n  scifmt dwe trajectories words.dwe --words1 0,3 --words2 99,2"
    )]
    Trajectories(TrajectoriesArgs),
    /// Encode i16 little-endian values of shape (T, V, K) (C order) into a .dwe file.
    #[command(
        after_help = "Example:\n  scifmt dwe create values.i16 words.dwe --shape 6,100,16 --scale 0.015074313 --jump-interval 20\n  scifmt dwe create values.i16 s3://bucket/words.dwe --shape 6,100,16 --scale 0.015074313 --chunk-size 20"
    )]
    Create(CreateArgs),
}

impl Cmd {
    /// Runs the subcommand.
    pub(crate) fn run(self) -> CliResult {
        match self {
            Self::Info(a) => emit_object(info_map(&a.file)?, a.json),
            Self::Decode(a) => decode(&a),
            Self::Vector(a) => vector(&a),
            Self::Related(a) => related(&a),
            Self::Trajectories(a) => trajectories(&a),
            Self::Create(a) => create(&a),
        }
    }
}

/// `dwe info`.
#[derive(Debug, Args)]
pub(crate) struct InfoArgs {
    /// .dwe file.
    file: PathBuf,
    #[command(flatten)]
    json: JsonFlag,
}

/// `dwe decode`.
#[derive(Debug, Args)]
pub(crate) struct DecodeArgs {
    /// .dwe file (`-`: stdin).
    file: PathBuf,
    /// Output file (`-`: stdout).
    output: PathBuf,
    #[command(flatten)]
    overwrite: OverwriteFlag,
}

/// `dwe vector`.
#[derive(Debug, Args)]
pub(crate) struct VectorArgs {
    /// .dwe file.
    file: PathBuf,
    /// Word index.
    #[arg(long)]
    word: u32,
    /// Time step.
    #[arg(long)]
    t: u32,
    /// Print f32 values (value × scale_factor) instead of i16.
    #[arg(long)]
    f32: bool,
    #[command(flatten)]
    json: JsonFlag,
}

/// `dwe related`.
#[derive(Debug, Args)]
pub(crate) struct RelatedArgs {
    /// .dwe file.
    file: PathBuf,
    /// Target words W1,W2,...
    #[arg(long, value_delimiter = ',', required = true)]
    words: Vec<u32>,
    /// Time step.
    #[arg(long)]
    t: u32,
    /// Words per target.
    #[arg(long)]
    amt: usize,
    #[command(flatten)]
    json: JsonFlag,
}

/// `dwe trajectories`.
#[derive(Debug, Args)]
pub(crate) struct TrajectoriesArgs {
    /// First words of the pairs.
    #[arg(long, value_delimiter = ',', required = true)]
    words1: Vec<u32>,
    /// Second words of the pairs.
    #[arg(long, value_delimiter = ',', required = true)]
    words2: Vec<u32>,
    /// .dwe file.
    file: PathBuf,
    #[command(flatten)]
    json: JsonFlag,
}

/// `dwe create`.
#[derive(Debug, Args)]
pub(crate) struct CreateArgs {
    /// Raw i16 values (`-`: stdin).
    input: PathBuf,
    /// .dwe file to write.
    output: PathBuf,
    /// T,V,K.
    #[arg(long, value_delimiter = ',', required = true)]
    shape: Vec<u32>,
    /// scale_factor (f32).
    #[arg(long)]
    scale: f32,
    /// Block layout with this many words per chunk (must divide V).
    #[arg(
        long,
        value_name = "C",
        group = "layout",
        required_unless_present = "jump_interval"
    )]
    chunk_size: Option<u32>,
    /// Stream layout with a jump-table row every J words.
    #[arg(long, value_name = "J", group = "layout")]
    jump_interval: Option<u32>,
    #[command(flatten)]
    overwrite: OverwriteFlag,
}

/// Reads and opens a `.dwe` file (stdin for `-`), at most `dwe_format::Limits`'
/// `max_file_bytes` as the library reads files.
fn open(path: &Path) -> CliResult<DweFile<Vec<u8>>> {
    let limit = dwe_format::Limits::default().max_file_bytes;
    let bytes = read_whole(path, limit, "the most a .dwe file may have")?;
    OpenOptions::new().open(bytes).at(in_name(path))
}

/// An f32 as a JSON number with the digits Rust prints for it (the shortest decimal that
/// reads back as the same f32), or null if it is not finite.
fn f32_json(v: f32) -> Value {
    v.to_string()
        .parse::<f64>()
        .ok()
        .and_then(Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

/// `info` on a `.dwe` file: layout, header and model sizes. The header fields are
/// `dwe_format::Header`'s serde fields under the names of the layout at hand (word 4 is
/// `meta_size` or `jump_table_address`, word 8 `chunk_size` or `jump_interval`; `file_size` is
/// in u32 words).
pub(crate) fn info_map(path: &Path) -> CliResult<Map<String, Value>> {
    let f = open(path)?;
    let h = f.header();
    let block = f.layout() == Layout::Block;
    let mut m = Map::new();
    m.insert("format".into(), json!("dwe"));
    m.insert(
        "layout".into(),
        serde_json::to_value(f.layout()).unwrap_or(Value::Null),
    );
    m.insert("file_len".into(), json!(f.as_bytes().len()));
    m.insert("major_version".into(), json!(dwe_format::MAJOR_VERSION));
    for (k, v) in to_object(h)? {
        let key = match (k.as_str(), block) {
            ("file_size", _) => "file_size_words".to_owned(),
            ("section_address", true) => "meta_size".to_owned(),
            ("section_address", false) => "jump_table_address".to_owned(),
            ("interval", true) => "chunk_size".to_owned(),
            ("interval", false) => "jump_interval".to_owned(),
            _ => k,
        };
        m.insert(key, v);
    }
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

/// `dwe decode FILE OUT`: time step by time step.
fn decode(a: &DecodeArgs) -> CliResult {
    let overwrite = a.overwrite.overwrite;
    file_output(&[&a.file], &a.output, overwrite)?;
    let f = open(&a.file)?;
    let t_count = f.num_timesteps();
    let bar = progress(u64::from(t_count), "decode");
    let mut out = Output::create(&a.output, overwrite)?;
    let mut bytes = Vec::new();
    for t in 0..t_count {
        let values = f.timestep(t).map_err(|e| {
            Fail::input(in_name(&a.file), format!("time step {t}: {}", describe(&e)))
        })?;
        bytes.clear();
        bytes.extend(values.iter().flat_map(|v| v.to_le_bytes()));
        out.write(&bytes)?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    out.commit()
}

/// `dwe vector FILE --word W --t T [--f32]`: one value per line, or
/// `{"word", "t", "values"}`.
fn vector(a: &VectorArgs) -> CliResult {
    let f = open(&a.file)?;
    let (text, values): (Vec<String>, Vec<Value>) = if a.f32 {
        let v = f.vector_f32(a.word, a.t).at(&a.file)?;
        (
            v.iter().map(f32::to_string).collect(),
            v.into_iter().map(f32_json).collect(),
        )
    } else {
        let v = f.vector(a.word, a.t).at(&a.file)?;
        (
            v.iter().map(i16::to_string).collect(),
            v.into_iter().map(Value::from).collect(),
        )
    };
    if a.json.json {
        return emit_json(&json!({"word": a.word, "t": a.t, "values": values}));
    }
    emit(&text.iter().map(|v| format!("{v}\n")).collect::<String>())
}

/// `dwe related FILE --words … --t T --amt N`: one line per target (`WORD: RELATED…`), or an array of
/// `{"word", "related"}` (`-` / null for ranks the vocabulary cannot fill).
fn related(a: &RelatedArgs) -> CliResult {
    let f = open(&a.file)?;
    if a.amt == 0 {
        return Err(Fail::usage("--amt must be at least 1"));
    }
    let ids = f.most_related_to_at_t(&a.words, a.t, a.amt).at(&a.file)?;
    let rows: Vec<Vec<Option<u32>>> = ids
        .chunks(a.amt)
        .map(|row| row.iter().map(|&w| (w != u32::MAX).then_some(w)).collect())
        .collect();
    if a.json.json {
        let rows: Vec<Value> = a
            .words
            .iter()
            .zip(&rows)
            .map(|(w, r)| json!({"word": w, "related": r}))
            .collect();
        return emit_json(&Value::Array(rows));
    }
    let mut text = String::new();
    for (word, row) in a.words.iter().zip(&rows) {
        let line: Vec<String> = row
            .iter()
            .map(|w| w.map_or_else(|| "-".to_owned(), |w| w.to_string()))
            .collect();
        text.push_str(&format!("{word}: {}\n", line.join(" ")));
    }
    emit(&text)
}

/// `dwe trajectories FILE --words1 … --words2 …`: one line per pair, T values, or an array of
/// `{"word1", "word2", "values"}`.
fn trajectories(a: &TrajectoriesArgs) -> CliResult {
    if a.words1.len() != a.words2.len() {
        return Err(Fail::usage(format!(
            "--words1 has {} words, --words2 has {}: they form pairs",
            a.words1.len(),
            a.words2.len()
        )));
    }
    let f = open(&a.file)?;
    let values = f.pairwise_trajectories(&a.words1, &a.words2).at(&a.file)?;
    let t = usize::try_from(f.num_timesteps())
        .unwrap_or(usize::MAX)
        .max(1);
    if a.json.json {
        let rows: Vec<Value> = a
            .words1
            .iter()
            .zip(&a.words2)
            .zip(values.chunks(t))
            .map(|((w1, w2), row)| {
                let vals: Vec<Value> = row.iter().copied().map(f32_json).collect();
                json!({"word1": w1, "word2": w2, "values": vals})
            })
            .collect();
        return emit_json(&Value::Array(rows));
    }
    let mut text = String::new();
    for row in values.chunks(t) {
        let line: Vec<String> = row.iter().map(f32::to_string).collect();
        text.push_str(&line.join(" "));
        text.push('\n');
    }
    emit(&text)
}

/// `dwe create IN.i16 OUT --shape T,V,K --scale S (--chunk-size C | --jump-interval J)`.
fn create(a: &CreateArgs) -> CliResult {
    need_path(&a.output, "the output of dwe create")?;
    let overwrite = a.overwrite.overwrite;
    file_output(&[&a.input], &a.output, overwrite)?;
    let &[t, v, k] = a.shape.as_slice() else {
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
    let input = &in_name(&a.input);
    let want = [u64::from(v), u64::from(k), 2]
        .iter()
        .try_fold(u64::from(t), |a, &b| a.checked_mul(b));
    let Some(want) = want else {
        return Err(Fail::input(
            input,
            format!("shape {t},{v},{k} of i16 needs more than 2^64 bytes"),
        ));
    };
    let bytes = read_whole(
        &a.input,
        want,
        &format!("shape {t},{v},{k} of i16 needs {want}"),
    )?;
    if bytes.len() as u64 != want {
        return Err(Fail::input(
            input,
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
    let result = dwe_format::encode_with_progress(
        &values,
        Dims::new(t, v, k),
        a.scale,
        layout,
        &mut |done, _| bar.set_position(done),
    );
    bar.finish_and_clear();
    let bytes = result.map_err(|e| Fail::input(input, describe(&e)))?;
    // Written atomically (a URL: uploaded when complete), never over an existing file or
    // object without --overwrite.
    write_output(&a.output, &bytes, overwrite)
}
