//! The module-level import graph of a crate, for `cargo xtask conventions`: no two top-level
//! modules of a crate may depend on each other, directly or through others.
//!
//! Each top-level module of `src/` (a file `src/a.rs` or a folder `src/a/`) is a node. A path
//! `crate::b…` in the code of module `a` (a `use`, a `use crate::{b, …}` group, or a path in an
//! expression or type) is an edge `a → b`; so is `super::b` in a file directly under `src/`
//! (whose `super` is the crate root). Comments (doc links included) are not code and make no
//! edge; `#[cfg(test)]` code (from such a line at column 0 to the end of the file) neither.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module → the modules it uses.
pub(crate) type Graph = BTreeMap<String, BTreeSet<String>>;

/// The graph of the crate whose sources are in `src`.
pub(crate) fn crate_graph(src: &Path) -> Result<Graph, String> {
    let mut graph = Graph::new();
    let mut stack = vec![src.to_path_buf()];
    let mut files = Vec::new();
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for e in entries {
            let path = e.map_err(|e| e.to_string())?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                files.push(path);
            }
        }
    }
    for file in files {
        let rel = file.strip_prefix(src).map_err(|e| e.to_string())?;
        let mut parts = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned());
        let Some(first) = parts.next() else { continue };
        if matches!(first.as_str(), "lib.rs" | "main.rs" | "bin") {
            continue;
        }
        let top_file = rel.components().count() == 1;
        let module = first.trim_end_matches(".rs").to_owned();
        let text =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let uses = graph.entry(module.clone()).or_default();
        for name in used_modules(&code_of(&text), top_file) {
            uses.insert(name);
        }
    }
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for (m, uses) in &mut graph {
        uses.retain(|u| u != m && modules.contains(u));
    }
    Ok(graph)
}

/// The code of a file: without comments and without its `#[cfg(test)]` tail.
fn code_of(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        let code = match line.find("//") {
            // A `//` inside a string literal (a URL) is rare in `use` lines; cutting there
            // only loses the rest of that line.
            Some(i) => &line[..i],
            None => line,
        };
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// The first path segments after `crate::` (and, in a top-level file, `super::`).
fn used_modules(code: &str, top_file: bool) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut prefixes = vec!["crate::"];
    if top_file {
        prefixes.push("super::");
    }
    for prefix in prefixes {
        let mut rest = code;
        while let Some(i) = rest.find(prefix) {
            let before = rest[..i].chars().next_back();
            rest = &rest[i + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue; // `$crate::`, `my_crate::`
            }
            if let Some(group) = rest.strip_prefix('{') {
                // The first segment of each item at depth 0 of the group.
                let mut depth = 0usize;
                let mut start = 0;
                for (i, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => {
                            out.extend(ident(group[start..i].trim()));
                            break;
                        }
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            out.extend(ident(group[start..i].trim()));
                            start = i + 1;
                        }
                        _ => {}
                    }
                }
            } else {
                out.extend(ident(rest));
            }
        }
    }
    out
}

/// The identifier `text` starts with.
fn ident(text: &str) -> Option<String> {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    let name = &text[..end];
    (!name.is_empty() && name != "self").then(|| name.to_owned())
}

/// The strongly connected components of more than one module (Tarjan's algorithm).
pub(crate) fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    struct State<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                if let Some(lv) = s.low.get_mut(v) {
                    *lv = (*lv).min(lw);
                }
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                if let Some(lv) = s.low.get_mut(v) {
                    *lv = (*lv).min(iw);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(&str, &[&str])]) -> Graph {
        edges
            .iter()
            .map(|(a, bs)| (a.to_string(), bs.iter().map(|b| b.to_string()).collect()))
            .collect()
    }

    #[test]
    fn cycles_are_found_and_chains_are_not() {
        let g = graph(&[("a", &["b"]), ("b", &["c"]), ("c", &["a"]), ("d", &["a"])]);
        assert_eq!(cycles(&g), [["a", "b", "c"]]);
        let g = graph(&[("a", &["b"]), ("b", &["c"]), ("c", &[])]);
        assert!(cycles(&g).is_empty());
    }

    #[test]
    fn a_crate_whose_modules_import_each_other_has_a_cycle() {
        let dir = std::env::temp_dir().join(format!("xtask-modgraph-{}", std::process::id()));
        let src = dir.join("src");
        std::fs::create_dir_all(src.join("b")).unwrap();
        std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\nmod c;\n").unwrap();
        std::fs::write(src.join("a.rs"), "use crate::b::B;\n").unwrap();
        std::fs::write(src.join("b/mod.rs"), "mod inner;\n").unwrap();
        std::fs::write(src.join("b/inner.rs"), "use crate::{c::C, a};\n").unwrap();
        std::fs::write(src.join("c.rs"), "/// [`crate::a`]\npub struct C;\n").unwrap();
        let graph = crate_graph(&src).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(cycles(&graph), [["a", "b"]]);
    }

    #[test]
    fn only_code_makes_edges() {
        let code = code_of(
            "use crate::{error::{Error, Result}, plan};\n\
             /// See [`crate::doc_only`].\n\
             let x = crate::mag::f(); // crate::comment\n\
             let y = $crate::macro_only;\n\
             #[cfg(test)]\n\
             use crate::test_only;\n",
        );
        let used = used_modules(&code, false);
        assert_eq!(
            used.into_iter().collect::<Vec<_>>(),
            ["error", "mag", "plan"]
        );
        assert!(used_modules("super::shard::x()", true).contains("shard"));
        assert!(used_modules("super::shard::x()", false).is_empty());
    }
}
