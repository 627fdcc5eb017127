//! Property tests: any q value survives encode then decode, with and without IPC
//! compression; truncated or corrupted messages are errors, never panics.

use proptest::prelude::*;
use strata_ipc::frame::{compress_message, decode_body};
use strata_ipc::view::{to_value, view};
use strata_ipc::{
    Atom, Header, K, MessageKind, Table, Vector, decode, encode_message, encoded_len, read_message, to_bytes,
};

fn symbol() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_.]{0,8}"
}

fn vector() -> impl Strategy<Value = Vector> {
    let n = 0..40usize;
    prop_oneof![
        prop::collection::vec(any::<bool>(), n.clone()).prop_map(Vector::Boolean),
        prop::collection::vec(any::<[u8; 16]>(), 0..4).prop_map(Vector::Guid),
        prop::collection::vec(any::<u8>(), n.clone()).prop_map(Vector::Byte),
        prop::collection::vec(any::<i16>(), n.clone()).prop_map(Vector::Short),
        prop::collection::vec(any::<i32>(), n.clone()).prop_map(Vector::Int),
        prop::collection::vec(any::<i64>(), n.clone()).prop_map(Vector::Long),
        prop::collection::vec(-1e6f32..1e6, n.clone()).prop_map(Vector::Real),
        prop::collection::vec(-1e12f64..1e12, n.clone()).prop_map(Vector::Float),
        prop::collection::vec(any::<u8>(), n.clone()).prop_map(Vector::Char),
        prop::collection::vec(symbol(), 0..10).prop_map(Vector::Symbol),
        prop::collection::vec(any::<i64>(), n.clone()).prop_map(Vector::Timestamp),
        prop::collection::vec(any::<i32>(), n.clone()).prop_map(Vector::Month),
        prop::collection::vec(any::<i32>(), n.clone()).prop_map(Vector::Date),
        prop::collection::vec(-1e5f64..1e5, n.clone()).prop_map(Vector::Datetime),
        prop::collection::vec(any::<i64>(), n.clone()).prop_map(Vector::Timespan),
        prop::collection::vec(any::<i32>(), n.clone()).prop_map(Vector::Minute),
        prop::collection::vec(any::<i32>(), n.clone()).prop_map(Vector::Second),
        prop::collection::vec(any::<i32>(), n).prop_map(Vector::Time),
    ]
}

fn atom() -> impl Strategy<Value = Atom> {
    prop_oneof![
        any::<bool>().prop_map(Atom::Boolean),
        any::<i64>().prop_map(Atom::Long),
        any::<i32>().prop_map(Atom::Int),
        (-1e9f64..1e9).prop_map(Atom::Float),
        symbol().prop_map(Atom::Symbol),
        any::<i64>().prop_map(Atom::Timestamp),
        any::<u8>().prop_map(Atom::Char),
        any::<[u8; 16]>().prop_map(Atom::Guid),
    ]
}

fn value() -> impl Strategy<Value = K> {
    let leaf = prop_oneof![
        atom().prop_map(K::Atom),
        vector().prop_map(K::vector),
        Just(K::Identity),
        "[a-z]{1,10}".prop_map(K::Error),
    ];
    leaf.prop_recursive(4, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(K::List),
            prop::collection::vec(inner.clone(), 0..6).prop_map(|items| {
                let keys = K::symbols((0..items.len()).map(|i| format!("k{i}")));
                K::dict(keys, K::List(items))
            }),
            (1..5usize, 0..6usize).prop_map(|(cols, rows)| {
                let columns = (0..cols)
                    .map(|c| {
                        (format!("c{c}"), K::vector(Vector::Long((0..rows as i64).map(|r| r * c as i64).collect())))
                    })
                    .collect();
                K::Table(Table::new(columns).unwrap())
            }),
        ]
    })
}

