//! The SQLite-backed [`Store`].

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Transaction, params};
use serde::Serialize;
use zeroize::Zeroizing;

use crate::contact::{Contact, ContactIdentifier};
use crate::error::{Error, Result};
use crate::identifier::{Identifier, IdentifierKind, NormalizeOptions};
use crate::schema;
use crate::vcard::{self, Card, Problem};

/// How long a write waits for another process holding the database lock.
/// How long a write waits for another process's write to the same store: longer
/// than the longest write tacit makes (importing a 64 MiB vCard file, storing the
/// precomputation of a million-contact address book).
const BUSY_TIMEOUT: Duration = Duration::from_secs(120);

/// What [`Store::import_vcard`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    /// Cards accepted, whether they created a contact or were merged into an
    /// existing one.
    pub cards_imported: usize,
    /// Contacts created by this import (the rest of `cards_imported` matched
    /// an existing contact).
    pub contacts_created: usize,
    /// Identifiers stored that the matching contact did not have.
    pub identifiers_added: usize,
    /// Identifiers the matching contact already had (a re-import of the same
    /// file yields only duplicates).
    pub duplicates: usize,
    /// Problems found in the file (see [`vcard`]).
    pub problems: Vec<Problem>,
    /// The contacts version after the import.
    pub contacts_version: u64,
}

/// A secret key as stored, e.g. a PSI key of the PrivateDrop paper's §4
/// (`purpose` names which one). Zeroized on drop; `Debug` does not show it.
pub struct StoredKey {
    /// The key's epoch; a new key gets a higher one.
    pub epoch: u64,
    /// The secret bytes.
    pub secret: Zeroizing<Vec<u8>>,
    /// When the key was made, in Unix seconds, as the caller said.
    pub created_unix: u64,
}

impl fmt::Debug for StoredKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredKey")
            .field("epoch", &self.epoch)
            .field("secret", &"<redacted>")
            .field("created_unix", &self.created_unix)
            .finish()
    }
}

/// An account in a PrivateDrop CA's registry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaAccount {
    /// The TLS key (SubjectPublicKeyInfo, DER) of the account's current certificate.
    pub tls_public_key: Vec<u8>,
    /// When that certificate expires (Unix seconds).
    pub not_after: u64,
    /// When the account was revoked, if it was.
    pub revoked_unix: Option<u64>,
}

/// A signed revocation list as stored: its issuer's newest (see
/// [`Store::put_revocation_list`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredRevocationList {
    /// The list's sequence number (higher is newer).
    pub sequence: u64,
    /// When its issuer promised the next list (Unix seconds).
    pub next_update_unix: u64,
    /// The signed list, as the caller verified it.
    pub list: Vec<u8>,
}

/// tacit's local database: the user's own identifiers, the address book,
/// secret keys and cached precomputations.
///
/// A TracEdge key table as stored (§3.5).
#[derive(Clone, PartialEq, Eq)]
pub struct PirTableRecord {
    /// Epoch.
    pub epoch: u64,
    /// The table key `K` (secret).
    pub key: Zeroizing<Vec<u8>>,
    /// `pool`, `current`, `deprecated` or `expired`.
    pub status: String,
    /// When it was created (Unix seconds).
    pub created_unix: u64,
    /// When the keys of a deprecated table expire (Unix seconds).
    pub expires_unix: Option<u64>,
}

impl fmt::Debug for PirTableRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PirTableRecord")
            .field("epoch", &self.epoch)
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

/// A TracEdge subscriber: its row (kept across tables) and public key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PirSubscriber {
    /// The row.
    pub row: u64,
    /// The ristretto255 public key.
    pub public_key: [u8; 32],
    /// A label for the operator.
    pub label: String,
}

/// What a failed [`Store::open`] created and removes again.
#[derive(Default)]
struct Made {
    file: bool,
    /// Innermost first.
    dirs: Vec<PathBuf>,
}

impl Made {
    fn undo(&self, path: &Path) {
        if self.file {
            let _ = std::fs::remove_file(path);
            for ext in ["-wal", "-shm", "-journal"] {
                let mut p = path.as_os_str().to_owned();
                p.push(ext);
                let _ = std::fs::remove_file(PathBuf::from(p));
            }
        }
        for d in &self.dirs {
            // only empty folders: never what someone else put there meanwhile
            let _ = std::fs::remove_dir(d);
        }
    }
}

/// All methods are synchronous and take no clock: times are passed in.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
}

fn to_i64(what: &'static str, value: u64) -> Result<i64> {
    i64::try_from(value).map_err(|_| Error::NumberTooLarge { what, value })
}

fn to_u64(what: &str, value: i64) -> Result<u64> {
    u64::try_from(value).map_err(|_| Error::Corrupt(format!("{what} {value} is negative")))
}

impl Store {
    /// Opens (creating it if needed, with its parent folders) the database at
    /// `path` and brings its schema up to date.
    ///
    /// On Unix a new file is created readable by its owner only, since it holds
    /// secret keys. Fails with [`Error::SchemaTooNew`] for a database written by
    /// a newer version of tacit.
    ///
    /// When opening fails, whatever this call created (the file, its WAL and shared
    /// memory files, the folders) is removed again: a failed open leaves nothing
    /// behind.
    pub fn open(path: &Path) -> Result<Store> {
        let mut made = Made::default();
        let r = Self::open_creating(path, &mut made);
        if r.is_err() {
            made.undo(path);
        }
        r
    }

