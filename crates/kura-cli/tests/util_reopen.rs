//! A flag that cannot apply to an existing file is refused with the value
//! the file has: a tree reopened with another key order.

use std::process::{Command, Output};

fn kura(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kura")).arg("util").args(args).output().expect("the kura binary runs")
}

#[test]
fn another_key_comparator_is_refused_with_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("casket.kt");
    let db = db.to_str().unwrap();
    assert!(kura(&["create", "--comparator", "dec", db]).status.success());
    for args in [
        vec!["set", "--key_comparator", "lexical", db, "10", "a"],
        vec!["set", "--comparator", "lex", db, "10", "a"],
        vec!["get", "--params", "key_comparator=lexical", db, "10"],
    ] {
        let out = kura(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("casket.kt orders its keys by key_comparator=decimal"), "{args:?}: {err}");
        assert!(err.contains("key_comparator=lexical"), "{args:?}: {err}");
        assert!(err.contains("leave --key_comparator (or --comparator) out"), "{args:?}: {err}");
    }
    for args in
        [["set", "--key_comparator", "decimal", db, "10", "a"], ["set", "--comparator", "dec", db, "9", "b"]]
    {
        let out = kura(&args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let out = kura(&["list", "--keys", db]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "9\n10\n");
}
