//! README.md against the repository: everything it points at lives there
//! (its relative links, and the repository paths it names: `docs/…`,
//! `crates/…`, `scripts/…`, …), and its one table of file extensions is the
//! class registry's, which every tool and the Python binding read. A file
//! renamed or an extension added without the README following fails here.
//! (Its Rust snippets are compiled as doctests: crates/kuradb/src/lib.rs.)

use std::path::{Path, PathBuf};

use kuradb::DbmClass;

/// The folders a path the README names in a code span starts with.
const TOP_FOLDERS: &[&str] = &["docs/", "crates/", "scripts/", "deploy/", ".ci/"];

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The targets of `[text](target)` links that are not URLs or anchors.
fn relative_links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = rest[..end].split('#').next().unwrap_or("");
        if !target.is_empty() && !target.contains("://") && !target.starts_with("mailto:") {
            out.push(target.to_string());
        }
    }
    out
}

/// Repository paths named in text: words starting with one of
/// [`TOP_FOLDERS`], cut at the first character a path here does not hold.
fn named_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in text.char_indices() {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || "/._-".contains(c)) {
            continue;
        }
        let rest = &text[at..];
        if !TOP_FOLDERS.iter().any(|top| rest.starts_with(top)) {
            continue;
        }
        let end = rest.find(|c: char| !(c.is_alphanumeric() || "/._-".contains(c))).unwrap_or(rest.len());
        let path = rest[..end].trim_end_matches(['.', ',']);
        // A glob or a placeholder names a family, not one path.
        if !rest[end..].starts_with(['*', '{', '<']) && !path.ends_with('-') {
            out.push(path.to_string());
        }
    }
    out
}

#[test]
fn every_path_the_readme_names_exists() {
    let root = repository();
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let mut names = relative_links(&readme);
    names.extend(named_paths(&readme));
    assert!(
        names.len() > 20,
        "the scan found too few paths ({}): is it still reading the README?",
        names.len()
    );
    let missing: Vec<&String> = names.iter().filter(|name| !root.join(name.as_str()).exists()).collect();
    assert!(missing.is_empty(), "README.md names paths that do not exist: {missing:?}");
}

#[test]
fn the_scan_finds_links_and_named_paths() {
    let text = "See [the guide](docs/serve.md#tls), [site](https://x.y), `crates/kuradb/src/lib.rs`, \
                docs/async.md. and `scripts/fuzz [SECONDS]`; not ../docs/x or a/docs/y or `crates/*/tests`.";
    assert_eq!(relative_links(text), vec!["docs/serve.md"]);
    assert_eq!(
        named_paths(text),
        vec!["docs/serve.md", "crates/kuradb/src/lib.rs", "docs/async.md", "scripts/fuzz"]
    );
}

/// The rows of the README's "File extensions" table: class name and extensions.
fn extension_table(readme: &str) -> Vec<(String, Vec<String>)> {
    let section = readme.split("\n## File extensions\n").nth(1).expect("a File extensions section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut rows = Vec::new();
    for line in section
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| class") && !l.starts_with("| ---"))
    {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let exts =
            cells[2].split_whitespace().map(|e| e.trim_matches('`').trim_start_matches('.').to_string());
        rows.push((cells[1].to_string(), exts.collect()));
    }
    rows
}

#[test]
fn the_readme_s_extension_table_is_the_class_registry() {
    let readme = std::fs::read_to_string(repository().join("README.md")).expect("README.md");
    let table = extension_table(&readme);
    let registry: Vec<(String, Vec<String>)> = DbmClass::all()
        .filter(|class| !class.extensions().is_empty())
        .map(|class| (class.name().to_string(), class.extensions().iter().map(|e| e.to_string()).collect()))
        .collect();
    assert_eq!(table, registry, "README.md's File extensions table differs from DbmClass's registry");
}
