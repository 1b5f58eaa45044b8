/// What can go wrong in enrolment and in a PrivateDrop or AirDrop exchange. Messages
/// name what the peer did; none carries an identifier.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A malformed message.
    #[error("malformed message: {0}")]
    Wire(#[from] tacit_wire::Error),
    /// A cryptographic check failed or a key is invalid.
    #[error("{0}")]
    Crypto(#[from] tacit_crypto::Error),
    /// The PSI engine refused.
    #[error("{0}")]
    Psi(#[from] tacit_psi::Error),
    /// A certificate or record is not signed by the trusted CA.
    #[error("the peer's {0} is not signed by the trusted certification authority")]
    BadCertificate(&'static str),
    /// A certificate or record belongs to another account than the TLS peer.
    #[error("the peer's {0} names another account than its TLS certificate (replayed or stolen)")]
    AccountMismatch(&'static str),
    /// A certificate expired (or is not yet valid).
    #[error("the peer's {what} is not valid at this time (valid {from}..{until}, now {now})")]
    Expired {
        /// Which certificate.
        what: &'static str,
        /// Start of validity (Unix seconds).
        from: u64,
        /// End of validity (Unix seconds).
        until: u64,
        /// The time of the check.
        now: u64,
    },
    /// The PSI request does not carry the certified blinded identifiers.
    #[error("the peer's PSI request does not carry its certified blinded identifiers")]
    UncertifiedInput,
    /// Enrolment was refused.
    #[error("enrolment refused: {0}")]
    EnrollmentRefused(String),
    /// The receiver does not accept this sender (discoverability policy).
    #[error("not discoverable for this sender: {0}")]
    NotDiscoverable(&'static str),
    /// Parameters do not fit.
    #[error("invalid parameters: {0}")]
    InvalidParams(String),
    /// A network or TLS failure.
    #[error("{0}")]
    Transport(String),
    /// The peer refused a request and said why.
    #[error("the receiver refused {0}")]
    Refused(String),
    /// The account is on the CA's revocation list (a lost or departed device).
    #[error("account {0} is revoked by the certification authority")]
    Revoked(crate::AccountId),
    /// A revocation list older than the one in force (a replay would un-revoke).
    #[error("revocation list {got} is older than list {have} already in force")]
    StaleRevocationList {
        /// The sequence number in force.
        have: u64,
        /// The sequence number offered.
        got: u64,
    },
    /// The receiver cannot take this request now (no precomputation ready in time,
    /// or this account's request rate is spent); the peer may try again later.
    #[error("busy: {0}")]
    Busy(String),
    /// The device's revocation list is past its next update (or it has none), and
    /// its policy is to refuse peers until a fresh list arrives.
    #[error(
        "the revocation list in force {0}, and this device refuses peers until it has a current one \
         (`tacit id refresh`, or run with --stale-revocations warn)"
    )]
    RevocationListStale(String),
    /// No revocation list is in force and the policy refuses peers without one (the
    /// service builders' default: a product must bring the CA's list in force).
    #[error(
        "no revocation list is in force, so every peer is refused: bring the CA's list in force \
         (`tacit id refresh`; a library caller passes `.revocations(..)` from \
         `service::device::revocations_on_start`, or names `.insecure_no_revocations()`)"
    )]
    NoRevocationList,
    /// A capture or range given to the attack tool is unusable.
    #[error("{0}")]
    Attack(String),
}
