//! A small TracEdge world over any `lwe` backend, for the pipeline tests: the same
//! seed gives the same server, keys, table and sessions whatever the backend, so
//! that two backends' responses can be compared byte for byte.
#![allow(dead_code)]

use curve25519_dalek::scalar::Scalar;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use tacit_crypto::sign::SigningKey;
use tacit_pir::lwe::{LweAnswer, LweHint, LweParams, LweQuery};
use tacit_pir::stream::PipelinedLwe;
use tacit_pir::tracedge::*;
use tacit_pir::{PirServer, Table};

pub const NOW: u64 = 1_700_000_000_000;
pub const ROWS: u64 = 300;

pub struct World<S> {
    pub server: TracEdgeServer<S>,
    pub subs: Vec<SubscriberSecret>,
    pub receipts: Vec<EnrolmentReceipt>,
    pub rng: ChaCha20Rng,
}

/// Rows 0..200 are subscribers; the PIR server is `make(table, params)`.
pub fn world<S>(seed: u64, make: impl FnOnce(&Table, LweParams) -> S) -> World<S>
where
    S: PirServer<Query = LweQuery, Answer = LweAnswer> + HintSource + PipelinedLwe,
{
    world_with(seed, ServerConfig::default(), make)
}

/// [`world`] with a server configuration of the test's choosing.
pub fn world_with<S>(seed: u64, config: ServerConfig, make: impl FnOnce(&Table, LweParams) -> S) -> World<S>
where
    S: PirServer<Query = LweQuery, Answer = LweAnswer> + HintSource + PipelinedLwe,
{
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut server = TracEdgeServer::new(
        SigningKey::generate(&mut rng),
        Scalar::random(&mut rng),
        config,
        ROWS,
        NOW - 10_000_000,
    )
    .unwrap();
    let subs: Vec<SubscriberSecret> = (0..200).map(|_| SubscriberSecret::random(&mut rng)).collect();
    let changes: Vec<Change> = subs
        .iter()
        .enumerate()
        .map(|(i, s)| (i as u64, s.public_bytes()))
        .collect();
    let receipts = server.apply_changes(&changes, NOW - 9_000_000).unwrap().receipts;
    let keys = server.directory().keys().to_vec();
    let key = TableKey::random(&mut rng);
    let rows = keytable::build_rows(&key, 1, &keys, None, &|_| {}).unwrap();
    let table = Table::from_bytes(rows, keytable::ROW_BYTES).unwrap();
    let seed16 = lwe_seed(&server.dh_public(), 1, &key);
    let pir = make(&table, LweParams::new(table.shape(), seed16).unwrap());
    let hint = pir.current_hint();
    let dir = Directory::build(keys).unwrap();
    let live = LiveTable::new(
        1,
        key,
        CommitScheme::Binding,
        &server.dh_public(),
        pir,
        hint,
        dir,
        None,
        &mut rng,
    )
    .unwrap();
    server.install(live, NOW - 8_000_000).unwrap();
    World {
        server,
        subs,
        receipts,
        rng,
    }
}

/// A client of row `row` with its own view of the log.
pub struct Sub {
    pub client: TracEdgeClient,
    pub view: ClientView,
}

pub fn sub<S>(w: &World<S>, row: u64) -> Sub
where
    S: PirServer<Query = LweQuery, Answer = LweAnswer> + HintSource + PipelinedLwe,
{
    let client = TracEdgeClient::new(
        w.server.verifying_key(),
        row,
        w.subs[row as usize].clone(),
        ClientConfig::default(),
    );
    let mut view = ClientView::new(
        w.server.verifying_key(),
        ROWS,
        w.server.dh_public().compress().to_bytes(),
    )
    .unwrap();
    if let Some(r) = w.receipts.iter().find(|r| r.row == row) {
        view.set_own(r.clone()).unwrap();
    }
    Sub { client, view }
}

pub fn hint<S>(w: &World<S>) -> LweHint
where
    S: PirServer<Query = LweQuery, Answer = LweAnswer> + HintSource + PipelinedLwe,
{
    w.server.current().unwrap().hint().clone()
}

/// Steps 1 and the client's queries for each of `rows`: the server sessions, the
/// client sessions and the queries.
pub fn sessions<S>(w: &mut World<S>, rows: &[u64]) -> (Vec<Sub>, Vec<ClientSession>, Vec<ServerSession>, Vec<Queries>)
where
    S: PirServer<Query = LweQuery, Answer = LweAnswer> + HintSource + PipelinedLwe,
{
    let (mut subs, mut cs_all, mut ss_all, mut qs) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, &row) in rows.iter().enumerate() {
        let mut s = sub(w, row);
        let (mut cs, hello) = s.client.start(NOW + i as u64, &mut w.rng);
        let (ss, commit) = w.server.hello(&hello, NOW, &mut w.rng).unwrap();
        while let CommitNeeds::Log(req) = s.client.commit_needs(&cs, &commit, &s.view).unwrap() {
            s.view.apply(&w.server.log_segment(&req), NOW + 60_000).unwrap();
        }
        let h = hint(w);
        qs.push(s.client.on_commit(&mut cs, commit, h, &s.view, &mut w.rng).unwrap());
        subs.push(s);
        cs_all.push(cs);
        ss_all.push(ss);
    }
    (subs, cs_all, ss_all, qs)
}

/// Steps 3 and 4 with a response the server sent: the client must authenticate.
pub fn complete<S>(w: &mut World<S>, s: &Sub, cs: &mut ClientSession, ss: &mut ServerSession, response: &[u8])
where
    S: PirServer<Query = LweQuery, Answer = LweAnswer> + HintSource + PipelinedLwe,
{
    use tacit_wire::Decode;
    let resp = Response::from_wire(response).unwrap();
    let auth = s.client.on_response(cs, resp, &mut w.rng).unwrap();
    let (reply, _) = w.server.finish(ss, &auth).unwrap();
    assert!(matches!(
        s.client.on_server_auth(cs, Ok(reply)),
        ClientOutcome::Authenticated { .. }
    ));
}
