//! Grouping by symbol (and char) columns on their integer codes.
//!
//! SQL sees symbols as `Dictionary(UInt32, Utf8)`. DataFusion groups dictionary
//! columns through its generic row format, which writes out every row's string and
//! hashes it: `GROUP BY sym` over ten million quotes spent most of its time there.
//! [`DictionaryGroups`] makes such an aggregate group by [`CODES`]`(sym)` instead, a
//! `UInt32` column that is the stored keys themselves when every batch shares the
//! table's sym list (no copy), and puts [`DECODE`]`(codes)` above the aggregate to
//! give back the same dictionary column. Batches with another dictionary (in-memory
//! tables, unions) have their keys mapped onto one shared [`Codebook`], so equal
//! strings always get equal codes.
//!
//! Two such keys (`GROUP BY sym, ex`) are packed into one `UInt64` ([`PAIR`]),
//! unpacked ([`HALF`]) above the aggregate; one such key and an integer, date,
//! timestamp or duration (`GROUP BY sym, bar`) into one `Decimal128`. Under GROUP
//! BY, `count(DISTINCT sym)` counts distinct codes the same way.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, Decimal128Array, Int64Array, StringArray, UInt32Array, UInt64Array, make_array};
use arrow_schema::DataType;
use datafusion::arrow::compute::{can_cast_types, cast};
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, Result, exec_err};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    Aggregate, ColumnarValue, Expr, ExprSchemable, LogicalPlan, Projection, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::optimizer::ApplyOrder;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

/// The name of the function giving a text dictionary's codes.
pub const CODES: &str = "__strata_group_codes";
/// The name of the function turning codes back into the dictionary column.
pub const DECODE: &str = "__strata_group_decode";
/// The name of the function packing two columns of codes into one `UInt64` key.
pub const PAIR: &str = "__strata_group_pair";
/// The name of the function taking one column of codes back out of a packed pair.
pub const HALF: &str = "__strata_group_half";

/// Whether `t` is a dictionary of text, the form of symbol and char columns.
fn is_text_dictionary(t: &DataType) -> bool {
    matches!(t, DataType::Dictionary(_, value) if matches!(value.as_ref(), DataType::Utf8 | DataType::LargeUtf8))
}

/// One numbering of the strings of one grouped column: the first dictionary seen
/// keeps its own keys as codes when its strings are distinct; strings of other
/// dictionaries that it lacks get codes after its end.
#[derive(Debug, Default)]
pub struct Codebook {
    first: OnceLock<ArrayRef>,
    /// Whether the first dictionary's strings are distinct. A dictionary that arrow
    /// built by concatenating others (a sort or window gathering batches) can hold
    /// one string at two keys; its keys then are not codes (one symbol would group
    /// twice), and its rows are mapped by text like any other dictionary's.
    first_distinct: OnceLock<bool>,
    others: Mutex<Others>,
}

/// Whether the valid strings of `values` are all different.
fn distinct_strings(values: &ArrayRef) -> Result<bool> {
    let text = cast(values, &DataType::Utf8)?;
    let text = text.as_string::<i32>();
    let mut seen = std::collections::HashSet::with_capacity(text.len());
    Ok(text.iter().flatten().all(|s| seen.insert(s)))
}

/// Strings beyond the first dictionary, and the code of every string (built on
/// the first batch with another dictionary).
#[derive(Debug, Default)]
struct Others {
    codes: HashMap<String, u32>,
    added: Vec<String>,
    /// The first dictionary's values followed by `added`, while `added` is unchanged.
    values: Option<ArrayRef>,
}

