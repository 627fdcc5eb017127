//! The stack a query is parsed and planned on. SQL from a client may parse into a
//! tree as deep as [`crate::dialect::depth::MAX_OPERATORS`] before it is balanced or
//! refused, and taking such a tree apart recurses once per level; DataFusion's own
//! recursion (guarded by its `recursive_protection`) grows the stack on demand too.
//! So each statement runs on a stack of [`QUERY_STACK`] bytes, whatever thread
//! calls the engine: mapped when the statement starts, touched only as deep as it
//! goes, unmapped when it ends.

/// Bytes of stack a statement runs on.
pub const QUERY_STACK: usize = 512 << 20;

/// Bytes of stack each of the engine's worker threads has: they run the operators
/// of plans whose expressions nest at most
/// [`crate::dialect::depth::MAX_EXPRESSION_DEPTH`] deep.
pub const WORKER_STACK: usize = 16 << 20;

/// Below this much stack left, [`on_query_stack`] switches to a fresh one.
const RED_ZONE: usize = QUERY_STACK / 2;

/// Runs `f` on a stack of at least [`QUERY_STACK`] bytes: on a fresh one unless the
/// current one has half of that left.
pub fn on_query_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE, QUERY_STACK, f)
}
