//! `scifmt wkw …`: WKW datasets.

mod boxes;

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand, ValueEnum};
use serde_json::{Map, Value, json};
use wkw::{
    ArrayView, ArrayViewMut, BlockType, Dataset, Header, RemoteDataset, RemoteOptions, VoxelType,
};

use crate::fail::{At, CliResult, Fail, describe};
use crate::guard::{DirKind, DirPlan, OverwriteFlag, Staging, dir_output};
use crate::inout::need_path;
use crate::print::{JsonFlag, emit, emit_json, emit_object, fields_text, to_object};
use crate::progress::progress;
use crate::remote;

/// `scifmt wkw`.
#[derive(Debug, Subcommand)]
pub(crate) enum Cmd {
    /// Print the dataset header and its data files.
    #[command(
        after_help = "Examples:\n  scifmt wkw info dataset/ --json\n  scifmt wkw info s3://bucket/volume --json"
    )]
    Info(DatasetArgs),
    /// Create an empty dataset (header.wkw).
    #[command(
        mut_arg("overwrite", |a| a.help("Replace an existing dataset (a local directory holding header.wkw, with all its data files): the new one is built beside it and replaces it in one step. Without it an existing dataset is refused; a directory that is not a dataset gets header.wkw added (never replaced)")),
        after_help = "Examples:\n  scifmt wkw create dataset/ --voxel-type u16 --channels 3 --block-type lz4\n  scifmt wkw create s3://bucket/volume --voxel-type u8 --block-type lz4"
    )]
    Create(CreateArgs),
    /// Read a box into OUT: the (C,X,Y,Z) array in Fortran (default) or C order.
    #[command(
        after_help = "Examples:\n  scifmt wkw read dataset/ box.raw --offset 0,0,0 --shape 64,64,32 --order c\n  scifmt wkw read dataset/ - --offset 0,0,0 --shape 64,64,32 | sha256sum\n  scifmt wkw read s3://bucket/volume box.raw --offset 1024,2048,512 --shape 256,256,256"
    )]
    Read(boxes::ReadArgs),
    /// Write a box from IN (the (C,X,Y,Z) array in Fortran (default) or C order).
    #[command(
        after_help = "Examples:\n  scifmt wkw write dataset/ box.raw --offset 32,0,0 --shape 64,64,32\n  scifmt wkw read src/ - --offset 0,0,0 --shape 64,64,32 | scifmt wkw write dst/ - --offset 0,0,0 --shape 64,64,32\n  scifmt wkw write s3://bucket/volume box.raw --offset 32,0,0 --shape 64,64,32"
    )]
    Write(boxes::WriteArgs),
    /// Convert every data file of SRC into a new dataset DST with another block type (`raw`
    /// decompresses).
    #[command(
        mut_arg("overwrite", |a| a.help("Replace an existing dataset DST (a local directory): the new one is built beside it and replaces it only when complete. Without it an existing DST is refused. A dataset at a URL is never replaced")),
        after_help = "Examples:\n  scifmt wkw compress raw_ds/ lz4_ds/ --block-type lz4hc --threads 4\n  scifmt wkw compress lz4_ds/ raw_ds/ --block-type raw\n  scifmt wkw compress raw_ds/ s3://bucket/volume_lz4 --block-type lz4"
    )]
    Compress(CompressArgs),
    /// Check every data file (headers, jump tables, lengths, every block decodes).
    #[command(
        after_help = "Examples:\n  scifmt wkw verify dataset/ --json\n  scifmt wkw verify s3://bucket/volume\n\nExit status 1 when a file has a problem."
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
    /// Dataset root holding header.wkw (a directory or URL).
    dataset: PathBuf,
    #[command(flatten)]
    json: JsonFlag,
}

/// `wkw create`.
#[derive(Debug, Args)]
pub(crate) struct CreateArgs {
    /// Dataset root to create (a directory or URL).
    dataset: PathBuf,
    /// Voxel type, by wkw's names (u8, u16, u32, u64, i8, i16, i32, i64, f32, f64) or numpy's
    /// (uint8, …, int64, float32, float64), case-insensitive.
    #[arg(long, value_name = "TYPE", value_parser = parse_voxel)]
    voxel_type: VoxelType,
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
    #[arg(long, value_enum, ignore_case = true, default_value = "raw")]
    block_type: BlockArg,
    #[command(flatten)]
    overwrite: OverwriteFlag,
}

