//! Rustdoc's rules for a code block: which info strings are Rust, what the attributes mean,
//! hidden `# ` lines, and the `fn main` wrapping (including the `Ok::<…>(())` form) — and which
//! of them make a block read differently on GitHub than rustdoc compiles it
//! ([`rustdoc_only`], [`Program::implicit_result`]).

/// What to do with a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Compile and run; the run must succeed.
    Run,
    /// Compile only (`no_run`).
    CompileOnly,
    /// Compile and run; the run must panic (`should_panic`).
    ShouldPanic,
    /// Compiling must fail (`compile_fail`).
    CompileFail,
    /// Not checked (`ignore`, `ignore-…`); the reason is the attribute.
    Skip(&'static str),
}

/// How rustdoc reads an info string: `None` if the block is not Rust, else its mode.
///
/// `bare_is_rust`: whether a fence without an info string is Rust — true for a README that is
/// a library's crate docs (rustdoc tests those blocks), false elsewhere.
pub(crate) fn classify(info: &str, bare_is_rust: bool) -> Option<Mode> {
    let tokens: Vec<&str> = info
        .split(|c: char| c == ',' || c.is_whitespace() || c == '{' || c == '}')
        .filter(|t| !t.is_empty())
        .collect();
    if tokens.is_empty() {
        return bare_is_rust.then_some(Mode::Run);
    }
    let mut rust = false;
    let mut other = false;
    let mut mode = Mode::Run;
    for t in tokens {
        match t {
            "rust" => rust = true,
            "no_run" => mode = stronger(mode, Mode::CompileOnly),
            "should_panic" => mode = stronger(mode, Mode::ShouldPanic),
            "compile_fail" => mode = stronger(mode, Mode::CompileFail),
            "ignore" => mode = Mode::Skip("ignore"),
            "test_harness" => mode = Mode::Skip("test_harness (not supported here)"),
            "standalone_crate" | "allow_fail" => {}
            t if t.starts_with("ignore-") => mode = Mode::Skip("ignore-<target>"),
            t if t.starts_with("edition") => {}
            t if t.starts_with('.') || t.starts_with("class=") => {}
            t if is_error_code(t) => {}
            _ => other = true,
        }
    }
    // rustdoc: a block is Rust unless it names another language (and not `rust` as well)
    (rust || !other).then_some(mode)
}

/// `compile_fail` wins over `should_panic`, which wins over `no_run`; `ignore` wins over all.
fn stronger(current: Mode, new: Mode) -> Mode {
    let rank = |m: Mode| match m {
        Mode::Run => 0,
        Mode::CompileOnly => 1,
        Mode::ShouldPanic => 2,
        Mode::CompileFail => 3,
        Mode::Skip(_) => 4,
    };
    if rank(new) > rank(current) {
        new
    } else {
        current
    }
}

fn is_error_code(t: &str) -> bool {
    t.len() == 5 && t.starts_with('E') && t[1..].bytes().all(|b| b.is_ascii_digit())
}

/// A block turned into a program: the source and, for each source line, the README line it
/// came from (`None` for lines we added).
#[derive(Debug)]
pub(crate) struct Program {
    pub(crate) source: String,
    pub(crate) origin: Vec<Option<usize>>,
    /// Feature names the code tests with `feature = "…"` (after renaming), with their line.
    pub(crate) cfg_features: Vec<(String, usize)>,
    /// README line of the `Ok::<…>(())` that made rustdoc's `Result` wrapping apply (a block
    /// without `fn main` that ends with it): pasted into `fn main`, such a block does not compile.
    pub(crate) implicit_result: Option<usize>,
}