proptest! {
    #[test]
    fn views_accept_exactly_what_decode_accepts(
        v in value(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..3),
    ) {
        let mut bytes = to_bytes(&v);
        for (at, byte) in flips {
            let at = at.index(bytes.len());
            bytes[at] = byte;
        }
        match (decode(&bytes, false), view(&bytes)) {
            (Ok(decoded), Ok(viewed)) => {
                prop_assert_eq!(viewed.count(), decoded.count());
                prop_assert_eq!(to_bytes(&to_value(&viewed).unwrap()), to_bytes(&decoded));
            }
            (Err(by_decode), Err(by_view)) => prop_assert_eq!(by_view.to_string(), by_decode.to_string()),
            (decoded, viewed) => prop_assert!(false, "decode {:?} but view {:?}", decoded, viewed),
        }
    }

    #[test]
    fn values_round_trip(v in value()) {
        let bytes = to_bytes(&v);
        prop_assert_eq!(bytes.len(), encoded_len(&v), "the size reserved is the size written");
        prop_assert_eq!(decode(&bytes, false).unwrap(), v);
    }

    #[test]
    fn messages_round_trip_compressed_or_not(v in value(), repeat in 1usize..60) {
        // Repeating a value makes messages big and compressible enough to compress.
        let list = K::List(vec![v; repeat]);
        for compress in [false, true] {
            let bytes = encode_message(MessageKind::Sync, &list, compress);
            let (_, back) = read_message(&mut &bytes[..], 1 << 24).unwrap().unwrap();
            prop_assert_eq!(&back, &list);
        }
    }

    #[test]
    fn truncation_is_an_error(v in value(), cut in 0.0f64..1.0) {
        let bytes = to_bytes(&v);
        let at = (bytes.len() as f64 * cut) as usize;
        if at < bytes.len() {
            prop_assert!(decode(&bytes[..at], false).is_err());
        }
    }

    #[test]
    fn garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = decode(&bytes, false);
        let _ = decode(&bytes, true);
        let _ = read_message(&mut &bytes[..], 1 << 16);
    }
}

#[test]
fn big_endian_messages_decode() {
    // `0x00` byte order: the same int vector as kdb+'s documented example, big-endian.
    let bytes = [0u8, 0, 0, 0, 0, 0, 0, 18, 6, 0, 0, 0, 0, 1, 0, 0, 0, 1];
    let (header, value) = read_message(&mut &bytes[..], 1 << 20).unwrap().unwrap();
    assert!(header.big_endian);
    assert_eq!(value, K::vector(Vector::Int(vec![1])));
}

#[test]
fn compression_follows_kdb_rules() {
    let big = K::vector(Vector::Long(vec![7; 1000]));
    let local = encode_message(MessageKind::Async, &big, false);
    let remote = encode_message(MessageKind::Async, &big, true);
    assert_eq!(local[2], 0);
    assert_eq!(remote[2], 1, "over 2000 bytes to a remote peer: compressed");
    assert!(remote.len() < local.len() / 2);
    assert_eq!(u32::from_le_bytes(remote[8..12].try_into().unwrap()) as usize, local.len(), "uncompressed total");
    let small = K::vector(Vector::Long(vec![7; 100]));
    assert_eq!(encode_message(MessageKind::Async, &small, true)[2], 0, "under 2000 bytes: never");
    let noise: Vec<i64> = (0..1000u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) as i64).collect();
    assert_eq!(encode_message(MessageKind::Async, &K::vector(Vector::Long(noise)), true)[2], 0, "must halve");
    assert!(compress_message(&local).is_some());
}

#[test]
fn bad_headers_and_bombs_are_refused() {
    let mut bytes = encode_message(MessageKind::Async, &K::vector(Vector::Long(vec![7; 1000])), true);
    // Claim a huge uncompressed size: refused before allocating.
    bytes[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    let header = Header::parse(bytes[..8].try_into().unwrap()).unwrap();
    let err = decode_body(&header, &bytes[8..], 1 << 20).unwrap_err();
    assert!(err.to_string().contains("uncompressed"), "{err}");
    let err = Header::parse(&[1, 7, 0, 0, 20, 0, 0, 0]).unwrap_err();
    assert!(err.to_string().contains("message type 7"), "{err}");
    let err = read_message(&mut &[1u8, 0, 0, 0, 0, 0, 1, 0][..], 1 << 10).unwrap_err();
    assert!(err.to_string().contains("exceeds the limit"), "{err}");
    let err = decode(&[0, 0, 0xff, 0xff, 0xff, 0x7f], false).unwrap_err();
    assert!(err.to_string().contains("list count"), "{err}");
}

#[test]
fn deep_nesting_is_refused_not_a_stack_overflow() {
    let mut bytes = Vec::new();
    for _ in 0..10_000 {
        bytes.extend_from_slice(&[0, 0, 1, 0, 0, 0]);
    }
    bytes.extend_from_slice(&[0x65, 0]);
    let err = decode(&bytes, false).unwrap_err();
    assert!(err.to_string().contains("deeper than"), "{err}");
}
