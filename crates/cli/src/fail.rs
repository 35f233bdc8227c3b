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
    /// Bad input in `path` (exit 2). A URL is named without user info or query string.
    pub(crate) fn input(path: impl AsRef<Path>, msg: impl Display) -> Self {
        Self {
            code: 2,
            msg: one_line(&format!(
                "{}: {msg}",
                crate::names::display_name(path.as_ref())
            )),
        }
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

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// An error message with its source chain (sources not already part of the message).
pub(crate) fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut msg = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        let part = s.to_string();
        if !msg.contains(&part) {
            msg.push_str(": ");
            msg.push_str(&part);
        }
        src = s.source();
    }
    msg
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
}
