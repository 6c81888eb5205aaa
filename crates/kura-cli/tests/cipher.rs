//! `kura util` with an encrypted database: the key comes from `--cipher_key`
//! or, out of the process list, from `KURA_CIPHER_KEY`; the flag wins; a
//! missing or wrong key fails with a message that names the file, never the
//! key; `rebuild --new_cipher_key` re-keys or (empty) decrypts.

use std::process::{Command, Output};

fn kura(args: &[&str], env_key: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kura"));
    command.arg("util").args(args).env_remove("KURA_CIPHER_KEY");
    if let Some(key) = env_key {
        command.env("KURA_CIPHER_KEY", key);
    }
    command.output().expect("the kura binary runs")
}

fn ok(args: &[&str], env_key: Option<&str>) -> String {
    let out = kura(args, env_key);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kura util {args:?} failed: {stderr}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn fails(args: &[&str], env_key: Option<&str>, expected: &str) {
    let out = kura(args, env_key);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "kura util {args:?} succeeded");
    assert!(stderr.contains(expected), "kura util {args:?}: {stderr}");
    for key in ["env-secret", "flag-secret", "wrong-secret"] {
        assert!(!stderr.contains(key), "the key in {stderr}");
    }
}

#[test]
fn the_key_comes_from_the_environment_or_the_flag_which_wins() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["casket.kh", "casket.kt"] {
        let path = dir.path().join(name);
        let file = path.to_str().unwrap();
        ok(&["set", file, "japan", "tokyo"], Some("env-secret"));
        assert!(!std::fs::read(&path).unwrap().windows(5).any(|w| w == b"tokyo"), "{name} in clear");
        assert_eq!(ok(&["get", file, "japan"], Some("env-secret")), "tokyo");
        fails(&["get", file, "japan"], None, "is encrypted: give cipher_key");
        fails(&["get", file, "japan"], Some("wrong-secret"), "wrong cipher_key");
        // The flag wins over the variable.
        assert_eq!(ok(&["get", "--cipher_key", "env-secret", file, "japan"], Some("wrong-secret")), "tokyo");
        let shown = ok(&["inspect", file], Some("env-secret"));
        assert!(shown.contains("xchacha20-poly1305") && !shown.contains("env-secret"), "{shown}");
        ok(&["rebuild", "--new_cipher_key", "flag-secret", file], Some("env-secret"));
        fails(&["get", file, "japan"], Some("env-secret"), "wrong cipher_key");
        assert_eq!(ok(&["get", "--cipher_key", "flag-secret", file, "japan"], None), "tokyo");
        ok(&["rebuild", "--cipher_key", "flag-secret", "--new_cipher_key", "", file], None);
        assert_eq!(ok(&["get", file, "japan"], None), "tokyo");
        fails(&["get", file, "japan"], Some("env-secret"), "is not encrypted, but a cipher_key was given");
    }
    let skip = dir.path().join("casket.ks");
    fails(&["set", skip.to_str().unwrap(), "a", "b"], Some("env-secret"), "unknown parameter cipher_key");
}
