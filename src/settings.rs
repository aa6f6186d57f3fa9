//! `Compaction(...)`: the manifest's fields, their validation and its words.
