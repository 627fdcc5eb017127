//! Integration tests of the tick plane over real sockets on 127.0.0.1, real journal
//! files and (for crash recovery) a real tickerplant process killed with SIGKILL.
//! One test binary, so the crate links once.

mod tick;
