mod common;
mod crash;
mod pubsub;
mod rdb_hdb;
