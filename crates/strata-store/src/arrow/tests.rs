//! Round trips, zero-copy, unit scaling and null mapping between columns and Arrow.

use arrow_array::cast::AsArray;
use arrow_array::{
    Date32Array, Date64Array, Decimal128Array, DurationMicrosecondArray, DurationNanosecondArray, Float32Array,
    Float64Array, Int8Array, Int16Array, Int32Array, Int64Array, NullArray, Time32MillisecondArray, Time32SecondArray,
    Time64MicrosecondArray, Time64NanosecondArray, TimestampMillisecondArray, TimestampNanosecondArray,
    TimestampSecondArray, UInt8Array, UInt16Array, UInt32Array, UInt64Array,
};

use super::*;

/// One column of every type, each with a kdb+ null or an edge value.
pub(crate) fn sample_columns() -> Vec<(String, Column)> {
    fn fixed<T: arrow_buffer::ArrowNativeType>(ty: ColumnType, values: Vec<T>) -> (String, Column) {
        (ty.name().to_string(), Column::from_values(ty, values).unwrap())
    }
    vec![
        fixed(ColumnType::Boolean, vec![1u8, 0, 1]),
        fixed(ColumnType::Byte, vec![0u8, 255, 7]),
        fixed(ColumnType::Short, vec![1i16, -2, i16::MIN]),
        fixed(ColumnType::Int, vec![5i32, i32::MIN, -7]),
        fixed(ColumnType::Long, vec![i64::MAX, i64::MIN, 0]),
        fixed(ColumnType::Real, vec![1.5f32, f32::NAN, -0.25]),
        fixed(ColumnType::Float, vec![0.1f64, f64::NAN, 1e300]),
        fixed(ColumnType::Char, vec![b'a', b' ', b'Z']),
        ("symbol".into(), Column::from_symbols(["IBM", "", "IBM"])),
        fixed(ColumnType::Timestamp, vec![1_704_187_800_123_456_789i64, i64::MIN, -1]),
        fixed(ColumnType::Month, vec![648i32, i32::MIN, -1]),
        fixed(ColumnType::Date, vec![19_724i32, i32::MIN, -1]),
        fixed(ColumnType::Timespan, vec![1i64, i64::MIN, -86_401_000_000_001]),
        fixed(ColumnType::Minute, vec![570i32, i32::MIN, 1439]),
        fixed(ColumnType::Second, vec![34_200i32, i32::MIN, 0]),
        fixed(ColumnType::Time, vec![34_200_123i32, i32::MIN, 0]),
        ("string".into(), Column::from_strings(["hello, \"world\"", "", "two\nlines"])),
    ]
}

/// A table of [`sample_columns`]: every column type.
pub(crate) fn sample_table() -> Table {
    Table::new(sample_columns()).unwrap()
}

#[test]
fn every_type_round_trips_through_arrow() {
    let columns = sample_columns();
    assert_eq!(columns.len(), ColumnType::ALL.len(), "every type is sampled");
    for (name, column) in columns {
        let ty = column.ty();
        for column in [column.clone(), column.slice(0, 0), column.slice(1, 2)] {
            let array = column_to_arrow(&column);
            assert_eq!(array.data_type(), &ty.arrow_type());
            assert_eq!(array.len(), column.len());
            assert_eq!(column_from_arrow(&name, array.as_ref(), Some(ty)).unwrap(), column, "{ty}");
            if natural_type(array.data_type()) == Some(ty) {
                assert_eq!(column_from_arrow(&name, array.as_ref(), None).unwrap(), column, "{ty} untyped");
            }
        }
    }
}