impl Codebook {
    /// The codes of a dictionary array's rows (nulls stay null).
    fn encode(&self, array: &ArrayRef) -> Result<UInt32Array> {
        let dict = array.as_any_dictionary();
        let values = dict.values();
        if values.is_empty() {
            // Only an all-null column has an empty dictionary: the rows an outer join
            // found no match for arrive so (arrow's `new_null_array`). They code as
            // nulls, and their empty dictionary must not become the first (arrow's
            // `normalized_keys` asserts a non-empty one).
            return Ok(UInt32Array::new_null(array.len()));
        }
        let first = self.first.get_or_init(|| values.clone());
        // A cast failure counts as "not distinct": the mapping below reports it.
        let distinct = *self.first_distinct.get_or_init(|| distinct_strings(first).unwrap_or(false));
        if distinct && (Arc::ptr_eq(first, values) || first.to_data().ptr_eq(&values.to_data())) {
            let keys = cast(dict.keys(), &DataType::UInt32)?;
            return Ok(keys.as_primitive().clone());
        }
        // Another dictionary: code only the entries the rows use.
        let mut others = self.others.lock().expect("codebook lock");
        if others.codes.is_empty() {
            let text = cast(first, &DataType::Utf8)?;
            let text = text.as_string::<i32>();
            for i in 0..text.len() {
                if text.is_valid(i) {
                    others.codes.entry(text.value(i).to_string()).or_insert(i as u32);
                }
            }
        }
        let text = cast(values, &DataType::Utf8)?;
        let text = text.as_string::<i32>();
        let mut mapped: Vec<Option<Option<u32>>> = vec![None; text.len()];
        let keys = dict.normalized_keys();
        let mut codes = Vec::with_capacity(keys.len());
        for (row, key) in keys.iter().enumerate() {
            if dict.keys().is_null(row) || text.is_null(*key) {
                codes.push(None);
                continue;
            }
            let code = *mapped[*key].get_or_insert_with(|| Some(others.code_of(text.value(*key), first.len())));
            codes.push(code);
        }
        Ok(UInt32Array::from(codes))
    }

    /// The dictionary column of `codes`, of type `to`.
    fn decode(&self, codes: &ArrayRef, to: &DataType) -> Result<ArrayRef> {
        let DataType::Dictionary(key_type, value_type) = to else {
            return exec_err!("{DECODE} builds dictionaries, not {to}");
        };
        let values = match self.first.get() {
            None => datafusion::arrow::array::new_empty_array(value_type),
            Some(first) => {
                let mut others = self.others.lock().expect("codebook lock");
                if others.added.is_empty() {
                    first.clone()
                } else if let Some(values) = &others.values {
                    values.clone()
                } else {
                    let added: ArrayRef = Arc::new(StringArray::from_iter_values(&others.added));
                    let all =
                        datafusion::arrow::compute::concat(&[first.as_ref(), cast(&added, value_type)?.as_ref()])?;
                    others.values = Some(all.clone());
                    all
                }
            }
        };
        let keys = cast(codes, key_type)?;
        if keys.null_count() != codes.null_count() {
            return exec_err!("{DECODE}: more distinct values than a {key_type} key can number");
        }
        let data = keys.to_data().into_builder().data_type(to.clone()).child_data(vec![values.to_data()]);
        Ok(make_array(data.build()?))
    }
}

impl Others {
    /// The code of `text`, adding it after the first dictionary's `first_len`
    /// entries if new.
    fn code_of(&mut self, text: &str, first_len: usize) -> u32 {
        if let Some(code) = self.codes.get(text) {
            return *code;
        }
        let code = (first_len + self.added.len()) as u32;
        self.codes.insert(text.to_string(), code);
        self.added.push(text.to_string());
        self.values = None;
        code
    }
}

/// [`CODES`] or [`DECODE`] over one [`Codebook`].
#[derive(Debug)]
pub struct GroupCodes {
    /// `None`: codes; `Some(t)`: decode to the dictionary type `t`.
    decode_to: Option<DataType>,
    book: Arc<Codebook>,
    signature: Signature,
}

impl PartialEq for GroupCodes {
    fn eq(&self, other: &GroupCodes) -> bool {
        self.decode_to == other.decode_to && Arc::ptr_eq(&self.book, &other.book)
    }
}

impl Eq for GroupCodes {}

impl std::hash::Hash for GroupCodes {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.decode_to.hash(state);
        Arc::as_ptr(&self.book).hash(state);
    }
}

