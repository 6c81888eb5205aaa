//! The documents against the repository: everything README.md,
//! ARCHITECTURE.md and the guides in docs/ point at lives there (their
//! relative links, with the heading a `#anchor` names, and the repository
//! paths they name: `docs/…`, `crates/…`, `bindings/…`, `scripts/…`, …), and
//! README's one table of file extensions is the class registry's, which every
//! tool and binding reads. A file renamed, a heading reworded or an extension
//! added without the documents following fails here.
//! (README's Rust snippets are compiled as doctests: crates/kuradb/src/lib.rs.)

use std::path::{Path, PathBuf};

use kuradb::DbmClass;

/// The folders a repository path a document names starts with.
const TOP_FOLDERS: &[&str] = &["docs/", "crates/", "bindings/", "bench/", "scripts/", "deploy/", ".ci/"];

/// What a build makes, named by the guides as where to find it.
const BUILD_OUTPUTS: &[&str] =
    &["bindings/java/target/", "bindings/ruby/lib/kuradb/kuradb_ext.so", "bench/peers/target"];

/// Every document the checks read, by its path from the repository's root.
fn documents() -> Vec<PathBuf> {
    let root = repository();
    let mut docs = vec![PathBuf::from("README.md"), PathBuf::from("ARCHITECTURE.md")];
    let mut guides: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|entry| entry.expect("a docs/ entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .map(|path| PathBuf::from("docs").join(path.file_name().expect("a file name")))
        .collect();
    guides.sort();
    docs.extend(guides);
    docs
}

/// The anchor GitHub gives a heading: lower case, punctuation but `-` and
/// `_` dropped, spaces as `-`.
fn anchor_of(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a markdown file's headings (outside code blocks).
fn anchors(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            out.push(anchor_of(line.trim_start_matches('#')));
        }
    }
    out
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The targets of `[text](target)` links that are not URLs or anchors of
/// the same page, each with its `#anchor` if it has one.
fn relative_links_with_anchors(text: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let Some(end) = rest.find(')') else { break };
        let mut parts = rest[..end].splitn(2, '#');
        let target = parts.next().unwrap_or("");
        let anchor = parts.next().map(str::to_string);
        if !target.is_empty() && !target.contains("://") && !target.starts_with("mailto:") {
            out.push((target.to_string(), anchor));
        }
    }
    out
}

/// The targets of `[text](target)` links that are not URLs or anchors.
fn relative_links(text: &str) -> Vec<String> {
    relative_links_with_anchors(text).into_iter().map(|(target, _)| target).collect()
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
fn every_path_the_documents_name_exists() {
    let root = repository();
    let mut missing = Vec::new();
    for doc in documents() {
        let text =
            std::fs::read_to_string(root.join(&doc)).unwrap_or_else(|e| panic!("{}: {e}", doc.display()));
        let folder = doc.parent().unwrap_or(Path::new(""));
        let mut found = 0;
        for (target, anchor) in relative_links_with_anchors(&text) {
            found += 1;
            let path = root.join(folder).join(&target);
            if !path.exists() {
                missing.push(format!("{}: link {target}", doc.display()));
            } else if let Some(anchor) = anchor.filter(|_| target.ends_with(".md")) {
                let linked = std::fs::read_to_string(&path).expect("a linked page");
                if !anchors(&linked).contains(&anchor) {
                    missing.push(format!("{}: link {target}#{anchor} (no such heading)", doc.display()));
                }
            }
        }
        for name in named_paths(&text) {
            found += 1;
            let pending = BUILD_OUTPUTS.iter().any(|folder| name.starts_with(folder));
            if !root.join(&name).exists() && !pending {
                missing.push(format!("{}: {name}", doc.display()));
            }
        }
        if doc == Path::new("README.md") || doc == Path::new("ARCHITECTURE.md") {
            assert!(
                found > 20,
                "the scan found too few paths in {} ({found}): is it still reading it?",
                doc.display()
            );
        }
    }
    missing.dedup();
    assert!(missing.is_empty(), "the documents name paths that do not exist: {missing:#?}");
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
    assert_eq!(
        relative_links_with_anchors("[a](files.md#locks) and [b](../bench/results/README.md)"),
        vec![
            ("files.md".to_string(), Some("locks".to_string())),
            ("../bench/results/README.md".to_string(), None)
        ]
    );
    assert_eq!(anchor_of(" `kura util` and Python's API"), "kura-util-and-pythons-api");
    assert_eq!(anchors("# One\n```\n# not a heading\n```\n## Two words"), vec!["one", "two-words"]);
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
