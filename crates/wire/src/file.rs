//! Bounded reading of user files: the one reader every tacit command and library
//! uses for a file a person names (sets, vCards, calendars, circuits, keys, proofs,
//! tables), so that a file far larger than its limit is refused while it is read —
//! after at most `limit + 1` bytes, or `limit + 1` elements — and never held whole.
//!
//! The size in the file system is not trusted (a pipe, `/dev/stdin` or `/proc` file
//! reports none, and a file can grow between the check and the read): the limit is
//! enforced on the bytes actually read.
//!
//! ```
//! use tacit_wire::file::{read_bounded, BoundedLines};
//!
//! let dir = std::env::temp_dir().join(format!("tacit-wire-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let p = dir.join("set.txt");
//! std::fs::write(&p, "alice\n\nbob\n").unwrap();
//! assert_eq!(read_bounded(&p, "set file", 64).unwrap().len(), 11);
//! assert!(read_bounded(&p, "set file", 4).is_err());
//!
//! let mut lines = BoundedLines::open(&p, "set file", 16).unwrap();
//! let mut got = Vec::new();
//! while let Some((_, l)) = lines.next_line().unwrap() {
//!     got.push(l.to_string());
//! }
//! assert_eq!(got, ["alice", "", "bob"]);
//! std::fs::remove_dir_all(&dir).unwrap();
//! ```

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// Why a bounded read failed. Every message is one line and names the file.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file could not be opened or read.
    #[error("cannot read {what} {}: {source}", path.display())]
    Io {
        /// What the file is ("set file", "calendar", …).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file holds more bytes than its limit (reading stopped there).
    #[error("{what} {} is larger than {limit} bytes, the limit", path.display())]
    TooLarge {
        /// What the file is.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The limit in bytes.
        limit: u64,
    },
    /// A line is longer than the limit for one line.
    #[error("{}:{line}: the line is longer than {limit} bytes, the limit", path.display())]
    LineTooLong {
        /// The file.
        path: PathBuf,
        /// The line number (from 1).
        line: u64,
        /// The limit in bytes.
        limit: usize,
    },
    /// The file is not UTF-8 text.
    #[error("{what} {} is not UTF-8 text (line {line})", path.display())]
    NotUtf8 {
        /// What the file is.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The first line that is not UTF-8 (from 1; 1 for whole-file reads).
        line: u64,
    },
}

impl FileError {
    fn io(what: &'static str, path: &Path, source: std::io::Error) -> Self {
        FileError::Io {
            what,
            path: path.to_owned(),
            source,
        }
    }
}

/// Reads at most `limit` bytes of the file at `path`; a longer file is refused after
/// `limit + 1` bytes have been read (never more), with [`FileError::TooLarge`].
/// `what` names the file in errors ("calendar", "circuit").
pub fn read_bounded(path: &Path, what: &'static str, limit: u64) -> Result<Vec<u8>, FileError> {
    let f = File::open(path).map_err(|e| FileError::io(what, path, e))?;
    // The size the file system reports sizes the buffer (at most the limit), and is
    // otherwise not relied on.
    let hint = f.metadata().map(|m| m.len()).unwrap_or(0).min(limit);
    let mut out = Vec::with_capacity(usize::try_from(hint).unwrap_or(0).saturating_add(1));
    f.take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| FileError::io(what, path, e))?;
    if out.len() as u64 > limit {
        return Err(FileError::TooLarge {
            what,
            path: path.to_owned(),
            limit,
        });
    }
    Ok(out)
}

/// [`read_bounded`], as UTF-8 text.
pub fn read_text_bounded(path: &Path, what: &'static str, limit: u64) -> Result<String, FileError> {
    let bytes = read_bounded(path, what, limit)?;
    String::from_utf8(bytes).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count() as u64;
        FileError::NotUtf8 {
            what,
            path: path.to_owned(),
            line,
        }
    })
}

/// The lines of a text file, one at a time, each at most `max_line` bytes: a longer
/// line is refused after `max_line + 1` of its bytes, so memory stays at one line
/// whatever the file holds. The caller bounds how many lines it keeps.
pub struct BoundedLines {
    inner: BufReader<File>,
    what: &'static str,
    path: PathBuf,
    max_line: usize,
    line_no: u64,
    buf: Vec<u8>,
}