/// Builds the program rustdoc would compile for `lines` (README line of `lines[0]` is
/// `first_line`): hidden `# ` lines included, `#![…]` crate attributes moved to the top, and
/// unless the block has its own `fn main`, the code wrapped in one — returning
/// `Result<(), impl Debug>` and unwrapped when the block ends with `Ok::<…>(())`.
///
/// `feature_prefix`: in a crate's README, `cfg(feature = "x")` means the crate's feature `x`
/// (as in its doctests); such names are renamed to `<prefix>x`, a feature of the generated
/// project that is on exactly when the crate's `x` is.
pub(crate) fn program(
    lines: &[String],
    first_line: usize,
    header: &str,
    feature_prefix: Option<&str>,
) -> Program {
    let mut attrs: Vec<(String, usize)> = Vec::new();
    let mut body: Vec<(String, usize)> = Vec::new();
    let mut cfg_features = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let at = first_line + i;
        let mut names = Vec::new();
        let code = prefix_features(&unhide(line), feature_prefix.unwrap_or(""), &mut names);
        cfg_features.extend(names.into_iter().map(|n| (n, at)));
        let t = code.trim();
        if t.starts_with("#![")
            && t.ends_with(']')
            && body.iter().all(|(l, _)| is_blank_or_comment(l))
        {
            attrs.push((code, at));
        } else {
            body.push((code, at));
        }
    }
    let has_main = body.iter().any(|(l, _)| declares_main(l));
    let implicit_result = body
        .iter()
        .rev()
        .map(|(l, at)| (l.trim(), *at))
        .find(|(l, _)| !l.is_empty() && !l.starts_with("//"))
        .filter(|(l, _)| l.starts_with("Ok::<") && l.trim_end_matches(';').ends_with("(())"))
        .filter(|_| !has_main)
        .map(|(_, at)| at);
    let returns_result = implicit_result.is_some();

    let mut p = Program {
        source: String::new(),
        origin: Vec::new(),
        cfg_features,
        implicit_result,
    };
    let mut emit = |text: &str, origin: Option<usize>| {
        p.source.push_str(text);
        p.source.push('\n');
        p.origin.push(origin);
    };
    for h in header.lines() {
        emit(h, None);
    }
    emit("#![allow(unused)]", None);
    for (a, at) in &attrs {
        emit(a, Some(*at));
    }
    if !has_main {
        if returns_result {
            emit(
                "fn main() { fn _inner() -> ::core::result::Result<(), impl ::core::fmt::Debug> {",
                None,
            );
        } else {
            emit("fn main() {", None);
        }
    }
    for (l, at) in &body {
        emit(l, Some(*at));
    }
    if !has_main {
        if returns_result {
            emit("} _inner().unwrap() }", None);
        } else {
            emit("}", None);
        }
    }
    p
}

/// Whether rustdoc compiles `line` differently from how GitHub shows it: a hidden line (`# x`,
/// `#` alone; GitHub shows the `#`) or the `##` escape (GitHub shows both `#`).
pub(crate) fn rustdoc_only(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("##") || t.starts_with("# ") || t == "#"
}

/// Rustdoc's hidden-line rule: `# x` → `x`, `#` → empty, `##x` → `#x`; other lines as they are.
fn unhide(line: &str) -> String {
    let t = line.trim_start();
    if t.starts_with("##") {
        line.replacen("##", "#", 1)
    } else if let Some(rest) = t.strip_prefix("# ") {
        rest.to_owned()
    } else if t == "#" {
        String::new()
    } else {
        line.to_owned()
    }
}

