//! Progress bars of long `kura util` operations, drawn on stderr only when it
//! is a terminal, so scripts and pipes see nothing but the output.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar of `total` units (records, or bytes with `bytes`), hidden unless
/// stderr is a terminal.
pub fn bar(what: &str, total: u64, bytes: bool) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let template = if bytes {
        "{msg} [{bar:40}] {bytes}/{total_bytes} ({eta})"
    } else {
        "{msg} [{bar:40}] {human_pos}/{human_len} records ({eta})"
    };
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
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