    /// Opens the database at `path` only if it exists: never creates a file or a
    /// folder. A missing database is [`Error::Missing`] (callers name the command
    /// that creates it). Commands that only read use this.
    pub fn open_existing(path: &Path) -> Result<Store> {
        use rusqlite::OpenFlags;
        if !path.exists() {
            return Err(Error::Missing { path: path.to_owned() });
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
        let open_err = |source: Box<dyn std::error::Error + Send + Sync>| Error::Open {
            path: PathBuf::from(path),
            source,
        };
        let conn = Connection::open_with_flags(path, flags).map_err(|e| open_err(Box::new(e)))?;
        Self::init(conn).map_err(|e| match e {
            Error::Sqlite(source) => open_err(Box::new(source)),
            other => other,
        })
    }

    fn open_creating(path: &Path, made: &mut Made) -> Result<Store> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            // the folders that do not exist yet, outermost last
            let mut missing = Vec::new();
            let mut p = Some(parent);
            while let Some(d) = p.filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
                missing.push(d.to_owned());
                p = d.parent();
            }
            std::fs::create_dir_all(parent).map_err(|source| Error::CreateDir {
                path: parent.to_owned(),
                source,
            })?;
            made.dirs = missing;
        }
        let open_err = |source: Box<dyn std::error::Error + Send + Sync>| Error::Open {
            path: PathBuf::from(path),
            source,
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
            {
                Ok(_) => made.file = true,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(open_err(Box::new(e))),
            }
        }
        #[cfg(not(unix))]
        {
            made.file = !path.exists();
        }
        let conn = Connection::open(path).map_err(|e| open_err(Box::new(e)))?;
        Self::init(conn).map_err(|e| match e {
            Error::Sqlite(source) => open_err(Box::new(source)),
            other => other,
        })
    }

    /// A fresh database in memory, for tests and one-off runs.
    pub fn open_in_memory() -> Result<Store> {
        Self::init(Connection::open_in_memory()?)
    }

    fn init(mut conn: Connection) -> Result<Store> {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // secure_delete: freed pages (old keys) are overwritten with zeros.
        conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA secure_delete = ON;")?;
        // In-memory databases answer "memory"; files switch to WAL.
        let _mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
        schema::migrate(&mut conn, schema::MIGRATIONS)?;
        Ok(Store { conn })
    }

    /// Whether the database holds nothing but its schema: no row in any table, and
    /// every counter at its initial 0. A command that created the store and then
    /// failed removes a blank store again.
    pub fn is_blank(&self) -> Result<bool> {
        let tables: Vec<String> = self
            .conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for t in tables {
            let t = t.replace('"', "\"\"");
            let q = if t == "counters" || t == "pir_counters" {
                format!("SELECT EXISTS (SELECT 1 FROM \"{t}\" WHERE value != 0)")
            } else {
                format!("SELECT EXISTS (SELECT 1 FROM \"{t}\")")
            };
            if self.conn.query_row(&q, [], |r| r.get::<_, bool>(0))? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The database file's path (`None` in memory).
    pub fn path(&self) -> Option<&Path> {
        self.conn.path().filter(|p| !p.is_empty()).map(Path::new)
    }

    /// The schema version of the open database (`PRAGMA user_version`).
    pub fn schema_version(&self) -> Result<u32> {
        schema::user_version(&self.conn)
    }

    // ----- own identifiers -------------------------------------------------

    /// Normalises `raw` and records it as one of the user's own verified
    /// identifiers (the PrivateDrop paper's `ID`, §4.1). Adding one twice is
    /// not an error. Returns the normalised identifier.
    pub fn add_own_identifier(&mut self, raw: &str, opts: &NormalizeOptions) -> Result<Identifier> {
        let id = Identifier::parse(raw, opts)?;
        self.conn.execute(
            "INSERT INTO own_identifiers (kind, value) VALUES (?1, ?2)
             ON CONFLICT (value) DO NOTHING",
            params![id.kind.as_str(), id.value],
        )?;
        Ok(id)
    }

    /// The user's own identifiers, in the order they were added.
    pub fn own_identifiers(&self) -> Result<Vec<Identifier>> {
        let mut stmt = self
            .conn
            .prepare("SELECT kind, value FROM own_identifiers ORDER BY id")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
        rows.map(|row| {
            let (kind, value) = row?;
            Ok(Identifier {
                kind: IdentifierKind::from_db(&kind)?,
                value,
            })
        })
        .collect()
    }

    /// Removes an own identifier given in normalised form; returns whether
    /// it was there.
    pub fn remove_own_identifier(&mut self, value: &str) -> Result<bool> {
        let n = self
            .conn
            .execute("DELETE FROM own_identifiers WHERE value = ?1", [value])?;
        Ok(n > 0)
    }

    // ----- address book ----------------------------------------------------

    /// Imports a vCard file (see [`vcard`] for what is read) into the address
    /// book, in one transaction.
    ///
    /// **Matching.** A card is merged into an existing contact when that
    /// contact has the same display name *and* at least one of the card's
    /// normalised identifiers; identifiers the contact lacks are added and the
    /// `TYPE`s of ones it has are merged. Otherwise the card becomes a new
    /// contact. Re-importing a file therefore adds nothing (all its identifiers
    /// count as `duplicates`), and a card edited since keeps its contact as
    /// long as its name and one identifier are unchanged. Two contacts may hold
    /// the same identifier; [`Store::address_book`] lists it once.
    ///
    /// The contacts version is incremented if (and only if) the import changed
    /// anything. Fails, importing nothing, only for a file over the size limits
    /// or a database error; defects in cards are listed in `problems`.
    pub fn import_vcard(&mut self, text: &str, opts: &NormalizeOptions) -> Result<ImportReport> {
        let parsed = vcard::parse_with(text, opts)?;
        let mut report = self.import_cards(&parsed.cards)?;
        report.problems = parsed.problems;
        Ok(report)
    }

    /// Imports cards from [`vcard::parse_with`] (whose identifiers are
    /// normalised), matching them to contacts as [`Store::import_vcard`]
    /// describes, in one transaction.
    fn import_cards(&mut self, cards: &[Card]) -> Result<ImportReport> {
        let tx = self.conn.transaction()?;
        let mut report = ImportReport::default();
        let mut changed = false;
        {
            let mut find_contact = tx.prepare_cached(
                "SELECT c.id FROM contacts c
                 JOIN contact_identifiers i ON i.contact_id = c.id
                 WHERE c.display_name = ?1 AND i.value = ?2
                 ORDER BY c.id LIMIT 1",
            )?;
            let mut insert_contact = tx.prepare_cached("INSERT INTO contacts (display_name) VALUES (?1)")?;
            let mut find_identifier =
                tx.prepare_cached("SELECT id, types FROM contact_identifiers WHERE contact_id = ?1 AND value = ?2")?;
            let mut insert_identifier = tx.prepare_cached(
                "INSERT INTO contact_identifiers (contact_id, kind, value, types)
                 VALUES (?1, ?2, ?3, ?4)",
            )?;
            let mut update_types = tx.prepare_cached("UPDATE contact_identifiers SET types = ?2 WHERE id = ?1")?;

            for card in cards {
                let mut contact_id: Option<i64> = None;
                for ident in &card.identifiers {
                    let found: Option<i64> = find_contact
                        .query_row(params![card.display_name, ident.value], |r| r.get(0))
                        .optional()?;
                    contact_id = match (contact_id, found) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                }
                let contact_id = match contact_id {
                    Some(id) => id,
                    None => {
                        insert_contact.execute([&card.display_name])?;
                        report.contacts_created += 1;
                        changed = true;
                        tx.last_insert_rowid()
                    }
                };
                for ident in &card.identifiers {
                    let existing: Option<(i64, String)> = find_identifier
                        .query_row(params![contact_id, ident.value], |r| Ok((r.get(0)?, r.get(1)?)))
                        .optional()?;
                    match existing {
                        None => {
                            insert_identifier.execute(params![
                                contact_id,
                                ident.kind.as_str(),
                                ident.value,
                                join_types(&ident.types),
                            ])?;
                            report.identifiers_added += 1;
                            changed = true;
                        }
                        Some((row, stored)) => {
                            report.duplicates += 1;
                            let mut types = split_types(&stored);
                            for t in &ident.types {
                                if !types.contains(t) {
                                    types.push(t.clone());
                                }
                            }
                            let merged = join_types(&types);
                            if merged != stored {
                                update_types.execute(params![row, merged])?;
                                changed = true;
                            }
                        }
                    }
                }
                report.cards_imported += 1;
            }
        }
        if changed {
            bump_contacts_version(&tx)?;
        }
        report.contacts_version = read_contacts_version(&tx)?;
        tx.commit()?;
        Ok(report)
    }

    /// All contacts with their identifiers, in the order they were created.
    pub fn contacts(&self) -> Result<Vec<Contact>> {
        let mut stmt = self.conn.prepare(
            "SELECT c.id, c.display_name, i.kind, i.value, i.types
             FROM contacts c LEFT JOIN contact_identifiers i ON i.contact_id = c.id
             ORDER BY c.id, i.id",
        )?;
        let mut rows = stmt.query([])?;
        let mut contacts: Vec<Contact> = Vec::new();
        while let Some(row) = rows.next()? {
            let id: i64 = row.get(0)?;
            if contacts.last().map(|c| c.id) != Some(id) {
                contacts.push(Contact {
                    id,
                    display_name: row.get(1)?,
                    identifiers: Vec::new(),
                });
            }
            let kind: Option<String> = row.get(2)?;
            if let (Some(kind), Some(contact)) = (kind, contacts.last_mut()) {
                let types: String = row.get(4)?;
                contact.identifiers.push(ContactIdentifier {
                    kind: IdentifierKind::from_db(&kind)?,
                    value: row.get(3)?,
                    types: split_types(&types),
                });
            }
        }
        Ok(contacts)
    }

    /// The PSI sender set: every normalised identifier of every contact, once,
    /// sorted (byte order).
    pub fn address_book(&self) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare("SELECT DISTINCT value FROM contact_identifiers ORDER BY value")?;
        let values = stmt.query_map([], |r| r.get(0))?;
        Ok(values.collect::<rusqlite::Result<_>>()?)
    }

    /// The address book's version: incremented by every change to it
    /// (an import that changed something, a deletion, a clear). Starts at 0.
    pub fn contacts_version(&self) -> Result<u64> {
        read_contacts_version(&self.conn)
    }

    /// Deletes one contact; returns whether it existed.
    pub fn delete_contact(&mut self, id: i64) -> Result<bool> {
        let tx = self.conn.transaction()?;
        let n = tx.execute("DELETE FROM contacts WHERE id = ?1", [id])?;
        if n > 0 {
            bump_contacts_version(&tx)?;
        }
        tx.commit()?;
        Ok(n > 0)
    }

    /// Deletes every contact; returns how many there were. The version is
    /// incremented only if there was something to delete.
    pub fn clear_contacts(&mut self) -> Result<usize> {
        let tx = self.conn.transaction()?;
        tx.execute("DELETE FROM contact_identifiers", [])?;
        let n = tx.execute("DELETE FROM contacts", [])?;
        if n > 0 {
            bump_contacts_version(&tx)?;
        }
        tx.commit()?;
        Ok(n)
    }

    // ----- keys ------------------------------------------------------------

    /// Stores a secret key for `purpose` at `epoch`, made at `created_unix`
    /// (Unix seconds, from the caller's clock). Keys are never overwritten:
    /// an existing (purpose, epoch) is [`Error::KeyExists`].
    pub fn put_key(&mut self, purpose: &str, epoch: u64, secret: &[u8], created_unix: u64) -> Result<()> {
        let epoch_db = to_i64("key epoch", epoch)?;
        let created_db = to_i64("key creation time", created_unix)?;
        let n = self.conn.execute(
            "INSERT INTO keys (purpose, epoch, secret, created_unix) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (purpose, epoch) DO NOTHING",
            params![purpose, epoch_db, secret, created_db],
        )?;
        if n == 0 {
            return Err(Error::KeyExists {
                purpose: purpose.to_owned(),
                epoch,
            });
        }
        Ok(())
    }

    /// The key for `purpose` with the highest epoch, if any.
    pub fn current_key(&self, purpose: &str) -> Result<Option<StoredKey>> {
        self.query_key(
            "SELECT epoch, secret, created_unix FROM keys WHERE purpose = ?1
             ORDER BY epoch DESC LIMIT 1",
            params![purpose],
        )
    }

    /// The key for `purpose` at exactly `epoch`, if any.
    pub fn key(&self, purpose: &str, epoch: u64) -> Result<Option<StoredKey>> {
        let Ok(epoch) = i64::try_from(epoch) else {
            return Ok(None);
        };
        self.query_key(
            "SELECT epoch, secret, created_unix FROM keys WHERE purpose = ?1 AND epoch = ?2",
            params![purpose, epoch],
        )
    }

    fn query_key(&self, sql: &str, params: impl rusqlite::Params) -> Result<Option<StoredKey>> {
        let row = self
            .conn
            .query_row(sql, params, |r| {
                let epoch: i64 = r.get(0)?;
                // Copy the blob straight into zeroizing memory.
                let secret = Zeroizing::new(r.get_ref(1)?.as_blob()?.to_vec());
                let created: i64 = r.get(2)?;
                Ok((epoch, secret, created))
            })
            .optional()?;
        match row {
            None => Ok(None),
            Some((epoch, secret, created)) => Ok(Some(StoredKey {
                epoch: to_u64("key epoch", epoch)?,
                secret,
                created_unix: to_u64("key creation time", created)?,
            })),
        }
    }

    // ----- a CA's account registry -----------------------------------------

    /// The registry entry of `account` (a 16-byte UUID), if any.
    pub fn ca_account(&self, account: &[u8; 16]) -> Result<Option<CaAccount>> {
        let row = self
            .conn
            .query_row(
                "SELECT tls_public_key, not_after, revoked_unix FROM ca_accounts WHERE account = ?1",
                params![account.as_slice()],
                |r| {
                    Ok((
                        r.get::<_, Vec<u8>>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, Option<i64>>(2)?,
                    ))
                },
            )
            .optional()?;
        row.map(|(tls_public_key, not_after, revoked)| {
            Ok(CaAccount {
                tls_public_key,
                not_after: to_u64("certificate expiry", not_after)?,
                revoked_unix: revoked.map(|r| to_u64("revocation time", r)).transpose()?,
            })
        })
        .transpose()
    }

    /// Registers `account` with `tls_public_key`, atomically with the check that its
    /// current key is still `previous` (`None`: not registered yet) and that it is
    /// not revoked. `Ok(false)` when that check fails (another enrolment came first).
    pub fn ca_register(
        &mut self,
        account: &[u8; 16],
        tls_public_key: &[u8],
        not_after: u64,
        previous: Option<&[u8]>,
    ) -> Result<bool> {
        let not_after_db = to_i64("certificate expiry", not_after)?;
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let current: Option<(Vec<u8>, Option<i64>)> = tx
            .query_row(
                "SELECT tls_public_key, revoked_unix FROM ca_accounts WHERE account = ?1",
                params![account.as_slice()],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let ok = match (&current, previous) {
            (None, None) => true,
            (Some((key, None)), Some(prev)) => key.as_slice() == prev,
            _ => false,
        };
        if !ok {
            return Ok(false);
        }
        tx.execute(
            "INSERT INTO ca_accounts (account, tls_public_key, not_after, revoked_unix) VALUES (?1, ?2, ?3, NULL)
             ON CONFLICT (account) DO UPDATE SET tls_public_key = excluded.tls_public_key,
                 not_after = excluded.not_after",
            params![account.as_slice(), tls_public_key, not_after_db],
        )?;
        tx.commit()?;
        Ok(true)
    }

    /// Marks `account` revoked at `now` (kept at the first revocation time);
    /// `false` if it is not registered.
    pub fn ca_revoke(&mut self, account: &[u8; 16], now: u64) -> Result<bool> {
        let now_db = to_i64("revocation time", now)?;
        let n = self.conn.execute(
            "UPDATE ca_accounts SET revoked_unix = COALESCE(revoked_unix, ?2) WHERE account = ?1",
            params![account.as_slice(), now_db],
        )?;
        Ok(n == 1)
    }

    /// Every registered account and its entry, in UUID order.
    pub fn ca_accounts(&self) -> Result<Vec<([u8; 16], CaAccount)>> {
        let mut st = self
            .conn
            .prepare("SELECT account, tls_public_key, not_after, revoked_unix FROM ca_accounts ORDER BY account")?;
        let rows = st.query_map([], |r| {
            Ok((
                r.get::<_, Vec<u8>>(0)?,
                r.get::<_, Vec<u8>>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, Option<i64>>(3)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (account, tls_public_key, not_after, revoked) = row?;
            let account: [u8; 16] = account
                .try_into()
                .map_err(|_| Error::Corrupt("an account id is not 16 bytes".to_owned()))?;
            out.push((
                account,
                CaAccount {
                    tls_public_key,
                    not_after: to_u64("certificate expiry", not_after)?,
                    revoked_unix: revoked.map(|r| to_u64("revocation time", r)).transpose()?,
                },
            ));
        }
        Ok(out)
    }

    // ----- revocation lists --------------------------------------------------

    /// Keeps `list`, the signed revocation list of `issuer` with `sequence` and
    /// `next_update_unix`, unless the store already holds one of `issuer` with the
    /// same or a higher sequence number: an older list never replaces a newer one,
    /// atomically (one statement). `Ok(true)` if it was stored.
    ///
    /// The store does not parse or verify lists: the caller verifies the signature
    /// before storing, and again after loading.
    pub fn put_revocation_list(
        &mut self,
        issuer: &str,
        sequence: u64,
        next_update_unix: u64,
        list: &[u8],
    ) -> Result<bool> {
        let seq_db = to_i64("revocation list sequence", sequence)?;
        let next_db = to_i64("revocation list next update", next_update_unix)?;
        let n = self.conn.execute(
            "INSERT INTO revocation_lists (issuer, sequence, next_update_unix, list) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (issuer) DO UPDATE SET sequence = excluded.sequence,
                 next_update_unix = excluded.next_update_unix, list = excluded.list
             WHERE excluded.sequence > revocation_lists.sequence",
            params![issuer, seq_db, next_db, list],
        )?;
        Ok(n == 1)
    }

    /// The newest revocation list stored for `issuer`, if any.
    pub fn revocation_list(&self, issuer: &str) -> Result<Option<StoredRevocationList>> {
        let row = self
            .conn
            .query_row(
                "SELECT sequence, next_update_unix, list FROM revocation_lists WHERE issuer = ?1",
                params![issuer],
                |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, Vec<u8>>(2)?)),
            )
            .optional()?;
        row.map(|(s, n, list)| {
            Ok(StoredRevocationList {
                sequence: to_u64("revocation list sequence", s)?,
                next_update_unix: to_u64("revocation list next update", n)?,
                list,
            })
        })
        .transpose()
    }

    /// Every stored revocation list whose issuer starts with `prefix`, by issuer.
    pub fn revocation_lists(&self, prefix: &str) -> Result<Vec<(String, StoredRevocationList)>> {
        let mut st = self.conn.prepare(
            "SELECT issuer, sequence, next_update_unix, list FROM revocation_lists
             WHERE substr(issuer, 1, length(?1)) = ?1 ORDER BY issuer",
        )?;
        let rows = st.query_map(params![prefix], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, Vec<u8>>(3)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (issuer, s, n, list) = row?;
            out.push((
                issuer,
                StoredRevocationList {
                    sequence: to_u64("revocation list sequence", s)?,
                    next_update_unix: to_u64("revocation list next update", n)?,
                    list,
                },
            ));
        }
        Ok(out)
    }

    // ----- peers pinned on first use ---------------------------------------

    /// The key fingerprint pinned for `name` (for example `psi/host:port`), if any.
    pub fn known_peer(&self, name: &str) -> Result<Option<[u8; 32]>> {
        let fp: Option<Vec<u8>> = self
            .conn
            .query_row(
                "SELECT fingerprint FROM known_peers WHERE name = ?1",
                params![name],
                |r| r.get(0),
            )
            .optional()?;
        fp.map(|f| {
            f.try_into()
                .map_err(|_| Error::Corrupt(format!("the pinned key of {name} is not 32 bytes")))
        })
        .transpose()
    }

    /// Pins `fingerprint` for `name` the first time it is seen; `Ok(false)` if `name`
    /// is already pinned (to this or another key: compare with [`Store::known_peer`]).
    pub fn remember_peer(&mut self, name: &str, fingerprint: &[u8; 32], now: u64) -> Result<bool> {
        let now_db = to_i64("first-seen time", now)?;
        let n = self.conn.execute(
            "INSERT INTO known_peers (name, fingerprint, first_seen_unix) VALUES (?1, ?2, ?3)
             ON CONFLICT (name) DO NOTHING",
            params![name, fingerprint.as_slice(), now_db],
        )?;
        Ok(n == 1)
    }

    /// Forgets the pinned key of `name` (after the peer changed its key on purpose);
    /// `false` if none was pinned.
    pub fn forget_peer(&mut self, name: &str) -> Result<bool> {
        Ok(self
            .conn
            .execute("DELETE FROM known_peers WHERE name = ?1", params![name])?
            == 1)
    }

    // ----- precomputations -------------------------------------------------

    /// Caches `blob`, a precomputation of `kind` made with the key of
    /// `key_epoch` over the address book at `contacts_version` (e.g. the
    /// sender's encrypted address book of the PrivateDrop paper's §4.3, which
    /// depends on both). Replaces an earlier blob with the same three keys.
    ///
    /// Fails with [`Error::StalePrecomputation`] if the address book has
    /// changed since `contacts_version`: such a blob could never be returned.
    pub fn put_precomputation(&mut self, kind: &str, key_epoch: u64, contacts_version: u64, blob: &[u8]) -> Result<()> {
        let epoch_db = to_i64("key epoch", key_epoch)?;
        let version_db = to_i64("contacts version", contacts_version)?;
        let tx = self.conn.transaction()?;
        let current = read_contacts_version(&tx)?;
        if current != contacts_version {
            return Err(Error::StalePrecomputation {
                given: contacts_version,
                current,
            });
        }
        tx.execute(
            "INSERT INTO precomputations (kind, key_epoch, contacts_version, blob)
             VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (kind, key_epoch, contacts_version) DO UPDATE SET blob = excluded.blob",
            params![kind, epoch_db, version_db, blob],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// The cached precomputation of `kind` for `key_epoch` and
    /// `contacts_version`, but only if `contacts_version` is the current
    /// version: a blob made over an older address book is never returned
    /// (and was deleted when the address book changed).
    pub fn get_precomputation(&self, kind: &str, key_epoch: u64, contacts_version: u64) -> Result<Option<Vec<u8>>> {
        let (Ok(epoch_db), Ok(version_db)) = (i64::try_from(key_epoch), i64::try_from(contacts_version)) else {
            return Ok(None);
        };
        Ok(self
            .conn
            .query_row(
                "SELECT p.blob FROM precomputations p
                 JOIN counters v ON v.name = 'contacts_version' AND v.value = p.contacts_version
                 WHERE p.kind = ?1 AND p.key_epoch = ?2 AND p.contacts_version = ?3",
                params![kind, epoch_db, version_db],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// Deletes the cached precomputations of `kind` made with keys older than
    /// `key_epoch` (after a key rotation); returns how many were deleted.
    pub fn prune_precomputations(&mut self, kind: &str, key_epoch: u64) -> Result<usize> {
        let epoch_db = to_i64("key epoch", key_epoch)?;
        Ok(self.conn.execute(
            "DELETE FROM precomputations WHERE kind = ?1 AND key_epoch < ?2",
            params![kind, epoch_db],
        )?)
    }
    // ----- TracEdge table management (§3.5) ----------------------------------

    /// Sets a TracEdge server setting.
    pub fn pir_config_put(&mut self, name: &str, value: &[u8]) -> Result<()> {
        self.conn.execute(
            "INSERT INTO pir_config (name, value) VALUES (?1, ?2)
             ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            params![name, value],
        )?;
        Ok(())
    }

    /// A TracEdge server setting.
    pub fn pir_config_get(&self, name: &str) -> Result<Option<Zeroizing<Vec<u8>>>> {
        Ok(self
            .conn
            .query_row("SELECT value FROM pir_config WHERE name = ?1", params![name], |r| {
                r.get::<_, Vec<u8>>(0)
            })
            .optional()?
            .map(Zeroizing::new))
    }

    /// Registers a subscriber in the lowest free row below `capacity`; the row is
    /// kept across tables. `None` if the key is already registered (its row is
    /// returned as `Err`-free `Some` by [`Store::pir_row_of`]) or the table is full.
    pub fn pir_register(&mut self, public_key: &[u8; 32], label: &str, capacity: u64, now: u64) -> Result<Option<u64>> {
        let tx = self.conn.transaction()?;
        let exists: Option<i64> = tx
            .query_row(
                "SELECT row FROM pir_subscribers WHERE public_key = ?1",
                params![&public_key[..]],
                |r| r.get(0),
            )
            .optional()?;
        if exists.is_some() {
            return Ok(None);
        }
        // The lowest row that holds no subscriber and was not freed by a removal
        // still waiting for its rekey.
        let free: i64 = tx.query_row(
            "WITH used(row) AS (SELECT row FROM pir_subscribers UNION SELECT row FROM pir_freed)
             SELECT MIN(c) FROM (SELECT 0 AS c UNION SELECT row + 1 FROM used)
             WHERE c NOT IN (SELECT row FROM used)",
            [],
            |r| r.get(0),
        )?;
        let free = to_u64("row", free)?;
        if free >= capacity {
            return Ok(None);
        }
        tx.execute(
            "INSERT INTO pir_subscribers (row, public_key, label, registered_unix) VALUES (?1, ?2, ?3, ?4)",
            params![to_i64("row", free)?, &public_key[..], label, to_i64("time", now)?],
        )?;
        tx.execute(
            "UPDATE pir_counters SET value = value + 1 WHERE name = 'subscribers_version'",
            [],
        )?;
        tx.commit()?;
        Ok(Some(free))
    }

    /// The row of a registered key.
    pub fn pir_row_of(&self, public_key: &[u8; 32]) -> Result<Option<u64>> {
        let r: Option<i64> = self
            .conn
            .query_row(
                "SELECT row FROM pir_subscribers WHERE public_key = ?1",
                params![&public_key[..]],
                |r| r.get(0),
            )
            .optional()?;
        r.map(|v| to_u64("row", v)).transpose()
    }

    /// Removes the subscriber of `row`; returns whether there was one. In the same
    /// transaction the row is marked freed: it is not handed out again (and a serving
    /// process rekeys) until [`Store::pir_release_freed`] after the rekey.
    pub fn pir_remove(&mut self, row: u64, now: u64) -> Result<bool> {
        let tx = self.conn.transaction()?;
        let n = tx.execute(
            "DELETE FROM pir_subscribers WHERE row = ?1",
            params![to_i64("row", row)?],
        )?;
        if n > 0 {
            tx.execute(
                "INSERT OR REPLACE INTO pir_freed (row, freed_unix) VALUES (?1, ?2)",
                params![to_i64("row", row)?, to_i64("time", now)?],
            )?;
            tx.execute(
                "UPDATE pir_counters SET value = value + 1 WHERE name = 'subscribers_version'",
                [],
            )?;
        }
        tx.commit()?;
        Ok(n > 0)
    }

    /// Rows freed by removals whose rekey has not been installed yet.
    pub fn pir_freed(&self) -> Result<Vec<u64>> {
        let mut st = self.conn.prepare("SELECT row FROM pir_freed ORDER BY row")?;
        let rows = st.query_map([], |r| r.get::<_, i64>(0))?;
        rows.map(|r| to_u64("row", r?)).collect()
    }

    /// Hands freed rows out again (after the rekey that retires their keys).
    pub fn pir_release_freed(&mut self, rows: &[u64]) -> Result<()> {
        let tx = self.conn.transaction()?;
        for r in rows {
            tx.execute("DELETE FROM pir_freed WHERE row = ?1", params![to_i64("row", *r)?])?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Appends TracEdge table log records (`(seq, encoded record)`, in order), in one
    /// transaction.
    pub fn pir_log_append(&mut self, records: &[(u64, Vec<u8>)]) -> Result<()> {
        let tx = self.conn.transaction()?;
        for (seq, rec) in records {
            tx.execute(
                "INSERT INTO pir_log (seq, record) VALUES (?1, ?2)",
                params![to_i64("log position", *seq)?, rec],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Every TracEdge table log record, in order.
    pub fn pir_log(&self) -> Result<Vec<Vec<u8>>> {
        let mut st = self.conn.prepare("SELECT record FROM pir_log ORDER BY seq")?;
        let rows = st.query_map([], |r| r.get::<_, Vec<u8>>(0))?;
        Ok(rows.collect::<std::result::Result<Vec<_>, _>>()?)
    }

    /// Keeps the latest enrolment receipt of a row.
    pub fn pir_put_receipt(&mut self, row: u64, receipt: &[u8]) -> Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO pir_receipts (row, receipt) VALUES (?1, ?2)",
            params![to_i64("row", row)?, receipt],
        )?;
        Ok(())
    }

    /// The latest enrolment receipt of a row.
    pub fn pir_receipt(&self, row: u64) -> Result<Option<Vec<u8>>> {
        Ok(self
            .conn
            .query_row(
                "SELECT receipt FROM pir_receipts WHERE row = ?1",
                params![to_i64("row", row)?],
                |r| r.get::<_, Vec<u8>>(0),
            )
            .optional()?)
    }

    /// All subscribers, by row.
    pub fn pir_subscribers(&self) -> Result<Vec<PirSubscriber>> {
        let mut st = self
            .conn
            .prepare("SELECT row, public_key, label FROM pir_subscribers ORDER BY row")?;
        let rows = st.query_map([], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?, r.get::<_, String>(2)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (row, key, label) = row?;
            let public_key: [u8; 32] = key
                .try_into()
                .map_err(|_| Error::Corrupt("a subscriber key is not 32 bytes".into()))?;
            out.push(PirSubscriber {
                row: to_u64("row", row)?,
                public_key,
                label,
            });
        }
        Ok(out)
    }

    /// A counter that changes with every registration and removal.
    pub fn pir_subscribers_version(&self) -> Result<u64> {
        let v: i64 = self.conn.query_row(
            "SELECT value FROM pir_counters WHERE name = 'subscribers_version'",
            [],
            |r| r.get(0),
        )?;
        to_u64("subscribers version", v)
    }

    /// Records a key table (a new epoch) with `status`.
    pub fn pir_put_table(&mut self, epoch: u64, key: &[u8], status: &str, now: u64) -> Result<()> {
        self.conn.execute(
            "INSERT INTO pir_tables (epoch, table_key, status, created_unix) VALUES (?1, ?2, ?3, ?4)",
            params![to_i64("epoch", epoch)?, key, status, to_i64("time", now)?],
        )?;
        Ok(())
    }

    /// Sets a table's status (and the expiry of a deprecated table's keys).
    pub fn pir_set_table_status(&mut self, epoch: u64, status: &str, expires_unix: Option<u64>) -> Result<bool> {
        let exp = expires_unix.map(|e| to_i64("time", e)).transpose()?;
        Ok(self.conn.execute(
            "UPDATE pir_tables SET status = ?2, expires_unix = ?3 WHERE epoch = ?1",
            params![to_i64("epoch", epoch)?, status, exp],
        )? > 0)
    }

    /// All key tables, by epoch.
    pub fn pir_tables(&self) -> Result<Vec<PirTableRecord>> {
        let mut st = self
            .conn
            .prepare("SELECT epoch, table_key, status, created_unix, expires_unix FROM pir_tables ORDER BY epoch")?;
        let rows = st.query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, Vec<u8>>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, Option<i64>>(4)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (epoch, key, status, created, expires) = row?;
            out.push(PirTableRecord {
                epoch: to_u64("epoch", epoch)?,
                key: Zeroizing::new(key),
                status,
                created_unix: to_u64("time", created)?,
                expires_unix: expires.map(|e| to_u64("time", e)).transpose()?,
            });
        }
        Ok(out)
    }
}

fn read_contacts_version(conn: &Connection) -> Result<u64> {
    let v: Option<i64> = conn
        .query_row("SELECT value FROM counters WHERE name = 'contacts_version'", [], |r| {
            r.get(0)
        })
        .optional()?;
    match v {
        Some(v) => to_u64("contacts version", v),
        None => Err(Error::Corrupt("the contacts version is missing".to_owned())),
    }
}

/// Increments the contacts version and deletes every precomputation made for
/// an older one: the invalidation rule of `docs/store.md`.
fn bump_contacts_version(tx: &Transaction<'_>) -> Result<()> {
    tx.execute(
        "UPDATE counters SET value = value + 1 WHERE name = 'contacts_version'",
        [],
    )?;
    tx.execute(
        "DELETE FROM precomputations WHERE contacts_version <>
         (SELECT value FROM counters WHERE name = 'contacts_version')",
        [],
    )?;
    Ok(())
}

/// `TYPE` values are stored comma-separated; they cannot contain commas
/// because the vCard reader splits on them.
fn join_types(types: &[String]) -> String {
    types.join(",")
}

fn split_types(stored: &str) -> Vec<String> {
    stored.split(',').filter(|t| !t.is_empty()).map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::SCHEMA_VERSION;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const APPLE: &str = include_str!("../tests/data/apple-3.0.vcf");
    const GOOGLE: &str = include_str!("../tests/data/google-3.0.vcf");
    const MALFORMED: &str = include_str!("../tests/data/malformed.vcf");

    /// A fresh folder under the system's temporary folder, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new() -> Self {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let dir = std::env::temp_dir().join(format!(
                "tacit-store-test-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&dir);
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn us() -> NormalizeOptions {
        NormalizeOptions::with_default_region("US").unwrap()
    }

    fn count(store: &Store, table: &str) -> i64 {
        store
            .conn
            .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn open_existing_never_creates_and_a_new_store_is_blank_until_written() {
        let dir = TempDir::new();
        let path = dir.0.join("nested/tacit.sqlite3");
        assert!(matches!(Store::open_existing(&path), Err(Error::Missing { .. })));
        assert!(!dir.0.exists(), "open_existing made a folder");
        let mut st = Store::open(&path).unwrap();
        assert!(st.is_blank().unwrap());
        st.add_own_identifier("alice@example.com", &NormalizeOptions::new())
            .unwrap();
        assert!(!st.is_blank().unwrap());
        drop(st);
        let st = Store::open_existing(&path).unwrap();
        assert!(!st.is_blank().unwrap());
    }

    #[test]
    fn a_failed_open_removes_what_it_created() {
        // a file in the way of the folder: the folders made before are removed again
        let dir = TempDir::new();
        std::fs::create_dir_all(&dir.0).unwrap();
        std::fs::write(dir.0.join("file"), b"x").unwrap();
        let path = dir.0.join("a/b/file/tacit.sqlite3");
        std::fs::create_dir_all(dir.0.join("a/b")).unwrap();
        std::fs::remove_dir_all(dir.0.join("a")).unwrap();
        assert!(Store::open(&dir.0.join("file/x.sqlite3")).is_err());
        let made = Made {
            dirs: vec![dir.0.join("a/b"), dir.0.join("a")],
            ..Default::default()
        };
        std::fs::create_dir_all(dir.0.join("a/b")).unwrap();
        made.undo(&path);
        assert!(!dir.0.join("a").exists());
    }

    #[test]
    fn open_creates_folders_and_uses_wal_and_foreign_keys() {
        let dir = TempDir::new();
        let path = dir.0.join("nested/deeper/tacit.sqlite3");
        let store = Store::open(&path).unwrap();
        assert!(path.exists());
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        let mode: String = store
            .conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        let fk: i64 = store
            .conn
            .pragma_query_value(None, "foreign_keys", |r| r.get(0))
            .unwrap();
        assert_eq!(fk, 1);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn reopening_applies_no_migration_and_keeps_data() {
        let dir = TempDir::new();
        let path = dir.0.join("tacit.sqlite3");
        {
            let mut store = Store::open(&path).unwrap();
            store.import_vcard(APPLE, &us()).unwrap();
            store.put_key("psi", 1, b"k", 10).unwrap();
        }
        let mut conn = Connection::open(&path).unwrap();
        assert_eq!(schema::user_version(&conn).unwrap(), SCHEMA_VERSION);
        assert_eq!(schema::migrate(&mut conn, schema::MIGRATIONS).unwrap(), 0);
        drop(conn);

        let store = Store::open(&path).unwrap();
        assert_eq!(store.contacts().unwrap().len(), 3);
        assert_eq!(store.contacts_version().unwrap(), 1);
        assert_eq!(store.current_key("psi").unwrap().unwrap().epoch, 1);
    }

    #[test]
    fn a_version_2_database_gains_the_revocation_lists_and_keeps_its_registry() {
        let dir = TempDir::new();
        std::fs::create_dir_all(&dir.0).unwrap();
        let path = dir.0.join("registry.sqlite3");
        {
            let mut conn = Connection::open(&path).unwrap();
            schema::migrate(&mut conn, &schema::MIGRATIONS[..2]).unwrap();
            conn.execute(
                "INSERT INTO ca_accounts (account, tls_public_key, not_after, revoked_unix) VALUES (?1, ?2, 5, 7)",
                params![[9u8; 16].as_slice(), b"key".as_slice()],
            )
            .unwrap();
        }
        let mut store = Store::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        assert_eq!(store.ca_account(&[9; 16]).unwrap().unwrap().revoked_unix, Some(7));
        assert!(store.put_revocation_list("drop-ca/k", 1, 10, b"l").unwrap());
    }

    #[test]
    fn fresh_database_gets_every_migration() {
        let mut conn = Connection::open_in_memory().unwrap();
        let n = schema::migrate(&mut conn, schema::MIGRATIONS).unwrap();
        assert_eq!(n, SCHEMA_VERSION);
        assert_eq!(schema::migrate(&mut conn, schema::MIGRATIONS).unwrap(), 0);
    }

    #[test]
    fn later_migrations_apply_only_the_missing_steps() {
        let mut conn = Connection::open_in_memory().unwrap();
        schema::migrate(&mut conn, &["CREATE TABLE a (x INTEGER)"]).unwrap();
        let steps = ["CREATE TABLE a (x INTEGER)", "CREATE TABLE b (y INTEGER)"];
        // Re-running step 1 would fail ("table a already exists").
        assert_eq!(schema::migrate(&mut conn, &steps).unwrap(), 1);
        assert_eq!(schema::user_version(&conn).unwrap(), 2);
    }

    #[test]
    fn a_failed_migration_changes_nothing() {
        let mut conn = Connection::open_in_memory().unwrap();
        let steps = ["CREATE TABLE a (x INTEGER)", "CREATE TABLE b (y INTEGER); NOT SQL"];
        let err = schema::migrate(&mut conn, &steps).unwrap_err();
        assert!(matches!(err, Error::Migration { version: 2, .. }), "{err:?}");
        assert!(err.to_string().contains("nothing was changed"));
        assert_eq!(schema::user_version(&conn).unwrap(), 0);
        let tables: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(tables, 0);
    }

    #[test]
    fn a_database_from_a_newer_version_is_refused() {
        let dir = TempDir::new();
        let path = dir.0.join("tacit.sqlite3");
        drop(Store::open(&path).unwrap());
        {
            let conn = Connection::open(&path).unwrap();
            conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1).unwrap();
        }
        let err = Store::open(&path).unwrap_err();
        assert!(
            matches!(err, Error::SchemaTooNew { found, supported }
                if found == SCHEMA_VERSION + 1 && supported == SCHEMA_VERSION),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(msg.contains("upgrade tacit"), "{msg}");
        // And it was left alone.
        let conn = Connection::open(&path).unwrap();
        assert_eq!(schema::user_version(&conn).unwrap(), SCHEMA_VERSION + 1);
    }

    #[test]
    fn a_file_that_is_not_a_database_is_a_clear_error() {
        let dir = TempDir::new();
        std::fs::create_dir_all(&dir.0).unwrap();
        let path = dir.0.join("contacts.vcf");
        std::fs::write(&path, APPLE.repeat(10)).unwrap();
        let err = Store::open(&path).unwrap_err();
        assert!(matches!(err, Error::Open { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains("could not open the database"), "{msg}");
        assert!(msg.contains("contacts.vcf"), "{msg}");
        assert!(msg.ends_with("file is not a database"), "{msg}");
    }

    #[test]
    fn import_lists_contacts_and_the_address_book() {
        let mut store = Store::open_in_memory().unwrap();
        assert_eq!(store.contacts_version().unwrap(), 0);
        let report = store.import_vcard(APPLE, &us()).unwrap();
        assert_eq!(
            (
                report.cards_imported,
                report.contacts_created,
                report.identifiers_added,
                report.duplicates
            ),
            (3, 3, 10, 0)
        );
        assert_eq!(report.problems, vec![]);
        assert_eq!(report.contacts_version, 1);

        let contacts = store.contacts().unwrap();
        let names: Vec<&str> = contacts.iter().map(|c| c.display_name.as_str()).collect();
        assert_eq!(names, ["Johnny Appleseed", "Dr. Anna Maria Müller", "Pizza Napoli"]);
        assert_eq!(
            contacts[0].identifiers[2],
            ContactIdentifier {
                kind: IdentifierKind::Phone,
                value: "14155550101".to_owned(),
                types: vec!["cell".into(), "voice".into(), "pref".into()],
            }
        );
        assert_eq!(contacts[2].identifiers.len(), 1);

        let book = store.address_book().unwrap();
        assert_eq!(book.len(), 10);
        let mut sorted = book.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(book, sorted);
        assert!(book.contains(&"493045050".to_owned()));
    }

    #[test]
    fn reimporting_the_same_file_adds_nothing() {
        let mut store = Store::open_in_memory().unwrap();
        store.import_vcard(APPLE, &us()).unwrap();
        store.import_vcard(GOOGLE, &us()).unwrap();
        let before = store.contacts().unwrap();
        let version = store.contacts_version().unwrap();

        let report = store.import_vcard(APPLE, &us()).unwrap();
        assert_eq!(
            (
                report.cards_imported,
                report.contacts_created,
                report.identifiers_added,
                report.duplicates
            ),
            (3, 0, 0, 10)
        );
        assert_eq!(store.contacts().unwrap(), before);
        assert_eq!(store.contacts_version().unwrap(), version, "nothing changed");
    }

    #[test]
    fn an_edited_card_is_merged_into_its_contact() {
        let mut store = Store::open_in_memory().unwrap();
        let v1 = "BEGIN:VCARD\nFN:Eve\nTEL;TYPE=CELL:+1 415 555 0161\nEND:VCARD\n";
        let v2 = "BEGIN:VCARD\nFN:Eve\nTEL;TYPE=VOICE:+1 415 555 0161\n\
                  EMAIL:eve@example.com\nEND:VCARD\n";
        store.import_vcard(v1, &us()).unwrap();
        let report = store.import_vcard(v2, &us()).unwrap();
        assert_eq!(
            (report.contacts_created, report.identifiers_added, report.duplicates),
            (0, 1, 1)
        );
        let contacts = store.contacts().unwrap();
        assert_eq!(contacts.len(), 1);
        assert_eq!(contacts[0].identifiers[0].types, ["cell", "voice"]);
        assert_eq!(contacts[0].identifiers[1].value, "eve@example.com");
        assert_eq!(store.contacts_version().unwrap(), 2);

        // A new type alone is a change too.
        let v3 = "BEGIN:VCARD\nFN:Eve\nTEL;TYPE=HOME:+1 415 555 0161\nEND:VCARD\n";
        store.import_vcard(v3, &us()).unwrap();
        assert_eq!(store.contacts_version().unwrap(), 3);
    }

    #[test]
    fn different_names_sharing_a_number_stay_apart() {
        let mut store = Store::open_in_memory().unwrap();
        let text = "BEGIN:VCARD\nFN:Home (landline)\nTEL:+1 415 555 0171\nEND:VCARD\n\
                    BEGIN:VCARD\nFN:Dad\nTEL:+1 415 555 0171\nTEL:+1 415 555 0172\nEND:VCARD\n\
                    BEGIN:VCARD\nFN:Dad\nTEL:+1 415 555 0172\nEMAIL:dad@example.com\nEND:VCARD\n";
        let report = store.import_vcard(text, &us()).unwrap();
        assert_eq!(
            (
                report.cards_imported,
                report.contacts_created,
                report.identifiers_added,
                report.duplicates
            ),
            (3, 2, 4, 1)
        );
        assert_eq!(store.contacts().unwrap().len(), 2);
        assert_eq!(
            store.address_book().unwrap(),
            ["14155550171", "14155550172", "dad@example.com"]
        );
    }

    #[test]
    fn problems_are_reported_and_good_cards_imported() {
        let mut store = Store::open_in_memory().unwrap();
        let report = store.import_vcard(MALFORMED, &us()).unwrap();
        assert_eq!(report.cards_imported, 3);
        assert_eq!(report.problems.len(), 11);
        assert_eq!(report.problems.iter().filter(|p| p.skipped_card).count(), 4);
        assert_eq!(store.contacts().unwrap().len(), 3);
        // The report is serialisable for the CLI's JSON output.
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["problems"][1]["skipped_card"], true);
        assert_eq!(json["cards_imported"], 3);
        let contacts = serde_json::to_value(store.contacts().unwrap()).unwrap();
        assert_eq!(contacts[0]["identifiers"][0]["kind"], "phone");
    }

    #[test]
    fn an_oversized_file_imports_nothing() {
        let mut store = Store::open_in_memory().unwrap();
        let text = format!("{APPLE}NOTE:{}\n", "n".repeat(vcard::MAX_LINE_BYTES + 1));
        let err = store.import_vcard(&text, &us()).unwrap_err();
        assert!(matches!(err, Error::VcardLineTooLong { .. }), "{err:?}");
        assert!(store.contacts().unwrap().is_empty());
        assert_eq!(store.contacts_version().unwrap(), 0);
    }

    #[test]
    fn contacts_version_counts_changes_only() {
        let mut store = Store::open_in_memory().unwrap();
        assert_eq!(store.clear_contacts().unwrap(), 0);
        assert_eq!(store.contacts_version().unwrap(), 0, "clearing nothing changes nothing");
        store.import_vcard(GOOGLE, &us()).unwrap();
        assert_eq!(store.contacts_version().unwrap(), 1);
        store.import_vcard(GOOGLE, &us()).unwrap();
        assert_eq!(store.contacts_version().unwrap(), 1);
        let id = store.contacts().unwrap()[0].id;
        assert!(store.delete_contact(id).unwrap());
        assert!(!store.delete_contact(id).unwrap());
        assert_eq!(store.contacts_version().unwrap(), 2);
        assert_eq!(store.contacts().unwrap().len(), 2);
        assert_eq!(count(&store, "contact_identifiers"), 5, "identifiers cascade");
        assert_eq!(store.clear_contacts().unwrap(), 2);
        assert_eq!(store.contacts_version().unwrap(), 3);
        assert!(store.address_book().unwrap().is_empty());
        assert_eq!(count(&store, "contact_identifiers"), 0);
    }

    #[test]
    fn precomputations_are_invalidated_by_address_book_changes() {
        let mut store = Store::open_in_memory().unwrap();
        store.import_vcard(APPLE, &us()).unwrap();
        let v = store.contacts_version().unwrap();
        store.put_precomputation("ab-enc", 7, v, b"blob-7").unwrap();
        store.put_precomputation("ab-enc", 8, v, b"blob-8").unwrap();
        store.put_precomputation("other", 7, v, b"other").unwrap();
        assert_eq!(
            store.get_precomputation("ab-enc", 7, v).unwrap().as_deref(),
            Some(&b"blob-7"[..])
        );
        assert_eq!(
            store.get_precomputation("ab-enc", 8, v).unwrap().as_deref(),
            Some(&b"blob-8"[..])
        );
        assert_eq!(store.get_precomputation("ab-enc", 9, v).unwrap(), None);
        assert_eq!(store.get_precomputation("ab-enc", 7, v + 1).unwrap(), None);

        // Replacing is allowed.
        store.put_precomputation("ab-enc", 7, v, b"blob-7b").unwrap();
        assert_eq!(
            store.get_precomputation("ab-enc", 7, v).unwrap().as_deref(),
            Some(&b"blob-7b"[..])
        );

        // A no-op re-import keeps them.
        store.import_vcard(APPLE, &us()).unwrap();
        assert!(store.get_precomputation("ab-enc", 7, v).unwrap().is_some());
        assert_eq!(count(&store, "precomputations"), 3);

        // A change of the address book deletes them all.
        store.import_vcard(GOOGLE, &us()).unwrap();
        let w = store.contacts_version().unwrap();
        assert_eq!(w, v + 1);
        assert_eq!(store.get_precomputation("ab-enc", 7, v).unwrap(), None);
        assert_eq!(store.get_precomputation("ab-enc", 7, w).unwrap(), None);
        assert_eq!(count(&store, "precomputations"), 0, "stale rows are deleted");

        // Storing one for an old version is refused.
        let err = store.put_precomputation("ab-enc", 7, v, b"late").unwrap_err();
        assert!(matches!(err, Error::StalePrecomputation { given, current } if given == v && current == w));
        assert!(err.to_string().contains("recompute"));

        store.put_precomputation("ab-enc", 7, w, b"fresh").unwrap();
        let id = store.contacts().unwrap()[0].id;
        store.delete_contact(id).unwrap();
        assert_eq!(count(&store, "precomputations"), 0, "deleting a contact invalidates");
        let x = store.contacts_version().unwrap();
        store.put_precomputation("ab-enc", 7, x, b"fresh").unwrap();
        store.clear_contacts().unwrap();
        assert_eq!(count(&store, "precomputations"), 0, "clearing invalidates");
    }

    #[test]
    fn precomputations_of_old_key_epochs_can_be_pruned() {
        let mut store = Store::open_in_memory().unwrap();
        for epoch in 1..=3 {
            store.put_precomputation("ab-enc", epoch, 0, b"x").unwrap();
        }
        store.put_precomputation("other", 1, 0, b"x").unwrap();
        assert_eq!(store.prune_precomputations("ab-enc", 3).unwrap(), 2);
        assert!(store.get_precomputation("ab-enc", 3, 0).unwrap().is_some());
        assert!(store.get_precomputation("other", 1, 0).unwrap().is_some());
    }

    #[test]
    fn keys_by_purpose_and_epoch() {
        let mut store = Store::open_in_memory().unwrap();
        assert!(store.current_key("psi").unwrap().is_none());
        store.put_key("psi", 1, b"first", 1_700_000_000).unwrap();
        store.put_key("psi", 3, b"third", 1_700_000_300).unwrap();
        store.put_key("psi", 2, b"second", 1_700_000_200).unwrap();
        store.put_key("signing", 9, b"other", 5).unwrap();

        let key = store.current_key("psi").unwrap().unwrap();
        assert_eq!(
            (key.epoch, &key.secret[..], key.created_unix),
            (3, &b"third"[..], 1_700_000_300)
        );
        assert_eq!(&store.key("psi", 2).unwrap().unwrap().secret[..], b"second");
        assert!(store.key("psi", 4).unwrap().is_none());
        assert!(store.key("psi", u64::MAX).unwrap().is_none());
        assert_eq!(store.current_key("signing").unwrap().unwrap().epoch, 9);

        let err = store.put_key("psi", 2, b"again", 0).unwrap_err();
        assert!(matches!(err, Error::KeyExists { epoch: 2, .. }), "{err:?}");
        assert_eq!(&store.key("psi", 2).unwrap().unwrap().secret[..], b"second");

        let err = store.put_key("psi", u64::MAX, b"x", 0).unwrap_err();
        assert!(matches!(err, Error::NumberTooLarge { .. }), "{err:?}");
        assert!(err.to_string().contains("too large"));
    }

    #[test]
    fn stored_key_debug_hides_the_secret() {
        let mut store = Store::open_in_memory().unwrap();
        store.put_key("psi", 1, b"TOPSECRET", 42).unwrap();
        let key = store.current_key("psi").unwrap().unwrap();
        let debug = format!("{key:?} {key:#?}");
        assert!(!debug.contains("TOPSECRET"), "{debug}");
        // Nor as a list of bytes ('T' = 84, 'O' = 79).
        assert!(!debug.contains("84, 79"), "{debug}");
        assert!(debug.contains("redacted") && debug.contains("epoch: 1"), "{debug}");
    }

    #[test]
    fn own_identifiers() {
        let mut store = Store::open_in_memory().unwrap();
        let phone = store.add_own_identifier("(415) 555-0100", &us()).unwrap();
        assert_eq!(phone.value, "14155550100");
        store.add_own_identifier("Me@Example.com", &us()).unwrap();
        store.add_own_identifier("+1 415 555 0100", &us()).unwrap();
        let own = store.own_identifiers().unwrap();
        assert_eq!(
            own,
            [
                Identifier {
                    kind: IdentifierKind::Phone,
                    value: "14155550100".into()
                },
                Identifier {
                    kind: IdentifierKind::Email,
                    value: "me@example.com".into()
                },
            ]
        );
        let err = store.add_own_identifier("not a number", &us()).unwrap_err();
        assert!(err.to_string().contains("not a number"));
        assert!(store.remove_own_identifier("me@example.com").unwrap());
        assert!(!store.remove_own_identifier("me@example.com").unwrap());
        assert_eq!(store.own_identifiers().unwrap().len(), 1);
        // Own identifiers are not part of the address book.
        assert!(store.address_book().unwrap().is_empty());
        assert_eq!(store.contacts_version().unwrap(), 0);
    }

    #[test]
    fn the_ca_registry_binds_an_account_to_one_key_at_a_time() {
        let mut store = Store::open_in_memory().unwrap();
        let a = [7u8; 16];
        assert_eq!(store.ca_account(&a).unwrap(), None);
        assert!(store.ca_register(&a, b"key-1", 100, None).unwrap());
        // a second "new" registration of the same UUID is refused
        assert!(!store.ca_register(&a, b"attacker", 100, None).unwrap());
        // so is a renewal that names the wrong current key
        assert!(!store.ca_register(&a, b"attacker", 100, Some(b"key-0")).unwrap());
        assert!(store.ca_register(&a, b"key-2", 200, Some(b"key-1")).unwrap());
        let e = store.ca_account(&a).unwrap().unwrap();
        assert_eq!(
            (e.tls_public_key.as_slice(), e.not_after, e.revoked_unix),
            (&b"key-2"[..], 200, None)
        );
        assert!(store.ca_revoke(&a, 300).unwrap());
        assert!(store.ca_revoke(&a, 400).unwrap());
        assert_eq!(store.ca_account(&a).unwrap().unwrap().revoked_unix, Some(300));
        // a revoked account is never registered again
        assert!(!store.ca_register(&a, b"key-3", 500, Some(b"key-2")).unwrap());
        assert!(!store.ca_revoke(&[8; 16], 1).unwrap());
        assert_eq!(store.ca_accounts().unwrap().len(), 1);
    }

    #[test]
    fn an_older_revocation_list_never_replaces_a_newer_one() {
        let mut store = Store::open_in_memory().unwrap();
        assert_eq!(store.revocation_list("drop-ca/aa").unwrap(), None);
        assert!(store.put_revocation_list("drop-ca/aa", 2, 100, b"list-2").unwrap());
        // older and equal sequence numbers are not stored
        assert!(!store.put_revocation_list("drop-ca/aa", 1, 900, b"list-1").unwrap());
        assert!(!store.put_revocation_list("drop-ca/aa", 2, 900, b"other-2").unwrap());
        let l = store.revocation_list("drop-ca/aa").unwrap().unwrap();
        assert_eq!(
            (l.sequence, l.next_update_unix, l.list.as_slice()),
            (2, 100, &b"list-2"[..])
        );
        assert!(store.put_revocation_list("drop-ca/aa", 3, 200, b"list-3").unwrap());
        assert_eq!(store.revocation_list("drop-ca/aa").unwrap().unwrap().sequence, 3);
        // issuers are independent; listing filters by prefix
        assert!(
            store
                .put_revocation_list("discovery-root/Home/bb", 1, 50, b"h")
                .unwrap()
        );
        assert!(store.put_revocation_list("drop-ca/cc", 1, 50, b"c").unwrap());
        let drop: Vec<String> = store
            .revocation_lists("drop-ca/")
            .unwrap()
            .into_iter()
            .map(|(i, _)| i)
            .collect();
        assert_eq!(drop, ["drop-ca/aa", "drop-ca/cc"]);
        assert_eq!(store.revocation_lists("discovery-root/").unwrap().len(), 1);
        assert!(store.put_revocation_list("x", u64::MAX, 0, b"").is_err());
    }

    #[test]
    fn peers_are_pinned_on_first_use() {
        let mut store = Store::open_in_memory().unwrap();
        assert_eq!(store.known_peer("psi/h:1").unwrap(), None);
        assert!(store.remember_peer("psi/h:1", &[1; 32], 5).unwrap());
        assert!(!store.remember_peer("psi/h:1", &[2; 32], 6).unwrap());
        assert_eq!(store.known_peer("psi/h:1").unwrap(), Some([1; 32]));
        assert!(store.forget_peer("psi/h:1").unwrap());
        assert!(!store.forget_peer("psi/h:1").unwrap());
    }

    #[test]
    fn pir_rows_are_reused_and_kept() {
        let mut store = Store::open_in_memory().unwrap();
        let k = |b: u8| [b; 32];
        assert_eq!(store.pir_register(&k(1), "a", 3, 0).unwrap(), Some(0));
        assert_eq!(store.pir_register(&k(2), "b", 3, 0).unwrap(), Some(1));
        assert_eq!(
            store.pir_register(&k(1), "a", 3, 0).unwrap(),
            None,
            "a key registers once"
        );
        assert_eq!(store.pir_register(&k(3), "c", 3, 0).unwrap(), Some(2));
        assert_eq!(store.pir_register(&k(4), "d", 3, 0).unwrap(), None, "full");
        let v = store.pir_subscribers_version().unwrap();
        assert!(store.pir_remove(0, 0).unwrap());
        assert!(!store.pir_remove(0, 0).unwrap());
        assert!(store.pir_subscribers_version().unwrap() > v);
        // A freed row is not handed out before its rekey releases it.
        assert_eq!(store.pir_freed().unwrap(), vec![0]);
        assert_eq!(
            store.pir_register(&k(4), "d", 3, 0).unwrap(),
            None,
            "full: row 0 waits for its rekey"
        );
        store.pir_release_freed(&[0]).unwrap();
        // The freed row is reused; the others keep theirs.
        assert_eq!(store.pir_register(&k(4), "d", 3, 0).unwrap(), Some(0));
        assert_eq!(store.pir_row_of(&k(2)).unwrap(), Some(1));
        store.pir_put_table(1, &[9; 16], "current", 5).unwrap();
        store.pir_set_table_status(1, "deprecated", Some(99)).unwrap();
        let t = store.pir_tables().unwrap();
        assert_eq!((t[0].status.as_str(), t[0].expires_unix), ("deprecated", Some(99)));
    }
}
