//! Byte-exact encodings of the examples in kdb+'s documentation ("Serialization
//! examples", code.kx.com), both ways: our encoder gives kdb+'s bytes and our
//! decoder reads them back to the same value.

use strata_ipc::{Atom, Attribute, K, MessageKind, Table, Vector, encode_message, read_message};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// kdb+'s `-8!` output is an async message (type byte 0), uncompressed.
fn check(value: K, documented: &str) {
    let bytes = hex(documented);
    assert_eq!(encode_message(MessageKind::Async, &value, false), bytes, "encoding {value}");
    let (header, decoded) = read_message(&mut &bytes[..], 1 << 20).unwrap().unwrap();
    assert_eq!(header.kind, MessageKind::Async);
    assert_eq!(decoded, value);
}

fn ints(v: &[i32]) -> K {
    K::vector(Vector::Int(v.to_vec()))
}

#[test]
fn integer_atom() {
    check(K::Atom(Atom::Int(1)), "010000000d000000fa01000000");
}

#[test]
fn integer_vector() {
    check(ints(&[1]), "010000001200000006000100000001000000");
}

#[test]
fn byte_vector() {
    check(K::vector(Vector::Byte(vec![0, 1, 2, 3, 4])), "01000000130000000400050000000001020304");
}

#[test]
fn general_list() {
    check(
        K::List(vec![K::vector(Vector::Byte(vec![0, 1, 2, 3, 4]))]),
        "01000000190000000000010000000400050000000001020304",
    );
}

#[test]
fn long_vector_til_3() {
    check(
        K::vector(Vector::Long(vec![0, 1, 2])),
        "0100000026000000070003000000000000000000000001000000000000000200000000000000",
    );
}

#[test]
fn dictionary_with_atom_values() {
    check(
        K::dict(K::symbols(["a", "b"]), ints(&[2, 3])),
        "0100000021000000630b0002000000610062000600020000000200000003000000",
    );
}

#[test]
fn sorted_dictionary() {
    let value = K::Dict {
        keys: Box::new(K::Vector(Vector::Symbol(vec!["a".into(), "b".into()]), Attribute::Sorted)),
        values: Box::new(ints(&[2, 3])),
        sorted: true,
    };
    check(value, "01000000210000007f0b0102000000610062000600020000000200000003000000");
}

#[test]
fn dictionary_with_vector_values() {
    check(
        K::dict(K::symbols(["a", "b"]), K::List(vec![ints(&[2]), ints(&[3])])),
        "010000002d000000630b0002000000610062000000020000000600010000000200000006000100000003000000",
    );
}

fn table_ab() -> Table {
    Table::new(vec![("a".into(), ints(&[2])), ("b".into(), ints(&[3]))]).unwrap()
}

#[test]
fn table() {
    check(
        K::Table(table_ab()),
        "010000002f0000006200630b0002000000610062000000020000000600010000000200000006000100000003000000",
    );
}

#[test]
fn sorted_table() {
    let t = Table::from_parts(
        vec!["a".into(), "b".into()],
        vec![K::Vector(Vector::Int(vec![2]), Attribute::Parted), ints(&[3])],
        true,
    )
    .unwrap();
    check(
        K::Table(t),
        "010000002f0000006201630b0002000000610062000000020000000603010000000200000006000100000003000000",
    );
}

#[test]
fn keyed_table() {
    let keys = Table::new(vec![("a".into(), ints(&[2]))]).unwrap();
    let values = Table::new(vec![("b".into(), ints(&[3]))]).unwrap();
    check(
        K::dict(K::Table(keys), K::Table(values)),
        "010000003f000000636200630b00010000006100000001000000060001000000020000006200630b0001000000620000000100000006000100000003000000",
    );
}

#[test]
fn lambdas() {
    check(K::Lambda { context: String::new(), body: "{x+y}".into() }, "010000001500000064000a00050000007b782b797d");
    check(K::Lambda { context: "d".into(), body: "{x+y}".into() }, "01000000160000006464000a00050000007b782b797d");
}
