//! Integration tests of strata-query: one binary, so DataFusion is linked once.
//! Every test writes real tables with strata-store into a temporary directory.

mod query {
    pub mod asof;
    pub mod data;
    pub mod deep_expressions;
    pub mod dialect;
    pub mod errors;
    pub mod functions;
    pub mod integrity;
    pub mod literals;
    pub mod many_partitions;
    pub mod nulls;
    pub mod partitions;
    pub mod pushdown;
    pub mod read_only;
    pub mod rolling;
    pub mod symbol_groups;
    pub mod top_k;
    pub mod whole_partition_windows;
    pub mod window;
}