#[test]
fn tables_round_trip_through_record_batches_with_their_types() {
    let table = sample_table();
    let batch = table_to_record_batch(&table).unwrap();
    let minute = batch.schema().field_with_name("minute").unwrap().clone();
    assert_eq!(minute.data_type(), &DataType::Int32);
    assert_eq!(minute.metadata().get(TYPE_METADATA_KEY).map(String::as_str), Some("minute"));
    assert_eq!(table_from_record_batches(&batch.schema(), std::slice::from_ref(&batch), &[]).unwrap(), table);

    // Without the metadata, types fall back to the natural ones of the Arrow types.
    let bare: Vec<Field> =
        batch.schema().fields().iter().map(|f| f.as_ref().clone().with_metadata(HashMap::new())).collect();
    let bare = Arc::new(Schema::new(bare));
    let back = table_from_record_batches(&bare, &[batch], &[]).unwrap();
    let types: Vec<ColumnType> = back.columns().iter().map(Column::ty).collect();
    assert_eq!(types[10], ColumnType::Int, "month is Int32");
    assert_eq!(types[13], ColumnType::Int, "minute is Int32");
    assert_eq!(types[16], ColumnType::Symbol, "LargeUtf8 is a symbol by default");
    assert_eq!(types[7], ColumnType::Char);

    let empty = Table::new(vec![]).unwrap();
    let batch = table_to_record_batch(&empty).unwrap();
    assert_eq!(table_from_record_batches(&batch.schema(), &[batch], &[]).unwrap(), empty);
}

#[test]
fn long_string_and_symbol_columns_cross_without_a_copy() {
    let long = Column::from_values(ColumnType::Long, vec![1i64, 2, 3]).unwrap();
    let array = column_to_arrow(&long);
    assert_eq!(array.as_primitive::<Int64Type>().values().inner().as_ptr(), long.values_buffer().as_ptr());
    let back = column_from_arrow("x", array.as_ref(), None).unwrap();
    assert_eq!(back.values_buffer().as_ptr(), long.values_buffer().as_ptr());

    let strings = Column::from_strings(["a", "bb", ""]);
    let array = column_to_arrow(&strings);
    let large = array.as_string::<i64>();
    assert_eq!(large.values().as_ptr(), strings.values_buffer().as_ptr());
    assert_eq!(large.offsets().inner().inner().as_ptr(), strings.offsets_buffer().unwrap().as_ptr());
    let back = column_from_arrow("s", array.as_ref(), Some(ColumnType::String)).unwrap();
    assert_eq!(back.values_buffer().as_ptr(), strings.values_buffer().as_ptr());
    assert_eq!(back.offsets_buffer().unwrap().as_ptr(), strings.offsets_buffer().unwrap().as_ptr());

    let symbols = Column::from_symbols(["a", "b", "a"]);
    let array = column_to_arrow(&symbols);
    let keys = array.as_dictionary::<UInt32Type>().keys().values().inner().as_ptr();
    assert_eq!(keys, symbols.values_buffer().as_ptr());
    let back = column_from_arrow("s", array.as_ref(), None).unwrap();
    assert_eq!(back.values_buffer().as_ptr(), symbols.values_buffer().as_ptr());
    assert_eq!(back, symbols);
}

#[test]
fn arrow_nulls_become_kdb_nulls() {
    let col = |array: &dyn Array, ty: Option<ColumnType>| column_from_arrow("c", array, ty).unwrap();
    assert_eq!(col(&Int64Array::from(vec![Some(1), None]), None).values::<i64>(), [1, i64::MIN]);
    assert_eq!(col(&Int32Array::from(vec![None, Some(2)]), None).values::<i32>(), [i32::MIN, 2]);
    assert_eq!(col(&Int16Array::from(vec![None]), None).values::<i16>(), [i16::MIN]);
    assert_eq!(col(&Int8Array::from(vec![None]), None).values::<i16>(), [i16::MIN]);
    assert_eq!(col(&Date32Array::from(vec![None]), None).values::<i32>(), [i32::MIN]);
    assert_eq!(col(&Time32SecondArray::from(vec![None]), None).values::<i32>(), [i32::MIN]);
    assert_eq!(col(&TimestampMillisecondArray::from(vec![None]), None).values::<i64>(), [i64::MIN]);
    assert_eq!(col(&DurationNanosecondArray::from(vec![None, Some(4)]), None).values::<i64>(), [i64::MIN, 4]);
    assert!(col(&Float64Array::from(vec![None]), None).values::<f64>()[0].is_nan());
    assert!(col(&Float32Array::from(vec![None]), None).values::<f32>()[0].is_nan());
    let text = StringArray::from(vec![Some("a"), None]);
    let symbols = col(&text, None);
    assert_eq!((symbols.symbol(0), symbols.symbol(1)), ("a", ""));
    assert_eq!(col(&text, Some(ColumnType::String)).string(1), "");
    assert_eq!(col(&text, Some(ColumnType::Char)).values::<u8>(), b"a ");
    let numbers = StringArray::from(vec![Some("7"), None, Some(" ")]);
    assert_eq!(col(&numbers, Some(ColumnType::Long)).values::<i64>(), [7, i64::MIN, i64::MIN], "blank is null");
    let chars = FixedSizeBinaryArray::try_from_sparse_iter_with_size([Some(b"x"), None].into_iter(), 1).unwrap();
    assert_eq!(col(&chars, None).values::<u8>(), b"x ");
    let dictionary: DictionaryArray<UInt32Type> = vec![Some("a"), None, Some("a")].into_iter().collect();
    let symbols = col(&dictionary, None);
    assert_eq!((0..3).map(|i| symbols.symbol(i)).collect::<Vec<_>>(), ["a", "", "a"]);
    let nothing = col(&NullArray::new(2), Some(ColumnType::Timestamp));
    assert_eq!(nothing.values::<i64>(), [i64::MIN, i64::MIN]);
    assert_eq!(col(&NullArray::new(1), None).symbol(0), "");
}

