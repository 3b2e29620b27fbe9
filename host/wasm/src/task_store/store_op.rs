//! One call of a store component as the sandbox's pool runs it ([`op`]).

use crate::sandbox::call::{BoxFuture, Op};
use crate::sandbox::pool::Instance;
use crate::task_store::contract::{Answer, Api, WitError};

/// One call of a store component ([`Op`]).
pub(super) type StoreOp<T> = Op<Api, T, WitError>;

/// `f` as a call the pool can run (and make again from the start, if its first attempt ran
/// inline and needed a blocking thread).
pub(super) fn op<T, F>(f: F) -> StoreOp<T>
where
    F: for<'a> Fn(&'a mut Instance<Api>) -> BoxFuture<'a, Answer<T>> + Send + Sync + 'static,
{
    Box::new(f)
}
