//! `scifmt wkw …`: WKW datasets.

mod boxes;

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand, ValueEnum};
use serde_json::{Map, Value, json};
use wkw::{BlockType, Dataset, Header, VoxelType};

use crate::fail::{At, CliResult, Fail, describe};
use crate::inout::need_path;
use crate::print::{JsonFlag, emit, emit_json, emit_object, fields_text, to_object};
use crate::progress::progress;

/// `scifmt wkw`.
#[derive(Debug, Subcommand)]
pub(crate) enum Cmd {
    /// Print the dataset header and its data files.
    #[command(after_help = "Example:\n  scifmt wkw info dataset/ --json")]
    Info(DatasetArgs),
    /// Create an empty dataset (header.wkw).
    #[command(
        after_help = "Example:\n  scifmt wkw create dataset/ --voxel-type u16 --channels 3 --block-type lz4"
    )]
    Create(CreateArgs),
    /// Read a box into OUT: the (C,X,Y,Z) array in Fortran (default) or C order.
    #[command(
        after_help = "Examples:\n  scifmt wkw read dataset/ box.raw --offset 0,0,0 --shape 64,64,32 --order c\n  scifmt wkw read dataset/ - --offset 0,0,0 --shape 64,64,32 | sha256sum"
    )]
    Read(boxes::ReadArgs),
    /// Write a box from IN (the (C,X,Y,Z) array in Fortran (default) or C order).
    #[command(
        after_help = "Examples:\n  scifmt wkw write dataset/ box.raw --offset 32,0,0 --shape 64,64,32\n  scifmt wkw read src/ - --offset 0,0,0 --shape 64,64,32 | scifmt wkw write dst/ - --offset 0,0,0 --shape 64,64,32"
    )]
    Write(boxes::WriteArgs),
    /// Convert every data file of SRC into a new dataset DST with another block type.
    #[command(
        after_help = "Example:\n  scifmt wkw compress raw_ds/ lz4_ds/ --block-type lz4hc --threads 4"
    )]
    Compress(CompressArgs),
    /// Check every data file (headers, jump tables, lengths, every block decodes).
    #[command(
        after_help = "Example:\n  scifmt wkw verify dataset/ --json\n\nExit status 1 when a file has a problem."
    )]
    Verify(DatasetArgs),
}

impl Cmd {
    /// Runs the subcommand.
    pub(crate) fn run(self) -> CliResult {
        match self {
            Self::Info(a) => info(&a),
            Self::Create(a) => create(&a),
            Self::Read(a) => boxes::read(&a),
            Self::Write(a) => boxes::write(&a),
            Self::Compress(a) => compress(&a),
            Self::Verify(a) => verify(&a),
        }
    }
}

/// `wkw info` and `wkw verify`.
#[derive(Debug, Args)]
pub(crate) struct DatasetArgs {
    /// Dataset root (holding header.wkw).
    dataset: PathBuf,
    #[command(flatten)]
    json: JsonFlag,
}

/// `wkw create`.
#[derive(Debug, Args)]
pub(crate) struct CreateArgs {
    /// Dataset root to create.
    dataset: PathBuf,
    /// Voxel type.
    #[arg(long, value_enum)]
    voxel_type: VoxelArg,
    /// Channels per voxel.
    #[arg(long, default_value_t = 1)]
    channels: u8,
    /// Voxels per block edge (power of two).
    #[arg(long, default_value_t = 32)]
    block_len: u32,
    /// Blocks per file edge (power of two).
    #[arg(long, default_value_t = 32)]
    file_len: u32,
    /// Block storage.
    #[arg(long, value_enum, default_value = "raw")]
    block_type: BlockArg,
}

/// `wkw compress`.
#[derive(Debug, Args)]
pub(crate) struct CompressArgs {
    /// Source dataset.
    src: PathBuf,
    /// New dataset (must not exist as a dataset).
    dst: PathBuf,
    /// Block type of DST.
    #[arg(long, value_enum, default_value = "lz4")]
    block_type: BlockArg,
    /// Worker threads (default: all cores).
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
}

