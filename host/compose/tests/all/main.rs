//! `tn-compose` and `toolnexus_compose` as users run them, in one test binary.

mod a2a;
mod a2a_cli;
mod cli;
