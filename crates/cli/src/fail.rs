//! Failed commands: the exit status and the one-line message printed on stderr.

use std::fmt::Display;
use std::path::Path;

/// A failed command: the exit code and the one-line message printed on stderr.
#[derive(Debug)]
pub(crate) struct Fail {
    /// 0 = stdout was closed by its reader (nothing printed), 1 = a check found problems,
    /// 2 = bad usage or bad input.
    pub(crate) code: u8,
    /// One line, naming the file and the problem (empty for a closed stdout).
    pub(crate) msg: String,
}

impl Fail {
    /// Bad input in `path` (exit 2). A URL is named without user info or query string. The
    /// message names `path` once: where a library's message already names it (`PATH: …`,
    /// `object store error on PATH: …`, `…: PATH`), that mention is dropped.
    pub(crate) fn input(path: impl AsRef<Path>, msg: impl Display) -> Self {
        let name = crate::names::display_name(path.as_ref());
        let msg = msg.to_string();
        Self {
            code: 2,
            msg: one_line(&format!("{name}: {}", without_name(&msg, &name))),
        }
    }

    /// An output that appeared between the check and the write (another process created it):
    /// nothing was replaced (exit 2).
    pub(crate) fn appeared(output: &Path) -> Self {
        Self::usage(format!(
            "{} exists (created while this command ran; it was left as it is): add --overwrite to replace it",
            crate::names::display_name(output)
        ))
    }

    /// Bad usage (exit 2).
    pub(crate) fn usage(msg: impl Display) -> Self {
        Self {
            code: 2,
            msg: one_line(&msg.to_string()),
        }
    }

    /// A check found problems (exit 1).
    pub(crate) fn problems(msg: impl Display) -> Self {
        Self {
            code: 1,
            msg: one_line(&msg.to_string()),
        }
    }

    /// The reader of stdout went away (`| head`): stop quietly with status 0, as the reader
    /// has all it asked for.
    pub(crate) fn closed_stdout() -> Self {
        Self {
            code: 0,
            msg: String::new(),
        }
    }
}

/// The result of a command.
pub(crate) type CliResult<T = ()> = Result<T, Fail>;

/// A storage layer error as it is (its message names the file, object or URL).
impl From<scifmt_io::Error> for Fail {
    fn from(e: scifmt_io::Error) -> Self {
        Self::usage(describe(&e))
    }
}

/// `msg` without the mentions of `name` that would repeat the name a message starts with.
fn without_name<'m>(msg: &'m str, name: &str) -> std::borrow::Cow<'m, str> {
    let mut out = std::borrow::Cow::Borrowed(msg);
    if name.is_empty() {
        return out;
    }
    for _ in 0..2 {
        if let Some(rest) = out.strip_prefix(&format!("{name}: ")) {
            out = std::borrow::Cow::Owned(rest.to_owned());
        }
    }
    for on in [
        format!("object store error on {name}: "),
        format!("i/o error on {name}: "),
    ] {
        if out.contains(&on) {
            out = std::borrow::Cow::Owned(out.replacen(&on, "", 1));
        }
    }
    if let Some(rest) = out.strip_suffix(&format!(": {name}")) {
        out = std::borrow::Cow::Owned(rest.to_owned());
    }
    out
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// An error message with its source chain (sources not already part of the message). A store
/// error is worded by [`scifmt_io::store_error_message`] (missing credentials said in words,
/// with how to provide them, which ends the chain: the failed metadata request's details would
/// only obscure it).
pub(crate) fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let (mut msg, mut done) = text_of(e);
    let mut src = e.source();
    while let Some(s) = src {
        if done {
            break;
        }
        let (part, end) = text_of(s);
        done = end;
        if !msg.contains(&part) {
            msg.push_str(": ");
            msg.push_str(&part);
        }
        src = s.source();
    }
    msg
}

/// The text of one error of a chain, and whether the chain's message ends with it.
fn text_of(e: &(dyn std::error::Error + 'static)) -> (String, bool) {
    match e.downcast_ref::<object_store::Error>() {
        Some(store) => (
            scifmt_io::store_error_message(store),
            scifmt_io::credentials_help(store).is_some(),
        ),
        None => (e.to_string(), false),
    }
}

/// Attaches the file an error is about.
pub(crate) trait At<T> {
    /// Maps the error to [`Fail::input`] naming `path`.
    fn at(self, path: impl AsRef<Path>) -> CliResult<T>;
}

impl<T, E: std::error::Error + 'static> At<T> for Result<T, E> {
    fn at(self, path: impl AsRef<Path>) -> CliResult<T> {
        self.map_err(|e| Fail::input(path, describe(&e)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_line() {
        let f = Fail::input(Path::new("a.bin"), "bad\nthing");
        assert_eq!(f.msg, "a.bin: bad thing");
        assert_eq!(f.code, 2);
    }

    #[test]
    fn messages_name_the_path_once() {
        for msg in [
            "ds/x0.wkw: block 32 is corrupt",
            "object store error on ds/x0.wkw: block 32 is corrupt",
            "block 32 is corrupt: ds/x0.wkw",
        ] {
            let f = Fail::input(Path::new("ds/x0.wkw"), msg);
            assert_eq!(f.msg, "ds/x0.wkw: block 32 is corrupt", "{msg}");
        }
        // Another file named in the message stays.
        let f = Fail::input(Path::new("ds"), "ds/z0/y0/x0.wkw: block 32 is corrupt");
        assert_eq!(f.msg, "ds: ds/z0/y0/x0.wkw: block 32 is corrupt");
    }
}
