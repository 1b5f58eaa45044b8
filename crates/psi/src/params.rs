use crate::Error;
use tacit_crypto::GroupId;
use tacit_crypto::oprf::Mode;
use tacit_wire::{Reader, Writer};

/// Largest receiver bound `m` accepted (the RFC 9497 batch limit).
pub const MAX_RECEIVER_BOUND: u32 = 4096;
/// Largest sender bound `n` accepted.
pub const MAX_SENDER_BOUND: u32 = 1 << 20;

/// Which adversary the protocol withstands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Security {
    /// DH-PSI with the plain OPRF (RFC 9497 mode 0): secure if both follow the protocol.
    SemiHonest,
    /// Jarecki–Liu with a batched DLEQ proof (RFC 9497 mode 1): the receiver detects a
    /// sender that does not use one key for all its answers.
    Malicious,
}

impl Security {
    /// The RFC 9497 mode.
    pub fn mode(self) -> Mode {
        match self {
            Security::SemiHonest => Mode::Oprf,
            Security::Malicious => Mode::Voprf,
        }
    }

    fn code(self) -> u8 {
        match self {
            Security::SemiHonest => 0,
            Security::Malicious => 1,
        }
    }

    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            Security::SemiHonest => "semi-honest",
            Security::Malicious => "malicious",
        }
    }
}

/// The public parameters both parties must agree on. Message sizes are a function of
/// these alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PsiParams {
    /// The group.
    pub group: GroupId,
    /// The protocol variant.
    pub security: Security,
    /// `m`: the receiver pads its set to exactly this many elements.
    pub max_receiver: u32,
    /// `n`: the sender pads its set to exactly this many elements.
    pub max_sender: u32,
    /// `λ`: statistical security parameter; a false match has probability about
    /// `2^-λ`.
    pub lambda: u16,
}

impl Default for PsiParams {
    fn default() -> Self {
        PsiParams {
            group: GroupId::Ristretto255,
            security: Security::Malicious,
            max_receiver: 10,
            max_sender: 10_000,
            lambda: 40,
        }
    }
}

impl core::fmt::Display for PsiParams {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{} {} PSI with m = {}, n = {}, λ = {}",
            self.group,
            self.security.name(),
            self.max_receiver,
            self.max_sender,
            self.lambda
        )
    }
}

impl PsiParams {
    /// Defaults (ristretto255, m = 10, n = 10 000, λ = 40) with the given security.
    pub fn new(security: Security) -> Self {
        PsiParams {
            security,
            ..Default::default()
        }
    }

    /// The same with another group.
    pub fn with_group(mut self, group: GroupId) -> Self {
        self.group = group;
        self
    }

    /// The same with other bounds.
    pub fn with_bounds(mut self, max_receiver: u32, max_sender: u32) -> Self {
        self.max_receiver = max_receiver;
        self.max_sender = max_sender;
        self
    }

    /// `l = λ + ⌈log₂ n⌉ + max(⌈log₂ m⌉, ⌈log₂ n⌉)` bits.
    ///
    /// The receiver compares its `m` values with the sender's `n`, so a false match
    /// happens with probability at most `m·n·2^-l`, which this keeps at `2^-λ` or
    /// below. For `m ≤ n` it is the paper's `λ + 2·⌈log₂ n⌉` (PrivateDrop §4.3,
    /// following Pinkas et al.); the paper's formula alone would fall short for
    /// `m > n` (issue 9).
    pub fn truncation_bits(&self) -> u32 {
        let log2 = |x: u32| if x <= 1 { 0 } else { 32 - (x - 1).leading_zeros() };
        let (log_m, log_n) = (log2(self.max_receiver), log2(self.max_sender));
        self.lambda as u32 + log_n + log_m.max(log_n)
    }

    /// Bytes sent per sender element: `⌈l / 8⌉` (rounding up only lowers the
    /// false-match probability).
    pub fn truncation_bytes(&self) -> usize {
        self.truncation_bits().div_ceil(8) as usize
    }

    /// The longest message of a run with these parameters (request, response, or the
    /// two-way bundle), plus room for framing: the frame limit a transport needs. The
    /// default 4 MiB frame is below a valid response for large `n` (issue 9).
    pub fn max_message_len(&self) -> usize {
        use tacit_crypto::{P256, Ristretto255};
        let (req, resp) = match self.group {
            GroupId::Ristretto255 => (
                crate::Request::<Ristretto255>::encoded_len(self),
                crate::Response::<Ristretto255>::encoded_len(self),
            ),
            GroupId::P256 => (
                crate::Request::<P256>::encoded_len(self),
                crate::Response::<P256>::encoded_len(self),
            ),
        };
        req + resp + 1024
    }

