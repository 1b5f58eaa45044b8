//! PrivateDrop (Heinrich, Hollick, Schneider, Stute, Weinert, USENIX Security 2021):
//! two devices learn whether they are mutual contacts without revealing any contact
//! identifier to a non-contact, by two interleaved malicious-secure PSI runs on
//! CA-certified inputs — and, beside it, the legacy AirDrop flow whose leak the paper
//! exposes.
//!
//! This crate is the sans-I/O core: certificates and the certification authority
//! ([`ca`], [`records`]), the protocol state machines ([`protocol`] for PrivateDrop,
//! Fig. 4 of the paper; [`legacy`] for AirDrop's `Discover`), and the brute-force
//! attack on legacy captures ([`attack`]). The HTTPS shell ([`transport`]) drives the
//! state machines, and [`service`] puts servers and clients on top, configured by
//! builders: the CA's endpoint ([`service::ca::Ca::builder`]) and a device's enrolment
//! ([`service::ca::enroll`]), a receiver ([`service::receiver::Receiver::builder`])
//! and a sender ([`service::sender::Sender::builder`]) — what `tacit ca`, `tacit id`
//! and `tacit drop` run, for a product that embeds PrivateDrop.
//!
//! Two devices enrol with a CA over TLS, prove to each other that they are mutual
//! contacts, and one sends the other a file, all over loopback:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> tacit_drop::service::Result<()> {
//! use std::sync::Arc;
//! use tacit_crypto::Ristretto255 as G;
//! use tacit_drop::protocol::{AddressBook, Peer};
//! use tacit_drop::revocation::Revocations;
//! use tacit_drop::service::{ca, receiver::Receiver, sender};
//!
//! let dir = std::env::temp_dir().join(format!("tacit-drop-doc-{}", std::process::id()));
//! let authority = ca::init(&dir.join("ca"), true)?;
//! let key = authority.public_key();
//! let server = ca::Ca::builder(authority, dir.join("ca"))
//!     .confirm(|_account, _identifier| true) // the operator's ownership check
//!     .sessions(Some(3))
//!     .bind("127.0.0.1:0")
//!     .await?;
//! let ca_addr = server.local_addr().to_string();
//! let ca_task = tokio::spawn(server.serve());
//! let params = tacit_drop::DropParams::default().with_bounds(2, 10);
//! let ann = ca::enroll::<G>(&ca_addr, key, &params, &["ann@example.com".into()]).await?;
//! let bob = ca::enroll::<G>(&ca_addr, key, &params, &["bob@example.com".into()]).await?;
//! // The CA's revocation list in force (a device keeps it in its store:
//! // `service::device::revocations_on_start`); without one the builders refuse every peer.
//! let revocations = Revocations::from_list(ca::fetch_revocations(&ca_addr, key).await?);
//! ca_task.await.unwrap()?;
//!
//! let bob_book = Arc::new(AddressBook::new(&["ann@example.com"]));
//! let receiver = Receiver::builder(Arc::new(bob), bob_book, key)
//!     .revocations(revocations.clone())
//!     .dir(dir.join("inbox"))
//!     .accept_contacts()
//!     .sessions(Some(1))
//!     .bind("127.0.0.1:0")
//!     .await?;
//! let addr = receiver.local_addr().to_string();
//! let serving = tokio::spawn(receiver.serve());
//!
//! let ann_book = Arc::new(AddressBook::new(&["bob@example.com"]));
//! let ann = sender::Sender::builder(Arc::new(ann), ann_book, key).revocations(revocations).build();
//! let session = ann.authenticate(&addr).await?;
//! assert_eq!(session.outcome.receiver, Peer::Contact { identifier: "bob@example.com".into() });
//! assert_eq!(session.outcome.known_by_receiver, ["ann@example.com"]);
//! std::fs::write(dir.join("hello.txt"), "hello").unwrap();
//! let offers = sender::offers(&[dir.join("hello.txt")], &|_, _, _| {}).await?;
//! let delivered = sender::deliver(session, &offers).await?;
//! serving.await.unwrap()?;
//! assert_eq!(std::fs::read_to_string(dir.join("inbox").join(&delivered[0].stored_as)).unwrap(), "hello");
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok(())
//! # }
//! ```
//!
//! Underneath, the sans-I/O enrolment:
//!
//! ```
//! use tacit_crypto::{Ristretto255, rng::SecureRng};
//! use tacit_drop::ca::{CertificateAuthority, DeviceEnrollment, MemoryRegistry};
//! use tacit_drop::DropParams;
//!
//! let mut rng = SecureRng::from_seed([1; 32]);
//! let ca = CertificateAuthority::generate(&mut rng).unwrap();
//! let params = DropParams::default().with_bounds(4, 100);
//! // A device proves knowledge of αᵢ for yᵢ = αᵢ·H(IDᵢ); the CA certifies.
//! let enrollment = DeviceEnrollment::<Ristretto255>::new(&params, &["14155550100", "ann@example.com"], &mut rng).unwrap();
//! let issued = ca.enroll(enrollment.request(), &|_id| true, &mut MemoryRegistry::new(), 1_700_000_000, &mut rng).unwrap();
//! let identity = enrollment.finish(issued, &ca.public_key(), 1_700_000_000).unwrap();
//! assert_eq!(identity.identifiers().len(), 2);
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod account;
pub mod attack;
pub mod ca;
pub mod enrolment;
mod error;
pub mod legacy;
pub mod protocol;
pub mod records;
pub mod revocation;
pub mod service;
pub mod supply;
pub mod transport;
pub mod x509;

pub use account::AccountId;
pub use error::Error;

use tacit_crypto::GroupId;
use tacit_psi::{PsiParams, Security};

/// Result alias of this crate.
pub type Result<T> = core::result::Result<T, Error>;

/// PrivateDrop's public parameters: the group and the bounds (`m` identifiers per
/// account, `n` address-book entries). PrivateDrop always runs the malicious-secure PSI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DropParams {
    /// The PSI parameters (security is always [`Security::Malicious`]).
    pub psi: PsiParams,
}

impl Default for DropParams {
    fn default() -> Self {
        DropParams {
            psi: PsiParams::new(Security::Malicious),
        }
    }
}

impl DropParams {
    /// The same with other bounds: `ids` (m) and `contacts` (n).
    pub fn with_bounds(mut self, ids: u32, contacts: u32) -> Self {
        self.psi = self.psi.with_bounds(ids, contacts);
        self
    }

    /// The same in another group.
    pub fn with_group(mut self, group: GroupId) -> Self {
        self.psi = self.psi.with_group(group);
        self
    }

    /// `m`.
    pub fn max_ids(&self) -> usize {
        self.psi.max_receiver as usize
    }

    /// `n`.
    pub fn max_contacts(&self) -> usize {
        self.psi.max_sender as usize
    }
}

/// Signs `label || 0x00 || body` (domain separation for every signed object).
pub(crate) fn signed_message(label: &str, body: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(label.len() + 1 + body.len());
    m.extend_from_slice(b"tacit-drop-v1/");
    m.extend_from_slice(label.as_bytes());
    m.push(0);
    m.extend_from_slice(body);
    m
}

/// `SHA-256(ID)` of a normalised identifier, as AirDrop's validation records hold it.
pub fn identifier_hash(id: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(id.as_bytes()).into()
}
