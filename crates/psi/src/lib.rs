//! Sans-I/O private set intersection engines.
//!
//! Two Diffie–Hellman PSI protocols on the RFC 9497 (V)OPRF of `tacit-crypto`:
//!
//! * [`Security::Malicious`] — the protocol of Jarecki and Liu as PrivateDrop uses it
//!   (PrivateDrop §4.3, Fig. 3). The receiver sends blinded hashes `yᵢ = αᵢ·H(xᵢ)` of
//!   its elements; the sender answers `zᵢ = k·yᵢ` with **one** batched DLEQ proof that
//!   every `zᵢ` was computed with the key behind its public key `k·G`, together with its
//!   precomputed evaluations `uⱼ = Hash(cⱼ, k·H(cⱼ))` of its own set, truncated to
//!   `l = λ + ⌈log₂ n⌉ + max(⌈log₂ m⌉, ⌈log₂ n⌉)` bits (the paper's `λ + 2·⌈log₂ n⌉`
//!   when `m ≤ n`) and in random order; the receiver verifies, unblinds
//!   (`αᵢ⁻¹·zᵢ = k·H(xᵢ)`), hashes and compares.
//! * [`Security::SemiHonest`] — the same with the plain OPRF (no proof).
//!
//! Both sides pad to fixed bounds (`m` receiver elements, `n` sender elements) with
//! dummies that are indistinguishable on the wire, so every message's size depends
//! only on the bounds. The engines never touch a socket, a clock or a file: bytes
//! in, bytes out, randomness passed in.
//!
//! # A server and a client (what `tacit psi serve | query` run)
//!
//! [`Server::builder`] and [`Client::builder`] (or [`query`]) are the network shell,
//! async on tokio: TLS 1.3 with a pinned self-signed key by default, responses bound
//! to the TLS session, concurrent sessions under limits and deadlines, the sender's
//! precomputation made before serving (fresh per session, or per epoch and kept in a
//! [`tacit_store::Store`]). See [`server`] and [`client`] for everything they do,
//! and `docs/psi.md` ("Embedding tacit-psi").
//!
//! ```
//! # fn main() -> Result<(), tacit_psi::ServiceError> {
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use tacit_psi::{Client, PsiParams, Security, Server};
//!
//! let params = PsiParams::new(Security::Malicious).with_bounds(4, 100);
//! let book = ["alice@example.com", "15551230000", "bob@example.com"];
//! let server = Server::builder().params(params).set(book).sessions(1).bind("127.0.0.1:0").await?;
//! let (addr, pin) = (server.local_addr().to_string(), server.fingerprint().unwrap());
//! let serving = tokio::spawn(server.serve());
//!
//! let mut client = Client::builder().params(params).pin(pin).build()?;
//! let found = client.query(&addr, &["15559990000", "bob@example.com"]).await?;
//! assert_eq!(found.strings(), ["bob@example.com"]);
//! assert!(found.tls);
//! serving.await.unwrap()?;
//! # Ok(()) }) }
//! ```
//!
//! # The engines (sans-I/O)
//!
//! The same exchange without the network: [`service`] and the builders only move
//! these bytes.
//!
//! ```
//! use tacit_crypto::{Ristretto255, rng::SecureRng};
//! use tacit_psi::{PsiParams, Security, Receiver, ReceiverPrecomputation, Sender, SenderKey,
//!                 SenderPrecomputation, Reuse};
//!
//! let mut rng = SecureRng::from_seed([0; 32]);
//! let params = PsiParams::new(Security::Malicious).with_bounds(4, 100);
//! let key = SenderKey::<Ristretto255>::generate(&mut rng, 1);
//! let book = ["alice@example.com", "15551230000", "bob@example.com"];
//! let pre = SenderPrecomputation::compute(&params, &key, &book, Reuse::FreshPerSession, &mut rng).unwrap();
//! let sender = Sender::new(&params, key, pre).unwrap();
//!
//! let ids = ["15559990000", "bob@example.com"];
//! let recv_pre = ReceiverPrecomputation::<Ristretto255>::compute(&params, &ids, &mut rng).unwrap();
//! let (waiting, request) = Receiver::start(&recv_pre);
//! let response = sender.respond(&request, &mut rng).unwrap();
//! let found = waiting.on_response(&response).unwrap();
//! assert_eq!(found.items(), &[b"bob@example.com".to_vec()]);
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod client;
mod error;
mod messages;
mod params;
mod receiver;
mod sender;
pub mod server;
pub mod service;
pub mod two_way;

pub use client::{Client, ClientBuilder, QueryResult, known_peer_name, query};
pub use error::{Error, ServiceError};
pub use messages::{EncodingMemo, Request, Response};
pub use params::{MAX_RECEIVER_BOUND, MAX_SENDER_BOUND, PsiParams, Security};
pub use receiver::{CertifiedSlot, Intersection, Receiver, ReceiverAwaitingResponse, ReceiverPrecomputation};
pub use sender::{Reuse, Sender, SenderKey, SenderPrecomputation};
pub use server::{Server, ServerBuilder, ServerEvent};

/// The TLS server name of a PSI server (its certificate is self-signed and pinned,
/// not checked by name).
pub const TLS_NAME: &str = "tacit-psi.invalid";

/// Result alias of this crate.
pub type Result<T> = core::result::Result<T, Error>;

/// Deduplicates `items`, keeping the first occurrence, in input order.
pub(crate) fn dedupe<T: AsRef<[u8]>>(items: &[T]) -> Vec<Vec<u8>> {
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    let mut out = Vec::with_capacity(items.len());
    for it in items {
        let b = it.as_ref();
        if seen.insert(b) {
            out.push(b.to_vec());
        }
    }
    out
}