impl GroupCodes {
    /// The pair of functions sharing a new codebook: codes, and decode to the
    /// dictionary type `dictionary`.
    fn pair(dictionary: &DataType) -> (ScalarUDF, ScalarUDF) {
        let book = Arc::new(Codebook::default());
        // Volatile: the pair shares state, so calls must not be merged or folded.
        let signature = Signature::any(1, Volatility::Volatile);
        let codes = GroupCodes { decode_to: None, book: book.clone(), signature: signature.clone() };
        let decode = GroupCodes { decode_to: Some(dictionary.clone()), book, signature };
        (ScalarUDF::new_from_impl(codes), ScalarUDF::new_from_impl(decode))
    }
}

impl ScalarUDFImpl for GroupCodes {
    fn name(&self) -> &str {
        if self.decode_to.is_some() { DECODE } else { CODES }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(self.decode_to.clone().unwrap_or(DataType::UInt32))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let array = args.args[0].to_array(args.number_rows)?;
        Ok(ColumnarValue::Array(match &self.decode_to {
            Some(to) => self.book.decode(&array, to)?,
            None => Arc::new(self.book.encode(&array)?),
        }))
    }
}

/// Rewrites aggregates that group by text dictionaries to group by their codes,
/// and grouped distinct counts of text dictionaries to count their codes.
#[derive(Debug, Default)]
pub struct DictionaryGroups;

impl OptimizerRule for DictionaryGroups {
    fn name(&self) -> &str {
        "strata_dictionary_groups"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::BottomUp)
    }

    fn rewrite(&self, plan: LogicalPlan, _config: &dyn OptimizerConfig) -> Result<Transformed<LogicalPlan>> {
        let LogicalPlan::Aggregate(aggregate) = plan else { return Ok(Transformed::no(plan)) };
        let schema = aggregate.input.schema().clone();
        let mut decoders = Vec::new();
        let mut keys = Vec::with_capacity(aggregate.group_expr.len());
        for expr in &aggregate.group_expr {
            let t = match expr {
                Expr::GroupingSet(_) => return Ok(Transformed::no(LogicalPlan::Aggregate(aggregate))),
                e => e.get_type(&schema)?,
            };
            if !is_text_dictionary(&t) {
                keys.push(expr.clone());
                decoders.push(None);
                continue;
            }
            let (codes, decode) = GroupCodes::pair(&t);
            keys.push(call(codes, vec![expr.clone()]));
            decoders.push(Some(decode));
        }
        let mut aggregates = aggregate.aggr_expr.clone();
        let mut counts_coded = false;
        if !aggregate.group_expr.is_empty() {
            for expr in &mut aggregates {
                if let Some(coded) = distinct_count_of_codes(expr, &schema)? {
                    *expr = coded;
                    counts_coded = true;
                }
            }
        }
        if decoders.iter().all(Option::is_none) && !counts_coded {
            return Ok(Transformed::no(LogicalPlan::Aggregate(aggregate)));
        }
        // Two keys of which one is symbol-like (`GROUP BY sym, ex`, `GROUP BY sym,
        // bar`) group as one packed integer: DataFusion groups one primitive column
        // in a plain hash table, several columns through a slower general one.
        let packing = packing_of(&aggregate.group_expr, &decoders, &schema)?;
        let group = match &packing {
            Some((packing, code_at)) => {
                let (code, other) = (keys[*code_at].clone(), keys[1 - code_at].clone());
                vec![call(PackedKeys::udf(packing.clone(), None), vec![code, other]).alias(PAIR)]
            }
            None => keys
                .into_iter()
                .enumerate()
                .map(|(i, key)| if decoders[i].is_some() { key.alias(format!("{CODES}_{i}")) } else { key })
                .collect(),
        };
        let coded = Aggregate::try_new(aggregate.input.clone(), group, aggregates)?;
        let column = |i: usize| {
            let (q, f) = coded.schema.qualified_field(i);
            Expr::Column(datafusion::common::Column::new(q.cloned(), f.name()))
        };
        // The same output as before: every column under its old name, the coded
        // ones decoded.
        let exprs = aggregate
            .schema
            .iter()
            .enumerate()
            .map(|(i, (q, f))| {
                let key = match &packing {
                    Some((packing, code_at)) if i < 2 => {
                        let part = usize::from(i != *code_at);
                        call(PackedKeys::udf(packing.clone(), Some(part)), vec![column(0)])
                    }
                    Some(_) => column(i - 1),
                    None => column(i),
                };
                let value = match decoders.get(i) {
                    Some(Some(decode)) => call(decode.clone(), vec![key]),
                    _ => key,
                };
                value.alias_qualified(q.cloned(), f.name())
            })
            .collect();
        let projection =
            Projection::try_new_with_schema(exprs, Arc::new(LogicalPlan::Aggregate(coded)), aggregate.schema.clone())?;
        Ok(Transformed::yes(LogicalPlan::Projection(projection)))
    }
}

