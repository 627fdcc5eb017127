use std::os::unix::fs::FileExt;

use proptest::prelude::*;
use strata_codec::{Algorithm, CompressionSpec, Filter};

use super::*;
use crate::StoreError;

/// Deterministic values of `ty` with some structure (runs, ramps, noise), as bytes.
fn sample(ty: ColumnType, n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = Vec::with_capacity(n * ty.width());
    for i in 0..n as i64 {
        let noise = (next() % 16) as i64;
        match ty {
            ColumnType::Boolean => out.push((noise % 2) as u8),
            ColumnType::Byte | ColumnType::Char => out.push(b'A' + (noise % 4) as u8),
            ColumnType::Short => out.extend_from_slice(&((i / 7 + noise) as i16).to_le_bytes()),
            ColumnType::Real => out.extend_from_slice(&((100.0 + (i % 50) as f32 * 0.25) + noise as f32).to_le_bytes()),
            ColumnType::Float => {
                out.extend_from_slice(&(100.0 + (i / 3) as f64 * 0.01 + noise as f64 * 0.01).to_le_bytes())
            }
            ColumnType::Symbol => out.extend_from_slice(&((i / 100 % 40) as u32).to_le_bytes()),
            _ if ty.width() == 4 => out.extend_from_slice(&((i * 3 + noise) as i32).to_le_bytes()),
            _ => out.extend_from_slice(&(1_700_000_000_000_000_000 + i * 1000 + noise).to_le_bytes()),
        }
    }
    out
}

fn specs_for(ty: ColumnType, lbs: u8) -> Vec<CompressionSpec> {
    let mut specs = Vec::new();
    for algorithm in Algorithm::ALL {
        for level in [*algorithm.levels().start(), *algorithm.levels().end()] {
            let spec = CompressionSpec { filters: vec![], algorithm, level, lbs, auto: None };
            if spec.check_suitable(ty.element_kind()).is_ok() {
                specs.push(spec);
            }
        }
    }
    for chain in [
        "delta+zstd:1",
        "dod+shuffle+lz4hc:0",
        "xor+zstd:1",
        "shuffle+gzip:1",
        "delta+pco:4",
        "shuffle+none",
        "dec+delta+shuffle+zstd:1",
        "dec+pco:2",
    ] {
        let mut spec: CompressionSpec = chain.parse().unwrap();
        spec.lbs = lbs;
        if spec.check_suitable(ty.element_kind()).is_ok() {
            specs.push(spec);
        }
    }
    specs
}

#[test]
fn every_type_algorithm_lbs_and_level_edge_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    for ty in ColumnType::ALL {
        // Spans several 4 KiB blocks and ends mid-block.
        let n = 3 * 4096 / ty.width() + 5;
        let raw = sample(ty, n, ty.code() as u64 + 1);
        for lbs in [12, 16, 20] {
            for spec in specs_for(ty, lbs) {
                let path = dir.path().join(format!("{ty}"));
                write_column_file(&path, ty, Attribute::None, &spec, &raw, Durability::Rename).unwrap();
                let file = ColumnFile::open(&path).unwrap();
                assert_eq!((file.ty(), file.len(), file.spec().to_string()), (ty, n, spec.to_string()), "{ty} {spec}");
                assert_eq!(file.all_values().unwrap().as_slice(), &raw[..], "{ty} {spec}");
            }
        }
    }
}

#[test]
fn range_reads_decode_only_the_blocks_they_touch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("time");
    let raw = sample(ColumnType::Timestamp, 10 * 512, 7); // 10 blocks of 512 longs at lbs 12
    write_column_file(
        &path,
        ColumnType::Timestamp,
        Attribute::None,
        &"zstd:1@12".parse().unwrap(),
        &raw,
        Durability::Rename,
    )
    .unwrap();
    let column = CompressedColumn::open(&path).unwrap();
    assert_eq!(column.blocks().len(), 10);
    let got = column.values(600, 700).unwrap(); // rows 600..700 lie in block 1 only
    assert_eq!(got.as_slice(), &raw[600 * 8..700 * 8]);
    assert_eq!(column.blocks_decoded(), 1);
    column.values(511, 513).unwrap(); // straddles blocks 0 and 1
    assert_eq!(column.blocks_decoded(), 3);
    column.values(0, 0).unwrap();
    assert_eq!(column.blocks_decoded(), 3);
}

