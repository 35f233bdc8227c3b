//! Fenced code blocks of a README, the `readme-examples` directive before each, and the
//! `[dependencies]` lines of its ```toml snippets.
//!
//! Fences follow CommonMark: three or more backticks or tildes, indented by at most three
//! spaces, closed by a fence of the same character that is at least as long.

/// One fenced code block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fence {
    /// The info string after the opening fence (`rust,no_run`, `toml`, empty…).
    pub(crate) info: String,
    /// 1-based line of the opening fence.
    pub(crate) fence_line: usize,
    /// The block's lines with the fence's indentation removed; line `i` is README line
    /// `fence_line + 1 + i`.
    pub(crate) lines: Vec<String>,
    /// Features from a `<!-- readme-examples: features = [...] -->` comment on the last
    /// non-blank line before the fence.
    pub(crate) features: Vec<String>,
}

/// The directive that names the features a block needs.
const DIRECTIVE: &str = "readme-examples:";

/// Every fenced block of `text`, in order. An unclosed fence runs to the end of the file, as
/// CommonMark says.
///
/// # Errors
/// A malformed `readme-examples` directive (with its line).
pub(crate) fn fences(text: &str) -> Result<Vec<Fence>, String> {
    let mut out = Vec::new();
    let mut open: Option<(char, usize, usize, Fence)> = None; // (char, len, indent, block)
    let mut last_nonblank: Option<(usize, &str)> = None;
    for (i, line) in text.lines().enumerate() {
        let number = i + 1;
        if let Some((ch, len, indent, block)) = &mut open {
            if closes(line, *ch, *len) {
                if let Some((_, _, _, block)) = open.take() {
                    out.push(block);
                }
            } else {
                block.lines.push(strip_indent(line, *indent).to_owned());
            }
            continue;
        }
        if let Some((ch, len, indent, info)) = opens(line) {
            let features = match last_nonblank {
                Some((at, prev)) => {
                    directive_features(prev).map_err(|e| format!("line {at}: {e}"))?
                }
                None => Vec::new(),
            };
            open = Some((
                ch,
                len,
                indent,
                Fence {
                    info: info.to_owned(),
                    fence_line: number,
                    lines: Vec::new(),
                    features,
                },
            ));
            continue;
        }
        if !line.trim().is_empty() {
            last_nonblank = Some((number, line));
        }
    }
    if let Some((_, _, _, block)) = open {
        out.push(block);
    }
    Ok(out)
}

/// `(fence char, fence length, indent, info string)` when `line` opens a fence.
fn opens(line: &str) -> Option<(char, usize, usize, &str)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let ch = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = rest.len() - rest.trim_start_matches(ch).len();
    if len < 3 {
        return None;
    }
    let info = rest[len..].trim();
    // A backtick fence's info string may not contain backticks (that is inline code).
    if ch == '`' && info.contains('`') {
        return None;
    }
    Some((ch, len, indent, info))
}

fn closes(line: &str, ch: char, len: usize) -> bool {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return false;
    }
    let rest = &line[indent..];
    let run = rest.len() - rest.trim_start_matches(ch).len();
    run >= len && rest[run..].trim().is_empty()
}

/// Removes up to `indent` leading spaces.
fn strip_indent(line: &str, indent: usize) -> &str {
    let spaces = line.len() - line.trim_start_matches(' ').len();
    &line[spaces.min(indent)..]
}

/// Features named by a `<!-- readme-examples: features = ["a", "b"] -->` line; empty for any
/// other line.
fn directive_features(line: &str) -> Result<Vec<String>, String> {
    let t = line.trim();
    let Some(body) = t
        .strip_prefix("<!--")
        .and_then(|b| b.strip_suffix("-->"))
        .map(str::trim)
        .and_then(|b| b.strip_prefix(DIRECTIVE))
    else {
        return Ok(Vec::new());
    };
    let value = body
        .trim()
        .strip_prefix("features")
        .map(str::trim_start)
        .and_then(|v| v.strip_prefix('='))
        .ok_or_else(|| format!("expected `{DIRECTIVE} features = [\"…\"]`, got `{t}`"))?;
    string_list(value.trim()).ok_or_else(|| format!("features must be a list of strings: `{t}`"))
}

/// A TOML/JSON-style list of double-quoted strings: `["a", "b"]`.
fn string_list(value: &str) -> Option<Vec<String>> {
    let inner = value.strip_prefix('[')?.strip_suffix(']')?.trim();
    if inner.is_empty() {
        return Some(Vec::new());
    }
    inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.strip_prefix('"')
                .and_then(|s| s.strip_suffix('"'))
                .map(str::to_owned)
        })
        .collect()
}

/// One `name = …` line of a `[dependencies]` table in a ```toml snippet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SnippetDep {
    /// The dependency's name as written (the package name unless `package` renames it).
    pub(crate) name: String,
    /// The version requirement (`"1"`), if one is given.
    pub(crate) version: Option<String>,
    /// Requested features.
    pub(crate) features: Vec<String>,
    /// `default-features = false` was written.
    pub(crate) no_default_features: bool,
    /// 1-based README line.
    pub(crate) line: usize,
}

