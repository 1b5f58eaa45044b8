//! Schema and migrations.
//!
//! The schema version lives in SQLite's `PRAGMA user_version`. Version `n`
//! means the first `n` entries of [`MIGRATIONS`] have been applied. Opening a
//! database applies the missing ones, all in one `IMMEDIATE` transaction
//! together with the new `user_version`, so a failed step leaves the file as
//! it was. A file whose version is above `MIGRATIONS.len()` was written by a
//! newer tacit and is refused ([`Error::SchemaTooNew`]). Migrations are only
//! ever appended, never edited.

use rusqlite::{Connection, TransactionBehavior};

use crate::error::{Error, Result};

/// Version 1: own identifiers, contacts, keys, precomputations, counters.
const V1: &str = "
CREATE TABLE own_identifiers (
    id    INTEGER PRIMARY KEY,
    kind  TEXT NOT NULL CHECK (kind IN ('phone', 'email')),
    value TEXT NOT NULL UNIQUE
) STRICT;

CREATE TABLE contacts (
    id           INTEGER PRIMARY KEY,
    display_name TEXT NOT NULL
) STRICT;

CREATE TABLE contact_identifiers (
    id         INTEGER PRIMARY KEY,
    contact_id INTEGER NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('phone', 'email')),
    value      TEXT NOT NULL,
    types      TEXT NOT NULL DEFAULT '',
    UNIQUE (contact_id, value)
) STRICT;
CREATE INDEX contact_identifiers_by_value ON contact_identifiers (value);

CREATE TABLE keys (
    purpose      TEXT NOT NULL,
    epoch        INTEGER NOT NULL CHECK (epoch >= 0),
    secret       BLOB NOT NULL,
    created_unix INTEGER NOT NULL CHECK (created_unix >= 0),
    PRIMARY KEY (purpose, epoch)
) STRICT, WITHOUT ROWID;

CREATE TABLE counters (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL CHECK (value >= 0)
) STRICT, WITHOUT ROWID;
INSERT INTO counters (name, value) VALUES ('contacts_version', 0);

CREATE TABLE precomputations (
    kind             TEXT NOT NULL,
    key_epoch        INTEGER NOT NULL CHECK (key_epoch >= 0),
    contacts_version INTEGER NOT NULL CHECK (contacts_version >= 0),
    blob             BLOB NOT NULL,
    PRIMARY KEY (kind, key_epoch, contacts_version)
) STRICT, WITHOUT ROWID;
";

/// Version 2: the PrivateDrop CA's account registry (which TLS key holds which
/// account UUID, so a UUID cannot be taken over) and the keys of peers pinned on
/// first use (`tacit psi query --tofu`).
const V2: &str = "
CREATE TABLE ca_accounts (
    account        BLOB PRIMARY KEY CHECK (length(account) = 16),
    tls_public_key BLOB NOT NULL,
    not_after      INTEGER NOT NULL CHECK (not_after >= 0),
    revoked_unix   INTEGER CHECK (revoked_unix IS NULL OR revoked_unix >= 0)
) STRICT, WITHOUT ROWID;

CREATE TABLE known_peers (
    name            TEXT PRIMARY KEY,
    fingerprint     BLOB NOT NULL CHECK (length(fingerprint) = 32),
    first_seen_unix INTEGER NOT NULL CHECK (first_seen_unix >= 0)
) STRICT, WITHOUT ROWID;
";

/// Version 3 (issue 10): signed revocation lists, the newest one per issuer (a
/// PrivateDrop CA's list of revoked accounts, a naming root's list of revoked
/// blessings). The store keeps the bytes the caller verified and their sequence
/// number; an older list never replaces a newer one.
const V3: &str = "
CREATE TABLE revocation_lists (
    issuer           TEXT PRIMARY KEY,
    sequence         INTEGER NOT NULL CHECK (sequence >= 0),
    next_update_unix INTEGER NOT NULL CHECK (next_update_unix >= 0),
    list             BLOB NOT NULL
) STRICT, WITHOUT ROWID;
";

/// Version 4: TracEdge table management (§3.5): subscribers with the row they keep
/// across tables, the server's settings, and the key tables by epoch.
const V4: &str = "
CREATE TABLE pir_subscribers (
    row             INTEGER PRIMARY KEY CHECK (row >= 0),
    public_key      BLOB NOT NULL UNIQUE CHECK (length(public_key) = 32),
    label           TEXT NOT NULL DEFAULT '',
    registered_unix INTEGER NOT NULL CHECK (registered_unix >= 0)
) STRICT;

CREATE TABLE pir_config (
    name  TEXT PRIMARY KEY,
    value BLOB NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE pir_tables (
    epoch           INTEGER PRIMARY KEY CHECK (epoch >= 0),
    table_key       BLOB NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pool', 'current', 'deprecated', 'expired')),
    created_unix    INTEGER NOT NULL CHECK (created_unix >= 0),
    expires_unix    INTEGER CHECK (expires_unix IS NULL OR expires_unix >= 0)
) STRICT;

CREATE TABLE pir_counters (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
INSERT INTO pir_counters (name, value) VALUES ('subscribers_version', 0);
";

/// Version 5: the TracEdge table log (signed, hash-chained records, in order), the
/// latest enrolment receipt per row, and rows freed by a removal that are not handed
/// out again before the rekey that retires the removed subscriber's key.
const V5: &str = "
CREATE TABLE pir_log (
    seq    INTEGER PRIMARY KEY CHECK (seq >= 0),
    record BLOB NOT NULL
) STRICT;

CREATE TABLE pir_receipts (
    row     INTEGER PRIMARY KEY CHECK (row >= 0),
    receipt BLOB NOT NULL
) STRICT;

CREATE TABLE pir_freed (
    row        INTEGER PRIMARY KEY CHECK (row >= 0),
    freed_unix INTEGER NOT NULL CHECK (freed_unix >= 0)
) STRICT;
";

/// The migration steps; entry `i` takes the schema from version `i` to `i + 1`.
pub(crate) const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5];

/// The schema version this build creates and understands.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// Reads `PRAGMA user_version`.
pub(crate) fn user_version(conn: &Connection) -> Result<u32> {
    let v: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    u32::try_from(v).map_err(|_| Error::Corrupt(format!("schema version {v} is negative")))
}

/// Brings the database up to `migrations.len()`; returns how many steps were
/// applied (0 when it was already current).
pub(crate) fn migrate(conn: &mut Connection, migrations: &[&str]) -> Result<u32> {
    let supported = u32::try_from(migrations.len()).map_err(|_| Error::Corrupt("too many migrations".to_owned()))?;
    let check = |found: u32| {
        if found > supported {
            Err(Error::SchemaTooNew { found, supported })
        } else {
            Ok(found)
        }
    };
    if check(user_version(conn)?)? == supported {
        return Ok(0);
    }
    // Take the write lock, then look again: another process may have
    // migrated in between.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let found = check(user_version(&tx)?)?;
    for (i, step) in migrations.iter().enumerate().skip(found as usize) {
        let version = i as u32 + 1;
        tx.execute_batch(step)
            .map_err(|source| Error::Migration { version, source })?;
    }
    tx.pragma_update(None, "user_version", supported)
        .map_err(|source| Error::Migration {
            version: supported,
            source,
        })?;
    tx.commit()?;
    Ok(supported - found)
}
