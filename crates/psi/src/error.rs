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

/// What can go wrong serving PSI with a [`crate::Server`] or querying with a
/// [`crate::Client`]: the words are the ones `tacit psi serve | query` print.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The protocol failed (invalid parameters, a set over its bound, …).
    #[error(transparent)]
    Psi(#[from] Error),
    /// The network failed.
    #[error(transparent)]
    Net(#[from] tacit_net::Error),
    /// A TLS identity or configuration is unusable.
    #[error(transparent)]
    Tls(#[from] tacit_net::tls::TlsConfigError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] tacit_store::Error),
    /// The address could not be bound.
    #[error("cannot listen on {addr}")]
    Listen {
        /// The address asked for.
        addr: String,
        /// Why.
        #[source]
        source: tacit_net::Error,
    },
    /// The sender's set has more distinct elements than the sender bound `n`.
    #[error(
        "the set has {distinct} distinct elements; the limit is {max} (raise the sender bound n; the receiver must use the same value)"
    )]
    SetTooLarge {
        /// Distinct elements in the set.
        distinct: usize,
        /// The bound `n`.
        max: u32,
    },
    /// [`crate::ServerBuilder::address_book`] was given a store whose address book is
    /// empty.
    #[error("the address book in the store is empty")]
    EmptyAddressBook,
    /// A setting of a builder is not usable.
    #[error("{0}")]
    Config(String),
    /// The lock file that lets one process at a time make a store's precomputation.
    #[error("cannot {action} {}", path.display())]
    Lock {
        /// `open` or `lock`.
        action: &'static str,
        /// The lock file.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The PSI key kept in the store does not decode.
    #[error("stored PSI key is corrupt")]
    CorruptStoredKey(#[source] Error),
    /// The precomputation stopped without a result (it panicked).
    #[error("the precomputation stopped without a result")]
    Precomputation,
    /// A query failed (the server refused, the response did not verify, the network
    /// failed, …).
    #[error("query to {addr}")]
    Query {
        /// The server's address.
        addr: String,
        /// Why.
        #[source]
        source: crate::service::QueryError,
    },
    /// Trust on first use: the server presented another key than the one recorded
    /// for its address (the TLS handshake was refused). If the server changed its
    /// key on purpose, forget the recorded one ([`tacit_store::Store::forget_peer`]
    /// of [`crate::known_peer_name`]).
    #[error("{source} — the key of {addr} differs from the one recorded on first use")]
    KeyChanged {
        /// The server's address.
        addr: String,
        /// The refused handshake.
        source: crate::service::QueryError,
    },
}
