//! The greeting every tacit connection opens with (see `docs/wire.md`, "The
//! greeting").
//!
//! Before any frame, each side sends 12 bytes that say which protocol it speaks and
//! which versions of it, and checks the other side's before anything else. Both sides
//! send theirs at once (the connecting side right after the TCP or TLS handshake, the
//! accepting side before its first read or write), so the check costs no message of
//! its own and at most the round trip the first message would have taken. The wrong
//! server, the wrong version, TLS against plain TCP and plain TCP against TLS are then
//! named in one line (`127.0.0.1:7900 is a tacit discovery root, not a pros PSI
//! server`) instead of surfacing later as an absurd frame length or an unexpected
//! message type.
//!
//! ```text
//! offset  size  field
//! 0       4     magic E3 74 61 63 ("\xE3tac"); read as a frame header it would
//!               announce 3.8 GB, beyond every frame limit, and its first byte is
//!               neither a TLS record type (0x14–0x18) nor ASCII
//! 4       1     greeting format, 1
//! 5       1     flags: bit 0 "this listener requires TLS" (sent in the clear by a
//!               TLS listener to a plain client, just before it closes); bit 1 "sent
//!               by the accepting side"; other bits 0 (ignored on receipt)
//! 6       2     protocol id, big-endian ([`Protocol`])
//! 8       2     lowest version of that protocol this side speaks, big-endian
//! 10      2     highest version, big-endian
//! ```
//!
//! Version rule: each side computes `v = min(our highest, their highest)`; if
//! `v < max(our lowest, their lowest)` the ranges do not meet and the connection is
//! refused with both ranges named; otherwise both run version `v` (the same on both
//! sides, with no further message). A greeting of another format (byte 4 ≠ 1) is
//! refused ("speaks greeting format N; upgrade tacit").
//!
//! The sans-I/O parts (encoding, [`classify`] into a [`Received`] and
//! [`Greeting::negotiate`]) are here; [`crate::FramedConn`] sends and checks them.

use std::fmt;

/// The first four bytes of every greeting.
pub const MAGIC: [u8; 4] = [0xE3, b't', b'a', b'c'];
/// The greeting format this code writes and reads.
pub const FORMAT: u8 = 1;
/// Bytes in a greeting.
pub const LEN: usize = 12;
/// Flag: the sender is a TLS listener that refuses plain TCP.
pub const FLAG_TLS_REQUIRED: u8 = 1;
/// Flag: the sender is the accepting side.
pub const FLAG_ACCEPTOR: u8 = 2;

macro_rules! protocols {
    ($($(#[$doc:meta])* $name:ident = $id:literal, $noun:literal;)*) => {
        /// The protocols tacit speaks over its own connections, one id each. The
        /// high byte names the subsystem, the low byte the protocol.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Protocol {
            $($(#[$doc])* $name,)*
        }

        impl Protocol {
            /// Every protocol.
            pub const ALL: &'static [Protocol] = &[$(Protocol::$name,)*];

            /// Its id on the wire.
            pub fn id(self) -> u16 {
                match self {
                    $(Protocol::$name => $id,)*
                }
            }

            /// What the listening side of this protocol is, as a user would say it
            /// ("discovery root", "pros PSI server").
            pub fn noun(self) -> &'static str {
                match self {
                    $(Protocol::$name => $noun,)*
                }
            }

            /// The protocol with this id, if this tacit knows it.
            pub fn from_id(id: u16) -> Option<Protocol> {
                match id {
                    $($id => Some(Protocol::$name),)*
                    _ => None,
                }
            }
        }
    };
}

protocols! {
    /// DH-PSI, `tacit psi serve` / `psi query` and the Python package.
    Psi = 0x0101, "PSI server";
    /// PrivateDrop's HTTPS between `drop send` and `drop receive` (checked before
    /// TLS, see `docs/drop.md`).
    Drop = 0x0201, "PrivateDrop receiver";
    /// The certification authority's enrolment endpoint, `tacit ca serve`.
    CaEnrolment = 0x0202, "certification authority (ca serve)";
    /// The discovery root's key requests, `discover root serve`.
    DiscoveryRoot = 0x0301, "discovery root";
    /// Private mutual authentication / service discovery, `discover advertise` /
    /// `discover connect`.
    DiscoveryService = 0x0302, "discovery service (discover advertise)";
    /// The advertisement carrier's fetch endpoint (adverts too large for mDNS).
    DiscoveryAdverts = 0x0303, "discovery advert endpoint";
    /// FNP PSI, `pros psi serve` / `pros psi query`.
    ProsPsi = 0x0401, "pros PSI server";
    /// 3PR reconciliation, `pros reconcile`.
    ProsReconcile = 0x0402, "pros reconciliation server";
    /// PROS meeting scheduling, `schedule serve` / `schedule connect`.
    ProsSchedule = 0x0403, "pros scheduling server";
    /// GMW on a Bristol circuit between two parties, `mpc run`.
    MpcRun = 0x0501, "GMW party (mpc run)";
    /// The triple token over TCP, `mpc token serve`.
    MpcToken = 0x0502, "triple token (mpc token serve)";
    /// PSI by a GMW circuit, `mpc psi serve` / `mpc psi query`.
    MpcPsi = 0x0503, "mpc PSI server";
    /// Scheduling by a GMW circuit, `schedule serve --engine gmw`.
    MpcSchedule = 0x0504, "GMW scheduling server";
    /// TracEdge anonymous authentication, `pir server serve` / `pir client`.
    TracEdge = 0x0601, "TracEdge PIR server (pir server serve)";
    /// The benchmarks' own two-process links (`tacit bench … --connect`).
    Bench = 0x0f01, "tacit bench peer";
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.noun())
    }
}