/// A WKW voxel type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum VoxelArg {
    /// uint8
    U8,
    /// uint16
    U16,
    /// uint32
    U32,
    /// uint64
    U64,
    /// float32
    F32,
    /// float64
    F64,
    /// int8
    I8,
    /// int16
    I16,
    /// int32
    I32,
    /// int64
    I64,
}

/// A WKW block type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum BlockArg {
    /// Uncompressed.
    Raw,
    /// LZ4.
    Lz4,
    /// LZ4HC.
    Lz4hc,
}

fn block_type(b: BlockArg) -> BlockType {
    match b {
        BlockArg::Raw => BlockType::Raw,
        BlockArg::Lz4 => BlockType::Lz4,
        BlockArg::Lz4hc => BlockType::Lz4Hc,
    }
}

fn voxel_type(v: VoxelArg) -> VoxelType {
    match v {
        VoxelArg::U8 => VoxelType::U8,
        VoxelArg::U16 => VoxelType::U16,
        VoxelArg::U32 => VoxelType::U32,
        VoxelArg::U64 => VoxelType::U64,
        VoxelArg::F32 => VoxelType::F32,
        VoxelArg::F64 => VoxelType::F64,
        VoxelArg::I8 => VoxelType::I8,
        VoxelArg::I16 => VoxelType::I16,
        VoxelArg::I32 => VoxelType::I32,
        VoxelArg::I64 => VoxelType::I64,
    }
}

/// The header fields `info` prints: the format version, `Header`'s serde fields, then the
/// derived sizes (voxels per file edge, blocks per file, bytes per raw block).
fn header_fields(m: &mut Map<String, Value>, h: &Header) -> CliResult {
    m.insert("version".into(), json!(wkw::VERSION));
    m.extend(to_object(h)?);
    m.insert("file_len_vx".into(), json!(h.file_len_vx()));
    m.insert("blocks_per_file".into(), json!(h.blocks_per_file()));
    m.insert("block_bytes".into(), json!(h.block_bytes()));
    Ok(())
}

fn open(dataset: &Path) -> CliResult<Dataset> {
    Dataset::open(dataset).at(dataset)
}

