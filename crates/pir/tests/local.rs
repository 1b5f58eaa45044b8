//! `tacit_pir::local`: a table file written and read back, a one-process query through
//! both backends returning the right row, and table files the reader refuses with the
//! messages `tacit pir query` prints.

use std::path::PathBuf;

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use tacit_pir::local::{self, LocalBackend, LocalError};
use tacit_pir::{LweBackend, TableShape};

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tacit-pir-local-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn a_written_table_reads_back_and_every_backend_returns_the_row() {
    let path = tmp("keys.tbl");
    let mut calls = Vec::new();
    let shape = TableShape::new(700, 9).unwrap();
    let n = local::write_random_table(&path, shape, |written, total| calls.push((written, total))).unwrap();
    assert_eq!(n, 700 * 9);
    assert_eq!(calls, vec![(700 * 9, 700 * 9)]);
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.len(), 700 * 9);
    assert!(bytes.iter().any(|&b| b != 0), "the rows are random, not zeros");

    let table = local::read_table(&path, 9, None).unwrap();
    assert_eq!(table.shape(), shape);
    assert_eq!(table.row(5).unwrap(), &bytes[45..54]);

    let mut rng = ChaCha20Rng::seed_from_u64(3);
    for (backend, row) in [
        (LocalBackend::Lwe(LweBackend::Cpu), 456u64),
        (LocalBackend::NtruPaper, 699),
    ] {
        let run = local::query(&table, row, &backend, &mut rng).unwrap();
        let at = row as usize * 9;
        assert_eq!(run.row, &bytes[at..at + 9], "{backend:?}");
        assert!(run.sizes.query_bytes > 0 && run.sizes.answer_bytes > 0, "{backend:?}");
    }
    let e = local::query(&table, 700, &LocalBackend::default(), &mut rng).unwrap_err();
    assert_eq!(e.to_string(), "row 700 is outside the table of 700 rows");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn truncated_empty_and_oversized_tables_are_refused_with_the_clis_messages() {
    let path = tmp("odd.tbl");
    std::fs::write(&path, [0u8; 10]).unwrap();
    let e = local::read_table(&path, 3, None).unwrap_err();
    assert!(
        matches!(
            e,
            LocalError::NotWholeRows {
                len: 10,
                row_bytes: 3,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        format!(
            "the table {} has 10 bytes, not a whole number of 3-byte rows",
            path.display()
        )
    );

    let e = local::read_table(&path, 5, Some(9)).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("the table {} is larger than 9 bytes, the limit", path.display())
    );
    assert_eq!(local::read_table(&path, 5, Some(10)).unwrap().shape().rows, 2);

    std::fs::write(&path, []).unwrap();
    let e = local::read_table(&path, 5, None).unwrap_err();
    assert_eq!(e.to_string(), format!("the table {} is empty", path.display()));

    let e = local::read_table(&path, 0, None).unwrap_err();
    assert!(matches!(e, LocalError::Pir(_)), "{e:?}");

    let missing = tmp("missing/x.tbl");
    let e = local::read_table(&missing, 5, None).unwrap_err();
    assert!(
        e.to_string()
            .starts_with(&format!("cannot read the table {}: ", missing.display())),
        "{e}"
    );
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_table_file_cannot_be_created_in_a_missing_folder() {
    let path = tmp("no-such-folder/keys.tbl");
    let e = local::write_random_table(&path, TableShape::new(3, 3).unwrap(), |_, _| {}).unwrap_err();
    assert!(
        e.to_string()
            .starts_with(&format!("cannot create {}: ", path.display())),
        "{e}"
    );
}