/// `feature = "x"` (any spacing around `=`) → `feature = "<prefix>x"`; the renamed names are
/// pushed to `names`.
fn prefix_features(line: &str, prefix: &str, names: &mut Vec<String>) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find("feature") {
        let (before, from) = rest.split_at(at);
        out.push_str(before);
        let after = &from["feature".len()..];
        let value = after
            .trim_start()
            .strip_prefix('=')
            .map(str::trim_start)
            .and_then(|v| v.strip_prefix('"'));
        let word_start = !before.ends_with(|c: char| c.is_alphanumeric() || c == '_');
        match value {
            Some(v) if word_start => {
                let consumed = from.len() - v.len();
                out.push_str(&from[..consumed]);
                out.push_str(prefix);
                if let Some(end) = v.find('"') {
                    names.push(format!("{prefix}{}", &v[..end]));
                }
                rest = v;
            }
            _ => {
                out.push_str("feature");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn is_blank_or_comment(l: &str) -> bool {
    let t = l.trim();
    t.is_empty() || t.starts_with("//")
}

fn declares_main(l: &str) -> bool {
    let t = l.trim_start();
    let t = t.strip_prefix("pub ").unwrap_or(t);
    let t = t.strip_prefix("async ").unwrap_or(t);
    t.strip_prefix("fn main")
        .is_some_and(|rest| rest.trim_start().starts_with('('))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<String> {
        s.lines().map(str::to_owned).collect()
    }

    #[test]
    fn info_strings_follow_rustdoc() {
        assert_eq!(classify("rust", false), Some(Mode::Run));
        assert_eq!(classify("", true), Some(Mode::Run));
        assert_eq!(classify("", false), None);
        assert_eq!(classify("no_run", false), Some(Mode::CompileOnly));
        assert_eq!(classify("rust,no_run", false), Some(Mode::CompileOnly));
        assert_eq!(
            classify("rust should_panic", false),
            Some(Mode::ShouldPanic)
        );
        assert_eq!(
            classify("compile_fail,E0382", false),
            Some(Mode::CompileFail)
        );
        assert_eq!(classify("rust,ignore", false), Some(Mode::Skip("ignore")));
        assert_eq!(classify("rust,edition2021", false), Some(Mode::Run));
        assert_eq!(classify("text", true), None);
        assert_eq!(classify("toml", true), None);
        assert_eq!(classify("console", true), None);
        assert_eq!(classify("rust,foo", false), Some(Mode::Run));
    }

    #[test]
    fn wraps_like_rustdoc() {
        let p = program(
            &lines("# use std::fmt;\nlet x = 1;\nassert_eq!(x, 1);\n# Ok::<(), fmt::Error>(())"),
            10,
            "// head",
            None,
        );
        assert!(
            p.source
                .contains("fn _inner() -> ::core::result::Result<(), impl")
        );
        assert!(p.source.contains("\nuse std::fmt;\n"));
        assert!(p.source.trim_end().ends_with("_inner().unwrap() }"));
        let at = p.source.lines().position(|l| l == "let x = 1;").unwrap();
        assert_eq!(p.origin[at], Some(11));
        assert_eq!(p.source.lines().count(), p.origin.len());

        let plain = program(&lines("let a = 2;"), 1, "", None);
        assert!(plain.source.contains("fn main() {\nlet a = 2;\n}"));

        let own = program(&lines("#![allow(dead_code)]\nfn main() {\n}"), 1, "", None);
        assert!(!own.source.contains("fn main() {\nfn main"));
        assert!(
            own.source
                .starts_with("#![allow(unused)]\n#![allow(dead_code)]\nfn main() {")
        );
    }

    #[test]
    fn crate_features_in_cfg_are_renamed() {
        let p = program(
            &lines(
                "# #[cfg(feature = \"serde\")]\n#[cfg(all(feature=\"a\", not(feature = \"b\")))]\nlet features = 1;",
            ),
            1,
            "",
            Some("wkw__"),
        );
        assert!(p.source.contains("#[cfg(feature = \"wkw__serde\")]"));
        assert!(
            p.source
                .contains("#[cfg(all(feature=\"wkw__a\", not(feature = \"wkw__b\")))]")
        );
        assert!(p.source.contains("let features = 1;"));
        let names: Vec<&str> = p.cfg_features.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["wkw__serde", "wkw__a", "wkw__b"]);
        assert_eq!(p.cfg_features[0].1, 1);
    }

    #[test]
    fn rustdoc_only_lines_are_those_github_shows_differently() {
        for hidden in [
            "# let a = 1;",
            "    # x",
            "#",
            "  #",
            "## escaped",
            "# #[cfg(x)]",
        ] {
            assert!(rustdoc_only(hidden), "{hidden:?}");
        }
        for plain in [
            "#[derive(Debug)]",
            "#![allow(unused)]",
            "let a = 1; # not at the start",
            "#[tokio::main]",
            "",
            "// # a comment",
        ] {
            assert!(!rustdoc_only(plain), "{plain:?}");
        }
    }

    #[test]
    fn an_ok_ending_without_main_is_an_implicit_result() {
        let wrapped = program(&lines("let x = 1;\n\nOk::<(), String>(())\n"), 7, "", None);
        assert_eq!(wrapped.implicit_result, Some(9));
        let hidden = program(&lines("let x = 1;\n# Ok::<(), String>(())"), 1, "", None);
        assert_eq!(hidden.implicit_result, Some(2));
        let own_main = program(
            &lines("fn main() -> Result<(), String> {\n    Ok(())\n}"),
            1,
            "",
            None,
        );
        assert_eq!(own_main.implicit_result, None);
        assert_eq!(
            program(&lines("let a = 2;"), 1, "", None).implicit_result,
            None
        );
    }

    #[test]
    fn hidden_lines() {
        assert_eq!(unhide("# let a = 1;"), "let a = 1;");
        assert_eq!(unhide("    # x"), "x");
        assert_eq!(unhide("#"), "");
        assert_eq!(unhide("## not hidden"), "# not hidden");
        assert_eq!(unhide("#[derive(Debug)]"), "#[derive(Debug)]");
    }
}