/// `info` on a dataset: header and data files.
pub(crate) fn dataset_info(dataset: &Path) -> CliResult<Map<String, Value>> {
    let ds = open(dataset)?;
    let mut m = Map::new();
    m.insert("format".into(), json!("wkw-dataset"));
    header_fields(&mut m, ds.header())?;
    let files = ds.list_files().at(dataset)?;
    m.insert("num_files".into(), json!(files.len()));
    let names: Vec<String> = files
        .iter()
        .map(|(_, p)| {
            p.strip_prefix(dataset)
                .unwrap_or(p)
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    m.insert("files".into(), json!(names));
    Ok(m)
}

/// `info` on a single `.wkw` data file: header and, for compressed files, the jump-table
/// summary (stored bytes, smallest / largest block, ratio); nothing is decompressed.
pub(crate) fn file_info(path: &Path) -> CliResult<Map<String, Value>> {
    let info = wkw::inspect_file(path, &wkw::Limits::default()).at(path)?;
    let h = &info.header;
    let mut m = Map::new();
    m.insert("format".into(), json!("wkw-file"));
    m.insert("file_len_bytes".into(), json!(info.file_len));
    header_fields(&mut m, h)?;
    let stored = info.stored_block_bytes();
    m.insert("stored_block_bytes".into(), json!(stored));
    if let Some(lengths) = &info.block_lengths {
        let raw = h.blocks_per_file().saturating_mul(h.block_bytes());
        m.insert(
            "min_block_bytes".into(),
            json!(lengths.iter().min().copied().unwrap_or(0)),
        );
        m.insert(
            "max_block_bytes".into(),
            json!(lengths.iter().max().copied().unwrap_or(0)),
        );
        #[allow(clippy::cast_precision_loss, reason = "a ratio for display")]
        let ratio = if stored == 0 {
            0.0
        } else {
            raw as f64 / stored as f64
        };
        m.insert(
            "compression_ratio".into(),
            json!((ratio * 1000.0).round() / 1000.0),
        );
    }
    Ok(m)
}

/// `wkw info DATASET [--json]`.
fn info(a: &DatasetArgs) -> CliResult {
    emit_object(dataset_info(&a.dataset)?, a.json)
}

/// `wkw create DATASET …`.
fn create(a: &CreateArgs) -> CliResult {
    need_path(&a.dataset, "DATASET")?;
    let header = Header::new(
        voxel_type(a.voxel_type),
        a.channels,
        a.block_len,
        a.file_len,
        block_type(a.block_type),
    )
    .map_err(|e| Fail::usage(describe(&e)))?;
    Dataset::create(&a.dataset, header).at(&a.dataset)?;
    Ok(())
}

/// Runs `f` on a thread pool of `threads` workers (or the default pool).
fn with_threads<T>(threads: Option<usize>, f: impl FnOnce() -> T + Send) -> CliResult<T>
where
    T: Send,
{
    match threads {
        None => Ok(f()),
        Some(0) => Err(Fail::usage("--threads must be at least 1")),
        Some(n) => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .map_err(|e| Fail::usage(format!("cannot start {n} threads: {e}")))?;
            Ok(pool.install(f))
        }
    }
}

/// `wkw compress SRC DST [--block-type] [--threads]`.
fn compress(a: &CompressArgs) -> CliResult {
    need_path(&a.dst, "DST")?;
    if a.block_type == BlockArg::Raw {
        return Err(Fail::usage("--block-type must be lz4 or lz4hc"));
    }
    let total = open(&a.src)?.list_files().at(&a.src)?.len();
    let bar = progress(total as u64, "compress");
    let result = with_threads(a.threads, || {
        wkw::compress(
            &a.src,
            &a.dst,
            block_type(a.block_type),
            wkw::Options::default(),
            &|p: wkw::Progress<'_>| {
                bar.set_position(p.done as u64);
            },
        )
    })?;
    bar.finish_and_clear();
    result.at(&a.src)?;
    Ok(())
}

/// `wkw verify DATASET [--json]`: exit 1 if a file has a problem.
fn verify(a: &DatasetArgs) -> CliResult {
    let dataset = a.dataset.as_path();
    let total = open(dataset)?.list_files().at(dataset)?.len();
    let bar = progress(total as u64, "verify");
    let report = wkw::verify(dataset, wkw::Options::default(), &|p: wkw::Progress<'_>| {
        bar.set_position(p.done as u64);
    })
    .at(dataset)?;
    bar.finish_and_clear();
    // `FileReport`'s serde form: {"path", "index", "problem": message}.
    let problems = report
        .problems()
        .map(to_object)
        .collect::<CliResult<Vec<_>>>()?;
    let n_problems = problems.len();
    let files = report.files.len();
    if a.json.json {
        emit_json(&json!({"ok": report.is_ok(), "files": files, "problems": problems}))?;
    } else {
        let mut text = String::new();
        for p in &problems {
            let path = p.get("path").and_then(Value::as_str).unwrap_or("?");
            let why = p.get("problem").and_then(Value::as_str).unwrap_or("?");
            text.push_str(&format!("{path}: {why}\n"));
        }
        let mut summary = Map::new();
        summary.insert("files".into(), json!(files));
        summary.insert("problems".into(), json!(n_problems));
        text.push_str(&fields_text(&summary));
        emit(&text)?;
    }
    if report.is_ok() {
        Ok(())
    } else {
        Err(Fail::problems(format!(
            "{}: {n_problems} of {files} data files have problems",
            dataset.display(),
        )))
    }
}
