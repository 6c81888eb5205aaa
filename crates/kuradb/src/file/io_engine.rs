//! Which engine carries a positional file's batched reads
//! ([`File::read_many`](super::File::read_many)) to the OS.

use std::fmt;

use crate::error::{Error, ErrorKind, Result};
use crate::sys::{self, Engine};

/// The environment variable that chooses the engine of files whose spec
/// says `io_engine=auto` (the default): one of `auto`, `uring`, `threads`,
/// `serial`.
pub const IO_ENGINE_VAR: &str = "KURA_IO_ENGINE";

/// How a positional file's batched reads reach the OS: the `io_engine`
/// parameter of a [`FileSpec`](super::FileSpec).
///
/// ```
/// use kuradb::file::{FileSpec, IoEngine};
/// let spec = FileSpec::parse("pos-para,block_size=4096,io_engine=threads").unwrap();
/// assert_eq!(spec.io_engine, IoEngine::Threads);
/// assert!(FileSpec::parse("pos-para,io_engine=fast").is_err());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum IoEngine {
    /// The `KURA_IO_ENGINE` environment variable's choice if it is set, else
    /// io_uring where this process may use it and the thread pool where not.
    #[default]
    Auto,
    /// io_uring (Linux 5.6 or later, not refused by seccomp); opening fails
    /// where it is missing.
    Uring,
    /// A pool of threads issuing one `pread` each, in parallel.
    Threads,
    /// One `pread` after another, as a loop of [`File::read`](super::File::read) would.
    Serial,
}

impl IoEngine {
    /// Every engine, `auto` first.
    pub const ALL: [IoEngine; 4] = [IoEngine::Auto, IoEngine::Uring, IoEngine::Threads, IoEngine::Serial];

    /// The name the spec and `KURA_IO_ENGINE` use.
    pub fn name(self) -> &'static str {
        match self {
            IoEngine::Auto => "auto",
            IoEngine::Uring => "uring",
            IoEngine::Threads => "threads",
            IoEngine::Serial => "serial",
        }
    }

    /// Parses a name, ignoring case; `what` names the source in the error.
    pub fn parse(text: &str, what: &str) -> Result<IoEngine> {
        let lower = text.trim().to_ascii_lowercase();
        IoEngine::ALL.into_iter().find(|e| e.name() == lower).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("{what} must be one of auto, uring, threads, serial, not {text:?}"),
            )
        })
    }
}

impl fmt::Display for IoEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The engine a file opened with `requested` uses, and how it was chosen.
pub(crate) struct Resolved {
    pub engine: Engine,
    pub reason: String,
}

impl Resolved {
    /// The engine and how it was chosen, for `inspect`: an automatic choice
    /// says what the probe of io_uring found, once a batch has made it.
    pub(crate) fn describe(&self) -> String {
        if self.engine != (Engine::Uring { fallback: true }) {
            return self.reason.clone();
        }
        match sys::uring_probed() {
            None => "auto (io_uring, or threads where refused; not probed yet)".into(),
            Some(Ok(())) => "uring (auto)".into(),
            Some(Err(why)) => format!("threads (auto; io_uring refused: {why})"),
        }
    }
}

/// Resolves `requested` in this process: the environment variable; a forced
/// io_uring is probed here (once per process), an automatic choice at the
/// first batch.
pub(crate) fn resolve(requested: IoEngine) -> Result<Resolved> {
    let env = std::env::var(IO_ENGINE_VAR).ok();
    resolve_with(requested, env.as_deref(), sys::uring_available)
}

/// [`resolve`] with the environment's value and the probe given, so that a
/// test can refuse io_uring whatever this kernel allows.
pub(crate) fn resolve_with(
    requested: IoEngine,
    env: Option<&str>,
    probe: impl FnOnce() -> std::result::Result<(), String>,
) -> Result<Resolved> {
    let (choice, source) = match (requested, env.filter(|v| !v.trim().is_empty())) {
        (IoEngine::Auto, Some(value)) => (IoEngine::parse(value, IO_ENGINE_VAR)?, IO_ENGINE_VAR),
        (choice, _) => (choice, "io_engine"),
    };
    let resolved = |engine, reason: String| Ok(Resolved { engine, reason });
    match choice {
        IoEngine::Serial => resolved(Engine::Serial, format!("serial ({source})")),
        IoEngine::Threads => resolved(Engine::Threads, format!("threads ({source})")),
        IoEngine::Uring => match probe() {
            Ok(()) => resolved(Engine::Uring { fallback: false }, format!("uring ({source})")),
            Err(why) => Err(Error::new(
                ErrorKind::NotImplemented,
                format!("{source} asks for io_uring, which this process cannot use: {why}"),
            )),
        },
        IoEngine::Auto => resolved(Engine::Uring { fallback: true }, "auto".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused() -> std::result::Result<(), String> {
        Err("io_uring_setup failed: Operation not permitted (os error 1)".into())
    }

    #[test]
    fn auto_leaves_the_probe_to_the_first_batch() {
        // The fallback itself is sys::batch's test with a refusing probe.
        let r = resolve_with(IoEngine::Auto, None, || panic!("auto must not probe at open")).unwrap();
        assert_eq!(r.engine, Engine::Uring { fallback: true });
    }

    #[test]
    fn forcing_a_refused_io_uring_is_an_error_naming_why() {
        let err = resolve_with(IoEngine::Uring, None, refused).err().unwrap();
        assert_eq!(err.kind(), ErrorKind::NotImplemented);
        assert!(err.to_string().contains("not permitted"), "{err}");
        let err = resolve_with(IoEngine::Auto, Some("uring"), refused).err().unwrap();
        assert!(err.to_string().contains(IO_ENGINE_VAR), "{err}");
    }

    #[test]
    fn the_environment_chooses_only_for_auto() {
        let r = resolve_with(IoEngine::Auto, Some("serial"), || Ok(())).unwrap();
        assert_eq!(r.engine, Engine::Serial);
        let r = resolve_with(IoEngine::Threads, Some("serial"), || Ok(())).unwrap();
        assert_eq!(r.engine, Engine::Threads);
        let r = resolve_with(IoEngine::Auto, Some(" "), refused).unwrap();
        assert_eq!(r.engine, Engine::Uring { fallback: true });
        let err = resolve_with(IoEngine::Auto, Some("fast"), || Ok(())).err().unwrap();
        assert!(err.to_string().contains("KURA_IO_ENGINE must be one of"), "{err}");
    }
}
