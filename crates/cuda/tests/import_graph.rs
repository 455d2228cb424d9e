//! The crate's module graph, read from its sources: no circle between the top-level
//! modules, a device layer (gpu, kernels, field, pinned, work) that imports nothing above it,
//! and MSM children that import from the `msm` root only, without a circle between them.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Modules below every driver: they may import each other only.
const DEVICE_LAYER: &[&str] = &["gpu", "kernels", "field", "pinned", "work"];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The code of a file without its comments (doc links are not imports).
fn code(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The identifiers that follow each `prefix` in `code` (`crate::msm::x` gives `msm` for
/// the prefix `crate::`).
fn after(code: &str, prefix: &str) -> BTreeSet<String> {
    code.match_indices(prefix)
        .filter(|(i, _)| {
            // `prefix` must start a path: not the tail of a longer identifier.
            code[..*i]
                .chars()
                .next_back()
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == ':'))
        })
        .map(|(i, _)| {
            code[i + prefix.len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|s| !s.is_empty())
        .collect()
}

/// The names a `use super::{...}` (or `use super::x;`) list brings in, from every such
/// declaration of `code`.
fn super_names(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (i, _) in code.match_indices("use super::") {
        let rest = &code[i + "use super::".len()..];
        let list = match rest.strip_prefix('{') {
            Some(r) => &r[..r.find('}').unwrap_or(r.len())],
            None => &rest[..rest.find(';').unwrap_or(rest.len())],
        };
        for name in list.split(',') {
            let name = name.trim();
            if !name.is_empty() && name != "*" && name != "self" {
                names.insert(name.to_string());
            }
        }
    }
    names
}

/// The first circle of `graph`, when there is one (depth-first search).
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut c = path[at..].to_vec();
            c.push(node.to_string());
            return Some(c);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

/// Top-level module name -> its files (`x.rs`, or every file of `x/`).
fn top_level() -> BTreeMap<String, Vec<PathBuf>> {
    let mut modules = BTreeMap::new();
    for entry in fs::read_dir(src()).expect("src/").flatten() {
        let p = entry.path();
        let name = p.file_stem().expect("name").to_string_lossy().to_string();
        if p.is_dir() {
            let files = fs::read_dir(&p)
                .expect("module dir")
                .flatten()
                .map(|e| e.path())
                .filter(|f| f.extension().is_some_and(|e| e == "rs"))
                .collect();
            modules.insert(name, files);
        } else if name != "lib" && p.extension().is_some_and(|e| e == "rs") {
            modules.insert(name, vec![p]);
        }
    }
    modules
}

#[test]
fn top_level_modules_import_without_a_circle() {
    let modules = top_level();
    assert!(modules.contains_key("msm") && modules.contains_key("gpu"));
    let mut graph = BTreeMap::new();
    for (name, files) in &modules {
        let mut deps = BTreeSet::new();
        for f in files {
            deps.extend(after(&code(f), "crate::"));
        }
        deps.remove(name);
        for d in &deps {
            assert!(
                modules.contains_key(d),
                "{name} imports an unknown crate::{d}"
            );
        }
        graph.insert(name.clone(), deps);
    }
    if let Some(c) = circle(&graph) {
        panic!("import circle: {}", c.join(" -> "));
    }
    for layer in DEVICE_LAYER {
        let above: Vec<_> = graph[*layer]
            .iter()
            .filter(|d| !DEVICE_LAYER.contains(&d.as_str()))
            .collect();
        assert!(above.is_empty(), "device layer {layer} imports {above:?}");
    }
}

#[test]
fn msm_children_import_from_the_root_only_without_a_circle() {
    let dir = src().join("msm");
    let root = code(&dir.join("mod.rs"));
    let children: Vec<String> = after(&root, "mod ").into_iter().collect();
    assert!(children.len() > 5, "msm children: {children:?}");
    // Which child each name the root brings in comes from (`use child::{...}`).
    let mut owner = BTreeMap::new();
    for child in &children {
        for (i, _) in root.match_indices(&format!("use {child}::")) {
            let rest = &root[i + "use ::".len() + child.len()..];
            let list = match rest.strip_prefix('{') {
                Some(r) => &r[..r.find('}').unwrap_or(r.len())],
                None => &rest[..rest.find(';').unwrap_or(rest.len())],
            };
            for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                owner.insert(name.to_string(), child.clone());
            }
        }
    }
    let mut graph = BTreeMap::new();
    for child in &children {
        let text = code(&dir.join(format!("{child}.rs")));
        for sibling in &children {
            assert!(
                !text.contains(&format!("super::{sibling}::")),
                "msm/{child}.rs names its sibling {sibling} by path"
            );
        }
        let above: Vec<_> = after(&text, "crate::")
            .into_iter()
            .filter(|d| d != "msm" && !DEVICE_LAYER.contains(&d.as_str()))
            .collect();
        assert!(above.is_empty(), "msm/{child}.rs imports crate::{above:?}");
        let deps: BTreeSet<String> = super_names(&text)
            .into_iter()
            .filter_map(|n| owner.get(&n).cloned())
            .filter(|c| c != child)
            .collect();
        graph.insert(child.clone(), deps);
    }
    if let Some(c) = circle(&graph) {
        panic!("circle between msm children: {}", c.join(" -> "));
    }
}
