//! Length-prefixed stream framing: `[u32 big-endian length][payload]`.
//!
//! A frame longer than the configured maximum is refused as soon as its header is
//! read, before any payload is buffered.

use crate::Error;

/// Default maximum frame payload: 4 MiB, enough for a PSI response with
/// n = 100 000 sender elements.
pub const DEFAULT_MAX_FRAME: usize = 4 << 20;

/// Encodes one frame.
///
/// # Errors
/// If `payload` is longer than `max`.
pub fn encode_frame(payload: &[u8], max: usize) -> Result<Vec<u8>, Error> {
    if payload.len() > max {
        return Err(Error::TooLong {
            what: "frame",
            len: payload.len() as u64,
            max: max as u64,
        });
    }
    let mut out = Vec::with_capacity(4 + payload.len());
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    Ok(out)
}

/// Incremental frame decoder: feed it bytes as they arrive, take frames out.
#[derive(Debug)]
pub struct FrameDecoder {
    max: usize,
    buf: Vec<u8>,
}

impl FrameDecoder {
    /// A decoder refusing frames longer than `max` bytes.
    pub fn new(max: usize) -> Self {
        FrameDecoder { max, buf: Vec::new() }
    }

    /// Appends received bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The length announced by the next frame header, if the header is complete.
    ///
    /// # Errors
    /// If the announced length exceeds the maximum.
    pub fn announced_len(&self) -> Result<Option<usize>, Error> {
        if self.buf.len() < 4 {
            return Ok(None);
        }
        let len = u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]) as usize;
        if len > self.max {
            return Err(Error::TooLong {
                what: "frame",
                len: len as u64,
                max: self.max as u64,
            });
        }
        Ok(Some(len))
    }

    /// Takes the next complete frame, if there is one.
    ///
    /// # Errors
    /// If the next frame announces more than the maximum.
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>, Error> {
        let Some(len) = self.announced_len()? else {
            return Ok(None);
        };
        if self.buf.len() < 4 + len {
            return Ok(None);
        }
        let frame = self.buf[4..4 + len].to_vec();
        self.buf.drain(..4 + len);
        Ok(Some(frame))
    }

    /// Bytes buffered that do not yet form a complete frame.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_split_anywhere() {
        let a = encode_frame(b"hello", 16).unwrap();
        let b = encode_frame(b"", 16).unwrap();
        let all = [a, b].concat();
        for split in 0..all.len() {
            let mut d = FrameDecoder::new(16);
            d.push(&all[..split]);
            let mut got = Vec::new();
            while let Some(f) = d.next_frame().unwrap() {
                got.push(f);
            }
            d.push(&all[split..]);
            while let Some(f) = d.next_frame().unwrap() {
                got.push(f);
            }
            assert_eq!(got, vec![b"hello".to_vec(), Vec::new()]);
            assert_eq!(d.buffered(), 0);
        }
    }

    #[test]
    fn oversize_refused_from_header() {
        let mut d = FrameDecoder::new(4);
        d.push(&100u32.to_be_bytes());
        assert!(d.next_frame().is_err());
        assert!(encode_frame(&[0; 5], 4).is_err());
    }
}
