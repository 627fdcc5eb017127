mod chained;
mod common;
mod crash;
mod feed;
mod journal;
mod pubsub;
mod rdb_hdb;
mod sql;
