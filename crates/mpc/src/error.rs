/// What can go wrong in the mpc engine. Every variant says what the file, the caller,
/// the peer or the token did; none carries a secret.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Bristol Fashion file is malformed.
    #[error("circuit line {line}: {why}")]
    Bristol {
        /// 1-based line number (0 when the file ended early).
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// A circuit is not well formed.
    #[error("invalid circuit: {0}")]
    Circuit(String),
    /// An input value is missing or has the wrong width.
    #[error("bad input: {0}")]
    Input(String),
    /// A message from the peer is malformed.
    #[error("malformed message from the peer: {0}")]
    Wire(#[from] tacit_wire::Error),
    /// The peer broke the protocol (wrong layer, wrong number of bits, other circuit, …).
    #[error("the peer {0}")]
    Peer(String),
    /// The peer refused with a reason.
    #[error("the peer refused: {0}")]
    Refused(String),
    /// The token answered with an error status or garbage.
    #[error("the token {0}")]
    Token(String),
    /// The token's certificate or its key agreement does not verify.
    #[error("the token is not trusted: {0}")]
    Untrusted(String),
    /// Not enough triples (or stored c_A sequences) for the circuit.
    #[error("not enough multiplication triples: {0}")]
    Triples(String),
    /// A cryptographic check failed.
    #[error("{0}")]
    Crypto(#[from] tacit_crypto::Error),
    /// A transport error.
    #[error("{0}")]
    Net(#[from] tacit_net::Error),
    /// A file could not be read or written.
    #[error("{what}: {err}")]
    Io {
        /// Which file and what was being done.
        what: String,
        /// The error.
        err: std::io::Error,
    },
    /// Invalid parameters.
    #[error("invalid parameters: {0}")]
    Params(String),
    /// Reaching the peer or the token failed: what was being done, and why.
    #[error("{what}: {err}")]
    Connect {
        /// What was being done (`connecting to the token at …`).
        what: String,
        /// The transport's error.
        err: tacit_net::Error,
    },
    /// A builder was not given what it needs (a channel, a triple source that fits
    /// the party, …).
    #[error("{0}")]
    Config(String),
    /// A check of the caller's refused (the hook given to a builder, such as the
    /// recording of a key on first use).
    #[error("{0}")]
    Caller(String),
}

impl Error {
    pub(crate) fn io(what: impl Into<String>, err: std::io::Error) -> Self {
        Error::Io { what: what.into(), err }
    }
}
