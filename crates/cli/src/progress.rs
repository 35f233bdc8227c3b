//! Progress bars on stderr, shown only when stderr is a terminal.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// A bar drawn with `template`, or a hidden one when stderr is not a terminal.
fn bar(len: u64, what: &str, template: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let style = ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    ProgressBar::new(len)
        .with_style(style)
        .with_message(what.to_owned())
}

/// A progress bar of `len` units.
pub(crate) fn progress(len: u64, what: &str) -> ProgressBar {
    bar(len, what, "{msg} [{bar:40}] {pos}/{len} ({eta})")
}

/// A progress bar counting bytes.
pub(crate) fn progress_bytes(len: u64, what: &str) -> ProgressBar {
    bar(len, what, "{msg} [{bar:40}] {bytes}/{total_bytes} ({eta})")
}
