//! The crate's single error type.

use std::path::PathBuf;

/// Everything that can go wrong in `tacit-store`, in words a user understands.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The folder that should hold the database could not be created.
    #[error("could not create the folder {path} for the database: {source}")]
    CreateDir {
        /// The folder that could not be created.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },

    /// [`crate::Store::open_existing`]: there is no database at the path.
    #[error("there is no store at {path}")]
    Missing {
        /// The path given.
        path: PathBuf,
    },

    /// The database file could not be created or opened.
    #[error("could not open the database {path}: {source}")]
    Open {
        /// The database file.
        path: PathBuf,
        /// What SQLite (or the operating system) said.
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// The database was written by a newer version of tacit.
    #[error(
        "the database uses schema version {found}, but this version of tacit only understands \
         schema versions up to {supported}; upgrade tacit to open it"
    )]
    SchemaTooNew {
        /// `PRAGMA user_version` found in the file.
        found: u32,
        /// The newest schema this build knows.
        supported: u32,
    },

    /// A schema migration step failed; the database was left at its previous version.
    #[error("upgrading the database to schema version {version} failed (nothing was changed): {source}")]
    Migration {
        /// The schema version the failed step would have produced.
        version: u32,
        /// What SQLite said.
        source: rusqlite::Error,
    },

    /// Any other SQLite failure.
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),

    /// The database holds a value this version of tacit cannot interpret.
    #[error("the database is damaged: {0}")]
    Corrupt(String),

    /// A phone number could not be normalised to E.164.
    #[error("{raw:?} is not a valid phone number: {reason}")]
    InvalidPhoneNumber {
        /// The value as the user or the vCard gave it (shortened if very long).
        raw: String,
        /// Why it was refused.
        reason: String,
    },

    /// An e-mail address could not be normalised.
    #[error("{raw:?} is not a valid e-mail address: {reason}")]
    InvalidEmail {
        /// The value as the user or the vCard gave it (shortened if very long).
        raw: String,
        /// Why it was refused.
        reason: String,
    },

    /// The default region is not a known two-letter region code.
    #[error(
        "{0:?} is not a region the phone-number database knows; use a two-letter country code \
         such as \"US\" or \"DE\""
    )]
    UnknownRegion(String),

    /// A vCard file is larger than [`crate::vcard::MAX_FILE_BYTES`].
    #[error("the vCard file is {size} bytes long; the limit is {limit} bytes")]
    VcardTooLarge {
        /// Size of the input in bytes.
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },

    /// A line of a vCard file is longer than [`crate::vcard::MAX_LINE_BYTES`].
    #[error("line {line} of the vCard file is {len} bytes long; the limit is {limit} bytes")]
    VcardLineTooLong {
        /// 1-based line number in the original file.
        line: usize,
        /// Length of the (unfolded) line in bytes.
        len: usize,
        /// The limit in bytes.
        limit: usize,
    },

    /// A key for this purpose and epoch is already stored; keys are never overwritten.
    #[error(
        "a key for {purpose:?} with epoch {epoch} is already stored; keys are never overwritten, \
         use a new epoch"
    )]
    KeyExists {
        /// The key's purpose.
        purpose: String,
        /// The epoch that is taken.
        epoch: u64,
    },

    /// A number is too large for SQLite's signed 64-bit integers.
    #[error("{what} {value} is too large to store; the limit is {limit}", limit = i64::MAX)]
    NumberTooLarge {
        /// What the number is ("key epoch", "creation time", …).
        what: &'static str,
        /// The number.
        value: u64,
    },

    /// A precomputation was made for an address book that has changed since.
    #[error(
        "the precomputation was made for address book version {given}, but the address book is \
         now at version {current}; recompute it"
    )]
    StalePrecomputation {
        /// The contacts version the caller computed against.
        given: u64,
        /// The current contacts version.
        current: u64,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
