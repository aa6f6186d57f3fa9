//! Detail: the facts of a session (paths, identifiers, numbers, errors), the text facts found
//! in summaries, the references that follow a compaction (and the repeated tool calls that
//! re-obtain what a recorded one lost), and the estimate of broken references with its
//! retention table and its calibration from recorded summaries.

pub mod calibrate;
pub mod facts;
pub mod references;
pub mod refetch;
pub mod text_facts;
pub mod token;
