//! Performance machinery with no format knowledge of its own: parallel iteration, strided 4-D
//! copies, z-columns for C-order transposes, buffer arenas, uninitialised output buffers and
//! closing replaced files off the writer's thread.

pub(crate) mod arena;
pub(crate) mod closer;
pub(crate) mod column;
pub(crate) mod copy;
pub(crate) mod par;
pub(crate) mod uninit;
