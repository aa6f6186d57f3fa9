//! A search over sorted data for a bound near its end. A replay asks mostly about the newest
//! events and summaries; a binary search over the whole list costs the log of the session's
//! length, in loads far apart, at every request.

/// `v.partition_point(pred)`, searched from the end: doubling steps back from the last
/// element, then a binary search in the last step. For a bound among the newest elements
/// (the end of a range a replay asks about, the newest event's timestamp) this costs the
/// log of its distance from the end and touches memory near it, where a binary search over
/// a long session went through the whole array (cache misses that made time per event grow
/// with the session). A bound far back costs up to twice a binary search: those keep
/// `partition_point`.
pub fn partition_point_from_end<T>(v: &[T], pred: impl Fn(&T) -> bool) -> usize {
    let n = v.len();
    // invariant: every element at or after `hi` fails `pred`
    let mut hi = n;
    let mut step = 1;
    loop {
        let Some(probe) = hi.checked_sub(step) else {
            return v[..hi].partition_point(&pred);
        };
        if pred(&v[probe]) {
            return probe + 1 + v[probe + 1..hi].partition_point(&pred);
        }
        hi = probe;
        step *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Searching from the end finds what `partition_point` finds, for every split of every
    /// length up to 70 (each doubling step and the fall back to the start), duplicates
    /// included.
    #[test]
    fn partition_point_from_end_agrees_with_partition_point() {
        for n in 0..70usize {
            // values 0, 0, 1, 1, 2, 2, ...: each threshold splits the slice somewhere
            let v: Vec<usize> = (0..n).map(|i| i / 2).collect();
            for x in 0..=n / 2 + 1 {
                for pred in [|t: &usize, x: usize| *t < x, |t: &usize, x: usize| *t <= x] {
                    assert_eq!(
                        partition_point_from_end(&v, |t| pred(t, x)),
                        v.partition_point(|t| pred(t, x)),
                        "n {n}, x {x}"
                    );
                }
            }
        }
    }
}