#[test]
fn block_bounds_are_indexed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("time");
    let values: Vec<u8> = (0..2048i64).flat_map(|v| (v * 10).to_le_bytes()).collect();
    write_column_file(
        &path,
        ColumnType::Long,
        Attribute::Sorted,
        &"pco@12".parse().unwrap(),
        &values,
        Durability::Rename,
    )
    .unwrap();
    let column = CompressedColumn::open(&path).unwrap();
    let bounds: Vec<_> = column.blocks().iter().map(|b| b.bounds.unwrap()).collect();
    assert_eq!(bounds[0], BlockBounds::Signed(0, 5110));
    assert_eq!(bounds[3], BlockBounds::Signed(15360, 20470));
}

#[test]
fn appends_extend_both_kinds_and_keep_the_encoding() {
    let dir = tempfile::tempdir().unwrap();
    for spec in ["none", "delta+zstd:3@12", "qipc@12", "pco:4@12"] {
        let spec: CompressionSpec = spec.parse().unwrap();
        let path = dir.path().join("price");
        let all = sample(ColumnType::Long, 3000, 3);
        let cut1 = 700 * 8;
        let cut2 = 2500 * 8;
        write_column_file(&path, ColumnType::Long, Attribute::None, &spec, &all[..cut1], Durability::Fsync).unwrap();
        append_column_file(&path, &all[cut1..cut2], Durability::Fsync).unwrap();
        append_column_file(&path, &[], Durability::Fsync).unwrap();
        append_column_file(&path, &all[cut2..], Durability::Rename).unwrap();
        let file = ColumnFile::open(&path).unwrap();
        assert_eq!(file.spec(), spec);
        assert_eq!(file.all_values().unwrap().as_slice(), &all[..], "{spec}");
        if let ColumnFile::Plain(p) = &file {
            p.verify().unwrap();
        }
        let err = append_column_file(&path, &[1, 2, 3], Durability::Rename).unwrap_err();
        assert!(err.to_string().contains("not a whole number"), "{err}");
    }
}

#[test]
fn appending_to_an_empty_compressed_file_works() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c");
    let spec: CompressionSpec = "lz4hc:1@12".parse().unwrap();
    write_column_file(&path, ColumnType::Int, Attribute::None, &spec, &[], Durability::Rename).unwrap();
    let raw = sample(ColumnType::Int, 5000, 1);
    append_column_file(&path, &raw, Durability::Rename).unwrap();
    assert_eq!(ColumnFile::open(&path).unwrap().all_values().unwrap().as_slice(), &raw[..]);
}

#[test]
fn converts_in_every_direction() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("size");
    let raw = sample(ColumnType::Int, 40_000, 9);
    write_column_file(&path, ColumnType::Int, Attribute::Sorted, &CompressionSpec::none(), &raw, Durability::Rename)
        .unwrap();
    for spec in ["gzip:9", "shuffle+zstd:-7@14", "snappy", "none", "none", "pco:12"] {
        let spec: CompressionSpec = spec.parse().unwrap();
        let stats = convert_column_file(&path, &spec, Durability::Fsync).unwrap();
        assert_eq!(stats.spec, spec);
        assert_eq!(stats.raw_bytes, raw.len() as u64);
        let file = ColumnFile::open(&path).unwrap();
        assert_eq!(file.attribute(), Attribute::Sorted);
        assert_eq!(file.all_values().unwrap().as_slice(), &raw[..], "{spec}");
        if spec.is_compressed() {
            assert!(stats.ratio() > 1.0, "{spec}: {}", stats.ratio());
        }
    }
}

