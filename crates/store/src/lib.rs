//! tacit's local store: the user's own identifiers, the address book, secret
//! keys and cached precomputations, in one SQLite file.
//!
//! * [`Identifier`] and [`normalize_phone`] / [`normalize_email`] turn what a
//!   person typed into the exact strings the PSI protocols compare (E.164
//!   digits without `+`, as the PrivateDrop paper hashes them; lower-case
//!   e-mail addresses).
//! * [`vcard`] reads address-book exports (vCard 2.1/3.0/4.0) without a
//!   database, reporting bad cards by line number.
//! * [`Store`] keeps everything in SQLite with schema migrations, a
//!   [`Store::contacts_version`] that changes with every change of the address
//!   book, and precomputations that are only served for the current version.
//!
//! The store is sans clock: times are passed in by the caller. See
//! `docs/store.md` for the schema and the rules.
//!
//! ```
//! use tacit_store::{NormalizeOptions, Store};
//!
//! let mut store = Store::open_in_memory()?;
//! let opts = NormalizeOptions::with_default_region("US")?;
//! let vcf = "BEGIN:VCARD\r\n\
//!            VERSION:3.0\r\n\
//!            FN:Alice Example\r\n\
//!            TEL;TYPE=CELL:(234) 567-8901\r\n\
//!            EMAIL;TYPE=INTERNET:Alice@Example.org\r\n\
//!            END:VCARD\r\n";
//! let report = store.import_vcard(vcf, &opts)?;
//! assert_eq!(report.cards_imported, 1);
//! assert_eq!(store.address_book()?, ["12345678901", "alice@example.org"]);
//!
//! // A precomputation is only served for the address book it was made from.
//! let version = store.contacts_version()?;
//! store.put_precomputation("encrypted-address-book", 1, version, b"blob")?;
//! assert!(store.get_precomputation("encrypted-address-book", 1, version)?.is_some());
//! store.clear_contacts()?;
//! let now = store.contacts_version()?;
//! assert!(store.get_precomputation("encrypted-address-book", 1, now)?.is_none());
//! # Ok::<(), tacit_store::Error>(())
//! ```

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod contact;
mod error;
mod identifier;
mod schema;
mod store;
pub mod vcard;

pub use contact::{Contact, ContactIdentifier};
pub use error::{Error, Result};
pub use identifier::{Identifier, IdentifierKind, NormalizeOptions, normalize_email, normalize_phone};
pub use schema::SCHEMA_VERSION;
pub use store::{CaAccount, ImportReport, PirSubscriber, PirTableRecord, Store, StoredKey, StoredRevocationList};
pub use vcard::{Card, Problem, VcardParse};
