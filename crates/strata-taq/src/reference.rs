//! The column statistics of one real day of NYSE TAQ (2022, as published with the
//! kdb+ compression case study): what the generator is calibrated to, and what
//! `strata stats columns` output is compared with.
//!
//! Counts are for the whole real day (1.78 billion quotes, 76.6 million trades); the
//! generator matches their *shares of the row count* (a change rate of 0.46 means 46%
//! of rows differ from the previous row) and their order by entropy, not the absolute
//! numbers, which depend on the day's size.

/// One column's published statistics.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReferenceColumn {
    /// The column name, as in the TAQ file header with spaces removed.
    pub name: &'static str,
    /// The kdb+ type the case study stored it as.
    pub ty: &'static str,
    /// Distinct values in the day.
    pub unique: u64,
    /// Rows that differ from the row before (the first row counts), as q's `differ`.
    pub differ: u64,
    /// Shannon entropy of the value distribution, bits.
    pub entropy: f64,
}

impl ReferenceColumn {
    /// Share of rows that differ from their predecessor, for a table of `rows` rows.
    pub fn change_rate(&self, rows: u64) -> f64 {
        self.differ as f64 / rows as f64
    }
}

/// Rows of the reference day's quote table.
pub const QUOTE_ROWS: u64 = 1_781_029_661;
/// Rows of the reference day's trade table.
pub const TRADE_ROWS: u64 = 76_610_275;

const fn col(name: &'static str, ty: &'static str, unique: u64, differ: u64, entropy: f64) -> ReferenceColumn {
    ReferenceColumn { name, ty, unique, differ, entropy }
}

/// The quote table's 23 columns, in table order.
pub const QUOTE: [ReferenceColumn; 23] = [
    col("Time", "timespan", 1_580_281_467, 1_674_631_088, 30.4),
    col("Exchange", "char", 17, 1_349_077_745, 3.7),
    col("Symbol", "symbol", 12_127, 12_127, 11.0),
    col("Bid_Price", "float", 155_049, 815_619_737, 14.3),
    col("Bid_Size", "int", 7_279, 1_100_563_342, 3.9),
    col("Offer_Price", "float", 168_093, 822_513_327, 14.3),
    col("Offer_Size", "int", 7_264, 1_121_734_176, 4.0),
    col("Quote_Condition", "char", 7, 451_430, 0.0),
    col("Sequence_Number", "int", 113_620_772, 1_781_029_645, 26.2),
    col("National_BBO_Ind", "char", 9, 525_963_500, 1.7),
    col("FINRA_BBO_Indicator", "char", 1, 1, 0.0),
    col("FINRA_ADF_MPID_Indicator", "char", 1, 1, 0.0),
    col("Quote_Cancel_Correction", "char", 1, 1, 0.0),
    col("Source_Of_Quote", "char", 2, 4_421, 0.8),
    col("Retail_Interest_Indicator", "char", 4, 282_004_323, 0.6),
    col("Short_Sale_Restriction_Indicator", "char", 8, 6_161, 1.0),
    col("LULD_BBO_Indicator", "char", 2, 3, 0.0),
    col("SIP_Generated_Message_Identifier", "char", 3, 32_151, 0.0),
    col("National_BBO_LULD_Indicator", "char", 8, 26_600, 0.1),
    col("Participant_Timestamp", "timespan", 1_720_929_968, 1_773_753_484, 30.6),
    col("FINRA_ADF_Timestamp", "timespan", 1, 1, 0.0),
    col("FINRA_ADF_Market_Participant_Quote_Indicator", "char", 1, 1, 0.0),
    col("Security_Status_Indicator", "char", 7, 52, 0.0),
];

/// The trade table's 15 columns, in table order.
pub const TRADE: [ReferenceColumn; 15] = [
    col("Time", "timespan", 72_361_453, 72_635_907, 26.0),
    col("Exchange", "char", 19, 39_884_984, 3.4),
    col("Symbol", "symbol", 11_615, 11_615, 10.9),
    col("SaleCondition", "symbol", 118, 34_742_301, 3.1),
    col("TradeVolume", "int", 30_432, 61_288_223, 5.5),
    col("TradePrice", "real", 1_709_277, 29_812_918, 15.5),
    col("TradeStopStockIndicator", "boolean", 2, 3, 0.0),
    col("TradeCorrectionIndicator", "short", 5, 1_461, 0.0),
    col("SequenceNumber", "int", 7_052_899, 76_610_223, 22.3),
    col("TradeId", "string", 25_424_743, 76_578_507, 20.0),
    col("SourceofTrade", "char", 2, 4_408, 0.9),
    col("TradeReportingFacility", "boolean", 2, 8_561_937, 0.5),
    col("ParticipantTimestamp", "timespan", 61_126_348, 63_260_094, 25.6),
    col("TradeReportingFacilityTRFTimestamp", "timespan", 19_609_986, 26_931_059, 7.0),
    col("TradeThroughExemptIndicator", "boolean", 2, 17_317_273, 0.9),
];

/// The reference column of `table` ("quote" or "trade") called `name`.
pub fn reference(table: &str, name: &str) -> Option<&'static ReferenceColumn> {
    let columns: &[ReferenceColumn] = match table {
        "quote" => &QUOTE,
        "trade" => &TRADE,
        _ => return None,
    };
    columns.iter().find(|c| c.name == name)
}
