//! `--config_file`: the settings `CONFIG REWRITE` keeps across restarts,
//! the ones Sentinel changes at run time: whose replica the server is
//! (`replicaof HOST PORT`, absent for a master) and `replica-priority N`.
//! The file is read at start and written whole by CONFIG REWRITE, in
//! Redis's syntax for those two lines.

use std::io::Write;
use std::path::{Path, PathBuf};

use kuradb::{Error, ErrorKind, Result};

use crate::replication::Target;

/// What a configuration file holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileSettings {
    /// The master followed; `None` for a master.
    pub replicaof: Option<Target>,
    /// The replica priority, if the file sets it.
    pub replica_priority: Option<i64>,
}

/// Reads `path`; a file that does not exist yet holds nothing. A line
/// other than a comment, `replicaof HOST PORT` (`slaveof`) or
/// `replica-priority N` (`slave-priority`) is an error naming it.
pub fn load(path: &Path) -> Result<FileSettings> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(FileSettings::default()),
        Err(e) => return Err(Error::io("reading the configuration file", path, e)),
    };
    let mut settings = FileSettings::default();
    for (number, line) in text.lines().enumerate() {
        let bad = |why: &str| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("{} line {}: {why}: {line:?}", path.display(), number + 1),
            )
        };
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [] => {}
            [first, ..] if first.starts_with('#') => {}
            [name, host, port] if name.eq_ignore_ascii_case("replicaof") || name.eq_ignore_ascii_case("slaveof") => {
                let target = Target::parse(&format!("{host}:{port}")).map_err(|_| bad("not replicaof HOST PORT"))?;
                settings.replicaof = Some(target);
            }
            [name, value]
                if name.eq_ignore_ascii_case("replica-priority") || name.eq_ignore_ascii_case("slave-priority") =>
            {
                let n = value
                    .parse::<i64>()
                    .ok()
                    .filter(|n| (0..=i64::from(i32::MAX)).contains(n))
                    .ok_or_else(|| bad("the priority must be between 0 and 2147483647"))?;
                settings.replica_priority = Some(n);
            }
            _ => {
                return Err(bad(
                    "kura serve's configuration file holds only replicaof HOST PORT and replica-priority N (what \
                     CONFIG REWRITE writes); give the other settings as flags",
                ))
            }
        }
    }
    Ok(settings)
}

/// Writes `settings` to `path` whole or not at all (written beside, made
/// durable, renamed over).
pub fn save(path: &Path, settings: &FileSettings) -> Result<()> {
    let mut text =
        String::from("# kura serve: the settings CONFIG REWRITE keeps (see docs/serve.md, \"Sentinel\")\n");
    if let Some(target) = &settings.replicaof {
        text.push_str(&format!("replicaof {} {}\n", target.host, target.port));
    }
    if let Some(priority) = settings.replica_priority {
        text.push_str(&format!("replica-priority {priority}\n"));
    }
    let mut temp = path.as_os_str().to_os_string();
    temp.push(".tmp");
    let temp = PathBuf::from(temp);
    let written = std::fs::File::create(&temp)
        .and_then(|mut file| file.write_all(text.as_bytes()).and_then(|()| file.sync_data()))
        .and_then(|()| std::fs::rename(&temp, path));
    written.map_err(|e| Error::io("writing the configuration file", path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_and_other_lines_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kura.conf");
        assert_eq!(load(&path).unwrap(), FileSettings::default(), "a missing file holds nothing");
        let settings = FileSettings {
            replicaof: Some(Target { host: "10.0.0.1".into(), port: 6380 }),
            replica_priority: Some(7),
        };
        save(&path, &settings).unwrap();
        assert_eq!(load(&path).unwrap(), settings);
        save(&path, &FileSettings { replicaof: None, replica_priority: Some(100) }).unwrap();
        assert_eq!(load(&path).unwrap().replicaof, None, "a master's file names no master");
        std::fs::write(&path, "# comment\n\nslaveof h 1\nslave-priority 0\n").unwrap();
        assert_eq!(load(&path).unwrap().replica_priority, Some(0));
        std::fs::write(&path, "maxclients 5\n").unwrap();
        let err = load(&path).unwrap_err().to_string();
        assert!(err.contains("line 1") && err.contains("maxclients"), "{err}");
        std::fs::write(&path, "replicaof h x\n").unwrap();
        assert!(load(&path).is_err());
    }
}
