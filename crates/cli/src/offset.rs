//! `scifmt offset decode|encode`: one chunk through the `offset` / `pad` codec.

use std::path::Path;

use offset_codec::{CodecConfiguration, OffsetCodec};

use crate::util::{At, CliResult, Fail, read_input, write_output};

/// Parses the `--codec` zarr.json entry.
fn codec(json: &str) -> CliResult<OffsetCodec> {
    let entry: serde_json::Value =
        serde_json::from_str(json).map_err(|e| Fail::usage(format!("--codec is not JSON: {e}")))?;
    let config = CodecConfiguration::from_json(&entry)
        .map_err(|e| Fail::usage(format!("--codec: {}", crate::util::describe(&e))))?;
    OffsetCodec::new(config)
        .map_err(|e| Fail::usage(format!("--codec: {}", crate::util::describe(&e))))
}

/// `offset decode|encode IN OUT --codec JSON`.
pub(crate) fn run(input: &Path, output: &Path, json: &str, encode: bool) -> CliResult {
    let codec = codec(json)?;
    let data = read_input(input)?;
    if encode {
        let stored = codec.encode(&data).at(input)?;
        write_output(output, &stored)
    } else {
        let payload = codec.decode(&data).at(input)?;
        write_output(output, payload)
    }
}
