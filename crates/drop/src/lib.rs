//! PrivateDrop (Heinrich, Hollick, Schneider, Stute, Weinert, USENIX Security 2021):
//! two devices learn whether they are mutual contacts without revealing any contact
//! identifier to a non-contact, by two interleaved malicious-secure PSI runs on
//! CA-certified inputs — and, beside it, the legacy AirDrop flow whose leak the paper
//! exposes.
//!
//! This crate is the sans-I/O core: certificates and the certification authority
//! ([`ca`], [`records`]), the protocol state machines ([`protocol`] for PrivateDrop,
//! Fig. 4 of the paper; [`legacy`] for AirDrop's `Discover`), and the brute-force
//! attack on legacy captures ([`attack`]). Transports drive the state machines.
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
