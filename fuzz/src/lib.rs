//! Shared parameters of the fuzz targets.
use tacit_crypto::GroupId;
use tacit_psi::{PsiParams, Security};

/// The parameter sets the PSI decoders are fuzzed with; the first input byte picks one.
pub fn params(selector: u8) -> PsiParams {
    let group = if selector & 1 == 0 {
        GroupId::Ristretto255
    } else {
        GroupId::P256
    };
    let security = if selector & 2 == 0 {
        Security::Malicious
    } else {
        Security::SemiHonest
    };
    PsiParams::new(security).with_group(group).with_bounds(2, 4)
}

/// The fixed world the discovery handshake target runs in (and `gen_seeds` writes
/// seeds from): a root `Home`, a phone and a camera with prefix keys from one IBE root.
pub mod discovery {
    use std::sync::{Arc, OnceLock};
    use tacit_crypto::rng::SecureRng;
    use tacit_discovery::blessing::{Policy, Principal, TrustedRoots};
    use tacit_discovery::handshake::server::ServerConfig;
    use tacit_discovery::handshake::zero_rtt::Service;
    use tacit_discovery::handshake::{Credentials, PrefixCredentials};
    use tacit_discovery::prefix::{Prefix, PrefixAuthority};

    /// The time every target uses.
    pub const NOW: u64 = 1_800_000_000;

    /// The world.
    pub struct World {
        /// The phone.
        pub client: Credentials,
        /// Its prefix key.
        pub client_prefix: PrefixCredentials,
        /// The camera as a SIGMA-I / private server (caching its encrypted identity).
        pub server: ServerConfig,
        /// The camera as a 0-RTT service.
        pub service: Service,
        /// The camera's current advertisement.
        pub advert: Vec<u8>,
        /// The advertisement as the phone opened it (an IBE decryption, done once).
        pub found: tacit_discovery::handshake::zero_rtt::DiscoveredService,
    }

    /// The world, built once per process from a fixed seed.
    pub fn world() -> &'static World {
        static W: OnceLock<World> = OnceLock::new();
        W.get_or_init(|| {
            let mut rng = SecureRng::from_seed([9; 32]);
            let (root, root_b) = Principal::new_root(&mut rng, "Home", NOW + 1_000_000).unwrap();
            let mut roots = TrustedRoots::new();
            roots.add("Home", root.public_key()).unwrap();
            let ibe = PrefixAuthority::generate(&mut rng);
            let mk = |rng: &mut SecureRng, ext: &str, policy: &str| {
                let p = Principal::generate(rng);
                let b = root
                    .bless(&root_b, &p.public_key(), ext, NOW + 1_000_000, vec![])
                    .unwrap();
                let key = ibe
                    .extract(&Prefix::parse(b.unverified_name().as_str()).unwrap(), rng)
                    .unwrap();
                (
                    Credentials {
                        principal: Arc::new(p),
                        blessing: b,
                        roots: roots.clone(),
                        policy: policy.parse::<Policy>().unwrap(),
                    },
                    PrefixCredentials {
                        mpk: Arc::new(ibe.public().clone()),
                        key: Some(Arc::new(key)),
                    },
                )
            };
            let (client, client_prefix) = mk(&mut rng, "Phone", "Home/*");
            let (server_c, server_p) = mk(&mut rng, "Camera", "Home/*");
            let service = Service::new(server_c.clone());
            let advert = service
                .refresh(&server_p.mpk, NOW, NOW + 3600, &mut rng)
                .unwrap()
                .advert()
                .to_vec();
            let found =
                tacit_discovery::handshake::zero_rtt::open_advert(&advert, &client, &client_prefix, NOW).unwrap();
            World {
                found,
                client,
                client_prefix,
                // Both handshakes, so the fuzzer reaches the SIGMA-I paths too.
                server: ServerConfig::new(server_c, Some(server_p), true).with_modes(&[
                    tacit_discovery::handshake::Mode::Sigma,
                    tacit_discovery::handshake::Mode::Private,
                ]),
                service,
                advert,
            }
        })
    }
}

/// The fixed small tables the PIR targets answer and decode against (and `gen_seeds`
/// writes seeds from).
pub mod pir {
    use std::sync::OnceLock;
    use tacit_crypto::rng::SecureRng;
    use tacit_pir::lwe::{LweClient, LweParams, LweServer};
    use tacit_pir::ntru::{NtruClient, NtruLayout, NtruServer};
    use tacit_pir::{Table, TableShape};

    /// An `lwe` server over 60 rows of 5 bytes and a client with its hint.
    pub fn lwe() -> &'static (LweServer, LweClient) {
        static W: OnceLock<(LweServer, LweClient)> = OnceLock::new();
        W.get_or_init(|| {
            let mut rng = SecureRng::from_seed([6; 32]);
            let table = Table::random(TableShape::new(60, 5).unwrap(), &mut rng);
            let server = LweServer::setup(&table, LweParams::new(table.shape(), [6; 16]).unwrap()).unwrap();
            let client = LweClient::new(server.hint()).unwrap();
            (server, client)
        })
    }

    /// An `ntru-paper` server over 500 rows of 1 byte and a client.
    pub fn ntru() -> &'static (NtruServer, NtruClient) {
        static W: OnceLock<(NtruServer, NtruClient)> = OnceLock::new();
        W.get_or_init(|| {
            let mut rng = SecureRng::from_seed([7; 32]);
            let table = Table::random(TableShape::new(500, 1).unwrap(), &mut rng);
            let layout = NtruLayout::new(table.shape(), 1).unwrap();
            let server = NtruServer::setup(&table, layout).unwrap();
            let client = NtruClient::new(layout, &mut rng);
            (server, client)
        })
    }
}

