//! The event heap: a min-heap ordered by (time, tie key).
//!
//! The tie key is chosen by the caller from what the event *is* (its class, the path or flow it
//! belongs to, a packet's place in its path), never from when it was pushed, so two engines
//! that push different sets of internal events (a traced run's stage-hop rows or not) still pop
//! the events that matter in the same order. There is no insertion-order rule: the order in
//! which events were pushed never decides anything.

use crate::SimTime;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> {
    time: SimTime,
    key: u128,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.key == other.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed so that `BinaryHeap` (a max-heap) pops the earliest (time, key) first.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .time
            .cmp(&self.time)
            .then_with(|| other.key.cmp(&self.key))
    }
}

/// Pending events, popped in (time, key) order.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        Self::with_capacity(1024)
    }
    pub fn with_capacity(cap: usize) -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(cap),
        }
    }
    /// Pushes an event whose ties at `time` break by `key` (smallest first). Events with equal
    /// time and key pop in an unspecified order: give them equal keys only if they are
    /// interchangeable.
    pub fn push_keyed(&mut self, time: SimTime, key: u128, event: E) {
        self.heap.push(Entry { time, key, event });
    }
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        self.heap.pop().map(|e| (e.time, e.event))
    }
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|e| e.time)
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_ties_pop_by_key_whatever_the_insertion_order() {
        let mut q = EventQueue::new();
        q.push_keyed(SimTime(10), 3, "k3");
        q.push_keyed(SimTime(10), 1, "k1");
        q.push_keyed(SimTime(4), 9, "early");
        q.push_keyed(SimTime(10), 2, "k2");
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!["early", "k1", "k2", "k3"]);
    }
}
