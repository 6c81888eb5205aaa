//! Training the compression dictionary outside every lock.
//!
//! The write that fills the sample (see `dictionary.rs`) runs inside
//! `State::apply`, under its bucket's slot lock (every slot of a
//! multi-key call, or the whole database for `process_each`) and under
//! the database's shared lock, which a rebuild, a hard synchronization, a
//! clear or a close waits for (and which, fair, then holds back every new
//! reader too). Training takes tens of milliseconds, so the write only takes
//! the sample out, into [`Untrained`]; the handle trains it once the
//! operation has let go of its locks ([`HashDbm::end_writing`]), and
//! takes the shared lock again just to install the dictionary.
//!
//! - Exactly once: the sample is taken out once (sampling stops as it is),
//!   and whoever takes it from `Untrained` trains it; that is the thread
//!   whose write filled it, as it ends its operation.
//! - Meanwhile other writers compress without a dictionary, as they did
//!   before the sample was full; their values stay readable after (a value
//!   names the dictionary it was compressed with, if any).
//! - The install is `Change::Dictionary` through `State::apply`, as before:
//!   the dictionary's record is written to new space and the header points
//!   at it at the next synchronization, so a crash leaves it or not, never
//!   half of it. If a rebuild or restore replaced the state meanwhile, the
//!   dictionary is dropped: the new file samples its own records.
//! - A rebuild's or a restore's copy, which holds the database exclusively
//!   anyway, trains at once ([`State::train_untrained`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::change::Change;
use super::comp_mode::RecordCompMode;
use super::dictionary::{Dictionary, Sample};
use super::state::State;
use super::HashDbm;
use crate::error::Result;

/// A full sample waiting to be trained, shared with the handle's operations
/// so that one can train it after letting go of the state's locks; the
/// state whose sample it is is the one holding this very `Arc`.
#[derive(Default)]
pub(super) struct Untrained {
    /// Whether `sample` holds one: read by every write as it ends, so a
    /// load rather than a lock.
    waiting: AtomicBool,
    sample: Mutex<Option<Sample>>,
}

impl Untrained {
    fn take(&self) -> Option<Sample> {
        let sample = self.sample.lock().take();
        self.waiting.store(false, Ordering::Release);
        sample
    }
}

#[cfg(test)]
thread_local! {
    /// Called by a thread as it starts training: a test blocks it there to
    /// see what the database serves meanwhile.
    pub(super) static BEFORE_TRAINING: std::cell::RefCell<Option<Box<dyn FnMut()>>> =
        const { std::cell::RefCell::new(None) };
}

impl State {
    /// Keeps `sample`, full, for training once the locks are let go.
    pub(super) fn keep_untrained(&self, sample: Sample) {
        *self.untrained.sample.lock() = Some(sample);
        self.untrained.waiting.store(true, Ordering::Release);
    }

    /// Whether a sample waits for training.
    pub(super) fn has_untrained(&self) -> bool {
        self.untrained.waiting.load(Ordering::Acquire)
    }

    /// Trains the sample waiting, if any, and installs the dictionary, here
    /// and now: for a caller holding the database exclusively.
    pub(super) fn train_untrained(&self) -> Result<()> {
        let Some(c) = &self.codec.compression else { return Ok(()) };
        let Some(sample) = self.untrained.take() else { return Ok(()) };
        self.install(train(c.mode, &sample))
    }

    /// Installs a dictionary trained from this state's sample, or, if the
    /// trainer found the sample unfit, goes on without one until a rebuild.
    fn install(&self, dict: Option<Dictionary>) -> Result<()> {
        let Some(c) = &self.codec.compression else { return Ok(()) };
        let path = self.file.path().display();
        match dict {
            Some(dict) => {
                log::info!(
                    "{path}: trained compression dictionary {} ({} bytes)",
                    dict.number,
                    dict.bytes.len()
                );
                self.apply(Change::Dictionary(dict))
            }
            None if !cfg!(feature = "zstd") => {
                log::info!("{path}: no {} dictionary: training needs the Cargo feature `zstd`", c.mode);
                c.stop_sampling();
                Ok(())
            }
            None => {
                log::info!(
                    "{path}: the values sampled are unfit for a {} dictionary (too few, too alike or \
                     incompressible): none until a rebuild samples again",
                    c.mode
                );
                c.stop_sampling();
                Ok(())
            }
        }
    }
}

