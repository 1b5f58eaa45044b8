//! ISO/IEC 7816-4 command and response APDUs, short and extended length.
//!
//! ```text
//! command:  CLA INS P1 P2 [Lc data] [Le]
//!           short:    Lc = 1 byte (1..=255),  Le = 1 byte (0 means 256)
//!           extended: Lc = 00 hi lo (1..=65535), Le = [00] hi lo (0000 means 65536)
//! response: data SW1 SW2
//! ```
//!
//! Over TCP each APDU is one frame, as a card reader would pass it on.

use crate::Error;

/// The most response data an extended APDU can ask for.
pub const MAX_NE: usize = 65536;
/// The most command data.
pub const MAX_NC: usize = 65535;

/// A command APDU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// Class byte.
    pub cla: u8,
    /// Instruction.
    pub ins: u8,
    /// Parameter 1.
    pub p1: u8,
    /// Parameter 2.
    pub p2: u8,
    /// Command data (`Nc` bytes).
    pub data: Vec<u8>,
    /// Expected response length `Ne` (0 = none expected).
    pub ne: usize,
}

impl Command {
    /// Encodes, choosing the short form where it suffices.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![self.cla, self.ins, self.p1, self.p2];
        let extended = self.data.len() > 255 || self.ne > 256;
        if !self.data.is_empty() {
            if extended {
                out.push(0);
                out.extend_from_slice(&(self.data.len() as u16).to_be_bytes());
            } else {
                out.push(self.data.len() as u8);
            }
            out.extend_from_slice(&self.data);
        }
        if self.ne > 0 {
            if extended {
                if self.data.is_empty() {
                    out.push(0);
                }
                let le = if self.ne == MAX_NE { 0 } else { self.ne as u16 };
                out.extend_from_slice(&le.to_be_bytes());
            } else {
                out.push(if self.ne == 256 { 0 } else { self.ne as u8 });
            }
        }
        out
    }

    /// Decodes one command APDU (all of `b`).
    pub fn decode(b: &[u8]) -> Result<Command, Error> {
        let bad = |why: &str| Error::Token(format!("sent a malformed command APDU: {why}"));
        if b.len() < 4 {
            return Err(bad("shorter than its 4-byte header"));
        }
        let (cla, ins, p1, p2) = (b[0], b[1], b[2], b[3]);
        let body = &b[4..];
        let mk = |data: &[u8], ne: usize| Command {
            cla,
            ins,
            p1,
            p2,
            data: data.to_vec(),
            ne,
        };
        match body.len() {
            0 => return Ok(mk(&[], 0)),
            1 => return Ok(mk(&[], if body[0] == 0 { 256 } else { body[0] as usize })),
            _ => {}
        }
        if body[0] != 0 {
            // short Lc
            let nc = body[0] as usize;
            let rest = &body[1..];
            if rest.len() == nc {
                return Ok(mk(rest, 0));
            }
            if rest.len() == nc + 1 {
                let le = rest[nc];
                return Ok(mk(&rest[..nc], if le == 0 { 256 } else { le as usize }));
            }
            return Err(bad("Lc does not match the data"));
        }
        // extended
        if body.len() == 3 {
            let le = u16::from_be_bytes([body[1], body[2]]) as usize;
            return Ok(mk(&[], if le == 0 { MAX_NE } else { le }));
        }
        if body.len() < 3 {
            return Err(bad("truncated extended length"));
        }
        let nc = u16::from_be_bytes([body[1], body[2]]) as usize;
        if nc == 0 {
            return Err(bad("extended Lc of zero"));
        }
        let rest = &body[3..];
        if rest.len() == nc {
            return Ok(mk(rest, 0));
        }
        if rest.len() == nc + 2 {
            let le = u16::from_be_bytes([rest[nc], rest[nc + 1]]) as usize;
            return Ok(mk(&rest[..nc], if le == 0 { MAX_NE } else { le }));
        }
        Err(bad("extended Lc does not match the data"))
    }
}

/// Status words used by the token.
pub mod sw {
    /// Success.
    pub const OK: u16 = 0x9000;
    /// `61xx`: more response data; send GET RESPONSE.
    pub const MORE: u8 = 0x61;
    /// Wrong length.
    pub const WRONG_LENGTH: u16 = 0x6700;
    /// Security status not satisfied.
    pub const SECURITY: u16 = 0x6982;
    /// Conditions of use not satisfied (for example `s_B` already released).
    pub const CONDITIONS: u16 = 0x6985;
    /// Wrong data.
    pub const WRONG_DATA: u16 = 0x6a80;
    /// Referenced data not found (unknown sequence).
    pub const NOT_FOUND: u16 = 0x6a88;
    /// Not enough memory.
    pub const NO_MEMORY: u16 = 0x6a84;
    /// Wrong P1/P2.
    pub const WRONG_P1P2: u16 = 0x6b00;
    /// Instruction not supported.
    pub const INS_NOT_SUPPORTED: u16 = 0x6d00;
    /// Class not supported.
    pub const CLA_NOT_SUPPORTED: u16 = 0x6e00;
    /// No precise diagnosis (an internal error, for example the state could not be saved).
    pub const UNKNOWN: u16 = 0x6f00;