#[test]
fn booleans_and_bytes_refuse_nulls_naming_column_and_row() {
    let err = |array: &dyn Array, ty: Option<ColumnType>| column_from_arrow("flag", array, ty).unwrap_err().to_string();
    for e in [
        err(&BooleanArray::from(vec![Some(true), None]), None),
        err(&UInt8Array::from(vec![Some(3), None]), None),
        err(&Int64Array::from(vec![Some(1), None]), Some(ColumnType::Boolean)),
        err(&StringArray::from(vec![Some("1"), Some(" ")]), Some(ColumnType::Byte)),
        err(&StringArray::from(vec![Some("true"), None]), Some(ColumnType::Boolean)),
    ] {
        assert!(e.contains("column flag") && e.contains("row 1") && e.contains("has no null"), "{e}");
    }
    let e = err(&NullArray::new(2), Some(ColumnType::Boolean));
    assert!(e.contains("row 0") && e.contains("boolean column has no null"), "{e}");
    assert_eq!(column_from_arrow("b", &NullArray::new(0), Some(ColumnType::Byte)).unwrap().len(), 0);
}

#[test]
fn kdb_nulls_become_arrow_nulls_and_come_back_without_a_copy() {
    for (name, column) in sample_columns() {
        let array = column_to_arrow(&column);
        let expected = usize::from(column.ty().has_null());
        assert_eq!(array.null_count(), expected, "{name}: each sample with a null type holds one");
        let back = column_from_arrow(&name, array.as_ref(), Some(column.ty())).unwrap();
        assert_eq!(back, column);
        if column.ty() != ColumnType::Boolean {
            assert_eq!(back.values_buffer().as_ptr(), column.values_buffer().as_ptr(), "{name}: shared");
        }
    }
    let batch = table_to_record_batch(&sample_table()).unwrap();
    let nullable: Vec<bool> = batch.schema().fields().iter().map(|f| f.is_nullable()).collect();
    assert_eq!(&nullable[..3], [false, false, true], "booleans and bytes have no null");
    // A NaN other than Rust's (kdb+'s 0n is 0xFFF8...) is null too.
    let kdb_nan = Column::from_values(ColumnType::Float, vec![f64::from_bits(0xFFF8_0000_0000_0000), 1.0]).unwrap();
    assert!(column_to_arrow(&kdb_nan).is_null(0));
}

