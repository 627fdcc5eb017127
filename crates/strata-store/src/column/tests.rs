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
    reseal_v2_header(&mut bytes);
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

/// Rewrites a version 2 header's checksum (bytes 0..28 then 32..64) after an edit.
fn reseal_v2_header(bytes: &mut [u8]) {
    let crc = crc32c::crc32c_append(crc32c::crc32c(&bytes[0..28]), &bytes[32..64]);
    bytes[28..32].copy_from_slice(&crc.to_le_bytes());
}

/// Longs with a kdb+ null (`0N`) at every row that is a multiple of `every`.
fn longs_with_nulls(n: usize, every: usize) -> Vec<u8> {
    (0..n as i64).flat_map(|i| if (i as usize).is_multiple_of(every) { i64::MIN } else { i }.to_le_bytes()).collect()
}

#[test]
fn plain_files_record_null_counts_and_appends_keep_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x");
    let none = CompressionSpec::none();
    write_column_file(&path, ColumnType::Long, Attribute::None, &none, &longs_with_nulls(10, 5), Durability::Rename)
        .unwrap();
    let header = |path: &Path| match ColumnFile::open(path).unwrap() {
        ColumnFile::Plain(p) => *p.header(),
        ColumnFile::Compressed(_) => panic!("plain"),
    };
    assert_eq!((header(&path).nulls, header(&path).version), (Some(2), 2));
    append_column_file(&path, &longs_with_nulls(3, 1), Durability::Rename).unwrap();
    assert_eq!(header(&path).nulls, Some(5));
    let file = ColumnFile::open(&path).unwrap();
    assert!(file.may_hold_nulls(0, 13) && file.may_hold_nulls(1, 2), "the count is per file");
    assert!(!file.may_hold_nulls(4, 4), "an empty range holds nothing");

    let clean = dir.path().join("clean");
    write_column_file(&clean, ColumnType::Float, Attribute::None, &none, &1.5f64.to_le_bytes(), Durability::Rename)
        .unwrap();
    assert_eq!(header(&clean).nulls, Some(0));
    assert!(!ColumnFile::open(&clean).unwrap().may_hold_nulls(0, 1));
    let symbols = dir.path().join("s");
    write_column_file(&symbols, ColumnType::Symbol, Attribute::None, &none, &[0; 8], Durability::Rename).unwrap();
    assert_eq!(header(&symbols).nulls, None, "a symbol's null depends on the sym file");
    assert!(ColumnFile::open(&symbols).unwrap().may_hold_nulls(0, 2));

    // The count is covered by the header checksum: a flipped bit in it is caught.
    let mut bytes = std::fs::read(&clean).unwrap();
    bytes[32] ^= 1;
    std::fs::write(&clean, &bytes).unwrap();
    let err = ColumnFile::open(&clean).err().unwrap().to_string();
    assert!(err.contains("header checksum"), "{err}");
    // A count above the value count is refused even with a valid checksum.
    bytes[32..40].copy_from_slice(&2u64.to_le_bytes());
    reseal_v2_header(&mut bytes);
    std::fs::write(&clean, &bytes).unwrap();
    let err = ColumnFile::open(&clean).err().unwrap().to_string();
    assert!(err.contains("records 2 nulls among 1 values"), "{err}");
}

#[test]
fn version_1_plain_files_read_without_a_null_count_and_stay_version_1() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old");
    let values = longs_with_nulls(8, 4);
    write_column_file(&path, ColumnType::Long, Attribute::None, &CompressionSpec::none(), &values, Durability::Rename)
        .unwrap();
    // The header as the first builds wrote it: version 1, zeros past byte 32, the
    // checksum over bytes 0..28 only.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[8..10].copy_from_slice(&1u16.to_le_bytes());
    bytes[32..64].fill(0);
    let crc = crc32c::crc32c(&bytes[0..28]);
    bytes[28..32].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();

    let ColumnFile::Plain(plain) = ColumnFile::open_checked(&path, true).unwrap() else { panic!("plain") };
    assert_eq!((plain.header().version, plain.header().nulls), (1, None));
    assert_eq!(plain.values(0, 8).as_slice(), values.as_slice());
    assert!(plain.may_hold_nulls(0, 8), "no count: readers look");
    drop(plain);
    append_column_file(&path, &longs_with_nulls(2, 1), Durability::Rename).unwrap();
    let ColumnFile::Plain(plain) = ColumnFile::open_checked(&path, true).unwrap() else { panic!("plain") };
    assert_eq!((plain.header().version, plain.header().nulls, plain.header().count), (1, None, 10));

    // A version this build does not know is refused by name.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[8..10].copy_from_slice(&3u16.to_le_bytes());
    reseal_v2_header(&mut bytes);
    std::fs::write(&path, &bytes).unwrap();
    let err = ColumnFile::open(&path).err().unwrap().to_string();
    assert!(err.contains("format version 3, this build reads versions 1 to 2"), "{err}");
}

#[test]
fn compressed_blocks_record_null_counts_and_entries_without_one_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z");
    // 512 longs per 4 KiB block; nulls only in the first block.
    let mut values = longs_with_nulls(600, 1_000);
    values.extend(longs_with_nulls(600, 1_000)[8..].iter());
    let spec: CompressionSpec = "zstd:1@12".parse().unwrap();
    write_column_file(&path, ColumnType::Long, Attribute::None, &spec, &values, Durability::Rename).unwrap();
    let column = CompressedColumn::open(&path).unwrap();
    let counts: Vec<Option<u32>> = column.blocks().iter().map(|b| b.nulls).collect();
    assert_eq!(counts, [Some(1), Some(0), Some(0)]);
    assert!(column.may_hold_nulls(0, 1) && column.may_hold_nulls(500, 520));
    assert!(!column.may_hold_nulls(512, 1199), "blocks 1 and 2 record none");
    append_column_file(&path, &longs_with_nulls(600, 300), Durability::Rename).unwrap();
    let column = CompressedColumn::open(&path).unwrap();
    let counts: Vec<Option<u32>> = column.blocks().iter().map(|b| b.nulls).collect();
    assert_eq!(counts, [Some(1), Some(0), Some(2), Some(0)], "the re-encoded tail block is counted again");
    assert!(column.may_hold_nulls(1199, 1200));

    // An index as the first builds wrote it: flag 4 clear, zero bytes where the count
    // goes. Blocks then have no count and readers look.
    let mut bytes = std::fs::read(&path).unwrap();
    let len = bytes.len();
    let trailer = len - 48;
    let index_at = u64::from_le_bytes(bytes[trailer + 16..trailer + 24].try_into().unwrap()) as usize;
    for entry in bytes[index_at..trailer].chunks_exact_mut(40) {
        entry[20] &= !4;
        entry[21..24].fill(0);
    }
    let index_crc = crc32c::crc32c(&bytes[index_at..trailer]);
    bytes[trailer + 32..trailer + 36].copy_from_slice(&index_crc.to_le_bytes());
    let trailer_crc = crc32c::crc32c(&bytes[trailer..trailer + 36]);
    bytes[trailer + 36..trailer + 40].copy_from_slice(&trailer_crc.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let column = CompressedColumn::open(&path).unwrap();
    assert!(column.blocks().iter().all(|b| b.nulls.is_none() && b.bounds.is_some()));
    assert!(column.may_hold_nulls(512, 1199));
    assert_eq!(column.values(0, 1799).unwrap().len(), 1799 * 8);
}