impl BoundedLines {
    /// Opens the file.
    pub fn open(path: &Path, what: &'static str, max_line: usize) -> Result<Self, FileError> {
        let f = File::open(path).map_err(|e| FileError::io(what, path, e))?;
        Ok(BoundedLines {
            inner: BufReader::with_capacity(64 << 10, f),
            what,
            path: path.to_owned(),
            max_line,
            line_no: 0,
            buf: Vec::new(),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The next line (its number from 1, and its text without the line end `\n` or
    /// `\r\n`), or `None` at the end of the file.
    pub fn next_line(&mut self) -> Result<Option<(u64, &str)>, FileError> {
        self.buf.clear();
        let cap = self.max_line as u64 + 2; // the line, a '\r', and one byte too many
        let n = (&mut self.inner)
            .take(cap + 1)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| FileError::io(self.what, &self.path, e))?;
        if n == 0 {
            return Ok(None);
        }
        self.line_no += 1;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
        }
        if self.buf.len() > self.max_line {
            return Err(FileError::LineTooLong {
                path: self.path.clone(),
                line: self.line_no,
                limit: self.max_line,
            });
        }
        match std::str::from_utf8(&self.buf) {
            Ok(s) => Ok(Some((self.line_no, s))),
            Err(_) => Err(FileError::NotUtf8 {
                what: self.what,
                path: self.path.clone(),
                line: self.line_no,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn tmp(name: &str, bytes: &[u8]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tacit-wire-file-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("f");
        std::fs::File::create(&p).unwrap().write_all(bytes).unwrap();
        p
    }

    #[test]
    fn read_bounded_takes_the_limit_and_refuses_one_byte_more() {
        let p = tmp("exact", b"0123456789");
        assert_eq!(read_bounded(&p, "test file", 10).unwrap(), b"0123456789");
        let e = read_bounded(&p, "test file", 9).unwrap_err();
        assert!(matches!(e, FileError::TooLarge { limit: 9, .. }), "{e}");
        assert_eq!(e.to_string().lines().count(), 1);
        assert!(e.to_string().contains("test file"), "{e}");
    }

    #[test]
    fn read_bounded_stops_reading_at_the_limit_on_an_endless_source() {
        // /dev/zero never ends and reports size 0: only a bound on the bytes read
        // stops it.
        let e = read_bounded(Path::new("/dev/zero"), "test file", 1 << 20).unwrap_err();
        assert!(matches!(e, FileError::TooLarge { .. }), "{e}");
        let mut lines = BoundedLines::open(Path::new("/dev/zero"), "test file", 1024).unwrap();
        assert!(matches!(lines.next_line(), Err(FileError::LineTooLong { line: 1, .. })));
    }

    #[test]
    fn lines_are_split_on_lf_and_crlf_and_bounded() {
        let p = tmp("lines", b"a\r\nbb\n\nccc");
        let mut l = BoundedLines::open(&p, "set file", 3).unwrap();
        let mut got = Vec::new();
        while let Some((n, s)) = l.next_line().unwrap() {
            got.push((n, s.to_string()));
        }
        assert_eq!(
            got,
            [(1, "a".into()), (2, "bb".into()), (3, "".into()), (4, "ccc".into())]
        );
        let mut l = BoundedLines::open(&p, "set file", 2).unwrap();
        l.next_line().unwrap();
        l.next_line().unwrap();
        l.next_line().unwrap();
        let e = l.next_line().unwrap_err();
        assert!(matches!(e, FileError::LineTooLong { line: 4, limit: 2, .. }), "{e}");
    }

    #[test]
    fn non_utf8_is_named_with_its_line() {
        let p = tmp("utf8", b"ok\n\xff\n");
        let mut l = BoundedLines::open(&p, "set file", 16).unwrap();
        l.next_line().unwrap();
        assert!(matches!(l.next_line(), Err(FileError::NotUtf8 { line: 2, .. })));
        assert!(matches!(
            read_text_bounded(&p, "set file", 16),
            Err(FileError::NotUtf8 { line: 2, .. })
        ));
    }

    #[test]
    fn a_missing_file_is_one_line() {
        let e = read_bounded(Path::new("/nonexistent/tacit"), "circuit", 10).unwrap_err();
        assert_eq!(e.to_string().lines().count(), 1);
        assert!(
            e.to_string().starts_with("cannot read circuit /nonexistent/tacit"),
            "{e}"
        );
    }
}