#[test]
fn arrow_units_scale_to_strata_units() {
    let col = |array: &dyn Array, ty: Option<ColumnType>| column_from_arrow("c", array, ty).unwrap();
    let zoned = TimestampMillisecondArray::from(vec![1_000, -1]).with_timezone("America/New_York");
    assert_eq!(col(&zoned, None).values::<i64>(), [1_000_000_000, -1_000_000]);
    assert_eq!(col(&TimestampSecondArray::from(vec![-1]), None).values::<i64>(), [-1_000_000_000]);
    let day = 86_400_000_000_000i64;
    let instants = TimestampNanosecondArray::from(vec![3 * day + 5, -1]);
    assert_eq!(col(&instants, Some(ColumnType::Date)).values::<i32>(), [3, -1], "floored to the day");
    assert_eq!(col(&Date64Array::from(vec![3 * 86_400_000 + 5, -1]), None).values::<i32>(), [3, -1]);
    assert_eq!(col(&Date32Array::from(vec![31, -1]), Some(ColumnType::Month)).values::<i32>(), [1, -1]);
    assert_eq!(col(&Date32Array::from(vec![1]), Some(ColumnType::Timestamp)).values::<i64>(), [day]);
    assert_eq!(col(&DurationMicrosecondArray::from(vec![5]), None).values::<i64>(), [5_000]);
    let seconds = Time32SecondArray::from(vec![34_200]);
    let second = col(&seconds, None);
    assert_eq!((second.ty(), second.values::<i32>()), (ColumnType::Second, &[34_200][..]));
    assert_eq!(col(&seconds, Some(ColumnType::Time)).values::<i32>(), [34_200_000]);
    assert_eq!(col(&seconds, Some(ColumnType::Minute)).values::<i32>(), [570]);
    assert_eq!(col(&Time32MillisecondArray::from(vec![7]), None).values::<i32>(), [7]);
    let nanos = Time64NanosecondArray::from(vec![34_200_123_999_999]);
    assert_eq!(col(&nanos, None).values::<i32>(), [34_200_123], "time in ms, truncated");
    assert_eq!(col(&nanos, Some(ColumnType::Timespan)).values::<i64>(), [34_200_123_999_999]);
    assert_eq!(col(&Time64MicrosecondArray::from(vec![5]), Some(ColumnType::Timespan)).values::<i64>(), [5_000]);
    assert_eq!(col(&Int8Array::from(vec![-5]), None).values::<i16>(), [-5]);
    assert_eq!(col(&UInt16Array::from(vec![65_535]), None).values::<i32>(), [65_535]);
    assert_eq!(col(&UInt32Array::from(vec![u32::MAX]), None).values::<i64>(), [u32::MAX as i64]);
    assert_eq!(col(&UInt64Array::from(vec![7]), None).values::<i64>(), [7]);
}

#[test]
fn wanted_types_convert_where_sensible_and_say_why_not() {
    let col = |array: &dyn Array, ty: ColumnType| column_from_arrow("c", array, Some(ty));
    let ints = Int32Array::from(vec![1, 2]);
    for ty in [ColumnType::Minute, ColumnType::Month, ColumnType::Date, ColumnType::Second, ColumnType::Time] {
        assert_eq!(col(&ints, ty).unwrap(), Column::from_values(ty, vec![1i32, 2]).unwrap());
    }
    let longs = Int64Array::from(vec![1, 2]);
    for ty in [ColumnType::Timestamp, ColumnType::Timespan] {
        assert_eq!(col(&longs, ty).unwrap(), Column::from_values(ty, vec![1i64, 2]).unwrap());
    }
    assert_eq!(col(&longs, ColumnType::Float).unwrap().values::<f64>(), [1.0, 2.0]);
    assert_eq!(col(&StringArray::from(vec!["09:30"]), ColumnType::Minute).unwrap().values::<i32>(), [570]);
    assert_eq!(col(&StringArray::from(vec!["x", "y"]), ColumnType::Char).unwrap().values::<u8>(), b"xy");

    let err = |r: Result<Column>| r.unwrap_err().to_string();
    let e = err(col(&StringArray::from(vec!["x", "ab"]), ColumnType::Char));
    assert!(
        e.contains("column c") && e.contains("row 1") && e.contains("\"ab\"") && e.contains("single character"),
        "{e}"
    );
    let e = err(col(&Int64Array::from(vec![1, 1 << 40]), ColumnType::Int));
    assert!(e.contains("row 1") && e.contains("1099511627776") && e.contains("does not fit a int"), "{e}");
    let e = err(col(&Float64Array::from(vec![1.0]), ColumnType::Symbol));
    assert!(e.contains("column c") && e.contains("Float64") && e.contains("symbol"), "{e}");
    let e = err(column_from_arrow("qty", &UInt64Array::from(vec![1, u64::MAX]), None));
    assert!(e.contains("column qty") && e.contains("row 1") && e.contains(&u64::MAX.to_string()), "{e}");
    let decimals = Decimal128Array::from(vec![1]);
    let e = err(column_from_arrow("d", &decimals, None));
    assert!(e.contains("column d") && e.contains("Decimal128") && e.contains("no Strata column type"), "{e}");
    let e = err(col(&StringArray::from(vec!["2024-01-02", "soon"]), ColumnType::Timestamp));
    assert!(e.contains("row 1") && e.contains("\"soon\"") && e.contains("is not a timestamp"), "{e}");
}