/// The dictionary of `mode` trained from `sample`, if the sample is fit.
fn train(mode: RecordCompMode, sample: &Sample) -> Option<Dictionary> {
    #[cfg(test)]
    BEFORE_TRAINING.with_borrow_mut(|hook| hook.as_mut().map(|f| f()));
    Dictionary::train(mode, Dictionary::next_number(None), sample)
}

impl HashDbm {
    /// Ends an operation that may have written, whose result is `done`,
    /// holding the database's lock as `guard`: lets go of the lock, then
    /// starts a growth the records call for (`growth.rs`) and trains a
    /// sample the operation left waiting (see the module's doc).
    /// The operation's own error wins over the install's.
    pub(super) fn end_writing<G>(&self, guard: G, done: Result<()>) -> Result<()>
    where
        G: std::ops::Deref<Target = Option<State>>,
    {
        let waiting = guard.as_ref().is_some_and(State::has_untrained);
        let grow = guard.as_ref().is_some_and(State::wants_growth);
        drop(guard);
        if grow {
            self.start_growth();
        }
        if !waiting {
            return done;
        }
        let taken = self.state.read().as_ref().and_then(|s| {
            let mode = s.codec.compression.as_ref()?.mode;
            Some((Arc::clone(&s.untrained), mode, s.untrained.take()?))
        });
        let Some((untrained, mode, sample)) = taken else { return done };
        let trained = train(mode, &sample);
        let guard = self.state.read();
        let installed = match guard.as_ref() {
            Some(s) if Arc::ptr_eq(&s.untrained, &untrained) => s.install(trained),
            // Closed, or replaced by a rebuild or restore: nothing to install into.
            _ => Ok(()),
        };
        done.and(installed)
    }
}

// Dictionaries of every mode are trained here.
#[cfg(all(test, feature = "zstd", feature = "lz4", feature = "zlib", feature = "lzma"))]
mod tests {
    use crate::dbm::Access;
    use crate::dbm::Durability;
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;
    use crate::dbm::hash::{HashOptions, RecordCompMode};
    use crate::dbm::Dbm;

    /// JSON-like values of about 1.6 KiB, which a dictionary serves: a
    /// thousand fill the sample, so that the one bucket's chain stays short.
    fn value(i: usize) -> Vec<u8> {
        let one = |n: usize| {
            let city = ["tokyo", "osaka", "kyoto"][n % 3];
            format!("{{\"id\":{n},\"name\":\"user-{n}\",\"city\":\"{city}\",\"score\":{}}}", n * 7)
        };
        (0..25).map(|j| one(i * 25 + j)).collect::<Vec<_>>().join(",").into_bytes()
    }

    /// The values written: past the sample's 1 MiB.
    const N: usize = 1000;

    fn has_dictionary(db: &HashDbm) -> bool {
        db.inspect().unwrap().iter().any(|(k, _)| k == "record_comp_dict")
    }