/// `wkw compress`.
#[derive(Debug, Args)]
pub(crate) struct CompressArgs {
    /// Source dataset (a directory or URL).
    src: PathBuf,
    /// New dataset, a directory or URL (must not exist unless --overwrite; never inside or
    /// around SRC).
    dst: PathBuf,
    /// Block type of DST (`raw` decompresses).
    #[arg(long, value_enum, ignore_case = true, default_value = "lz4")]
    block_type: BlockArg,
    /// Worker threads (default: all cores).
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    #[command(flatten)]
    overwrite: OverwriteFlag,
}

/// The name of a voxel type: its serde form in wkw (`u8`, `u16`, …, `f64`).
fn voxel_name(v: VoxelType) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        _ => format!("{v:?}").to_lowercase(),
    }
}

/// Parses `--voxel-type` by wkw's names for [`VoxelType::ALL`] or numpy's dtype names
/// (`uint16`, `float32`), case-insensitive.
fn parse_voxel(s: &str) -> Result<VoxelType, String> {
    let lower = s.to_ascii_lowercase();
    let short = if let Some(bits) = lower.strip_prefix("uint") {
        format!("u{bits}")
    } else if let Some(bits) = lower.strip_prefix("int") {
        format!("i{bits}")
    } else if let Some(bits) = lower.strip_prefix("float") {
        format!("f{bits}")
    } else {
        lower
    };
    VoxelType::ALL
        .into_iter()
        .find(|&v| voxel_name(v) == short)
        .ok_or_else(|| {
            let names: Vec<String> = VoxelType::ALL.into_iter().map(voxel_name).collect();
            format!(
                "unknown voxel type `{s}` ({}, or numpy's uint8, …, float64)",
                names.join("|")
            )
        })
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

/// A dataset in a local directory, or at a URL through wkw's remote API (a box read fetches
/// only the headers, jump tables and blocks it needs; nothing is downloaded whole).
#[derive(Debug)]
pub(crate) enum AnyDataset {
    /// A local dataset.
    Local(Dataset),
    /// A dataset at a URL.
    Remote(RemoteDataset),
}

impl AnyDataset {
    pub(crate) fn header(&self) -> &Header {
        match self {
            Self::Local(d) => d.header(),
            Self::Remote(d) => d.header(),
        }
    }

    /// The data files as paths relative to the dataset root (`z0/y0/x0.wkw`), in the order the
    /// library lists them.
    fn file_names(&self, root: &Path) -> CliResult<Vec<String>> {
        match self {
            Self::Local(d) => Ok(d
                .list_files()
                .at(root)?
                .iter()
                .map(|(_, p)| {
                    p.strip_prefix(root)
                        .unwrap_or(p)
                        .to_string_lossy()
                        .into_owned()
                })
                .collect()),
            Self::Remote(d) => {
                let base = format!("{}/", d.url());
                Ok(remote::block_on(d.list_files())?
                    .at(root)?
                    .into_iter()
                    .map(|(_, u)| u.strip_prefix(&base).map(str::to_owned).unwrap_or(u))
                    .collect())
            }
        }
    }

    fn num_files(&self, root: &Path) -> CliResult<usize> {
        match self {
            Self::Local(d) => Ok(d.list_files().at(root)?.len()),
            Self::Remote(d) => Ok(remote::block_on(d.list_files())?.at(root)?.len()),
        }
    }

    /// Reads the box at `corner` into `view` (outer error: the runtime).
    pub(crate) fn read_into(
        &self,
        corner: [u32; 3],
        view: &mut ArrayViewMut<'_>,
    ) -> CliResult<wkw::Result<()>> {
        match self {
            Self::Local(d) => Ok(d.read_into(corner, view)),
            Self::Remote(d) => remote::block_on(d.read_into(corner, view)),
        }
    }

    /// Writes `view` at `corner` (outer error: the runtime).
    pub(crate) fn write(
        &self,
        corner: [u32; 3],
        view: &ArrayView<'_>,
    ) -> CliResult<wkw::Result<()>> {
        match self {
            Self::Local(d) => Ok(d.write(corner, view)),
            Self::Remote(d) => remote::block_on(d.write(corner, view)),
        }
    }
}

/// Opens the dataset at a local path or a URL.
pub(crate) fn open(dataset: &Path) -> CliResult<AnyDataset> {
    if let Some(url) = remote::parse_url(dataset)? {
        return match remote::block_on(RemoteDataset::open_url(
            &dataset.to_string_lossy(),
            RemoteOptions::default(),
        ))? {
            Ok(ds) => Ok(AnyDataset::Remote(ds)),
            // A webKNOSSOS dataset root: the mags to give instead.
            Err(_) if crate::webknossos::is_dataset(dataset).unwrap_or(false) => {
                Err(crate::webknossos::not_a_mag(dataset))
            }
            Err(e) => Err(Fail::input(remote::name(&url), describe(&e))),
        };
    }
    if dataset.is_file() {
        return Err(Fail::input(
            dataset,
            format!(
                "a file, not a WKW dataset (give the dataset's directory, the one holding {}; `scifmt info FILE` describes one .wkw file)",
                wkw::HEADER_FILE_NAME
            ),
        ));
    }
    if !dataset.exists() && dataset.symlink_metadata().is_err() {
        return Err(Fail::input(
            dataset,
            format!(
                "does not exist (give a WKW dataset's directory, the one holding {})",
                wkw::HEADER_FILE_NAME
            ),
        ));
    }
    match Dataset::open(dataset) {
        Ok(ds) => Ok(AnyDataset::Local(ds)),
        Err(_) if crate::webknossos::is_dataset(dataset).unwrap_or(false) => {
            Err(crate::webknossos::not_a_mag(dataset))
        }
        Err(e) => Err(Fail::input(dataset, describe(&e))),
    }
}

/// The URL of `path`: as given for a URL, `file://` of the absolute path for a local one.
fn url_of(path: &Path) -> CliResult<String> {
    if remote::parse_url(path)?.is_some() {
        return Ok(path.to_string_lossy().into_owned());
    }
    let abs = std::path::absolute(path).at(path)?;
    url::Url::from_file_path(&abs)
        .map(String::from)
        .map_err(|()| Fail::input(path, "cannot be written as a file:// URL"))
}

/// `info` on a dataset: header and data files.
pub(crate) fn dataset_info(dataset: &Path) -> CliResult<Map<String, Value>> {
    let ds = open(dataset)?;
    let mut m = Map::new();
    m.insert("format".into(), json!("wkw-dataset"));
    header_fields(&mut m, ds.header())?;
    let names = ds.file_names(dataset)?;
    m.insert("num_files".into(), json!(names.len()));
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

/// `wkw create DATASET …`: `header.wkw` written create-only into a new (or empty, or
/// non-dataset) directory or prefix; with --overwrite over a local dataset, a new dataset built
/// beside it and swapped in.
fn create(a: &CreateArgs) -> CliResult {
    need_path(&a.dataset, "DATASET")?;
    let header = Header::new(
        a.voxel_type,
        a.channels,
        a.block_len,
        a.file_len,
        block_type(a.block_type),
    )
    .map_err(|e| Fail::input(&a.dataset, describe(&e)))?;
    let plan = dir_output(&[], &a.dataset, DirKind::Wkw, a.overwrite.overwrite, true)?;
    if let Some(url) = remote::parse_url(&a.dataset)? {
        remote::block_on(RemoteDataset::create_url(
            &a.dataset.to_string_lossy(),
            header,
            RemoteOptions::default(),
        ))?
        .at(remote::name(&url))?;
        return Ok(());
    }
    if plan != DirPlan::Replace {
        Dataset::create(&a.dataset, header).at(&a.dataset)?;
        return Ok(());
    }
    let staging = Staging::new(&a.dataset)?;
    Dataset::create(staging.path(), header)
        .map_err(|e| staging.relabel(Fail::input(&a.dataset, describe(&e))))?;
    staging.publish(plan)
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

/// `wkw compress SRC DST [--block-type] [--threads]`: into a directory beside a local DST,
/// put in its place when complete (swapped with an existing dataset for --overwrite); into a
/// new (empty) prefix for a URL.
fn compress(a: &CompressArgs) -> CliResult {
    need_path(&a.dst, "DST")?;
    let plan = dir_output(
        &[&a.src],
        &a.dst,
        DirKind::Wkw,
        a.overwrite.overwrite,
        false,
    )?;
    if crate::names::is_url(&a.src) || crate::names::is_url(&a.dst) {
        return compress_remote(a, plan);
    }
    let total = open(&a.src)?.num_files(&a.src)?;
    let staging = Staging::new(&a.dst)?;
    let bar = progress(total as u64, "compress");
    let result = with_threads(a.threads, || {
        wkw::compress(
            &a.src,
            staging.path(),
            block_type(a.block_type),
            wkw::Options::default(),
            &|p: wkw::Progress<'_>| {
                bar.set_position(p.done as u64);
            },
        )
    })?;
    bar.finish_and_clear();
    result
        .map(drop)
        .map_err(|e| src_or_dst(a, &e, &[staging.path().display().to_string()]))?;
    staging.publish(plan)
}

/// A `wkw compress` error, named by the dataset it is about: DST when the message names a
/// path inside DST (a destination that cannot be written), SRC otherwise. `staged`: names of
/// the directory DST is built in, each replaced by DST's.
fn src_or_dst(a: &CompressArgs, e: &(dyn std::error::Error + 'static), staged: &[String]) -> Fail {
    let dst = crate::names::display_name(&a.dst);
    let mut msg = describe(e);
    for s in staged.iter().filter(|s| !s.is_empty()) {
        msg = msg.replace(s.as_str(), &dst);
    }
    let about_dst = msg.contains(&format!(" on {dst}")) || msg.starts_with(&dst);
    Fail::input(if about_dst { &a.dst } else { &a.src }, msg)
}

/// `wkw compress` with a URL as source or destination, through wkw's remote API (a local side
/// is addressed as a `file://` URL): files are converted one by one on local scratch space and
/// uploaded whole. A local DST is built beside its place and put there when complete.
fn compress_remote(a: &CompressArgs, plan: DirPlan) -> CliResult {
    let src_url = url_of(&a.src)?;
    let staging = if crate::names::is_url(&a.dst) {
        None
    } else {
        Some(Staging::new(&a.dst)?)
    };
    let (dst_url, staged) = match &staging {
        Some(s) => {
            let u = url_of(s.path())?;
            let names = vec![
                u.trim_end_matches('/').to_owned(),
                s.path().display().to_string(),
            ];
            (u, names)
        }
        None => (url_of(&a.dst)?, Vec::new()),
    };
    let src =
        remote::block_on(RemoteDataset::open_url(&src_url, RemoteOptions::default()))?.at(&a.src)?;
    let total = remote::block_on(src.list_files())?.at(&a.src)?.len();
    let bar = progress(total as u64, "compress");
    let result = with_threads(a.threads, || {
        remote::block_on(src.compress_to_url(
            &dst_url,
            block_type(a.block_type),
            &|p: wkw::Progress<'_>| {
                bar.set_position(p.done as u64);
            },
        ))
    })?;
    bar.finish_and_clear();
    result?.map(drop).map_err(|e| src_or_dst(a, &e, &staged))?;
    match staging {
        Some(s) => s.publish(plan),
        None => Ok(()),
    }
}

/// `wkw verify DATASET [--json]`: exit 1 if a file has a problem.
fn verify(a: &DatasetArgs) -> CliResult {
    let dataset = a.dataset.as_path();
    let ds = open(dataset)?;
    let total = ds.num_files(dataset)?;
    let bar = progress(total as u64, "verify");
    let on_progress = |p: wkw::Progress<'_>| {
        bar.set_position(p.done as u64);
    };
    let report = match &ds {
        AnyDataset::Local(_) => wkw::verify(dataset, wkw::Options::default(), &on_progress),
        AnyDataset::Remote(d) => remote::block_on(d.verify(&on_progress))?,
    }
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
            // The problem may start with the file's name already: name it once.
            let why = why.strip_prefix(&format!("{path}: ")).unwrap_or(why);
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
            crate::names::display_name(dataset),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn voxel_types_parse_by_wkw_names() {
        for v in VoxelType::ALL {
            assert_eq!(parse_voxel(&voxel_name(v)), Ok(v));
        }
        assert_eq!(parse_voxel("u16"), Ok(VoxelType::U16));
        assert!(parse_voxel("u17").unwrap_err().contains("f64"));
    }
}
