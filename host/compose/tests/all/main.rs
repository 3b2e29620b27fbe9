//! `tn-compose` as a user runs it, in one test binary.

mod cli;
