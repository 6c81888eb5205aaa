//! `kura util search`: each mode's keys, one a line, and a clear error for
//! an unknown mode, a bad regular expression or an ordered mode on a hash.

use std::process::{Command, Output};

fn kura(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kura")).arg("util").args(args).output().expect("the kura binary runs")
}

fn ok(args: &[&str]) -> String {
    let output = kura(args);
    assert!(output.status.success(), "{args:?} failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

fn fails_with(args: &[&str], expected: &str) {
    let output = kura(args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success() && stderr.contains(expected), "{args:?}: {stderr}");
}

#[test]
fn search_prints_the_matching_keys_in_each_mode() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("casket.tkt");
    let tree = tree.to_str().unwrap();
    for key in ["apple", "apricot", "grape", "pine\napple"] {
        ok(&["set", tree, key, "v"]);
    }
    assert_eq!(ok(&["search", tree, "apple"]), "apple\npine\\napple\n");
    assert_eq!(ok(&["search", "--mode", "begin", tree, "ap"]), "apple\napricot\n");
    assert_eq!(ok(&["search", "--mode", "begin", "--max", "1", tree, "ap"]), "apple\n");
    assert_eq!(ok(&["search", "--mode", "regex", tree, "^a.*t$"]), "apricot\n");
    assert_eq!(ok(&["search", "--mode", "edit", "--max", "2", tree, "grap"]), "grape\napple\n");
    assert_eq!(ok(&["search", "--mode", "lower", tree, "b"]), "apricot\napple\n");
    assert_eq!(
        ok(&["search", "--mode", "containword", "--hex", tree, "6170706c65"]),
        "6170706c65\n70696e650a6170706c65\n"
    );
    fails_with(&["search", "--mode", "bogus", tree, "x"], "unknown search mode \"bogus\"");
    fails_with(&["search", "--mode", "regex", tree, "("], "invalid regular expression");
    let hash = dir.path().join("casket.tkh");
    let hash = hash.to_str().unwrap();
    ok(&["set", hash, "k", "v"]);
    fails_with(&["search", "--mode", "upper", hash, "k"], "needs an ordered database");
}
