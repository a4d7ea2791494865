//! The crate's layers, read from its source: every module imports only
//! modules of its own layer or of a layer below (world < search < render <
//! zoo < the binary), and no two modules import each other, directly or
//! around a loop.
//!
//! A module is a file (`src/search/run.rs` is `search::run`, a `mod.rs` is
//! its directory). Its imports are the paths it names outside comments:
//! `crate::a::b::Item` (and `ckpt_model::a::b::Item` in the binary, for the
//! library), `super::x` (in a file's trailing `mod tests`, `super` is the
//! file itself), and a child module named by its own name (`check::run` in
//! `cli/mod.rs`), with `{...}` groups expanded; each resolves to the longest
//! prefix that is a module (a path through the library's root re-exports,
//! `crate::CheckOptions`, resolves to the root, `lib`, which imports every
//! layer: such an import inside the crate shows up as a loop).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module a file under `src/` is: `lib` and `main` for the roots.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap_or(file);
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|l| l == "mod") {
        parts.pop();
    }
    parts.join("::")
}

/// The layer of a module: world 0, search 1, render 2, zoo 3, the binary 4;
/// the library's root (which only declares and re-exports) is outside.
fn layer(module: &str) -> Option<usize> {
    let top = module.split("::").next().unwrap_or("");
    match top {
        "world" => Some(0),
        "search" => Some(1),
        "render" => Some(2),
        "zoo" => Some(3),
        "main" | "cli" => Some(4),
        _ => None,
    }
}

/// The text without comments (line comments, doc comments, block
/// comments) and string literals.
fn code(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        match (chars[i], chars.get(i + 1)) {
            ('/', Some('/')) => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            ('/', Some('*')) => {
                while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                    i += 1;
                }
                i += 2;
            }
            ('"', _) => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// The paths named after `prefix::` in `text`, `{...}` groups expanded.
fn paths_after(text: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let needle = format!("{prefix}::");
    let mut at = 0;
    while let Some(pos) = text[at..].find(&needle) {
        let start = at + pos;
        at = start + needle.len();
        // A whole word only (`super::` inside `my_super::` is not one).
        let before = text[..start].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        expand(&text[at..], "", &mut out);
    }
    out
}

/// Expands the path (or `{group}`) at the start of `rest`, after `base`.
fn expand(rest: &str, base: &str, out: &mut Vec<String>) {
    let rest = rest.trim_start();
    if let Some(group) = rest.strip_prefix('{') {
        // Split the group at its own commas.
        let mut depth = 0;
        let mut item = String::new();
        for c in group.chars() {
            match c {
                '{' => {
                    depth += 1;
                    item.push(c);
                }
                '}' if depth == 0 => {
                    expand(&item, base, out);
                    return;
                }
                '}' => {
                    depth -= 1;
                    item.push(c);
                }
                ',' if depth == 0 => {
                    expand(&item, base, out);
                    item.clear();
                }
                _ => item.push(c),
            }
        }
        return;
    }
    let word: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    if word.is_empty() {
        return;
    }
    let path = if base.is_empty() {
        word.clone()
    } else {
        format!("{base}::{word}")
    };
    match rest[word.len()..].strip_prefix("::") {
        Some(more) => expand(more, &path, out),
        None => out.push(path),
    }
}

/// The longest prefix of `path` that is a module (the library's root when
/// none is: a root re-export).
fn resolve(path: &str, modules: &BTreeSet<String>) -> Option<String> {
    let parts: Vec<&str> = path.split("::").collect();
    let lib_root = if path.starts_with("main::") || path.starts_with("cli") {
        None
    } else {
        Some("lib".to_string())
    };
    (1..=parts.len())
        .rev()
        .map(|n| parts[..n].join("::"))
        .find(|m| modules.contains(m))
        .or(lib_root)
}

fn parent(module: &str) -> String {
    module
        .rsplit_once("::")
        .map_or(String::new(), |(p, _)| p.to_string())
}

/// Each module's imports of other modules.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let modules: BTreeSet<String> = all.iter().map(|f| module_of(&src, f)).collect();
    let mut g = BTreeMap::new();
    for f in &all {
        let m = module_of(&src, f);
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let text = code(&text);
        let binary = layer(&m) == Some(4);
        // A trailing `mod tests` is a child of this file: its `super` is
        // the file.
        let (body, tests) = match text.find("mod tests") {
            Some(at) => text.split_at(at),
            None => (text.as_str(), ""),
        };
        let mut named: Vec<String> = paths_after(&text, "crate")
            .into_iter()
            .map(|p| {
                // In the binary, `crate::` is the binary's own tree.
                if binary && !p.starts_with("cli") {
                    format!("main::{p}")
                } else {
                    p
                }
            })
            .collect();
        if binary {
            named.extend(paths_after(&text, "ckpt_model"));
        }
        let up = parent(&m);
        for p in paths_after(body, "super") {
            named.push(if up.is_empty() {
                p
            } else {
                format!("{up}::{p}")
            });
        }
        for p in paths_after(tests, "super") {
            named.push(format!("{m}::{p}"));
        }
        // Children named relatively (`check::run(..)` in `cli/mod.rs`).
        let children: Vec<&String> = modules
            .iter()
            .filter(|c| parent(c) == m || (m == "lib" && !c.contains("::")))
            .collect();
        for c in children {
            let name = c.rsplit("::").next().unwrap_or(c);
            let found = paths_after(&text, name);
            if !found.is_empty() {
                named.push(c.clone());
            }
        }
        let deps: BTreeSet<String> = named
            .iter()
            .filter_map(|p| resolve(p, &modules))
            .filter(|d| *d != m && !d.is_empty() && d != "main")
            .collect();
        g.insert(m, deps);
    }
    g
}

#[test]
fn no_module_imports_a_layer_above_its_own() {
    let g = graph();
    let mut wrong = Vec::new();
    for (m, deps) in &g {
        for d in deps {
            if let (Some(a), Some(b)) = (layer(m), layer(d)) {
                if b > a {
                    wrong.push(format!("{m} (layer {a}) imports {d} (layer {b})"));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // The graph is not empty: the parser finds imports.
    assert!(g
        .get("search::run")
        .is_some_and(|d| d.contains("search::report")));
    assert!(g
        .get("cli::check")
        .is_some_and(|d| d.contains("render::text")));
}

#[test]
fn no_two_modules_import_each_other_directly_or_around_a_loop() {
    let g = graph();
    // A module is on a loop if it reaches itself.
    let mut loops = Vec::new();
    for m in g.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&String> = g[m].iter().collect();
        while let Some(x) = stack.pop() {
            if x == m {
                loops.push(m.clone());
                break;
            }
            if seen.insert(x.clone()) {
                stack.extend(g.get(x).into_iter().flatten());
            }
        }
    }
    assert!(
        loops.is_empty(),
        "modules on an import loop: {loops:?}\n{g:#?}"
    );
}

#[test]
fn the_parser_reads_groups_supers_and_skips_comments() {
    let text =
        code("use crate::a::{b::{C, d}, e};\n// crate::z::Y\nlet x = \"crate::q\"; super::f::g();");
    let mut got = paths_after(&text, "crate");
    got.sort();
    assert_eq!(got, vec!["a::b::C", "a::b::d", "a::e"]);
    assert_eq!(paths_after(&text, "super"), vec!["f::g"]);
}
