//! Printing results on stdout: `key: value` lines, tables, or one JSON value (`--json`).
//!
//! Every write goes through [`emit`], so a reader that closes stdout early (`| head`) ends the
//! command quietly instead of with a panic or an error line.

use std::io::Write;

use clap::Args;
use serde_json::{Map, Value};

use crate::fail::{CliResult, Fail};
use crate::inout::stdout_error;

/// The `--json` flag, the same on every command that prints.
#[derive(Debug, Clone, Copy, Args)]
pub(crate) struct JsonFlag {
    /// Print one JSON value on one line instead of text (see "JSON output" in `scifmt --help`).
    #[arg(long)]
    pub(crate) json: bool,
}

/// Writes `text` to stdout.
pub(crate) fn emit(text: &str) -> CliResult {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| stdout_error(&e))
}

/// Prints `value` as one JSON document on one line.
pub(crate) fn emit_json(value: &Value) -> CliResult {
    emit(&format!("{value}\n"))
}

/// An object as `key: value` lines (strings unquoted, other values as compact JSON).
pub(crate) fn fields_text(map: &Map<String, Value>) -> String {
    let mut s = String::new();
    for (k, v) in map {
        match v {
            Value::String(t) => s.push_str(&format!("{k}: {t}\n")),
            other => s.push_str(&format!("{k}: {other}\n")),
        }
    }
    s
}

/// A format crate's header or metadata type in its serde form, which must be a JSON object.
pub(crate) fn to_object(value: &impl serde::Serialize) -> CliResult<Map<String, Value>> {
    match serde_json::to_value(value) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(Fail::usage(format!(
            "internal error: expected a JSON object, got {other}"
        ))),
        Err(e) => Err(Fail::usage(format!("internal error: {e}"))),
    }
}

/// Prints `map` as JSON or as `key: value` lines.
pub(crate) fn emit_object(map: Map<String, Value>, json: JsonFlag) -> CliResult {
    if json.json {
        emit_json(&Value::Object(map))
    } else {
        emit(&fields_text(&map))
    }
}
