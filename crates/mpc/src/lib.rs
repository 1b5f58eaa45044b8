//! Two-party GMW on Boolean circuits with multiplication triples from a trusted
//! hardware token or from OT extension — the engine of "Ad-Hoc Secure Two-Party
//! Computation on Mobile Devices using Hardware Tokens" (Demmler, Schneider, Zohner,
//! USENIX Security 2014).
//!
//! **Embedding it.** A product runs a session with [`Session::builder`]: the circuit,
//! this party's inputs, where the triples come from ([`Triples`]: OT extension, or the
//! token that party a reaches at an address with its key pinned), the channel
//! ([`Channel`]: TLS 1.3 with pinned keys; plain TCP only by name), then
//! [`SessionBuilder::listen`] (party a) or [`SessionBuilder::connect`] (party b); both
//! get the outputs. [`token::Token`] serves a token, [`apps::psi::Server`] and
//! [`apps::psi::Query`] run set intersection, [`apps::schedule::Server`] and
//! [`apps::schedule::Client`] scheduling. Errors are one [`Error`] enum; progress
//! comes as [`Event`]s. `docs/mpc.md` ("Embedding tacit-mpc") has more.
//!
//! ```
//! use tacit_mpc::bits::{bits_from_u64, u64_from_bits};
//! use tacit_mpc::circuit::{LayeredCircuit, bristol};
//! use tacit_mpc::{Channel, Session, Triples, shipped};
//! use tacit_net::tls::{SelfSigned, pinned};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! // A 64-bit adder: party a adds its number to party b's; both learn only the sum.
//! let adder = std::sync::Arc::new(LayeredCircuit::new(bristol::parse(shipped::ADDER64)?));
//! let (ka, kb) = (SelfSigned::generate("a.invalid")?, SelfSigned::generate("b.invalid")?);
//! let a = Session::builder(std::sync::Arc::clone(&adder))
//!     .inputs(vec![bits_from_u64(40, 64)])
//!     .triples(Triples::Ot)
//!     .channel(Channel::tls(&ka, pinned(kb.fingerprint()?))?)
//!     .bind("127.0.0.1:0")
//!     .await?;
//! let addr = a.local_addr().to_string();
//! let b = Session::builder(adder)
//!     .inputs(vec![bits_from_u64(2, 64)])
//!     .channel(Channel::tls(&kb, pinned(ka.fingerprint()?))?)
//!     .connect(&addr);
//! let (out_a, out_b) = tokio::join!(a.run(), b);
//! assert_eq!(u64_from_bits(&out_a?.outputs()[0]), 42);
//! assert_eq!(u64_from_bits(&out_b?.outputs()[0]), 42);
//! # Ok::<(), Box<dyn std::error::Error>>(()) })
//! # }
//! ```
//!
//! The parts underneath:
//!
//! * [`circuit`]: circuits, the Bristol Fashion format, a plaintext evaluator, a
//!   builder with gadgets, and the AND layers GMW evaluates.
//! * [`gmw`]: the online phase, sans-I/O: one message per AND layer, bit-sliced.
//! * [`triples`]: the two triple sources — the trusted token of paper §4
//!   ([`triples::token`]: ISO 7816-4 APDUs, seeds `s_A`, `s_B`, sequences of `2^i`
//!   triples, one-time release of `s_B` to a certified token key) and IKNP OT
//!   extension ([`triples::ot`]).
//! * [`driver`]: one party over a framed connection (`tacit-net`).
//! * [`service`], [`session`], [`token`]: the builders above.
//!
//! The model is semi-honest, as in the paper (§3.1); `docs/mpc.md` says what each
//! party and the token learn and what a deviating one can do. The same computation
//! in memory, sans-I/O:
//!
//! ```
//! use tacit_mpc::circuit::{bristol, LayeredCircuit};
//! use tacit_mpc::gmw::{Online, PartyInputs, Step, default_owners};
//! use tacit_mpc::{Party, prg::Seed, triples::deal};
//!
//! // 2-bit AND of one bit from each party, evaluated by both parties in memory.
//! let c = bristol::parse("1 3\n2 1 1\n1 1\n\n2 1 0 1 2 AND\n").unwrap();
//! let lc = LayeredCircuit::new(c);
//! let mut rng = rand_core::OsRng;
//! let (ta, tb) = deal(lc.and_gates(), &mut rng);
//! let (sa, sb) = (Seed::random(&mut rng), Seed::random(&mut rng));
//! let owners = default_owners(2);
//! let ia = PartyInputs { values: vec![Some(vec![vec![true]]), None] };
//! let ib = PartyInputs { values: vec![None, Some(vec![vec![true]])] };
//! let Step::Layer(a, ma) = Online::start(&lc, Party::A, &owners, 1, &ia, &sa, &sb, ta).unwrap() else { panic!() };
//! let Step::Layer(b, mb) = Online::start(&lc, Party::B, &owners, 1, &ib, &sb, &sa, tb).unwrap() else { panic!() };
//! let (Step::Reveal(a, ma), Step::Reveal(b, mb)) = (a.on_layer(&mb).unwrap(), b.on_layer(&ma).unwrap()) else { panic!() };
//! let out = a.on_outputs(&mb).unwrap();
//! assert_eq!(out.values[0], vec![vec![true]]);
//! assert_eq!(b.on_outputs(&ma).unwrap(), out);
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod apps;
pub mod bits;
pub mod circuit;
pub mod driver;
mod error;
pub mod gmw;
pub mod messages;
pub mod prg;
pub mod service;
pub mod session;
pub mod token;
pub mod triples;

