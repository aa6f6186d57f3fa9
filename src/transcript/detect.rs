//! Format detection from content and loading files, folders and globs (not yet implemented).
