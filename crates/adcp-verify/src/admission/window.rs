//! Fixed-size ring buffer of new-keyid admission counts for one clause.

/// Each observation window is split into this many sub-buckets, so the
/// rolling count advances in steps of `window / SUB_BUCKETS` seconds.
pub(crate) const SUB_BUCKETS: u64 = 10;

const SUB: i64 = SUB_BUCKETS as i64;

/// How a clause turns its baseline samples into one number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Statistic {
    /// Arithmetic mean of the samples.
    Mean,
    /// Nearest-rank percentile (`0 < p <= 100`) of the samples.
    Percentile(f64),
}

/// Counts for a rolling observation window of `SUB_BUCKETS` sub-buckets and
/// the `samples` tumbling windows of the same length immediately before it
/// (the baseline horizon). Memory: `SUB_BUCKETS × (samples + 1)` `u32`s.
#[derive(Debug, Clone)]
pub(crate) struct WindowCounter {
    sub_secs: i64,
    samples: usize,
    slots: Vec<u32>,
    /// Absolute sub-bucket index (`now / sub_secs`) of the newest slot.
    head: Option<i64>,
    /// Sub-bucket index of the first observation: history before it is
    /// unknown, so baseline windows reaching before it are left out.
    start: i64,
    cache: Option<(i64, f64)>,
}

impl WindowCounter {
    /// A counter for `window_secs` windows (a multiple of `SUB_BUCKETS`,
    /// validated by the thresholds) with `samples` baseline windows.
    pub(crate) fn new(window_secs: u64, samples: usize) -> Self {
        let sub_secs = i64::try_from(window_secs / SUB_BUCKETS).unwrap_or(i64::MAX).max(1);
        let len = SUB_BUCKETS as usize * samples.saturating_add(1);
        Self {
            sub_secs,
            samples,
            slots: vec![0; len],
            head: None,
            start: 0,
            cache: None,
        }
    }

    fn pos(&self, index: i64) -> usize {
        // `slots` is never empty (`len >= SUB_BUCKETS`).
        let len = i64::try_from(self.slots.len()).unwrap_or(i64::MAX);
        usize::try_from(index.rem_euclid(len)).unwrap_or(0)
    }

    /// Moves the head to the sub-bucket containing `now`, zeroing the
    /// sub-buckets skipped over. `now` never goes backwards (the monitor
    /// clamps it). Work is bounded by the ring length.
    pub(crate) fn advance(&mut self, now: i64) {
        let index = now.div_euclid(self.sub_secs);
        match self.head {
            None => {
                self.head = Some(index);
                self.start = index;
            }
            Some(head) if index > head => {
                let steps = index.saturating_sub(head);
                if steps >= i64::try_from(self.slots.len()).unwrap_or(i64::MAX) {
                    self.slots.iter_mut().for_each(|slot| *slot = 0);
                } else {
                    for i in head.saturating_add(1)..=index {
                        let pos = self.pos(i);
                        if let Some(slot) = self.slots.get_mut(pos) {
                            *slot = 0;
                        }
                    }
                }
                self.head = Some(index);
            }
            Some(_) => {}
        }
    }

    /// Counts one new-keyid admission in the current sub-bucket.
    pub(crate) fn increment(&mut self) {
        if let Some(head) = self.head {
            let pos = self.pos(head);
            if let Some(slot) = self.slots.get_mut(pos) {
                *slot = slot.saturating_add(1);
            }
        }
    }

    fn sum(&self, last: i64) -> u64 {
        (last.saturating_sub(SUB - 1)..=last)
            .filter_map(|i| self.slots.get(self.pos(i)))
            .map(|&c| u64::from(c))
            .sum()
    }

    /// New-keyid admissions in the rolling window: the current (partial)
    /// sub-bucket and the `SUB_BUCKETS − 1` before it.
    pub(crate) fn observed(&self) -> u64 {
        self.head.map_or(0, |head| self.sum(head))
    }

    /// Number of complete baseline windows with known history.
    pub(crate) fn known_samples(&self) -> usize {
        let Some(head) = self.head else {
            return 0;
        };
        (1..=self.samples)
            .take_while(|&j| {
                let j = i64::try_from(j).unwrap_or(i64::MAX);
                head.saturating_sub(SUB.saturating_mul(j.saturating_add(1)))
                    .saturating_add(1)
                    >= self.start
            })
            .count()
    }

    /// The baseline statistic over the tumbling windows before the rolling
    /// window, leaving out windows that reach before the first observation;
    /// 0 when there are none. Cached until the head moves.
    pub(crate) fn baseline(&mut self, statistic: Statistic) -> f64 {
        let Some(head) = self.head else {
            return 0.0;
        };
        if let Some((at, value)) = self.cache {
            if at == head {
                return value;
            }
        }
        let known = self.known_samples();
        let mut samples: Vec<u64> = (1..=known)
            .map(|j| {
                let j = i64::try_from(j).unwrap_or(i64::MAX);
                self.sum(head.saturating_sub(SUB.saturating_mul(j)))
            })
            .collect();
        let value = if samples.is_empty() {
            0.0
        } else {
            match statistic {
                Statistic::Mean => samples.iter().sum::<u64>() as f64 / samples.len() as f64,
                Statistic::Percentile(p) => {
                    samples.sort_unstable();
                    let n = samples.len();
                    let rank = ((p / 100.0) * n as f64).ceil() as usize;
                    let rank = rank.clamp(1, n);
                    samples.get(rank - 1).map_or(0.0, |&v| v as f64)
                }
            }
        };
        self.cache = Some((head, value));
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rolling_window_and_samples() {
        // 5 s sub-buckets, 50 s windows, 3 baseline windows.
        let mut c = WindowCounter::new(50, 3);
        c.advance(0);
        c.increment();
        assert_eq!(c.observed(), 1);
        assert_eq!(c.known_samples(), 0);
        c.advance(49);
        c.increment();
        assert_eq!(c.observed(), 2);
        c.advance(50);
        assert_eq!(c.observed(), 1);
        assert_eq!(c.known_samples(), 0);
        c.advance(99);
        assert_eq!(c.known_samples(), 1);
        assert_eq!(c.observed(), 0);
        assert!((c.baseline(Statistic::Mean) - 2.0).abs() < 1e-9);
        c.advance(10_000);
        assert_eq!(c.observed(), 0);
        assert_eq!(c.known_samples(), 3);
        assert!((c.baseline(Statistic::Percentile(99.0))).abs() < 1e-9);
    }

    #[test]
    fn nearest_rank_percentile() {
        // 1 s sub-buckets, 10 s windows; window k holds k admissions.
        let mut c = WindowCounter::new(10, 20);
        for k in 0..20 {
            c.advance(k * 10);
            for _ in 0..k {
                c.increment();
            }
        }
        c.advance(209);
        assert_eq!(c.known_samples(), 20);
        // Samples 0..=19; P95 by nearest rank is the 19th smallest = 18.
        assert!((c.baseline(Statistic::Percentile(95.0)) - 18.0).abs() < 1e-9);
        let mut c2 = c.clone();
        c2.cache = None;
        assert!((c2.baseline(Statistic::Percentile(100.0)) - 19.0).abs() < 1e-9);
        c2.cache = None;
        assert!((c2.baseline(Statistic::Mean) - 9.5).abs() < 1e-9);
    }
}