/// The `[dependencies]` entries of a ```toml block. Understands `name = "req"` and one-line
/// inline tables with `version`, `features`, `default-features` and `optional`; anything else
/// is an error naming the line, so README snippets stay in the form users copy.
///
/// # Errors
/// An entry this reader does not understand.
pub(crate) fn snippet_deps(block: &Fence) -> Result<Vec<SnippetDep>, String> {
    let mut out = Vec::new();
    let mut in_deps = false;
    for (i, raw) in block.lines.iter().enumerate() {
        let line_no = block.fence_line + 1 + i;
        let line = raw.split(" #").next().unwrap_or(raw).trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if !in_deps {
            continue;
        }
        let (name, value) = line
            .split_once('=')
            .map(|(n, v)| (n.trim(), v.trim()))
            .ok_or_else(|| format!("line {line_no}: expected `name = …` in [dependencies]"))?;
        let mut dep = SnippetDep {
            name: name.to_owned(),
            version: None,
            features: Vec::new(),
            no_default_features: false,
            line: line_no,
        };
        if let Some(version) = quoted(value) {
            dep.version = Some(version.to_owned());
        } else if let Some(table) = value.strip_prefix('{').and_then(|v| v.strip_suffix('}')) {
            for (key, v) in inline_table(table).map_err(|e| format!("line {line_no}: {e}"))? {
                match key {
                    "version" => {
                        dep.version = Some(
                            quoted(v)
                                .ok_or_else(|| format!("line {line_no}: version must be a string"))?
                                .to_owned(),
                        );
                    }
                    "features" => {
                        dep.features = string_list(v).ok_or_else(|| {
                            format!("line {line_no}: features must be a list of strings")
                        })?;
                    }
                    "default-features" => dep.no_default_features = v == "false",
                    "optional" => {}
                    other => {
                        return Err(format!(
                            "line {line_no}: key `{other}` is not supported in README snippets"
                        ));
                    }
                }
            }
        } else {
            return Err(format!("line {line_no}: cannot read `{line}`"));
        }
        out.push(dep);
    }
    Ok(out)
}

fn quoted(v: &str) -> Option<&str> {
    v.strip_prefix('"').and_then(|v| v.strip_suffix('"'))
}

/// `key = value` pairs of an inline table body; list values may contain commas.
fn inline_table(body: &str) -> Result<Vec<(&str, &str)>, String> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, b) in body.bytes().enumerate() {
        match b {
            b'[' => depth += 1,
            b']' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => {
                parts.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&body[start..]);
    parts
        .into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.split_once('=')
                .map(|(k, v)| (k.trim(), v.trim()))
                .ok_or_else(|| format!("expected `key = value`, got `{s}`"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_fences_with_info_lines_and_directives() {
        let md = "# T\n\n<!-- readme-examples: features = [\"ndarray\", \"wkw/serde\"] -->\n\
                  ```rust,no_run\nlet a = 1;\n  ```\n\ntext\n~~~~\n```\nx\n~~~~\n    ```\nindented code\n";
        let f = fences(md).unwrap();
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].info, "rust,no_run");
        assert_eq!(f[0].fence_line, 4);
        assert_eq!(f[0].lines, ["let a = 1;"]);
        assert_eq!(f[0].features, ["ndarray", "wkw/serde"]);
        // a tilde fence is closed only by tildes; the backtick line inside is content
        assert_eq!(f[1].info, "");
        assert_eq!(f[1].lines, ["```", "x"]);
        assert!(f[1].features.is_empty());
    }

    #[test]
    fn a_directive_applies_only_to_the_next_block() {
        let md = "<!-- readme-examples: features = [\"a\"] -->\n\nsome text\n```rust\n```\n";
        assert!(fences(md).unwrap()[0].features.is_empty());
        let bad = "<!-- readme-examples: feature = a -->\n```rust\n```\n";
        assert!(fences(bad).unwrap_err().contains("line 1"));
    }

    #[test]
    fn reads_dependency_snippets() {
        let md = "```toml\n[dependencies]\nwkw = { version = \"0.2\", features = [\"ndarray\", \"serde\"] }\n\
                  serde_json = \"1\" # for the example\nblosc-chunk = { version = \"0.1\", default-features = false }\n\
                  [dev-dependencies]\nfoo = \"1\"\n```\n";
        let f = fences(md).unwrap();
        let deps = snippet_deps(&f[0]).unwrap();
        assert_eq!(deps.len(), 3);
        assert_eq!(deps[0].name, "wkw");
        assert_eq!(deps[0].version.as_deref(), Some("0.2"));
        assert_eq!(deps[0].features, ["ndarray", "serde"]);
        assert_eq!(deps[1].name, "serde_json");
        assert_eq!(deps[1].line, 4);
        assert!(deps[2].no_default_features);
        let bad = fences("```toml\n[dependencies]\nx = { git = \"u\" }\n```\n").unwrap();
        assert!(snippet_deps(&bad[0]).unwrap_err().contains("`git`"));
    }
}