#[test]
fn batches_concatenate_and_overrides_win_over_metadata() {
    let minute = HashMap::from([(TYPE_METADATA_KEY.to_string(), "minute".to_string())]);
    let schema = Arc::new(Schema::new(vec![
        Field::new("sym", DataType::Utf8, true),
        Field::new("t", DataType::Int32, false).with_metadata(minute),
    ]));
    let batch = |syms: Vec<&str>, ts: Vec<i32>| {
        let columns: Vec<ArrayRef> = vec![Arc::new(StringArray::from(syms)), Arc::new(Int32Array::from(ts))];
        RecordBatch::try_new(schema.clone(), columns).unwrap()
    };
    let batches = [batch(vec!["a", "b"], vec![1, 2]), batch(vec!["c", "a"], vec![3, 4]), batch(vec![], vec![])];
    let table = table_from_record_batches(&schema, &batches, &[]).unwrap();
    let sym = table.column("sym").unwrap();
    assert_eq!((0..4).map(|i| sym.symbol(i)).collect::<Vec<_>>(), ["a", "b", "c", "a"]);
    assert_eq!(sym.domain().unwrap().len(), 3, "the merged domain has each symbol once");
    assert_eq!(table.column("t").unwrap(), &Column::from_values(ColumnType::Minute, vec![1i32, 2, 3, 4]).unwrap());

    let overridden = table_from_record_batches(&schema, &batches, &[("t".into(), ColumnType::Int)]).unwrap();
    assert_eq!(overridden.column("t").unwrap().ty(), ColumnType::Int);
    let e = table_from_record_batches(&schema, &batches, &[("nope".into(), ColumnType::Int)]).unwrap_err().to_string();
    assert!(e.contains("nope") && e.contains("sym, t"), "{e}");

    let empty = table_from_record_batches(&schema, &[], &[]).unwrap();
    assert_eq!((empty.len(), empty.column("t").unwrap().ty()), (0, ColumnType::Minute));

    let bad = [batch(vec!["a"], vec![1]), batch(vec!["b", "cc"], vec![2, 3])];
    let e = table_from_record_batches(&schema, &bad, &[("sym".into(), ColumnType::Char)]).unwrap_err().to_string();
    assert!(e.contains("column sym") && e.contains("row 2") && e.contains("\"cc\""), "rows count across batches: {e}");
}

#[test]
fn sliced_arrays_convert_their_own_rows() {
    let longs = Int64Array::from(vec![1, 2, 3, 4]).slice(1, 2);
    assert_eq!(column_from_arrow("x", &longs, None).unwrap().values::<i64>(), [2, 3]);
    let strings = LargeStringArray::from(vec!["a", "bb", "ccc"]).slice(1, 2);
    let column = column_from_arrow("x", &strings, Some(ColumnType::String)).unwrap();
    assert_eq!((column.string(0), column.string(1)), ("bb", "ccc"));
    let head = LargeStringArray::from(vec!["a", "bb", "ccc"]).slice(0, 2);
    let column = column_from_arrow("x", &head, Some(ColumnType::String)).unwrap();
    assert_eq!((column.len(), column.value_bytes()), (2, &b"abb"[..]), "data past the last offset is dropped");
    let dictionary: DictionaryArray<UInt32Type> = vec!["a", "b", "c"].into_iter().collect();
    let column = column_from_arrow("x", &dictionary.slice(2, 1), None).unwrap();
    assert_eq!(column.symbol(0), "c");
    let chars = FixedSizeBinaryArray::try_from_iter([b"x", b"y", b"z"].into_iter()).unwrap().slice(1, 2);
    assert_eq!(column_from_arrow("x", &chars, None).unwrap().values::<u8>(), b"yz");
    let bools = BooleanArray::from(vec![true, false, true]).slice(1, 2);
    assert_eq!(column_from_arrow("x", &bools, None).unwrap().values::<u8>(), [0, 1]);
}