#[test]
fn a_flipped_byte_in_a_block_fails_its_checksum() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p");
    let raw = sample(ColumnType::Float, 4000, 5);
    write_column_file(
        &path,
        ColumnType::Float,
        Attribute::None,
        &"zstd:1@12".parse().unwrap(),
        &raw,
        Durability::Rename,
    )
    .unwrap();
    let block2 = CompressedColumn::open(&path).unwrap().blocks()[2];
    let f = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
    let mut byte = [0u8; 1];
    f.read_exact_at(&mut byte, block2.offset + 3).unwrap();
    f.write_all_at(&[byte[0] ^ 0x40], block2.offset + 3).unwrap();
    let column = CompressedColumn::open(&path).unwrap();
    column.values(0, 1024).unwrap(); // blocks 0 and 1 are intact
    let err = column.values(0, 4000).unwrap_err();
    assert!(matches!(err, StoreError::Checksum { block: 2, .. }), "{err}");
    assert!(err.to_string().contains("block 2") && err.to_string().contains(path.to_str().unwrap()), "{err}");
}

#[test]
fn a_flipped_byte_in_a_plain_file_fails_verification() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p");
    let raw = sample(ColumnType::Long, 100, 5);
    write_column_file(&path, ColumnType::Long, Attribute::None, &CompressionSpec::none(), &raw, Durability::Rename)
        .unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.write_all_at(&[0xff], 64 + 17).unwrap();
    let ColumnFile::Plain(p) = ColumnFile::open(&path).unwrap() else { panic!("plain") };
    assert!(p.verify().unwrap_err().to_string().contains("checksum"));
}

#[test]
fn truncated_and_foreign_files_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let raw = sample(ColumnType::Long, 3000, 5);
    for spec in ["none", "zstd:1@12"] {
        let path = dir.path().join("t");
        write_column_file(&path, ColumnType::Long, Attribute::None, &spec.parse().unwrap(), &raw, Durability::Rename)
            .unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        for cut in [0, 5, 63, 100, len - 1] {
            let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            f.set_len(cut).unwrap();
            let err = ColumnFile::open(&path).and_then(|f| f.all_values().map(|_| ())).unwrap_err();
            assert!(err.to_string().starts_with(path.to_str().unwrap()), "{spec} cut {cut}: {err}");
        }
    }
    let path = dir.path().join("foreign");
    std::fs::write(&path, b"kxzipped and more bytes").unwrap();
    assert!(ColumnFile::open(&path).err().unwrap().to_string().contains("unknown magic"));
}

#[test]
fn unknown_type_codes_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("u");
    write_column_file(&path, ColumnType::Long, Attribute::None, &CompressionSpec::none(), &[0; 8], Durability::Rename)
        .unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[10] = 99;
    let crc = crc32c::crc32c(&bytes[0..28]);
    bytes[28..32].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let err = ColumnFile::open(&path).err().unwrap().to_string();
    assert!(err.contains("unknown type code 99"), "{err}");
}

#[test]
fn a_torn_append_leaves_the_previous_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c");
    let raw = sample(ColumnType::Long, 2000, 2);
    let spec: CompressionSpec = "delta+zstd:1@12".parse().unwrap();
    write_column_file(&path, ColumnType::Long, Attribute::None, &spec, &raw[..8000], Durability::Rename).unwrap();
    let before = std::fs::metadata(&path).unwrap().len();
    append_column_file(&path, &raw[8000..], Durability::Rename).unwrap();
    let after = std::fs::metadata(&path).unwrap().len();
    // Simulate a crash part-way through the append: cut the new tail anywhere.
    for cut in [before + 1, (before + after) / 2, after - 1] {
        let torn = dir.path().join("torn");
        std::fs::copy(&path, &torn).unwrap();
        std::fs::OpenOptions::new().write(true).open(&torn).unwrap().set_len(cut).unwrap();
        let file = ColumnFile::open(&torn).unwrap();
        assert_eq!(file.all_values().unwrap().as_slice(), &raw[..8000], "cut at {cut}");
        // The next append starts from the last good state.
        append_column_file(&torn, &raw[8000..], Durability::Rename).unwrap();
        assert_eq!(ColumnFile::open(&torn).unwrap().all_values().unwrap().as_slice(), &raw[..]);
    }
}

#[test]
fn plain_values_are_mapped_not_copied() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m");
    let raw = sample(ColumnType::Long, 1000, 2);
    write_column_file(&path, ColumnType::Long, Attribute::None, &CompressionSpec::none(), &raw, Durability::Rename)
        .unwrap();
    let ColumnFile::Plain(p) = ColumnFile::open(&path).unwrap() else { panic!("plain") };
    let a = p.values(0, 1000);
    let b = p.values(10, 20);
    assert_eq!(b.as_ptr() as usize - a.as_ptr() as usize, 80, "both views share one mapping");
    assert_eq!(a.as_ptr() as usize % 64, 0, "values are 64-byte aligned for Arrow");
    let typed: &[i64] = a.typed_data();
    assert_eq!(typed.len(), 1000);
}

