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
//! unpacked ([`HALF`]) above the aggregate. Under GROUP BY, `count(DISTINCT sym)`
//! counts distinct codes the same way.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::{UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, StringArray, UInt32Array, UInt64Array, make_array};
use arrow_schema::DataType;
use datafusion::arrow::compute::cast;
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
        // Two symbol-like keys (`GROUP BY sym, ex`) group as one packed integer:
        // DataFusion groups one primitive column in a plain hash table, several
        // columns through a slower general one.
        let paired = keys.len() == 2 && decoders.iter().all(Option::is_some);
        let group = if paired {
            vec![call(PairedCodes::udf(None), keys).alias(PAIR)]
        } else {
            keys.into_iter()
                .enumerate()
                .map(|(i, key)| if decoders[i].is_some() { key.alias(format!("{CODES}_{i}")) } else { key })
                .collect()
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
                let value = match decoders.get(i) {
                    Some(Some(decode)) if paired => {
                        call(decode.clone(), vec![call(PairedCodes::udf(Some(i)), vec![column(0)])])
                    }
                    Some(Some(decode)) => call(decode.clone(), vec![column(i)]),
                    _ => column(if paired { i - 1 } else { i }),
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

/// The code a packed pair holds for a null: no codebook reaches it (it would hold
/// 2^32 - 1 strings; an Arrow string array holds fewer than 2^31).
const NULL_CODE: u32 = u32::MAX;

/// [`PAIR`] (`part` None): two columns of codes as one `UInt64`, the first in the
/// high half, a null as [`NULL_CODE`]; or [`HALF`] (`part` Some(0) or Some(1)): the
/// codes of that half, nulls back.
#[derive(Debug, PartialEq, Eq, Hash)]
struct PairedCodes {
    part: Option<usize>,
    signature: Signature,
}

impl PairedCodes {
    fn udf(part: Option<usize>) -> ScalarUDF {
        let arguments = if part.is_some() { 1 } else { 2 };
        ScalarUDF::new_from_impl(PairedCodes { part, signature: Signature::any(arguments, Volatility::Immutable) })
    }
}

impl ScalarUDFImpl for PairedCodes {
    fn name(&self) -> &str {
        if self.part.is_some() { HALF } else { PAIR }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(if self.part.is_some() { DataType::UInt32 } else { DataType::UInt64 })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        Ok(ColumnarValue::Array(match (self.part, arrays.as_slice()) {
            (None, [high, low]) => {
                let code = |a: &UInt32Array, row: usize| if a.is_valid(row) { a.value(row) } else { NULL_CODE };
                let (high, low) = (high.as_primitive::<UInt32Type>(), low.as_primitive::<UInt32Type>());
                let packed: Vec<u64> = if high.null_count() == 0 && low.null_count() == 0 {
                    high.values().iter().zip(low.values()).map(|(&h, &l)| (u64::from(h) << 32) | u64::from(l)).collect()
                } else {
                    (0..high.len()).map(|row| (u64::from(code(high, row)) << 32) | u64::from(code(low, row))).collect()
                };
                Arc::new(UInt64Array::from(packed))
            }
            (Some(part), [packed]) => {
                let shift = if part == 0 { 32 } else { 0 };
                let codes = packed.as_primitive::<UInt64Type>().values().iter().map(|&p| (p >> shift) as u32);
                Arc::new(codes.map(|c| (c != NULL_CODE).then_some(c)).collect::<UInt32Array>())
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
}