/// `function(args)` as an expression.
fn call(function: ScalarUDF, args: Vec<Expr>) -> Expr {
    Expr::ScalarFunction(ScalarFunction::new_udf(Arc::new(function), args))
}

/// How [`PAIR`] packs two grouping keys, the first always a column of codes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Packing {
    /// Two columns of codes in one `UInt64`, the first in the high half.
    Codes,
    /// Codes and a column of `value`, an integer, date, timestamp or duration of at
    /// most 64 bits, in one `Decimal128`: the value's 64 bits (as an `Int64`)
    /// in the low half, the code above them, and bit [`VALUE_NULL`] set for a null
    /// value.
    CodeAndValue { value: DataType },
}

/// The packed key type of a [`Packing::CodeAndValue`]; DataFusion groups it in its
/// plain hash table of primitives.
const CODE_AND_VALUE: DataType = DataType::Decimal128(38, 0);

/// The code a packed pair holds for a null: no codebook reaches it (it would hold
/// 2^32 - 1 strings; an Arrow string array holds fewer than 2^31).
const NULL_CODE: u32 = u32::MAX;

/// The bit of a [`Packing::CodeAndValue`] key marking a null value (above the code).
const VALUE_NULL: i128 = 1 << 96;

/// How to pack the two keys of `GROUP BY a, b`, and which of them is coded: both
/// coded, or one coded and the other a type that is an integer of at most 64 bits
/// underneath. `None` for other groupings.
fn packing_of(keys: &[Expr], decoders: &[Option<ScalarUDF>], schema: &DFSchema) -> Result<Option<(Packing, usize)>> {
    let ([Some(_), Some(_)] | [Some(_), None] | [None, Some(_)]) = decoders else { return Ok(None) };
    let code_at = if decoders[0].is_some() { 0 } else { 1 };
    if decoders[1 - code_at].is_some() {
        return Ok(Some((Packing::Codes, 0)));
    }
    let value = keys[1 - code_at].get_type(schema)?;
    let integer_underneath = crate::rolling::order_as_integers(&value);
    let round_trips = can_cast_types(&value, &DataType::Int64) && can_cast_types(&DataType::Int64, &value);
    Ok((integer_underneath && round_trips).then_some((Packing::CodeAndValue { value }, code_at)))
}

/// [`PAIR`] (`part` None): two grouping keys packed into one (see [`Packing`]); or
/// [`HALF`] (`part` Some(0) or Some(1)): the codes, or the second key, taken back
/// out, nulls back.
#[derive(Debug, PartialEq, Eq, Hash)]
struct PackedKeys {
    packing: Packing,
    part: Option<usize>,
    signature: Signature,
}

impl PackedKeys {
    fn udf(packing: Packing, part: Option<usize>) -> ScalarUDF {
        let arguments = if part.is_some() { 1 } else { 2 };
        let signature = Signature::any(arguments, Volatility::Immutable);
        ScalarUDF::new_from_impl(PackedKeys { packing, part, signature })
    }
}

/// A column of codes with nulls as [`NULL_CODE`].
fn codes_or_null_code(codes: &UInt32Array) -> impl Iterator<Item = u32> + '_ {
    (0..codes.len()).map(|row| if codes.is_valid(row) { codes.value(row) } else { NULL_CODE })
}

/// Two columns of codes as one `UInt64` key.
fn pack_codes(high: &UInt32Array, low: &UInt32Array) -> UInt64Array {
    let packed: Vec<u64> = if high.null_count() == 0 && low.null_count() == 0 {
        high.values().iter().zip(low.values()).map(|(&h, &l)| (u64::from(h) << 32) | u64::from(l)).collect()
    } else {
        codes_or_null_code(high)
            .zip(codes_or_null_code(low))
            .map(|(h, l)| (u64::from(h) << 32) | u64::from(l))
            .collect()
    };
    UInt64Array::from(packed)
}

