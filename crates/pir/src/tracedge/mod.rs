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
//! * [`MisbehaviourProof`] — the signed transcript with what makes it checkable
//!   offline ([`MisbehaviourProof::verify`]).
//!
//! ```
//! use tacit_pir::tracedge::*;
//! use tacit_crypto::sign::SigningKey;
//! use curve25519_dalek::scalar::Scalar;
//! use rand_chacha::ChaCha20Rng;
//! use rand_core::SeedableRng;
//!
//! let mut rng = ChaCha20Rng::seed_from_u64(7);
//! let mut server = TracEdgeServer::new(SigningKey::generate(&mut rng), Scalar::random(&mut rng), ServerConfig::default());
//! let alice = SubscriberSecret::random(&mut rng);
//! let mut keys = vec![server.dh_public().compress().to_bytes(); 300];
//! keys[42] = alice.public_bytes();
//! let key = TableKey::random(&mut rng);
//! let table = build_lwe_table(1, key, CommitScheme::Binding, &server.dh_public(), keys, None, &|_| {}, &mut rng).unwrap();
//! let hint = table.hint().clone();
//! server.install(table, 1_000);
//!
//! let client = TracEdgeClient::new(server.verifying_key(), 42, alice, ClientConfig::default());
//! let (mut cs, hello) = client.start(1_000, &mut rng);
//! let (mut ss, commit) = server.hello(&hello, 1_000, &mut rng).unwrap();
//! let queries = client.on_commit(&mut cs, commit, hint, &mut rng).unwrap();
//! let response = server.respond(&mut ss, &queries).unwrap();
//! let lookup = client.on_response(&mut cs, response).unwrap();
//! let entries = server.directory(&ss, &lookup).unwrap();
//! let auth = client.on_directory(&mut cs, entries, &mut rng).unwrap();
//! let (reply, _) = server.finish(&mut ss, &auth).unwrap();
//! assert!(matches!(client.on_server_auth(&mut cs, Ok(reply)), ClientOutcome::Authenticated { .. }));
//! ```

pub mod commit;
pub mod keytable;
pub mod log;
mod messages;
mod proof;
mod protocol;

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
    LiveTable, MAX_SKEW_MS, ServerConfig, ServerOutcome, ServerSession, TracEdgeClient, TracEdgeServer, audit_selection,
    build_lwe_table, build_lwe_table_on, coarse_time, expected_audit, key_matches, lwe_seed, max_audits, verify_commit,
    verify_response,
};
