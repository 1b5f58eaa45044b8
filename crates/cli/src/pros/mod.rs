//! `tacit pros` (Paillier with python-paillier JSON, FNP PSI, 3PR reconciliation),
//! `tacit schedule` (appoint: private meeting scheduling), their bench and demo scene.

pub mod bench;
pub mod channel;
pub mod cmd;
pub mod demo;
pub mod schedule;
