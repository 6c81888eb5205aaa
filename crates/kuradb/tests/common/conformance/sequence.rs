//! Random sequences of every operation, and for a class with a file
//! closing, reopening and copying, run on a database and on the model side
//! by side; the whole database is compared with the model after each step,
//! and once more reopened for reading at the end.

use std::path::Path;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestError, TestRunner};

use super::ops::{self, ok, Op};
use super::{read, Caps, Model, Subject};

/// One step of a sequence.
#[derive(Clone, Debug)]
pub enum Step {
    Op(Op),
    /// Close and open again, first peeking with a reader if asked.
    Reopen {
        peek: bool,
    },
    /// Copy the open database's file, synchronized hard if asked; the copy
    /// must open as what readers see.
    Copy(bool),
}

fn step_strategy(caps: Caps) -> BoxedStrategy<Step> {
    let op = ops::op(caps.order).prop_map(Step::Op);
    if !caps.has_file() {
        return op.boxed();
    }
    prop_oneof![
        40 => op,
        2 => any::<bool>().prop_map(|peek| Step::Reopen { peek }),
        1 => any::<bool>().prop_map(Step::Copy),
    ]
    .boxed()
}

/// Cases per subject; `PROPTEST_CASES` in the environment overrides it.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(default)
}

/// Runs the subject's number of random sequences; describes the minimal
/// failing one.
pub fn run(subject: &Subject) -> Result<(), String> {
    let config = Config {
        cases: cases(subject.cases),
        max_shrink_iters: 1024,
        max_shrink_time: 8000,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let strategy = proptest::collection::vec(step_strategy(subject.caps), 1..subject.steps);
    let result = runner.run(&strategy, |steps| {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        sequence(subject, dir.path(), &steps).map_err(TestCaseError::fail)
    });
    match result {
        Ok(()) => Ok(()),
        Err(TestError::Fail(reason, steps)) => Err(format!("{reason}\n  minimal case: {steps:?}")),
        Err(TestError::Abort(reason)) => Err(format!("aborted: {reason}")),
    }
}

/// Runs `steps` on a fresh database in `dir` and on the model.
pub fn sequence(subject: &Subject, dir: &Path, steps: &[Step]) -> Result<(), String> {
    let (path, mut db) = subject.create(dir)?;
    let mut model = Model::new(subject.caps);
    for (i, s) in steps.iter().enumerate() {
        let what = |e: String| format!("step {} of {} ({s:?}): {e}", i + 1, steps.len());
        match s {
            Step::Op(op) => ops::step(db.as_ref(), &mut model, op).map_err(what)?,
            Step::Reopen { peek } => {
                ok(db.close(), "close").map_err(what)?;
                model.synchronize();
                if *peek {
                    let reader = subject.open(&path, false).map_err(what)?;
                    read::compare(reader.as_ref(), &model)
                        .map_err(|e| what(format!("opened for reading: {e}")))?;
                    ok(reader.close(), "close the reader").map_err(what)?;
                }
                db = subject.open(&path, true).map_err(what)?;
            }
            Step::Copy(hard) => {
                let copy = dir.join(format!("copy{i}"));
                std::fs::create_dir(&copy).map_err(|e| what(format!("make the copy's directory: {e}")))?;
                ok(
                    db.copy_file_data(&copy.join("casket"), crate::common::durability(*hard)),
                    "copy_file_data",
                )
                .map_err(what)?;
                let copied = subject.open(&copy.join("casket"), false).map_err(what)?;
                read::compare(copied.as_ref(), &model).map_err(|e| what(format!("the copy: {e}")))?;
                ok(copied.close(), "close the copy").map_err(what)?;
                let _ = std::fs::remove_dir_all(&copy);
            }
        }
        read::compare(db.as_ref(), &model).map_err(what)?;
    }
    ok(db.close(), "close at the end")?;
    if subject.caps.has_file() {
        model.synchronize();
        let reader = subject.open(&path, false)?;
        read::compare(reader.as_ref(), &model)
            .map_err(|e| format!("reopened for reading at the end: {e}"))?;
        ok(reader.close(), "close the reader")?;
    }
    Ok(())
}
