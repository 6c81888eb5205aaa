//! What `kura serve` does before it serves, tried as a new user would: an
//! address it cannot listen on fails before any database file is created,
//! and a file another process holds is refused at once with the same
//! message as everywhere (who holds it, how to wait).

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use kuradb::dbm::poly::{Params, PolyDbm};
use kuradb::dbm::Access;

fn serve(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kura")).arg("serve").args(args).output().expect("kura runs")
}

#[test]
fn an_address_in_use_fails_before_any_file_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let path = dir.path().join("new.kh");
    let out = serve(&["--address", &address, path.to_str().unwrap()]);
    assert!(!out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("--address {address}")), "{stderr}");
    assert!(!path.exists(), "the failed start created {}", path.display());
}

#[test]
fn a_file_another_process_holds_is_refused_at_once_naming_the_holder() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("held.kh");
    let holder = PolyDbm::open(&path, Access::ReadWrite, &Params::new()).unwrap();
    let started = Instant::now();
    let out = serve(&["--address", "127.0.0.1:0", path.to_str().unwrap()]);
    assert!(started.elapsed() < Duration::from_secs(20), "kura serve waited for the lock");
    assert!(!out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is locked by another process"), "{stderr}");
    if cfg!(target_os = "linux") {
        assert!(stderr.contains(&format!("pid {}", std::process::id())), "{stderr}");
    }
    assert!(stderr.contains("wait=true"), "{stderr}");
    holder.close().unwrap();
}
