//! PROS: privacy-preserving reconciliation of ordered sets (Mayer, Wetzel, Teubert,
//! Meyer, CODASPY 2011) and the building blocks it is made of.
//!
//! * [`modproof`] — the zero-knowledge proof that a peer's Paillier modulus is a
//!   Paillier–Blum modulus (CGGMP21's Π^mod), verified before a peer's key is used;
//! * [`paillier`] — the additively homomorphic Paillier cryptosystem (§3.1, §4.2):
//!   CRT decryption, a pool of precomputed `rⁿ` for online encryption, signed
//!   plaintexts, constant-time secret exponentiations on OpenSSL's `BIGNUM`;
//! * [`poly`] — polynomials over `Z_n` (§4.3): product trees with Karatsuba or
//!   schoolbook multiplication, Horner's rule on ciphertexts (§4.5);
//! * [`fnp`] — FNP private set intersection with balanced-allocation bucketing, and
//!   private matching (PM) of single elements (§3.3, §4.5);
//! * [`threepr`] — the 3PR^C fair reconciliation protocols under Sum and Minimum of
//!   Ranks, FNP-implicit, PSI-explicit and PSI-explicit-cached (§3.4, §4.6);
//! * [`schedule`] — appoint (§5): private meeting scheduling on real calendars;
//! * [`phe`] — python-paillier's JSON keys and ciphertexts;
//! * [`net`] — drivers over tacit's framed connections (TLS by default in `tacit`);
//! * [`service`] — the serving shell: concurrent sessions with a cap, deadlines and
//!   frame limits from the protocol's bounds;
//! * [`endpoint`], [`reconcile`], [`psi`], [`schedule::Server`] — the servers and
//!   clients that `tacit pros` and `tacit schedule` run, as builders over the
//!   project's channel (TLS 1.3 with pinned or first-use keys, both ways).
//!
//! # Embedding: a server and a client
//!
//! B serves its ordered set, A (the key holder) reconciles its own against it over
//! loopback TLS, pinning B's key; both learn the agreed element(s). A product keeps
//! the [`tacit_store::Store`]s on disk ([`tacit_store::Store::open`]): they hold each
//! side's TLS key, B's ring-Pedersen parameters and the server keys A recorded on
//! first use. (1024-bit keys and ring-Pedersen parameters keep this example fast;
//! the defaults are 3072 bits, and servers accept peer keys from 2048 bits.)
//!
//! ```
//! use std::sync::Arc;
//! use tacit_pros::{facproof::RingPedersen, reconcile, threepr::ReconcileParams};
//! use tacit_store::Store;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let params = ReconcileParams::default(); // sum of ranks, FNP-implicit
//! let mut rng = <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::seed_from_u64(1);
//! let rp = Arc::new(RingPedersen::generate(1024, &mut rng).unwrap());
//! let server = reconcile::serve(Store::open_in_memory().unwrap(), params, &["wed", "mon", "fri"])
//!     .ring_pedersen(rp) // default: made once and kept in the store
//!     .min_key_bits(1024) // default 2048
//!     .sessions(1)
//!     .bind("127.0.0.1:0")
//!     .await
//!     .unwrap();
//! let (addr, pin) = (server.local_addr().unwrap().to_string(), server.fingerprint().unwrap());
//! let serving = tokio::spawn(server.serve(|event| println!("B: {event:?}")));
//!
//! let out = reconcile::connect(Store::open_in_memory().unwrap(), params, &["mon", "tue", "wed"])
//!     .pin(pin) // default: trust on first use, recorded in the store
//!     .key_bits(1024) // default 3072
//!     .run(&addr)
//!     .await
//!     .unwrap();
//! serving.await.unwrap().unwrap();
//! // mon: ranks 2 + 3, wed: 3 + 1 → mon
//! assert_eq!(out.result.elements, vec![b"mon".to_vec()]);
//! assert_eq!(out.server_key, Some(pin));
//! # });
//! ```
//!
//! # The engines, in process
//!
//! The protocol engines are sans-I/O state machines: bytes in, bytes out, randomness
//! passed in.
//!
//! ```
//! use std::sync::Arc;
//! use rand_chacha::ChaCha20Rng;
//! use rand_core::SeedableRng;
//! use tacit_pros::facproof::RingPedersen;
//! use tacit_pros::paillier::{PrivateKey, RnPool};
//! use tacit_pros::threepr::{Initiator, InitiatorStep, ReconcileParams, Responder, ResponderStep};
//!
//! let mut rng = ChaCha20Rng::from_seed([7; 32]);
//! // the smallest key a peer accepts (facproof::MIN_PEER_KEY_BITS); tacit's default is 3072
//! let key = PrivateKey::generate(1024).unwrap();
//! let pool = Arc::new(RnPool::new(key.public()).unwrap());
//! let alice = ["tue 10:00", "mon 09:00", "wed 14:00"];
//! let bob = ["wed 14:00", "mon 09:00", "fri 16:00"];
//!
//! let params = ReconcileParams::default(); // sum of ranks, FNP-implicit
//! let (a, hello) = Initiator::start(params, key, &alice, pool).unwrap();
//! // over TLS both pass the connection's channel binding instead
//! let cb = tacit_pros::NO_CHANNEL_BINDING;
//! // B's ring-Pedersen parameters: made once (`tacit` keeps them in its store; its
//! // default is 3072 bits), A proves its key's factors large against them
//! let rp = Arc::new(RingPedersen::generate(1024, &mut rng).unwrap());
//! let (b, accept) = Responder::new(params, &bob, 1024, 4096, rp).unwrap().on_hello(&hello, &cb, &mut rng).unwrap();
//! let (mut a, factor_proof, mut msg) = a.on_accept(&accept, &cb, &mut rng).unwrap();
//! let mut b = b.on_factor_proof(&factor_proof).unwrap();
//! let result = loop {
//!     match b.on_message(&msg, &mut rng).unwrap() {
//!         ResponderStep::Answer(next_b, answer) => {
//!             b = next_b;
//!             match a.on_answer(&answer, &mut rng).unwrap() {
//!                 InitiatorStep::Continue(next_a, q) => { a = next_a; msg = q; }
//!                 InitiatorStep::Done(res, outcome) => {
//!                     let ResponderStep::Done(res_b) = b.on_message(&outcome, &mut rng).unwrap() else { panic!() };
//!                     assert_eq!(res.elements, res_b.elements);
//!                     break res;
//!                 }
//!             }
//!         }
//!         ResponderStep::Done(_) => unreachable!(),
//!     }
//! };
//! // mon 09:00 has rank sum 2 + 2 = 4, wed 14:00 has 1 + 3 = 4: both maximise
//! assert_eq!(result.elements, vec![b"mon 09:00".to_vec(), b"wed 14:00".to_vec()]);
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod backends;
pub mod bn;
pub mod element;
pub mod endpoint;
mod error;
pub mod facproof;
pub mod fnp;
mod messages;
pub mod modproof;
pub mod net;
pub mod paillier;
pub mod phe;
pub mod poly;
pub mod psi;
pub mod reconcile;
pub mod schedule;
pub mod service;
#[cfg(feature = "testing")]
pub mod testing;
pub mod threepr;

pub use error::Error;

/// The channel binding of a run outside TLS (plain TCP, in process): PROS sessions
/// mix the TLS channel binding into their session identifier, so that answers made
/// for one session mean nothing in another.
pub const NO_CHANNEL_BINDING: [u8; 32] = [0; 32];

/// Result alias of this crate.
pub type Result<T> = core::result::Result<T, Error>;
