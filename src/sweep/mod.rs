//! Sweeps: grid axes, the work list over (session, setting), rayon, shards.