#[test]
fn stats_report_like_kdb() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let raw = sample(ColumnType::Timestamp, 100_000, 2);
    write_column_file(
        &path,
        ColumnType::Timestamp,
        Attribute::None,
        &"delta+zstd:1".parse().unwrap(),
        &raw,
        Durability::Rename,
    )
    .unwrap();
    let stats = ColumnFile::open(&path).unwrap().stats(&path);
    assert_eq!(stats.raw_bytes, 800_000);
    assert_eq!(stats.stored_bytes, std::fs::metadata(&path).unwrap().len());
    assert_eq!(stats.spec.filters, vec![Filter::Delta]);
    assert_eq!((stats.algorithm().code(), stats.spec.level, stats.spec.lbs), (5, 1, 17));
    assert_eq!(stats.blocks, 7);
    assert!(stats.ratio() > 3.0, "{}", stats.ratio());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn random_row_ranges_equal_the_plain_data(
        rows in 1usize..6000,
        a in 0usize..6000,
        b in 0usize..6000,
        spec in prop::sample::select(vec!["zstd:1@12", "qipc@12", "pco:2@12", "dod+lz4hc:0@13", "gzip:1@12"]),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let raw = sample(ColumnType::Timestamp, rows, 11);
        let plain = dir.path().join("plain");
        let packed = dir.path().join("packed");
        write_column_file(&plain, ColumnType::Timestamp, Attribute::None, &CompressionSpec::none(), &raw, Durability::Rename).unwrap();
        write_column_file(&packed, ColumnType::Timestamp, Attribute::None, &spec.parse().unwrap(), &raw, Durability::Rename).unwrap();
        let (start, end) = (a.min(b) % (rows + 1), a.max(b).min(rows));
        let start = start.min(end);
        let p = ColumnFile::open(&plain).unwrap().values(start, end).unwrap();
        let c = ColumnFile::open(&packed).unwrap().values(start, end).unwrap();
        prop_assert_eq!(p.as_slice(), c.as_slice());
    }
}

#[test]
fn a_torn_tail_is_found_past_the_scan_window() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big");
    let raw = sample(ColumnType::Long, 300_000, 4);
    let spec: CompressionSpec = "shuffle+none@12".parse().unwrap(); // blocks stored as is: a 2.4 MB file
    write_column_file(&path, ColumnType::Long, Attribute::None, &spec, &raw[..8 * 150_000], Durability::Rename)
        .unwrap();
    let before = std::fs::metadata(&path).unwrap().len();
    append_column_file(&path, &raw[8 * 150_000..], Durability::Rename).unwrap();
    let after = std::fs::metadata(&path).unwrap().len();
    assert!(after - before > 1 << 20, "the torn tail spans more than one scan window");
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(after - 10).unwrap();
    assert_eq!(ColumnFile::open(&path).unwrap().all_values().unwrap().as_slice(), &raw[..8 * 150_000]);
}

#[test]
fn appends_to_columns_with_attributes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let raw = sample(ColumnType::Long, 100, 1);
    write_column_file(&path, ColumnType::Long, Attribute::Sorted, &CompressionSpec::none(), &raw, Durability::Rename)
        .unwrap();
    let err = append_column_file(&path, &raw, Durability::Rename).unwrap_err().to_string();
    assert!(err.contains("sorted attribute") && err.contains(path.to_str().unwrap()), "{err}");
    assert_eq!(ColumnFile::open(&path).unwrap().len(), 100);
}

#[test]
fn appending_to_a_truncated_plain_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p");
    let raw = sample(ColumnType::Long, 100, 1);
    write_column_file(&path, ColumnType::Long, Attribute::None, &CompressionSpec::none(), &raw, Durability::Rename)
        .unwrap();
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(64 + 8 * 50).unwrap();
    let err = append_column_file(&path, &raw, Durability::Rename).unwrap_err().to_string();
    assert!(err.contains("truncated"), "{err}");
}
