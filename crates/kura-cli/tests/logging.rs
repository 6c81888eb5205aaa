//! What kuradb tells an operator through the `log` facade reaches kura's
//! stderr at the default level.

use std::process::Command;

fn kura(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_kura")).args(args).env_remove("RUST_LOG").output().expect("kura runs")
}

#[test]
fn an_automatic_restore_at_open_is_reported_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("casket.kh");
    let db = db.to_str().unwrap();
    let set = kura(&["util", "set", db, "apple", "red"]);
    assert!(set.status.success(), "{set:?}");
    assert!(set.stderr.is_empty(), "a clean open says nothing: {}", String::from_utf8_lossy(&set.stderr));
    // Byte 64 of the header is 1 while a writer has the file open: as a
    // writer killed before closing leaves it.
    let mut bytes = std::fs::read(db).unwrap();
    bytes[64] = 1;
    std::fs::write(db, bytes).unwrap();

    let set = kura(&["util", "set", db, "banana", "yellow"]);
    assert!(set.status.success(), "{set:?}");
    let stderr = String::from_utf8_lossy(&set.stderr);
    assert!(
        stderr.contains("kura: warn:") && stderr.contains("was not closed cleanly: restoring it"),
        "{stderr}"
    );
    let get = kura(&["util", "get", db, "apple"]);
    assert_eq!(String::from_utf8_lossy(&get.stdout), "red\n");
}