    /// Checks the parameters are usable.
    pub fn validate(&self) -> Result<(), Error> {
        if self.max_receiver == 0 || self.max_receiver > MAX_RECEIVER_BOUND {
            return Err(Error::InvalidParams(format!(
                "the receiver bound m must be 1..={MAX_RECEIVER_BOUND}, not {}",
                self.max_receiver
            )));
        }
        if self.max_sender == 0 || self.max_sender > MAX_SENDER_BOUND {
            return Err(Error::InvalidParams(format!(
                "the sender bound n must be 1..={MAX_SENDER_BOUND}, not {}",
                self.max_sender
            )));
        }
        if !(16..=128).contains(&self.lambda) {
            return Err(Error::InvalidParams(format!("λ must be 16..=128, not {}", self.lambda)));
        }
        // l ≤ 128 + 20 + 20 = 168 bits = 21 bytes ≤ 32-byte hash outputs.
        Ok(())
    }

    /// Appends the canonical encoding (`docs/wire.md`).
    pub fn encode(&self, w: &mut Writer) {
        w.put_u8(self.group.code());
        w.put_u8(self.security.code());
        w.put_u32(self.max_receiver);
        w.put_u32(self.max_sender);
        w.put_u16(self.lambda);
    }

    /// Reads and validates parameters.
    pub fn decode(r: &mut Reader<'_>) -> Result<Self, Error> {
        let g = r.u8()?;
        let group = GroupId::from_code(g)
            .ok_or_else(|| tacit_wire::Error::invalid("group", format!("unknown group code {g}")))?;
        let security = match r.u8()? {
            0 => Security::SemiHonest,
            1 => Security::Malicious,
            s => {
                return Err(tacit_wire::Error::invalid("security", format!("unknown code {s}")).into());
            }
        };
        let p = PsiParams {
            group,
            security,
            max_receiver: r.u32()?,
            max_sender: r.u32()?,
            lambda: r.u16()?,
        };
        p.validate()?;
        Ok(p)
    }

    /// Errors unless the parameters name the group `group`.
    pub fn expect_group_id(&self, group: GroupId) -> Result<(), Error> {
        if self.group != group {
            return Err(Error::GroupMismatch {
                ours: group,
                theirs: self.group.to_string(),
            });
        }
        Ok(())
    }

    /// Errors unless the parameters name the group `G`.
    pub(crate) fn expect_group<G: tacit_crypto::PrimeGroup>(&self) -> Result<(), Error> {
        self.expect_group_id(G::ID)
    }

    /// Errors unless `theirs` equals `self`.
    pub(crate) fn expect_equal(&self, theirs: &PsiParams) -> Result<(), Error> {
        if self == theirs {
            Ok(())
        } else {
            Err(Error::ParamsMismatch {
                ours: self.to_string(),
                theirs: theirs.to_string(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_length_follows_the_paper() {
        // n = 10 000: ⌈log₂ n⌉ = 14, l = 40 + 28 = 68 bits → 9 bytes
        let p = PsiParams::default();
        assert_eq!(p.truncation_bits(), 68);
        assert_eq!(p.truncation_bytes(), 9);
        assert_eq!(p.with_bounds(10, 1024).truncation_bits(), 60);
        assert_eq!(p.with_bounds(10, 1025).truncation_bits(), 62);
        assert_eq!(p.with_bounds(1, 1).truncation_bits(), 40);
        // m > n: the receiver's bound counts too (issue 9), so m·n·2^-l ≤ 2^-λ
        assert_eq!(p.with_bounds(10, 1).truncation_bits(), 44);
        assert_eq!(p.with_bounds(4096, 16).truncation_bits(), 40 + 4 + 12);
        for (m, n) in [(1u32, 1u32), (10, 1), (4096, 2), (10, 10_000), (4096, 1 << 20)] {
            let p = p.with_bounds(m, n);
            let pairs = (m as f64).log2() + (n as f64).log2();
            assert!(p.truncation_bits() as f64 - pairs >= 40.0, "m={m} n={n}");
        }
    }

    #[test]
    fn bounds_validated() {
        assert!(PsiParams::default().with_bounds(0, 10).validate().is_err());
        assert!(PsiParams::default().with_bounds(10, 0).validate().is_err());
        assert!(
            PsiParams::default()
                .with_bounds(10, MAX_SENDER_BOUND + 1)
                .validate()
                .is_err()
        );
        assert!(PsiParams::default().validate().is_ok());
    }
}
