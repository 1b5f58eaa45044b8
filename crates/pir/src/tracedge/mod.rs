//! TracEdge (Cassola, Blass, Noubir, §3 and §5): anonymous subscriber authentication
//! by PIR over a table of encrypted keys, with a commitment to the table key, audits
//! of other rows and proofs of misbehaviour that anyone can check.
//!
//! * [`keytable`] — the key table: hashed ElGamal on ristretto255 with the table's
//!   deterministic randomness `r = H(K)`; the directory of public keys as a Merkle
//!   tree whose root the server signs.
//! * [`commit`] — the commitment to `K`: binding generators from hash-to-group (the
//!   default) or the paper's equivocable `g^K·h^r` ([`CommitScheme::PaperEquivocable`]).
//! * [`TracEdgeServer`] and [`TracEdgeClient`] — Algorithm 1, sans I/O, over any PIR
//!   backend that speaks the `lwe` messages; concurrent sessions are answered in one
//!   pass ([`TracEdgeServer::respond_batch`]).
//! * [`log`] — the signed, hash-chained table log (directory changes and served
//!   tables) that clients keep a copy of ([`ClientView`]), and enrolment receipts.
//! * [`MisbehaviourProof`] — what the server signed with what makes it checkable
//!   offline ([`MisbehaviourProof::verify`]): session proofs (own row, audit) and log
//!   proofs (equivocation, a bad entry, a receipt not honoured, a rollback).
//! * [`service`] — the TLS server and client on tokio, for products and the CLI.
//!
//! ```
//! use tacit_pir::tracedge::*;
//! use tacit_crypto::sign::SigningKey;
//! use curve25519_dalek::scalar::Scalar;
//! use rand_chacha::ChaCha20Rng;
//! use rand_core::SeedableRng;
//!
//! let mut rng = ChaCha20Rng::seed_from_u64(7);
//! let now = 1_700_000_000_000;
//! let mut server = TracEdgeServer::new(SigningKey::generate(&mut rng), Scalar::random(&mut rng),
//!     ServerConfig::default(), 300, now).unwrap();
//! // Alice registers: a signed log entry, and her receipt.
//! let alice = SubscriberSecret::random(&mut rng);
//! let receipt = server.apply_changes(&[(42, alice.public_bytes())], now).unwrap().receipts.remove(0);
//! let keys = server.directory().keys().to_vec();
//! let table = build_lwe_table(1, TableKey::random(&mut rng), CommitScheme::Binding, &server.dh_public(),
//!     keys, None, &|_| {}, &mut rng).unwrap();
//! let hint = table.hint().clone();
//! server.install(table, now).unwrap();
//!
//! let client = TracEdgeClient::new(server.verifying_key(), 42, alice, ClientConfig::default());
//! let mut view = ClientView::for_receipt(receipt, now).unwrap(); // her copy of the log
//! let (mut cs, hello) = client.start(now, &mut rng);
//! let (mut ss, commit) = server.hello(&hello, now, &mut rng).unwrap();
//! while let CommitNeeds::Log(req) = client.commit_needs(&cs, &commit, &view).unwrap() {
//!     view.apply(&server.log_segment(&req), now).unwrap();
//! }
//! let queries = client.on_commit(&mut cs, commit, hint, &view, &mut rng).unwrap();
//! let response = server.respond(&mut ss, &queries).unwrap();
//! let auth = client.on_response(&mut cs, response, &mut rng).unwrap();
//! let (reply, _) = server.finish(&mut ss, &auth).unwrap();
//! assert!(matches!(client.on_server_auth(&mut cs, Ok(reply)), ClientOutcome::Authenticated { .. }));
//! ```

pub mod commit;
pub mod keytable;
pub mod log;
mod messages;
mod proof;
mod protocol;
mod respond;
pub mod service;

pub use commit::{CommitScheme, Commitment};
pub use keytable::{DirEntry, Directory, Flagged, SubscriberSecret, TableKey};
pub use log::{
    Change, ClientView, EnrolmentReceipt, LogEntry, LogRecord, LogRequest, LogSegment, TableLog, ViewError,
    proof_of_possession, verify_possession,
};
pub use messages::*;
pub use proof::{Evidence, Finding, MisbehaviourProof, ProofKind, QueryOpening, ROLLBACK_MARGIN_MS, Transcript};
pub use protocol::{
    Applied, CLOCK_RESOLUTION_MS, ClientConfig, ClientOutcome, ClientSession, ClientStop, CommitNeeds, HintSource,
    InProcess, LiveTable, MAX_SKEW_MS, ServerConfig, ServerOutcome, ServerSession, TracEdgeClient, TracEdgeServer,
    audit_selection, authenticate_in_process, build_lwe_table, build_lwe_table_on, coarse_time, expected_audit,
    key_matches, lwe_seed, max_audits, verify_commit, verify_response,
};
pub use respond::{Responded, Responder, ResponderStats};