/// Codes and a column of values as one `Decimal128` key ([`Packing::CodeAndValue`]).
fn pack_code_and_value(codes: &UInt32Array, values: &ArrayRef) -> Result<ArrayRef> {
    let values = cast(values, &DataType::Int64)?;
    let values = values.as_primitive::<Int64Type>();
    let key = |code: u32, bits: i128| (i128::from(code) << 64) | bits;
    let packed: Vec<i128> = if codes.null_count() == 0 && values.null_count() == 0 {
        codes.values().iter().zip(values.values()).map(|(&c, &v)| key(c, i128::from(v as u64))).collect()
    } else {
        codes_or_null_code(codes)
            .zip(values.iter())
            .map(|(c, v)| key(c, v.map_or(VALUE_NULL, |v| i128::from(v as u64))))
            .collect()
    };
    Ok(Arc::new(Decimal128Array::from(packed).with_data_type(CODE_AND_VALUE)))
}

/// A column of codes taken out of packed keys, [`NULL_CODE`] back to null.
fn unpack_codes(codes: impl Iterator<Item = u32>) -> ArrayRef {
    Arc::new(codes.map(|c| (c != NULL_CODE).then_some(c)).collect::<UInt32Array>())
}

impl ScalarUDFImpl for PackedKeys {
    fn name(&self) -> &str {
        if self.part.is_some() { HALF } else { PAIR }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(match (&self.packing, self.part) {
            (Packing::Codes, None) => DataType::UInt64,
            (Packing::CodeAndValue { .. }, None) => CODE_AND_VALUE,
            (Packing::CodeAndValue { value }, Some(1)) => value.clone(),
            (_, Some(_)) => DataType::UInt32,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        Ok(ColumnarValue::Array(match (&self.packing, self.part, arrays.as_slice()) {
            (Packing::Codes, None, [high, low]) => {
                Arc::new(pack_codes(high.as_primitive::<UInt32Type>(), low.as_primitive::<UInt32Type>()))
            }
            (Packing::CodeAndValue { .. }, None, [codes, values]) => {
                pack_code_and_value(codes.as_primitive::<UInt32Type>(), values)?
            }
            (Packing::Codes, Some(part), [packed]) => {
                let shift = if part == 0 { 32 } else { 0 };
                unpack_codes(packed.as_primitive::<UInt64Type>().values().iter().map(|&p| (p >> shift) as u32))
            }
            (Packing::CodeAndValue { .. }, Some(0), [packed]) => {
                unpack_codes(packed.as_primitive::<Decimal128Type>().values().iter().map(|&p| (p >> 64) as u32))
            }
            (Packing::CodeAndValue { value }, Some(_), [packed]) => {
                let packed = packed.as_primitive::<Decimal128Type>().values().iter();
                let bits: Int64Array = packed.map(|&p| ((p & VALUE_NULL) == 0).then_some(p as u64 as i64)).collect();
                cast(&bits, value)?
            }
            _ => return exec_err!("{}: wrong arguments", self.name()),
        }))
    }
}

/// `count(DISTINCT sym)` as the count of distinct codes of `sym`, when `expr` is
/// that count of a text dictionary. Under GROUP BY, DataFusion counts distinct
/// dictionary values through one boxed accumulator per group (hashing the values
/// each batch uses, for every group), and distinct integers of all groups in one
/// table. Equal strings have equal codes, so the counts are the same. A count
/// without GROUP BY keeps the dictionary: one accumulator hashing only the values
/// each batch uses beats hashing every row's code.
fn distinct_count_of_codes(expr: &Expr, schema: &DFSchema) -> Result<Option<Expr>> {
    let Expr::AggregateFunction(count) = expr else { return Ok(None) };
    let [argument] = count.params.args.as_slice() else { return Ok(None) };
    if !count.params.distinct || count.func.name() != "count" {
        return Ok(None);
    }
    let t = argument.get_type(schema)?;
    if !is_text_dictionary(&t) {
        return Ok(None);
    }
    let (codes, _) = GroupCodes::pair(&t);
    let mut coded = count.clone();
    coded.params.args = vec![call(codes, vec![argument.clone()])];
    Ok(Some(Expr::AggregateFunction(coded)))
}

#[cfg(test)]
mod tests {
    use arrow_array::DictionaryArray;
    use arrow_array::types::UInt32Type;

    use super::*;

    fn dictionary(keys: Vec<Option<u32>>, values: &ArrayRef) -> ArrayRef {
        Arc::new(DictionaryArray::<UInt32Type>::try_new(UInt32Array::from(keys), values.clone()).unwrap())
    }

    fn text(array: &ArrayRef) -> Vec<Option<String>> {
        let t = cast(array, &DataType::Utf8).unwrap();
        t.as_string::<i32>().iter().map(|s| s.map(str::to_string)).collect()
    }

    #[test]
    fn shared_dictionaries_keep_their_keys_and_others_are_mapped_by_text() {
        let book = Codebook::default();
        let syms: ArrayRef = Arc::new(StringArray::from(vec!["A", "B", "C"]));
        let first = dictionary(vec![Some(2), None, Some(0)], &syms);
        let codes = book.encode(&first).unwrap();
        assert_eq!(codes.iter().collect::<Vec<_>>(), [Some(2), None, Some(0)]);
        let keys = first.as_any_dictionary().keys().to_data();
        assert_eq!(codes.values().inner().as_ptr(), keys.buffers()[0].as_ptr(), "the stored keys, not a copy");

        // Another dictionary: shared strings get the first dictionary's codes,
        // new ones codes after its end.
        let other: ArrayRef = Arc::new(StringArray::from(vec![Some("D"), Some("B"), None, Some("E")]));
        let codes = book.encode(&dictionary(vec![Some(0), Some(1), Some(2), Some(0), Some(3)], &other)).unwrap();
        assert_eq!(codes.iter().collect::<Vec<_>>(), [Some(3), Some(1), None, Some(3), Some(4)]);

        let to = DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8));
        let codes: ArrayRef = Arc::new(UInt32Array::from(vec![Some(4), Some(0), None, Some(3)]));
        let decoded = book.decode(&codes, &to).unwrap();
        assert_eq!(decoded.data_type(), &to);
        assert_eq!(text(&decoded), [Some("E".into()), Some("A".into()), None, Some("D".into())]);
    }

