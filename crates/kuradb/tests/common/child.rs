//! A test run again as a child process of its own test binary: killed with
//! SIGKILL at a moment of the parent's choosing ([`ChildTest`], what the crash
//! tests use to leave behind the files of a process that died mid-write), or
//! holding a file while the parent probes its lock ([`Holder`]).

use std::ffi::OsStr;
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A running child test process; killed on drop if still running.
pub struct ChildTest {
    child: Child,
    stdout: Option<JoinHandle<String>>,
    stderr: Option<JoinHandle<String>>,
}

/// What a killed child test left.
pub struct Killed {
    /// Whether it was still running when it was killed.
    pub running: bool,
    /// Everything it wrote on stdout.
    pub stdout: String,
    /// Everything it wrote on stderr.
    pub stderr: String,
}

/// Reads all of `pipe` on a thread of its own, so that a child writing more
/// than a pipe holds never blocks before it is killed.
fn drain(mut pipe: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        text
    })
}

impl ChildTest {
    /// Runs the ignored test `test` of this test binary alone, uncaptured, in a
    /// child process with `envs` added to its environment.
    pub fn start<K, V>(test: &str, envs: impl IntoIterator<Item = (K, V)>) -> ChildTest
    where
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        let mut child = Command::new(std::env::current_exe().expect("the test binary"))
            .args(["--exact", test, "--ignored", "--nocapture", "--test-threads=1"])
            .envs(envs)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start the child test {test}: {e}"));
        let stdout = drain(child.stdout.take().expect("the child's stdout"));
        let stderr = drain(child.stderr.take().expect("the child's stderr"));
        ChildTest { child, stdout: Some(stdout), stderr: Some(stderr) }
    }

    /// Kills the child with SIGKILL (if it is still running) and answers what
    /// it left.
    pub fn kill(mut self) -> Killed {
        let running = matches!(self.child.try_wait(), Ok(None));
        let _ = self.child.kill();
        let _ = self.child.wait();
        let join = |h: Option<JoinHandle<String>>| {
            h.map(|h| h.join().expect("the reader thread")).unwrap_or_default()
        };
        Killed { running, stdout: join(self.stdout.take()), stderr: join(self.stderr.take()) }
    }
}

impl Drop for ChildTest {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The last batch a child reported with "synced N".
///
/// A report is found anywhere in a line, not only at its start: the test
/// harness of the child writes "test NAME ... " and ends that line only when
/// the test ends, so a child's first report shares the harness's line.
/// (Missing it once made the crash tests take a database a child had
/// synchronized twice for one it had never reported.)
pub fn last_synced(output: &str) -> Option<u64> {
    output
        .lines()
        .filter_map(|line| line.rsplit_once("synced "))
        .filter_map(|(_, number)| number.trim().parse().ok())
        .max()
}

/// A child test process that holds a database or file open until it ends on
/// its own; killed on drop if the test fails first. The lock tests' other
/// process: it writes `signal` once it holds what it opened.
pub struct Holder {
    child: Child,
    who: String,
}

impl Holder {
    /// Runs the ignored test `test` of this test binary in a child process
    /// with `envs` added to its environment, and returns once the child has
    /// written `signal`; panics, naming `who`, if the child exits first or
    /// takes longer than `within`.
    pub fn start<K, V>(
        who: &str,
        test: &str,
        envs: impl IntoIterator<Item = (K, V)>,
        signal: &Path,
        within: Duration,
    ) -> Holder
    where
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        let child = Command::new(std::env::current_exe().expect("the test binary"))
            .args(["--exact", test, "--ignored", "--nocapture", "--test-threads=1"])
            .envs(envs)
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("[{who}] start the child test {test}: {e}"));
        let mut holder = Holder { child, who: who.to_string() };
        let deadline = Instant::now() + within;
        while !signal.exists() {
            if let Some(status) = holder.child.try_wait().expect("poll the child") {
                panic!("[{who}] the child exited with {status} before it held the file");
            }
            assert!(Instant::now() < deadline, "[{who}] the child did not hold the file within {within:?}");
            std::thread::sleep(Duration::from_millis(5));
        }
        holder
    }

    /// The child's process id, which a "locked" error names.
    #[allow(dead_code, reason = "not every test binary that holds files checks the holder's name")]
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the child to end and panics unless it succeeded.
    pub fn finish(mut self) {
        let status = self.child.wait().expect("wait for the child");
        assert!(status.success(), "[{}] the child failed: {status}", self.who);
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
