mod chained;
mod common;
mod crash;
mod eod;
mod feed;
mod pubsub;
mod rdb_hdb;
mod sql;