/// What one side says in its greeting: the protocol and the versions of it it speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Greeting {
    /// The protocol.
    pub protocol: Protocol,
    /// The lowest version this side speaks.
    pub min: u16,
    /// The highest version this side speaks.
    pub max: u16,
}

impl Greeting {
    /// A greeting for version 1 of `protocol` only.
    pub const fn v1(protocol: Protocol) -> Self {
        Greeting {
            protocol,
            min: 1,
            max: 1,
        }
    }

    /// The 12 bytes on the wire.
    pub fn encode(&self, flags: u8) -> [u8; LEN] {
        let mut b = [0u8; LEN];
        b[..4].copy_from_slice(&MAGIC);
        b[4] = FORMAT;
        b[5] = flags;
        b[6..8].copy_from_slice(&self.protocol.id().to_be_bytes());
        b[8..10].copy_from_slice(&self.min.to_be_bytes());
        b[10..12].copy_from_slice(&self.max.to_be_bytes());
        b
    }

    /// Checks the peer's greeting against ours: the version both run, or why not.
    /// Another protocol is named first (it is what the user got wrong), then a
    /// listener's "TLS required", then the versions.
    pub fn negotiate(&self, theirs: &Received) -> Result<u16, Mismatch> {
        if theirs.protocol != self.protocol.id() {
            return Err(Mismatch::Protocol {
                theirs: theirs.kind(),
                ours: self.protocol,
            });
        }
        if theirs.flags & FLAG_TLS_REQUIRED != 0 {
            return Err(Mismatch::TlsRequired { theirs: theirs.kind() });
        }
        let v = self.max.min(theirs.max);
        if theirs.min > theirs.max || v < self.min.max(theirs.min) {
            return Err(Mismatch::Version {
                protocol: self.protocol,
                theirs: (theirs.min, theirs.max),
                ours: (self.min, self.max),
            });
        }
        Ok(v)
    }
}

/// A well-formed greeting as received (the protocol id may be one this tacit does
/// not know).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// The flags byte.
    pub flags: u8,
    /// The protocol id.
    pub protocol: u16,
    /// The lowest version.
    pub min: u16,
    /// The highest version.
    pub max: u16,
}

impl Received {
    /// The peer's kind, in words.
    pub fn kind(&self) -> PeerKind {
        match Protocol::from_id(self.protocol) {
            Some(p) => PeerKind::Known(p),
            None => PeerKind::Unknown(self.protocol),
        }
    }
}

/// The protocol a peer named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerKind {
    /// One this tacit knows.
    Known(Protocol),
    /// An id this tacit does not know (a newer tacit's protocol).
    Unknown(u16),
}

impl fmt::Display for PeerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeerKind::Known(p) => f.write_str(p.noun()),
            PeerKind::Unknown(id) => write!(f, "server of a protocol this tacit does not know (0x{id:04x})"),
        }
    }
}

/// Why two well-formed greetings do not go together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mismatch {
    /// Another protocol.
    Protocol {
        /// The peer's.
        theirs: PeerKind,
        /// Ours.
        ours: Protocol,
    },
    /// The same protocol, no common version.
    Version {
        /// The protocol.
        protocol: Protocol,
        /// The peer's range.
        theirs: (u16, u16),
        /// Ours.
        ours: (u16, u16),
    },
    /// A TLS listener refusing our plain connection.
    TlsRequired {
        /// What it is.
        theirs: PeerKind,
    },
}

/// What the first bytes from a peer are, as far as the greeting goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// Too few bytes to tell yet, all consistent with a greeting.
    Partial,
    /// A complete tacit greeting.
    Greeting(Received),
    /// A tacit greeting of a format this code does not read.
    Format(u8),
    /// A TLS record (handshake or alert): the peer speaks TLS.
    Tls,
    /// Something else: not tacit.
    Other,
}

