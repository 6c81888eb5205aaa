//! Each `kura util` command's help fits a screen: a command lists the flags
//! it uses first; the tuning of a new file is listed, under its own heading,
//! only by the commands that create or rebuild a database; a reader offers
//! neither the tuning nor --sync_hard, and does not take the tuning.

use std::process::{Command, Output};

fn kura(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kura")).arg("util").args(args).output().expect("the kura binary runs")
}

fn help(command: &str) -> String {
    let out = kura(&[command, "--help"]);
    assert!(out.status.success(), "{command} --help: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

const TUNING_HEADING: &str = "Tuning of a new or rebuilt database:";
const TUNING_FLAGS: [&str; 6] =
    ["--buckets", "--max_page_size", "--key_comparator", "--comparator", "--step_unit", "--record_comp"];

#[test]
fn a_readers_help_is_short_and_offers_no_tuning() {
    for command in ["get", "list", "export", "inspect", "backup", "search"] {
        let text = help(command);
        // list and export have many flags of their own, all of which they use.
        let lines = text.lines().count();
        assert!(
            lines < 40 || matches!(command, "list" | "export"),
            "{command} --help is {lines} lines:\n{text}"
        );
        assert!(!text.contains(TUNING_HEADING), "{command}:\n{text}");
        for flag in TUNING_FLAGS.iter().chain(&["--sync_hard", "--alloc_init"]) {
            assert!(!text.contains(&format!("{flag} ")), "{command} offers {flag}:\n{text}");
        }
        for flag in ["--dbm", "--params", "--wait", "--cipher_key", "--no_lock"] {
            assert!(text.contains(flag), "{command} lacks {flag}:\n{text}");
        }
    }
}

#[test]
fn a_reader_does_not_take_tuning_flags() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("casket.kh");
    let db = db.to_str().unwrap();
    assert!(kura(&["set", db, "k", "v"]).status.success());
    let out = kura(&["get", "--buckets", "10", db, "k"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--buckets"));
}

#[test]
fn the_commands_that_make_a_file_list_the_tuning_after_their_own_flags() {
    for command in ["create", "rebuild", "import", "set", "merge", "restore", "convert"] {
        let text = help(command);
        let heading =
            text.find(TUNING_HEADING).unwrap_or_else(|| panic!("{command}: no tuning heading:\n{text}"));
        for flag in TUNING_FLAGS {
            let at =
                text.find(&format!("{flag} ")).unwrap_or_else(|| panic!("{command} lacks {flag}:\n{text}"));
            assert!(at > heading, "{command}: {flag} is not under the tuning heading:\n{text}");
        }
        let own = text.find("--dbm ").unwrap();
        assert!(own < heading, "{command}: --dbm comes after the tuning:\n{text}");
        assert!(text.contains("--sync_hard"), "{command}:\n{text}");
    }
}

#[test]
fn a_writer_to_an_existing_file_offers_sync_hard_and_no_tuning() {
    for command in ["remove", "rekey", "clear"] {
        let text = help(command);
        assert!(text.contains("--sync_hard"), "{command}:\n{text}");
        assert!(!text.contains(TUNING_HEADING), "{command}:\n{text}");
    }
}
