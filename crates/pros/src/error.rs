/// Everything that can go wrong in PROS: what the peer or the caller did, in words a
/// user understands. No variant carries secret data.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A message from the peer is malformed (truncated, extended, wrong type, over a
    /// bound, …).
    #[error("malformed message from peer: {0}")]
    Wire(#[from] tacit_wire::Error),
    /// An unsupported key size.
    #[error("{0}")]
    KeySize(String),
    /// A key that is not a valid Paillier key.
    #[error("invalid Paillier key: {0}")]
    BadKey(String),
    /// Two keys that should be the same are not.
    #[error("key mismatch: {0}")]
    KeyMismatch(String),
    /// A value that is not a ciphertext of the key in use.
    #[error("invalid ciphertext: {0}")]
    BadCiphertext(String),
    /// A plaintext outside the range a key can carry.
    #[error("plaintext out of range: {0}")]
    PlaintextRange(String),
    /// The peer runs with other parameters than we do.
    #[error("parameter mismatch: {0}")]
    ParamsMismatch(String),
    /// A message carries the wrong number of items.
    #[error("the peer sent {count} {what}; the protocol requires exactly {expected}")]
    WrongCount {
        /// Which items.
        what: &'static str,
        /// How many arrived.
        count: usize,
        /// How many the protocol requires.
        expected: usize,
    },
    /// A local input exceeds a bound.
    #[error("{what} has {len} entries; the limit is {max}")]
    SetTooLarge {
        /// Which input.
        what: &'static str,
        /// Its size.
        len: usize,
        /// The bound.
        max: usize,
    },
    /// Invalid parameters or input given by the caller.
    #[error("invalid input: {0}")]
    Invalid(String),
    /// The peer broke the protocol in a way a semi-honest peer never would.
    #[error("the peer deviated from the protocol: {0}")]
    Deviation(String),
    /// The peer refused our message and said why.
    #[error("the peer refused: {0}")]
    PeerRefused(String),
    /// The peer runs other settings than we do: worded from our side
    /// ([`tacit_wire::Mismatch::refuser_words`]) and sent to the peer as data, so
    /// that it words it from its side.
    #[error("{}", .0.refuser_words())]
    Mismatch(tacit_wire::Mismatch),
    /// The peer refused our message because it runs other settings; worded from our
    /// side ([`tacit_wire::Mismatch::receiver_words`]).
    #[error("the peer refused: {}", .0.receiver_words())]
    PeerMismatch(tacit_wire::Mismatch),
    /// A transport error.
    #[error("{0}")]
    Net(String),
    /// python-paillier JSON that cannot be read.
    #[error("python-paillier JSON: {0}")]
    Json(String),
    /// A calendar problem.
    #[error("{0}")]
    Calendar(#[from] tacit_calendar::Error),
    /// The big-integer library failed (allocation failure).
    #[error("big-integer backend: {0}")]
    Backend(String),
}

impl From<openssl::error::ErrorStack> for Error {
    fn from(e: openssl::error::ErrorStack) -> Self {
        Error::Backend(e.to_string())
    }
}

impl From<tacit_net::Error> for Error {
    fn from(e: tacit_net::Error) -> Self {
        Error::Net(e.to_string())
    }
}