/// The fixed PROS world of the pros targets: a 256-bit Paillier key from two fixed
/// 128-bit primes (so corpora stay valid across runs) and small parameters.
pub mod pros {
    use std::sync::OnceLock;
    use tacit_pros::fnp::PsiParams;
    use tacit_pros::paillier::PrivateKey;

    /// The fixed key.
    pub fn key() -> &'static PrivateKey {
        static K: OnceLock<PrivateKey> = OnceLock::new();
        K.get_or_init(|| {
            // two 128-bit primes ≡ 3 (mod 4), so the key has a modulus proof
            let p = openssl_hex("d408584f651c316614cf70e1af0a463f");
            let q = openssl_hex("cc98036ce4868b7dba9f8900f5ca4907");
            let k = PrivateKey::from_primes(p, q).expect("fixed primes");
            k.modulus_proof().expect("a Blum key");
            k
        })
    }

    fn openssl_hex(h: &str) -> tacit_pros::bn::Nat {
        let bytes: Vec<u8> = (0..h.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
            .collect();
        tacit_pros::bn::Nat::from_slice(&bytes).unwrap()
    }

    /// FNP parameters picked by a selector byte (bucketed or not).
    pub fn fnp_params(sel: u8) -> PsiParams {
        let mut p = if sel & 1 == 0 {
            PsiParams::new(20, 4)
        } else {
            PsiParams::new(3, 2)
        };
        p.bucketing = sel & 2 == 0;
        p
    }
}

/// The mpc subsystem's fixed world: a token, and the stateful decoders of the OT
/// extension and the applications.
pub mod mpc {
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;
    use tacit_crypto::sign::SigningKey;
    use tacit_mpc::triples::token::card::{Card, MemoryEeprom, TokenSpec, TokenState};

    /// A token manufactured from a fixed seed, its state in memory.
    pub fn card() -> Card<MemoryEeprom> {
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let ca = SigningKey::generate(&mut rng);
        let st = TokenState::manufacture(&ca, &TokenSpec::software("fuzz", [0; 32]), &mut rng).unwrap();
        Card::new(st, MemoryEeprom::default()).unwrap()
    }

    /// The application messages (PSI and scheduling hellos, results).
    pub fn apps(b: &[u8]) {
        tacit_mpc::apps::fuzz_decode(b);
    }

    /// The OT-extension messages, fed to the state that reads them: the first byte
    /// picks the base-OT sender point, the base-OT receiver points, or an extension
    /// chunk (after a fixed, valid base-OT phase).
    pub fn ot(b: &[u8]) {
        use tacit_mpc::triples::ot::BaseOtStart;
        let Some((&sel, msg)) = b.split_first() else { return };
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        let (a, ma) = BaseOtStart::new(&mut rng);
        match sel % 3 {
            0 => {
                let _ = a.on_peer_start(msg, &mut rng);
            }
            1 => {
                let (b0, _) = BaseOtStart::new(&mut rng);
                let (k, _) = b0.on_peer_start(&ma, &mut rng).unwrap();
                let _ = k.on_peer_keys(msg);
            }
            _ => {
                let (b0, mb) = BaseOtStart::new(&mut rng);
                let (ka, _) = a.on_peer_start(&mb, &mut rng).unwrap();
                let (_, kb_msg) = b0.on_peer_start(&ma, &mut rng).unwrap();
                let mut e = ka.on_peer_keys(&kb_msg).unwrap();
                e.set_target(256).unwrap();
                let _ = e.chunk_message();
                let _ = e.on_chunk(msg);
            }
        }
    }
}

/// The fixed world the key-request target runs in (and `gen_seeds` writes seeds
/// from): one trusted naming root `Home`, a camera it blessed, one IBE master key.
pub mod key_request {
    use std::sync::{Arc, OnceLock};
    use tacit_crypto::rng::SecureRng;
    use tacit_discovery::blessing::{Blessing, Principal, TrustedRoots};
    use tacit_discovery::ibe::MasterPublicKey;
    use tacit_discovery::key_request::{KeyAuthority, Requester};
    use tacit_discovery::prefix::PrefixAuthority;

    /// The time every target uses.
    pub const NOW: u64 = 1_800_000_000;

    /// The world.
    pub struct World {
        /// The root's key authority.
        pub authority: KeyAuthority,
        /// A valid hello from the camera.
        pub hello: Vec<u8>,
        /// The camera.
        pub principal: Arc<Principal>,
        /// Its blessing by `Home`.
        pub blessing: Blessing,
        /// The IBE master public key.
        pub mpk: Arc<MasterPublicKey>,
    }

    /// The world, built once.
    pub fn world() -> &'static World {
        static W: OnceLock<World> = OnceLock::new();
        W.get_or_init(|| {
            let mut rng = SecureRng::from_seed([42; 32]);
            let (home, home_b) = Principal::new_root(&mut rng, "Home", NOW + 1000).unwrap();
            let cam = Principal::generate(&mut rng);
            let blessing = home
                .bless(&home_b, &cam.public_key(), "Camera", NOW + 1000, vec![])
                .unwrap();
            let mut roots = TrustedRoots::new();
            roots.add("Home", home.public_key()).unwrap();
            let ibe = Arc::new(PrefixAuthority::generate(&mut rng));
            let mpk = Arc::new(ibe.public().clone());
            let principal = Arc::new(cam);
            let (_, hello) = Requester::start(principal.clone(), blessing.clone(), mpk.clone()).unwrap();
            World {
                authority: KeyAuthority::new(ibe, roots),
                hello,
                principal,
                blessing,
                mpk,
            }
        })
    }
}
