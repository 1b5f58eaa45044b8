//! Messages between the two parties (wire tags `0x05xx`, see `docs/wire.md`).
//!
//! Packed bit strings travel as `⌈bits/8⌉` bytes, bit `i` in bit `i % 8` of byte
//! `i / 8`; the unused high bits of the last byte must be zero (one encoding per
//! value), and the length must be exactly what the circuit and the layer require.

use crate::{Error, Party};
use tacit_wire::{Decode, Encode, Reader, Writer};

/// Message-type tags of the mpc subsystem.
pub mod tags {
    /// Session hello: circuit digest, instances, input owners, triple source, input-mask seed.
    pub const HELLO: u16 = 0x0501;
    /// One AND layer's `d ‖ e` bits.
    pub const LAYER: u16 = 0x0502;
    /// Output shares.
    pub const OUTPUT: u16 = 0x0503;
    /// End of the setup phase: both parties hold their triples.
    pub const READY: u16 = 0x0504;
    /// Token setup, A → B: the token's certificate and the sequences to use.
    pub const TOKEN_OFFER: u16 = 0x0510;
    /// Token setup, B → A (relayed to the token): B's ephemeral key and nonce.
    pub const TOKEN_SEED_REQUEST: u16 = 0x0511;
    /// Token setup, A → B: the token's sealed `s_B` seeds, relayed.
    pub const TOKEN_SEED_RELEASE: u16 = 0x0512;
    /// Token certificate (manufacturer-signed token key).
    pub const TOKEN_CERTIFICATE: u16 = 0x0513;
    /// Token persistent state (contains secrets).
    pub const TOKEN_STATE: u16 = 0x0514;
    /// A's stored `c_A` sequence (contains secrets).
    pub const TOKEN_SEQUENCE: u16 = 0x0515;
    /// OT: base-OT sender's first message (`A = a·G`).
    pub const OT_BASE_SENDER: u16 = 0x0520;
    /// OT: base-OT receiver's keys (`B_j`).
    pub const OT_BASE_RECEIVER: u16 = 0x0521;
    /// OT: an IKNP extension matrix chunk (`u_j` columns).
    pub const OT_EXTEND: u16 = 0x0522;
    /// Scheduling: the function, window and grid both parties must agree on.
    pub const SCHEDULE_HELLO: u16 = 0x0530;
    /// Set intersection: element length, set size, whether elements were hashed.
    pub const PSI_HELLO: u16 = 0x0531;
}

/// Bytes of a packed string of `bits` bits.
pub fn packed_len(bits: usize) -> usize {
    bits.div_ceil(8)
}

fn put_packed(w: &mut Writer, words: &[u64], bits: usize) {
    let nb = packed_len(bits);
    w.put_count(nb);
    w.put_words_le(words, nb);
}

/// Reads a packed string of exactly `bits` bits and XORs it into `dst`.
fn xor_packed(r: &mut Reader<'_>, what: &'static str, bits: usize, dst: &mut [u64]) -> Result<(), Error> {
    let nb = packed_len(bits);
    let got = r.u32()? as usize;
    if got != nb {
        return Err(Error::Peer(format!(
            "sent {got} bytes of {what}; exactly {nb} are required"
        )));
    }
    let bytes = r.fixed(what, nb)?;
    if !bits.is_multiple_of(8) && bytes[nb - 1] >> (bits % 8) != 0 {
        return Err(Error::Peer(format!("set padding bits in {what}")));
    }
    if dst.len() * 8 < nb {
        return Err(Error::Params(format!("{what}: buffer too small")));
    }
    let mut chunks = bytes.chunks_exact(8);
    let mut k = 0;
    for c in &mut chunks {
        dst[k] ^= u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        k += 1;
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut b = [0u8; 8];
        b[..rest.len()].copy_from_slice(rest);
        dst[k] ^= u64::from_le_bytes(b);
    }
    Ok(())
}

/// One AND layer's bits from one party: `layer` (u32) and the packed `d ‖ e` bits.
#[derive(Debug)]
pub struct LayerMessage;

impl LayerMessage {
    /// Size of a layer message carrying `bits` bits.
    pub fn encoded_len(bits: usize) -> usize {
        3 + 4 + 4 + packed_len(bits)
    }

    /// Encodes.
    pub fn encode_bits(layer: u32, words: &[u64], bits: usize) -> Vec<u8> {
        let mut w = Writer::with_capacity(Self::encoded_len(bits));
        w.put_envelope(tags::LAYER);
        w.put_u32(layer);
        put_packed(&mut w, words, bits);
        w.into_bytes()
    }

    /// Decodes a message that must be for `layer` with exactly `bits` bits and XORs
    /// its bits into `dst`.
    pub fn decode_xor_into(bytes: &[u8], layer: u32, bits: usize, dst: &mut [u64]) -> Result<(), Error> {
        let mut r = Reader::new(bytes);
        r.envelope(tags::LAYER, "GMW layer")?;
        let l = r.u32()?;
        if l != layer {
            return Err(Error::Peer(format!(
                "sent AND layer {l} while layer {layer} was expected"
            )));
        }
        xor_packed(&mut r, "layer bits", bits, dst)?;
        r.finish()?;
        Ok(())
    }

    /// Decodes any layer message (layer number and bits) without knowing the circuit:
    /// what a fuzzer or a log reader sees.
    pub fn decode_any(bytes: &[u8], max_bits: usize) -> Result<(u32, Vec<u8>), Error> {
        let mut r = Reader::new(bytes);
        r.envelope(tags::LAYER, "GMW layer")?;
        let l = r.u32()?;
        let b = r.var_bytes("layer bits", packed_len(max_bits))?.to_vec();
        r.finish()?;
        Ok((l, b))
    }
}

