use tacit_crypto::GroupId;

/// What can go wrong in a PSI run. Every variant says what the peer (or the caller)
/// did; none carries secret data.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A message from the peer is malformed (truncated, extended, wrong type,
    /// over a bound, …).
    #[error("malformed message from peer: {0}")]
    Wire(#[from] tacit_wire::Error),
    /// A group element or scalar from the peer is invalid, or a proof failed.
    #[error("{0}")]
    Crypto(#[from] tacit_crypto::Error),
    /// The peer runs with other parameters than we do.
    #[error("parameter mismatch: we run {ours}; the peer runs {theirs}")]
    ParamsMismatch {
        /// Our parameters.
        ours: String,
        /// The peer's.
        theirs: String,
    },
    /// A message carries the wrong number of elements.
    #[error("{who} sent {count} {what}; the protocol requires exactly {expected}")]
    WrongCount {
        /// Which party.
        who: &'static str,
        /// Which elements.
        what: &'static str,
        /// How many arrived.
        count: usize,
        /// How many the bounds require.
        expected: usize,
    },
    /// A local input set exceeds its bound.
    #[error("{what} has {len} entries; the limit is {max}")]
    SetTooLarge {
        /// Which set.
        what: &'static str,
        /// Its size after removing duplicates.
        len: usize,
        /// The bound.
        max: usize,
    },
    /// Invalid parameters.
    #[error("invalid parameters: {0}")]
    InvalidParams(String),
    /// The message belongs to another group than the engine's.
    #[error("group mismatch: we run {ours}; the peer runs {theirs}")]
    GroupMismatch {
        /// Ours.
        ours: GroupId,
        /// Theirs.
        theirs: String,
    },
    /// The sender's batched proof did not verify: its answers were not all computed
    /// with the key behind its public key.
    #[error("the sender's proof does not verify: its answers were not all computed with one key; no result is given")]
    ProofFailed,
    /// A precomputation made for one session was offered for a second one.
    #[error(
        "this sender precomputation was made fresh for one session and has been used; compute a new one (or choose reuse within a key epoch)"
    )]
    PrecomputationReused,
    /// A precomputation does not belong to the key or parameters it is used with.
    #[error("precomputation does not match: {0}")]
    PrecomputationMismatch(&'static str),
    /// The peer refused our message and said why.
    #[error("the peer refused: {0}")]
    PeerRefused(String),
    /// The peer refused our message because it runs other settings; worded from our
    /// side ([`tacit_wire::Mismatch::receiver_words`]).
    #[error("the peer refused: {}", .0.receiver_words())]
    PeerMismatch(tacit_wire::Mismatch),
}

impl Error {
    /// The refusal to send the peer for this error: a typed
    /// [`tacit_wire::Mismatch`] for a parameter or group mismatch (so that the peer
    /// words it from its own side), the words otherwise.
    pub fn to_refusal(&self) -> Vec<u8> {
        use tacit_wire::Encode;
        match self {
            Error::ParamsMismatch { ours, theirs } => {
                tacit_wire::Mismatch::new("parameter", ours.clone(), theirs.clone()).to_wire()
            }
            Error::GroupMismatch { ours, theirs } => {
                tacit_wire::Mismatch::new("group", ours.to_string(), theirs.clone()).to_wire()
            }
            e => tacit_wire::ErrorMessage::new(e.to_string()).to_wire(),
        }
    }
}
