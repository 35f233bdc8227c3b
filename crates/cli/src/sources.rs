//! The sources of `scifmt virtualize` into one `ReferenceSink`, whatever their kinds: WKW data
//! (`wkw_zarr::virtualize` / `virtualize_all` / `virtualize_at`) and b2nd frames
//! (`blosc2_frame::virtualize_at`), laid out as the command lays them out. Public for the
//! `scifmt` Python wheel (`scifmt.virtualize`, `scifmt.virtual`), which makes the same runs.

use scifmt_io::{Location, ReferenceSink};
use wkw_zarr::{Cancel, Progress, VirtualizeOptions};

/// The options of a run, for both kinds of sources.
#[derive(Debug, Clone)]
pub struct SourceOptions {
    /// For WKW sources.
    pub wkw: VirtualizeOptions,
    /// For b2nd frames.
    pub b2nd: blosc2_frame::VirtualizeOptions,
}

impl SourceOptions {
    /// `concurrency` requests in flight to an object store, stopped by `cancel`.
    #[must_use]
    pub fn new(concurrency: usize, cancel: &Cancel) -> Self {
        let b2nd = blosc2_frame::VirtualizeOptions::default().with_cancel(cancel.clone());
        let remote = b2nd.remote.clone().with_concurrency(concurrency);
        Self {
            wkw: VirtualizeOptions::default()
                .with_cancel(cancel.clone())
                .with_remote(wkw_zarr::RemoteOptions::default().with_concurrency(concurrency)),
            b2nd: b2nd.with_remote(remote),
        }
    }
}

/// What the sources gave, added up over both kinds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SourceCounts {
    /// Groups written (the root group of several sources included).
    pub groups: u64,
    /// Arrays written.
    pub arrays: u64,
    /// Source files (or objects) referenced: read, or kept unread (`unchanged_files`).
    pub files: u64,
    /// Source files an update kept unread: the output held their references at the version
    /// their listing (ETag) or modification time gives.
    pub unchanged_files: u64,
    /// Chunk references written.
    pub references: u64,
    /// Chunks written inline (a b2nd frame's runs of NaNs).
    pub inline: u64,
    /// Bytes read from the sources (headers, jump tables, frame indexes).
    pub bytes_read: u64,
}

impl SourceCounts {
    fn add_wkw(&mut self, s: &wkw_zarr::VirtualizeSummary) {
        self.groups += s.groups;
        self.arrays += s.arrays;
        self.files += s.files;
        self.unchanged_files += s.unchanged_files;
        self.references += s.references;
        self.bytes_read += s.bytes_read;
    }

    fn add_b2nd(&mut self, s: &blosc2_frame::VirtualizeSummary) {
        self.arrays += s.arrays;
        self.files += s.files;
        self.references += s.references;
        self.inline += s.inline;
        self.bytes_read += s.bytes_read;
    }
}

/// Why [`virtualize_sources`] failed.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// A WKW source's error (`wkw_zarr::Error::Cancelled` when stopped).
    #[error(transparent)]
    Wkw(#[from] wkw_zarr::Error),
    /// A b2nd source's error (`blosc2_frame::Error::Cancelled` when stopped).
    #[error("{}", frame_message(source_name, error))]
    Frame {
        /// The source, as its location names it.
        source_name: String,
        /// What went wrong (boxed: it is large).
        error: Box<blosc2_frame::Error>,
    },
    /// The sink's or the layout's error.
    #[error(transparent)]
    Output(#[from] scifmt_io::Error),
}

/// A frame's error naming its source once (most of blosc2-frame's errors name it already; a
/// bad header or index names only the field and offset).
fn frame_message(source_name: &str, error: &blosc2_frame::Error) -> String {
    let msg = error.to_string();
    if msg.contains(source_name) {
        msg
    } else {
        format!("{source_name}: {msg}")
    }
}

impl SourceError {
    /// Whether the run was stopped through its `Cancel`.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        matches!(self, Self::Wkw(wkw_zarr::Error::Cancelled))
            || matches!(self, Self::Frame { error, .. } if matches!(**error, blosc2_frame::Error::Cancelled))
    }
}

/// The references of `srcs` into `sink`: one source at the root; several in a root group, each
/// under its name (`scifmt_io::node_names`); WKW-only runs through `wkw_zarr::virtualize_all`.
/// A source is a b2nd frame where `is_frame` says so (`blosc2_frame::is_frame_source` for the
/// command), WKW otherwise. `progress` is called for WKW sources.
///
/// # Errors
/// The first source's failure, or the sink's.
pub fn virtualize_sources(
    srcs: &[Location],
    is_frame: &dyn Fn(&Location) -> bool,
    sink: &mut dyn ReferenceSink,
    options: &SourceOptions,
    progress: &(dyn Fn(&Progress) + Sync),
) -> Result<SourceCounts, SourceError> {
    let frame = |src: &Location, at: &str, sink: &mut dyn ReferenceSink| {
        blosc2_frame::virtualize_at(src, at, sink, &options.b2nd).map_err(|e| SourceError::Frame {
            source_name: src.name().display().to_string(),
            error: Box::new(e),
        })
    };
    let frames: Vec<bool> = srcs.iter().map(is_frame).collect();
    let mut counts = SourceCounts::default();
    if !frames.contains(&true) {
        counts.add_wkw(&match srcs {
            [one] => wkw_zarr::virtualize(one, sink, &options.wkw, progress)?,
            many => wkw_zarr::virtualize_all(many, sink, &options.wkw, progress)?,
        });
        return Ok(counts);
    }
    if let [one] = srcs {
        counts.add_b2nd(&frame(one, "", sink)?);
        return Ok(counts);
    }
    let names = scifmt_io::node_names(srcs)?;
    sink.group("", &scifmt_io::zarrs_metadata::v3::GroupMetadataV3::new())?;
    counts.groups += 1;
    for ((src, name), is_frame) in srcs.iter().zip(&names).zip(frames) {
        if is_frame {
            counts.add_b2nd(&frame(src, name, sink)?);
        } else {
            counts.add_wkw(&wkw_zarr::virtualize_at(
                src,
                name,
                sink,
                &options.wkw,
                progress,
            )?);
        }
    }
    Ok(counts)
}