/// One party's output shares.
#[derive(Debug)]
pub struct OutputMessage;

impl OutputMessage {
    /// Encodes.
    pub fn encode_bits(words: &[u64], bits: usize) -> Vec<u8> {
        let mut w = Writer::with_capacity(7 + packed_len(bits));
        w.put_envelope(tags::OUTPUT);
        put_packed(&mut w, words, bits);
        w.into_bytes()
    }

    /// Decodes a message with exactly `bits` bits and XORs them into `dst`.
    pub fn decode_xor_into(bytes: &[u8], bits: usize, dst: &mut [u64]) -> Result<(), Error> {
        let mut r = Reader::new(bytes);
        r.envelope(tags::OUTPUT, "GMW output shares")?;
        xor_packed(&mut r, "output shares", bits, dst)?;
        r.finish()?;
        Ok(())
    }
}

/// Which triple source a session uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TripleKind {
    /// The trusted token of paper §4.
    Token,
    /// IKNP OT extension, two random OTs per triple.
    Ot,
    /// A dealer both parties trust (tests and online benchmarks only).
    Dealer,
}

impl TripleKind {
    fn code(self) -> u8 {
        match self {
            TripleKind::Token => 1,
            TripleKind::Ot => 2,
            TripleKind::Dealer => 3,
        }
    }

    fn from_code(c: u8) -> Result<Self, tacit_wire::Error> {
        Ok(match c {
            1 => TripleKind::Token,
            2 => TripleKind::Ot,
            3 => TripleKind::Dealer,
            _ => return Err(tacit_wire::Error::invalid("triple source", format!("unknown code {c}"))),
        })
    }
}

impl std::fmt::Display for TripleKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TripleKind::Token => "token",
            TripleKind::Ot => "ot",
            TripleKind::Dealer => "dealer",
        })
    }
}

/// The most input values a hello may name.
pub const MAX_INPUT_VALUES: usize = 1 << 16;

/// The first message of a session, sent by both parties: what they are about to
/// compute (so that two different circuits are never mixed) and the seed of this
/// party's input masks.
#[derive(Clone, PartialEq, Eq)]
pub struct Hello {
    /// Sender's role.
    pub party: Party,
    /// SHA-256 of the circuit's canonical encoding ([`crate::circuit_digest`]).
    pub circuit: [u8; 32],
    /// Parallel instances.
    pub instances: u32,
    /// Owner of each input value.
    pub owners: Vec<Party>,
    /// Triple source.
    pub triples: TripleKind,
    /// Seed of the keystream that masks the sender's inputs (the peer's share of them).
    pub input_seed: [u8; 16],
    /// Who learns the outputs.
    pub outputs: crate::gmw::OutputTo,
    /// The application's parameters (a digest both must agree on; zero for none).
    pub context: [u8; 32],
}

impl std::fmt::Debug for Hello {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hello")
            .field("party", &self.party)
            .field("instances", &self.instances)
            .field("triples", &self.triples)
            .finish_non_exhaustive()
    }
}

impl Encode for Hello {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(tags::HELLO);
        w.put_u8(self.party.code());
        w.put_fixed(&self.circuit);
        w.put_u32(self.instances);
        w.put_count(self.owners.len());
        for o in &self.owners {
            w.put_u8(o.code());
        }
        w.put_u8(self.triples.code());
        w.put_fixed(&self.input_seed);
        w.put_u8(self.outputs.code());
        w.put_fixed(&self.context);
    }
}

impl Decode for Hello {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(tags::HELLO, "GMW hello")?;
        let party = Party::from_code(r.u8()?)?;
        let circuit = r.array("circuit digest")?;
        let instances = r.u32()?;
        let n = r.count("input owners", MAX_INPUT_VALUES, 1)?;
        let mut owners = Vec::with_capacity(n);
        for _ in 0..n {
            owners.push(Party::from_code(r.u8()?)?);
        }
        let triples = TripleKind::from_code(r.u8()?)?;
        let input_seed = r.array("input seed")?;
        let outputs = crate::gmw::OutputTo::from_code(r.u8()?)?;
        let context = r.array("application context")?;
        Ok(Hello {
            party,
            circuit,
            instances,
            owners,
            triples,
            input_seed,
            outputs,
            context,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_roundtrip_and_strictness() {
        let words = [0x0123_4567_89ab_cdefu64, 0x1f];
        let m = LayerMessage::encode_bits(4, &words, 69);
        assert_eq!(m.len(), LayerMessage::encoded_len(69));
        let mut d = [0u64; 2];
        LayerMessage::decode_xor_into(&m, 4, 69, &mut d).unwrap();
        assert_eq!(d, words);
        assert!(LayerMessage::decode_xor_into(&m, 5, 69, &mut d).is_err());
        assert!(LayerMessage::decode_xor_into(&m, 4, 80, &mut d).is_err());
        // a set padding bit
        let bad = LayerMessage::encode_bits(4, &[0, 0x3f], 69);
        assert!(matches!(
            LayerMessage::decode_xor_into(&bad, 4, 69, &mut d),
            Err(Error::Peer(_))
        ));
        let (l, b) = LayerMessage::decode_any(&m, 1000).unwrap();
        assert_eq!((l, b.len()), (4, 9));
    }

    #[test]
    fn hello_roundtrip() {
        let h = Hello {
            party: Party::B,
            circuit: [3; 32],
            instances: 1024,
            owners: vec![Party::A, Party::B],
            triples: TripleKind::Ot,
            input_seed: [9; 16],
            outputs: crate::gmw::OutputTo::B,
            context: [1; 32],
        };
        assert!(Hello::from_wire(&h.to_wire()).unwrap() == h);
        let mut b = h.to_wire();
        b[3] = 7;
        assert!(Hello::from_wire(&b).is_err());
    }
}