    /// What a status word means, for error messages.
    pub fn describe(sw: u16) -> &'static str {
        match sw {
            OK => "success",
            WRONG_LENGTH => "wrong length",
            SECURITY => "security status not satisfied",
            CONDITIONS => "conditions of use not satisfied",
            WRONG_DATA => "wrong data",
            NOT_FOUND => "referenced data not found",
            NO_MEMORY => "not enough memory",
            WRONG_P1P2 => "wrong P1/P2",
            INS_NOT_SUPPORTED => "instruction not supported",
            CLA_NOT_SUPPORTED => "class not supported",
            UNKNOWN => "no precise diagnosis",
            s if s >> 8 == MORE as u16 => "more data available",
            _ => "unknown status",
        }
    }
}

/// A response APDU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// Response data.
    pub data: Vec<u8>,
    /// Status word `SW1 SW2`.
    pub sw: u16,
}

impl Response {
    /// A status-only response.
    pub fn status(sw: u16) -> Self {
        Response { data: Vec::new(), sw }
    }

    /// Success with data.
    pub fn ok(data: Vec<u8>) -> Self {
        Response { data, sw: sw::OK }
    }

    /// Encodes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.data.len() + 2);
        out.extend_from_slice(&self.data);
        out.extend_from_slice(&self.sw.to_be_bytes());
        out
    }

    /// Encodes in place: the status word is appended to the data (no copy of the
    /// data when its buffer has room for two more bytes).
    pub fn into_encoded(self) -> Vec<u8> {
        let mut out = self.data;
        out.extend_from_slice(&self.sw.to_be_bytes());
        out
    }

    /// Decodes; the data may be at most [`MAX_NE`] bytes.
    pub fn decode(b: &[u8]) -> Result<Response, Error> {
        if b.len() < 2 {
            return Err(Error::Token(
                "answered with a response APDU shorter than its status word".into(),
            ));
        }
        if b.len() - 2 > MAX_NE {
            return Err(Error::Token(format!(
                "answered with {} bytes of data; at most {MAX_NE}",
                b.len() - 2
            )));
        }
        let n = b.len() - 2;
        Ok(Response {
            data: b[..n].to_vec(),
            sw: u16::from_be_bytes([b[n], b[n + 1]]),
        })
    }

    /// Turns a non-success status into an error.
    pub fn check(self, what: &str) -> Result<Response, Error> {
        if self.sw == sw::OK || self.sw >> 8 == sw::MORE as u16 {
            Ok(self)
        } else {
            Err(Error::Token(format!(
                "refused {what}: status {:04X} ({})",
                self.sw,
                sw::describe(self.sw)
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn command_roundtrip(cla in any::<u8>(), ins in any::<u8>(), data in proptest::collection::vec(any::<u8>(), 0..600), ne in 0usize..=MAX_NE) {
            let c = Command { cla, ins, p1: 1, p2: 2, data, ne };
            prop_assert_eq!(Command::decode(&c.encode()).unwrap(), c);
        }

        #[test]
        fn decoders_never_panic(b in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = Command::decode(&b);
            let _ = Response::decode(&b);
        }
    }

    #[test]
    fn iso_examples() {
        // case 2 short: 00 C0 00 00 10
        let c = Command::decode(&[0x00, 0xc0, 0, 0, 0x10]).unwrap();
        assert_eq!((c.ins, c.ne, c.data.len()), (0xc0, 16, 0));
        // case 2 extended, Le = 0000 means 65536
        let c = Command::decode(&[0x00, 0xc0, 0, 0, 0, 0, 0]).unwrap();
        assert_eq!(c.ne, MAX_NE);
        // case 4 short
        let c = Command::decode(&[0x80, 0x30, 0, 0, 2, 9, 9, 0]).unwrap();
        assert_eq!((c.data, c.ne), (vec![9, 9], 256));
        assert!(Command::decode(&[0x80, 0x30, 0, 0, 3, 9, 9]).is_err());
        assert!(Command::decode(&[0x80, 0x30, 0]).is_err());
        let r = Response::decode(&[1, 2, 0x90, 0x00]).unwrap();
        assert_eq!(r, Response::ok(vec![1, 2]));
        assert!(Response::status(sw::CONDITIONS).check("x").is_err());
    }
}