/// Classifies the first bytes a peer sent (`bytes` holds at most [`LEN`]; fewer when
/// the peer has not sent more yet). Decides as early as it can: one byte that is not
/// the magic's first is enough (two for TLS).
pub fn classify(bytes: &[u8]) -> Seen {
    let n = bytes.len().min(4);
    if bytes[..n] != MAGIC[..n] {
        if (0x14..=0x18).contains(&bytes[0]) {
            // A TLS record: content type, then the major version 3.
            return match bytes.get(1) {
                None => Seen::Partial,
                Some(3) => Seen::Tls,
                Some(_) => Seen::Other,
            };
        }
        return Seen::Other;
    }
    if bytes.len() > 4 && bytes[4] != FORMAT {
        return Seen::Format(bytes[4]);
    }
    if bytes.len() < LEN {
        return Seen::Partial;
    }
    let u = |i: usize| u16::from_be_bytes([bytes[i], bytes[i + 1]]);
    Seen::Greeting(Received {
        flags: bytes[5],
        protocol: u(6),
        min: u(8),
        max: u(10),
    })
}

/// A short, printable rendering of what a non-tacit peer sent (ASCII where it is
/// text, hex otherwise), for the one-line error.
pub fn show(bytes: &[u8]) -> String {
    if !bytes.is_empty() && bytes.iter().all(|&b| b.is_ascii_graphic() || b == b' ') {
        format!("\"{}\"", String::from_utf8_lossy(bytes))
    } else if bytes.iter().take_while(|&&b| b.is_ascii_graphic() || b == b' ').count() >= 4 {
        let t: Vec<u8> = bytes
            .iter()
            .copied()
            .take_while(|&b| b.is_ascii_graphic() || b == b' ')
            .collect();
        format!("\"{}…\"", String::from_utf8_lossy(&t))
    } else {
        bytes.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_round_trip() {
        let mut seen = std::collections::HashSet::new();
        for &p in Protocol::ALL {
            assert!(seen.insert(p.id()), "{p:?}");
            assert_eq!(Protocol::from_id(p.id()), Some(p));
            let g = Greeting::v1(p).encode(FLAG_ACCEPTOR);
            assert_eq!(
                classify(&g),
                Seen::Greeting(Received {
                    flags: FLAG_ACCEPTOR,
                    protocol: p.id(),
                    min: 1,
                    max: 1
                })
            );
        }
    }

    #[test]
    fn the_magic_is_no_frame_and_no_tls_record() {
        let as_len = u32::from_be_bytes(MAGIC) as usize;
        assert!(as_len > 1 << 31);
        assert!(!(0x14..=0x18).contains(&MAGIC[0]));
        assert!(!MAGIC[0].is_ascii());
    }

    #[test]
    fn classification_decides_early() {
        assert_eq!(classify(&[0xE3]), Seen::Partial);
        assert_eq!(classify(&MAGIC[..3]), Seen::Partial);
        assert_eq!(classify(&[0x16]), Seen::Partial);
        assert_eq!(classify(&[0x16, 0x03]), Seen::Tls);
        assert_eq!(classify(&[0x15, 0x03, 0x03, 0, 2, 2, 50]), Seen::Tls);
        assert_eq!(classify(&[0x16, 0x04]), Seen::Other);
        assert_eq!(classify(b"HTTP/1.1 400"), Seen::Other);
        assert_eq!(classify(&[0, 0, 0, 5]), Seen::Other);
        assert_eq!(classify(&[0xE3, b't', b'a', b'c', 2]), Seen::Format(2));
    }

    #[test]
    fn versions_meet_at_the_highest_common_one() {
        let ours = Greeting {
            protocol: Protocol::Psi,
            min: 1,
            max: 3,
        };
        let theirs = |min, max| Received {
            flags: 0,
            protocol: Protocol::Psi.id(),
            min,
            max,
        };
        assert_eq!(ours.negotiate(&theirs(1, 1)), Ok(1));
        assert_eq!(ours.negotiate(&theirs(2, 5)), Ok(3));
        assert!(matches!(
            ours.negotiate(&theirs(4, 5)),
            Err(Mismatch::Version {
                theirs: (4, 5),
                ours: (1, 3),
                ..
            })
        ));
        assert!(matches!(ours.negotiate(&theirs(3, 2)), Err(Mismatch::Version { .. })));
        let other = Received {
            protocol: Protocol::DiscoveryRoot.id(),
            ..theirs(1, 1)
        };
        assert_eq!(
            ours.negotiate(&other),
            Err(Mismatch::Protocol {
                theirs: PeerKind::Known(Protocol::DiscoveryRoot),
                ours: Protocol::Psi
            })
        );
        let tls = Received {
            flags: FLAG_TLS_REQUIRED | FLAG_ACCEPTOR,
            ..theirs(1, 1)
        };
        assert!(matches!(ours.negotiate(&tls), Err(Mismatch::TlsRequired { .. })));
    }

    #[test]
    fn show_prints_text_as_text() {
        assert_eq!(show(b"HTTP/1.1 400"), "\"HTTP/1.1 400\"");
        assert_eq!(show(&[1, 2, 0xff]), "01 02 ff");
        assert_eq!(show(b"SSH-2.0\r\n"), "\"SSH-2.0…\"");
    }
}