pub use error::Error;
pub use service::{Channel, Event, Triples};
pub use session::{Session, SessionBuilder, SessionOutput};

use sha2::{Digest, Sha256};

/// Result alias of this crate.
pub type Result<T> = core::result::Result<T, Error>;

/// The two parties. `A` holds the token (paper §3) and supplies input 0 by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Party {
    /// Party A (listens; holds the token when there is one).
    A,
    /// Party B (connects).
    B,
}

impl Party {
    /// The other party.
    pub fn peer(self) -> Party {
        match self {
            Party::A => Party::B,
            Party::B => Party::A,
        }
    }

    pub(crate) fn code(self) -> u8 {
        match self {
            Party::A => 0,
            Party::B => 1,
        }
    }

    pub(crate) fn from_code(c: u8) -> tacit_wire::Result<Party> {
        match c {
            0 => Ok(Party::A),
            1 => Ok(Party::B),
            _ => Err(tacit_wire::Error::invalid("party", format!("unknown party code {c}"))),
        }
    }
}

impl std::fmt::Display for Party {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Party::A => "a",
            Party::B => "b",
        })
    }
}

/// SHA-256 over a canonical encoding of the circuit (wire count, input and output
/// widths, output wires and every gate): two parties compare it before computing.
pub fn circuit_digest(c: &circuit::Circuit) -> [u8; 32] {
    use circuit::Gate;
    let mut h = Sha256::new();
    h.update(b"tacit-mpc circuit v1");
    h.update((c.num_wires() as u64).to_be_bytes());
    for list in [c.input_widths(), c.output_widths()] {
        h.update((list.len() as u64).to_be_bytes());
        for w in list {
            h.update(w.to_be_bytes());
        }
    }
    for w in c.output_wires() {
        h.update(w.to_be_bytes());
    }
    h.update((c.gates().len() as u64).to_be_bytes());
    let mut buf = Vec::with_capacity(13 * 4096);
    for chunk in c.gates().chunks(4096) {
        buf.clear();
        for g in chunk {
            let (t, a, b, o) = match *g {
                Gate::Xor { a, b, out } => (0u8, a, b, out),
                Gate::And { a, b, out } => (1, a, b, out),
                Gate::Inv { a, out } => (2, a, 0, out),
                Gate::Const { value, out } => (3, value as u32, 0, out),
                Gate::Copy { a, out } => (4, a, 0, out),
            };
            buf.push(t);
            buf.extend_from_slice(&a.to_be_bytes());
            buf.extend_from_slice(&b.to_be_bytes());
            buf.extend_from_slice(&o.to_be_bytes());
        }
        h.update(&buf);
    }
    h.finalize().into()
}

/// Circuits shipped with the crate (copied from the Bristol Fashion set; see
/// `testdata/circuits/ORIGIN.md` and `License.txt`), for benchmarks and demos.
pub mod shipped {
    /// AES-128: input 0 = key, input 1 = plaintext (big-endian integers).
    pub const AES_128: &str = include_str!("../testdata/circuits/aes_128.txt");
    /// One SHA-256 compression: input 0 = padded block, input 1 = chaining value.
    pub const SHA256: &str = include_str!("../testdata/circuits/sha256.txt");
    /// 64-bit adder.
    pub const ADDER64: &str = include_str!("../testdata/circuits/adder64.txt");
}
