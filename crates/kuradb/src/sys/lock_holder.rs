//! Who holds an advisory lock: what a refused open tells its user, so that
//! "locked" names the process to close or wait for.
//!
//! Linux lists every `flock` lock in `/proc/locks` with the holder's process
//! id and the file's device and inode. Elsewhere there is no such list and
//! the answer is `None`: the error then says "another process" alone.

/// A process holding a lock on a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LockHolder {
    /// The process id the system records for the lock: the process that took
    /// it (a forked child that inherited it shows as its parent).
    pub pid: u32,
    /// The program's name (`/proc/PID/comm`), where it can be read.
    pub program: Option<String>,
    /// Whether it holds the lock as a writer (exclusive) rather than a reader.
    pub writer: bool,
}

/// The first process holding a lock on the file of device `dev` and inode
/// `ino`, if the platform lists locks and one is listed.
#[cfg(target_os = "linux")]
pub(crate) fn lock_holder(dev: u64, ino: u64) -> Option<LockHolder> {
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    let (pid, writer) = holder_in(&locks, libc::major(dev), libc::minor(dev), ino)?;
    let program = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok().map(|s| s.trim_end().to_owned());
    Some(LockHolder { pid, program, writer })
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn lock_holder(_dev: u64, _ino: u64) -> Option<LockHolder> {
    None
}

/// The holder of a granted `flock` lock in a `/proc/locks` listing. Lines
/// read `1: FLOCK  ADVISORY  WRITE 7903 fe:00:9978545 0 EOF`, the device's
/// major and minor numbers in hexadecimal; lines with `->` are processes
/// still waiting, not holders.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn holder_in(locks: &str, major: u32, minor: u32, ino: u64) -> Option<(u32, bool)> {
    let file = format!("{major:02x}:{minor:02x}:{ino}");
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [_, "FLOCK", _, mode, pid, id, ..] if *id == file => Some((pid.parse().ok()?, *mode == "WRITE")),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTING: &str = "\
1: POSIX  ADVISORY  WRITE 100 fe:00:42 0 EOF
2: FLOCK  ADVISORY  READ 200 fe:00:43 0 EOF
3: FLOCK  ADVISORY  WRITE 7903 fe:00:9978545 0 EOF
3: -> FLOCK  ADVISORY  WRITE 8000 fe:00:9978545 0 EOF
4: FLOCK  ADVISORY  WRITE 300 103:02:9978545 0 EOF
";

    #[test]
    fn finds_the_holder_of_a_flock_lock_by_device_and_inode() {
        assert_eq!(holder_in(LISTING, 0xfe, 0, 9978545), Some((7903, true)));
        assert_eq!(holder_in(LISTING, 0xfe, 0, 43), Some((200, false)));
        assert_eq!(holder_in(LISTING, 0x103, 2, 9978545), Some((300, true)));
        // A POSIX record lock is not what kuradb takes; another file has none.
        assert_eq!(holder_in(LISTING, 0xfe, 0, 42), None);
        assert_eq!(holder_in(LISTING, 0xfe, 1, 9978545), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn names_this_process_as_the_holder_of_its_own_lock() {
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::File::create(dir.path().join("f")).unwrap();
        file.try_lock().unwrap();
        let (dev, ino) = super::super::file_identity(&file).unwrap();
        let holder = lock_holder(dev, ino).expect("listed in /proc/locks");
        assert_eq!(holder.pid, std::process::id());
        assert!(holder.writer);
        assert!(holder.program.is_some_and(|p| !p.is_empty()));
    }
}
