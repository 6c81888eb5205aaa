//! Progress bars of long `kura util` operations, drawn on stderr only when it
//! is a terminal, so scripts and pipes see nothing but the output.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar of `total` units (records, or bytes with `bytes`), hidden unless
/// stderr is a terminal. With no total (standard input), the bytes or records
/// done so far and the time, and no bar.
pub fn bar(what: &str, total: Option<u64>, bytes: bool) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let template = if total.is_none() {
        if bytes {
            "{msg}: {bytes} read ({elapsed})"
        } else {
            "{msg}: {human_pos} records ({elapsed})"
        }
    } else if bytes {
        "{msg} [{bar:40}] {bytes}/{total_bytes} ({eta})"
    } else {
        "{msg} [{bar:40}] {human_pos}/{human_len} records ({eta})"
    };
    let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr());
    bar.set_style(ProgressStyle::with_template(template).expect("a valid template").progress_chars("=> "));
    bar.set_message(what.to_string());
    bar
}

/// A spinner with the elapsed time, for an operation whose progress cannot be
/// measured (a rebuild is one library call).
pub fn spinner(what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(ProgressStyle::with_template("{spinner} {msg} ({elapsed})").expect("a valid template"));
    bar.set_message(what.to_string());
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}
