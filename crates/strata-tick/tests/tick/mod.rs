mod chained;
mod common;
mod crash;
mod feed;
mod pubsub;
mod rdb_hdb;
mod security;
mod sql;