    #[test]
    fn the_database_is_served_while_its_dictionary_trains() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("training.kh");
        // One bucket: every key shares the slot lock of the write that fills the sample.
        let options =
            HashOptions { record_comp_mode: RecordCompMode::Zstd, num_buckets: 1, ..Default::default() };
        let db = Arc::new(HashDbm::open(&path, Access::ReadWrite, &options).unwrap());
        let (started, training) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let writer = {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                BEFORE_TRAINING.with_borrow_mut(|hook| {
                    *hook = Some(Box::new(move || {
                        started.send(()).unwrap();
                        released.recv().unwrap();
                    }))
                });
                // Well past the sample's 1 MiB: the write that fills it
                // waits in the hook until released.
                for i in 0..N {
                    db.set(format!("k{i}").as_bytes(), &value(i)).unwrap();
                }
            })
        };
        training.recv_timeout(Duration::from_secs(120)).expect("training never started");
        assert!(!has_dictionary(&db));
        // Another thread reads and writes the same bucket, and takes the
        // database exclusively, while the training is held.
        let (done, finished) = mpsc::channel();
        let other = {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                let read = db.get(b"k0").unwrap();
                db.set(b"during", &value(7)).unwrap();
                db.synchronize(Durability::Hard).unwrap();
                done.send(read).unwrap();
            })
        };
        let read = finished
            .recv_timeout(Duration::from_secs(60))
            .expect("the database waited for the training: a lock was held");
        assert_eq!(read, Some(value(0)));
        other.join().unwrap();
        release.send(()).unwrap();
        writer.join().unwrap();
        // Installed once, by the writer; values written before, during and
        // after it all read back, also after reopening.
        assert!(has_dictionary(&db));
        let db = Arc::into_inner(db).unwrap();
        db.close().unwrap();
        let db = HashDbm::open(&path, Access::ReadOnly, &HashOptions::default()).unwrap();
        assert!(has_dictionary(&db));
        assert_eq!(db.get(b"during").unwrap(), Some(value(7)));
        for i in (0..N).step_by(7) {
            assert_eq!(db.get(format!("k{i}").as_bytes()).unwrap(), Some(value(i)), "k{i}");
        }
        assert_eq!(db.count().unwrap(), N as u64 + 1);
    }

    /// Random values past the sample's 1 MiB leave an lz4 file without a
    /// dictionary (its sample does not compress, so nothing is trained) and
    /// read back; sampling has stopped, and a rebuild tries again: over
    /// values that compress, it trains one.
    #[test]
    fn random_values_leave_no_dictionary_until_a_rebuild() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("random.kh");
        let options = HashOptions { record_comp_mode: RecordCompMode::Lz4, ..Default::default() };
        let db = HashDbm::open(&path, Access::ReadWrite, &options).unwrap();
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut noise = |len: usize| -> Vec<u8> {
            (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect()
        };
        let random: Vec<Vec<u8>> = (0..N).map(|i| noise(1200 + i % 800)).collect();
        for (i, v) in random.iter().enumerate() {
            db.set(format!("k{i}").as_bytes(), v).unwrap();
        }
        assert!(!has_dictionary(&db));
        for i in (0..N).step_by(13) {
            assert_eq!(db.get(format!("k{i}").as_bytes()).unwrap().as_ref(), Some(&random[i]));
        }
        for i in 0..N {
            db.set(format!("k{i}").as_bytes(), &value(i)).unwrap();
        }
        assert!(!has_dictionary(&db), "sampling stopped with the unfit sample");
        db.rebuild().unwrap();
        assert!(has_dictionary(&db));
        for i in (0..N).step_by(13) {
            assert_eq!(db.get(format!("k{i}").as_bytes()).unwrap(), Some(value(i)));
        }
    }

    /// Each mode trains once its own sample is full: lz4, zlib and lzma, which
    /// keep a few KiB of a dictionary, after a quarter of what zstd waits
    /// for, so fewer of a new file's values go without one.
    #[test]
    fn preset_modes_train_from_a_quarter_of_zstds_sample() {
        use super::super::dictionary::{PRESET_TRAIN_BYTES, TRAIN_BYTES};
        let dir = tempfile::tempdir().unwrap();
        for mode in [RecordCompMode::Lz4, RecordCompMode::Zlib, RecordCompMode::Lzma, RecordCompMode::Zstd] {
            let path = dir.path().join(format!("{mode}.kh"));
            let options = HashOptions { record_comp_mode: mode, ..Default::default() };
            let db = HashDbm::open(&path, Access::ReadWrite, &options).unwrap();
            let mut written = 0;
            let mut i = 0;
            // Just past the preset sample (each value is some 1.6 KiB).
            while written < PRESET_TRAIN_BYTES + 4096 {
                let v = value(i);
                written += v.len();
                db.set(format!("k{i}").as_bytes(), &v).unwrap();
                i += 1;
            }
            assert_eq!(has_dictionary(&db), mode != RecordCompMode::Zstd, "{mode} after {written} bytes");
            while written < TRAIN_BYTES + 4096 {
                let v = value(i);
                written += v.len();
                db.set(format!("k{i}").as_bytes(), &v).unwrap();
                i += 1;
            }
            assert!(has_dictionary(&db), "{mode} after {written} bytes");
            for j in (0..i).step_by(11) {
                assert_eq!(db.get(format!("k{j}").as_bytes()).unwrap(), Some(value(j)), "{mode} k{j}");
            }
        }
    }
}
