use ring::aead::*;
use std::time::Instant;
fn main() {
    for (name, alg) in [("aes128gcm", &AES_128_GCM), ("aes256gcm", &AES_256_GCM), ("chacha", &CHACHA20_POLY1305)] {
        let key = LessSafeKey::new(UnboundKey::new(alg, &vec![7u8; alg.key_len()]).unwrap());
        for size in [256usize, 1024, 3700, 8192, 16384] {
            let mut buf = vec![1u8; size];
            let iters = (200_000_000 / size).max(1000);
            let t = Instant::now();
            for i in 0..iters {
                let mut n = [0u8; 12];
                n[..8].copy_from_slice(&(i as u64).to_le_bytes());
                let tag = key.seal_in_place_separate_tag(Nonce::assume_unique_for_key(n), Aad::from(&[23u8, 3, 3, 0, 0][..]), &mut buf).unwrap();
                std::hint::black_box(&tag);
            }
            let dt = t.elapsed().as_secs_f64();
            println!("{name} {size:6} B: seal {:.2} GB/s, {:.3} us/msg", (iters * size) as f64 / dt / 1e9, dt / iters as f64 * 1e6);
        }
    }
}