    #[test]
    fn a_first_dictionary_holding_a_string_twice_gives_it_one_code() {
        // As arrow's concat of two batches' dictionaries can make it: B at 1 and 3.
        let book = Codebook::default();
        let merged: ArrayRef = Arc::new(StringArray::from(vec!["A", "B", "C", "B"]));
        let codes = book.encode(&dictionary(vec![Some(1), Some(3), Some(0), Some(2), None], &merged)).unwrap();
        assert_eq!(codes.iter().collect::<Vec<_>>(), [Some(1), Some(1), Some(0), Some(2), None]);
        let to = DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8));
        let decoded = book.decode(&(Arc::new(codes) as ArrayRef), &to).unwrap();
        assert_eq!(text(&decoded), [Some("B".into()), Some("B".into()), Some("A".into()), Some("C".into()), None]);
    }

    #[test]
    fn all_null_columns_with_an_empty_dictionary_code_as_nulls() {
        let to = DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8));
        let unmatched = datafusion::arrow::array::new_null_array(&to, 3);
        let syms: ArrayRef = Arc::new(StringArray::from(vec!["A", "B"]));
        // Before and after a real dictionary: neither order may panic.
        for order in [
            [dictionary(vec![Some(1)], &syms), unmatched.clone()],
            [unmatched.clone(), dictionary(vec![Some(1)], &syms)],
        ] {
            let book = Codebook::default();
            let codes: Vec<UInt32Array> = order.iter().map(|a| book.encode(a).unwrap()).collect();
            let nulls = codes.iter().find(|c| c.len() == 3).unwrap();
            assert_eq!(nulls.null_count(), 3);
            let one = codes.iter().find(|c| c.len() == 1).unwrap();
            let decoded = book.decode(&(Arc::new(one.clone()) as ArrayRef), &to).unwrap();
            assert_eq!(text(&decoded), [Some("B".into())]);
        }
    }

    #[test]
    fn decoding_into_narrow_keys_fails_when_codes_do_not_fit() {
        let book = Codebook::default();
        let values: ArrayRef = Arc::new(StringArray::from_iter_values((0..300).map(|i| i.to_string())));
        book.encode(&dictionary(vec![Some(299)], &values)).unwrap();
        let to = DataType::Dictionary(Box::new(DataType::UInt8), Box::new(DataType::Utf8));
        let fits: ArrayRef = Arc::new(UInt32Array::from(vec![7]));
        assert_eq!(text(&book.decode(&fits, &to).unwrap()), [Some("7".into())]);
        let too_big: ArrayRef = Arc::new(UInt32Array::from(vec![299]));
        let err = book.decode(&too_big, &to).unwrap_err().to_string();
        assert!(err.contains("more distinct values"), "{err}");
    }

    #[test]
    fn codes_and_values_pack_into_one_key_and_come_back_out_with_their_nulls() {
        // Rows 1 and 6 are the same key; rows 2 to 4 hold nulls.
        let codes = UInt32Array::from(vec![Some(0), Some(7), None, Some(u32::MAX - 1), None, Some(7), Some(7)]);
        let timestamps = DataType::Timestamp(arrow_schema::TimeUnit::Nanosecond, Some("UTC".into()));
        let int64 = Int64Array::from(vec![Some(i64::MIN), Some(-1), Some(5), None, None, Some(i64::MAX), Some(-1)]);
        let as_type = |t: &DataType| cast(&(Arc::new(int64.clone()) as ArrayRef), t).unwrap();
        for value in [DataType::Int64, timestamps, DataType::Duration(arrow_schema::TimeUnit::Nanosecond)] {
            round_trip(&codes, &as_type(&value));
        }
        let small = arrow_array::Int8Array::from(vec![Some(-128), Some(-1), Some(0), None, None, Some(3), Some(-1)]);
        let small: ArrayRef = Arc::new(small);
        round_trip(&codes, &small);
        round_trip(&codes, &cast(&cast(&small, &DataType::Int32).unwrap(), &DataType::Date32).unwrap());
    }

    /// Packs `codes` with `values`, checks the keys are distinct where the rows
    /// are, and takes both back out.
    fn round_trip(codes: &UInt32Array, values: &ArrayRef) {
        let packing = Packing::CodeAndValue { value: values.data_type().clone() };
        let invoke = |part: Option<usize>, args: Vec<ArrayRef>| {
            let udf = PackedKeys::udf(packing.clone(), part);
            let arg_fields =
                args.iter().map(|a| Arc::new(arrow_schema::Field::new("a", a.data_type().clone(), true))).collect();
            let return_field = Arc::new(arrow_schema::Field::new("r", udf.return_type(&[]).unwrap(), true));
            let args = ScalarFunctionArgs {
                args: args.into_iter().map(ColumnarValue::Array).collect(),
                arg_fields,
                number_rows: codes.len(),
                return_field,
                config_options: Arc::default(),
            };
            udf.invoke_with_args(args).unwrap().to_array(codes.len()).unwrap()
        };
        let packed = invoke(None, vec![Arc::new(codes.clone()), values.clone()]);
        assert_eq!(packed.data_type(), &CODE_AND_VALUE);
        let keys: Vec<i128> = packed.as_primitive::<Decimal128Type>().values().to_vec();
        for a in 0..keys.len() {
            for b in 0..keys.len() {
                let same_row = codes.slice(a, 1) == codes.slice(b, 1)
                    && values.slice(a, 1).to_data() == values.slice(b, 1).to_data();
                assert_eq!(keys[a] == keys[b], same_row, "rows {a} and {b} of {:?}", values.data_type());
            }
        }
        assert_eq!(invoke(Some(0), vec![packed.clone()]).as_primitive::<UInt32Type>(), codes);
        assert_eq!(&invoke(Some(1), vec![packed]), values);
    }
}
