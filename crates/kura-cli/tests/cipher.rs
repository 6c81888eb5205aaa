//! `kura util` with an encrypted database: the key comes from `--cipher_key`
//! or, out of the process list, from `KURA_CIPHER_KEY`; the flag wins; a
//! missing or wrong key fails with a message that names the file, never the
//! key; `rebuild --new_cipher_key` re-keys or (empty) decrypts; `merge`
//! reads encrypted sources with the destination's key or their own.

use std::process::{Command, Output};

fn kura(args: &[&str], env_key: Option<&str>) -> Output {
    kura_with(args, &[("KURA_CIPHER_KEY", env_key)])
}

/// `kura util ARGS` with each of `vars` set to its value or (`None`) unset.
fn kura_with(args: &[&str], vars: &[(&str, Option<&str>)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kura"));
    command.arg("util").args(args).env_remove("KURA_CIPHER_KEY").env_remove("KURA_SRC_CIPHER_KEY");
    for (name, value) in vars {
        if let Some(value) = value {
            command.env(name, value);
        }
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

#[test]
fn merge_reads_encrypted_sources_with_the_destinations_key_or_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let (hash, tree, plain) = (path("src.kh"), path("src.kt"), path("plain.kh"));
    ok(&["set", &hash, "japan", "tokyo"], Some("env-secret"));
    ok(&["set", &tree, "france", "paris"], Some("env-secret"));
    ok(&["set", &plain, "italy", "rome"], None);
    // Sources and destination under one key: KURA_CIPHER_KEY serves both.
    let same = path("same.kh");
    ok(&["merge", &same, &hash, &tree], Some("env-secret"));
    assert_eq!(ok(&["get", &same, "france"], Some("env-secret")), "paris");
    let bytes = std::fs::read(&same).unwrap();
    for word in [&b"japan"[..], b"tokyo", b"france", b"paris"] {
        assert!(!bytes.windows(word.len()).any(|w| w == word), "a key or value in clear");
    }
    // The sources' own key, by flag or variable; the destination's by flag.
    let other = path("other.kh");
    ok(&["merge", "--cipher_key", "flag-secret", "--src_cipher_key", "env-secret", &other, &hash], None);
    let out = kura_with(
        &["merge", "--cipher_key", "flag-secret", &other, &tree],
        &[("KURA_SRC_CIPHER_KEY", Some("env-secret"))],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // An empty source key: plain sources into an encrypted destination.
    ok(&["merge", "--src_cipher_key", "", &other, &plain], Some("flag-secret"));
    for (key, value) in [("japan", "tokyo"), ("france", "paris"), ("italy", "rome")] {
        assert_eq!(ok(&["get", "--cipher_key", "flag-secret", &other, key], None), value);
    }
    // A missing or wrong key fails, naming the file and never a key.
    let fresh = path("fresh.kh");
    fails(&["merge", &fresh, &hash], None, "is encrypted: give cipher_key");
    fails(&["merge", &fresh, &hash], None, "unless --src_cipher_key");
    fails(&["merge", "--src_cipher_key", "wrong-secret", &fresh, &hash], None, "wrong cipher_key for");
    fails(&["merge", &fresh, &plain], Some("flag-secret"), "is not encrypted, but a cipher_key was given");
    let out = kura_with(&["merge", &fresh, &hash], &[("KURA_SRC_CIPHER_KEY", Some("wrong-secret"))]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("wrong cipher_key"));
}
