//! A slab of values addressed by small ids, with a free list so slots are reused and the hot
//! path does not allocate once the arena has grown to the run's peak population.

/// Index of a slot in an [`Arena`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArenaId(pub u32);

pub struct Arena<T> {
    slots: Vec<Option<T>>,
    free: Vec<u32>,
    live: usize,
}

impl<T> Default for Arena<T> {
    fn default() -> Self {
        Self::with_capacity(256)
    }
}

impl<T> Arena<T> {
    pub fn with_capacity(cap: usize) -> Self {
        Arena {
            slots: Vec::with_capacity(cap),
            free: Vec::with_capacity(cap),
            live: 0,
        }
    }
    pub fn insert(&mut self, value: T) -> ArenaId {
        self.live += 1;
        if let Some(i) = self.free.pop() {
            debug_assert!(self.slots[i as usize].is_none());
            self.slots[i as usize] = Some(value);
            ArenaId(i)
        } else {
            self.slots.push(Some(value));
            ArenaId((self.slots.len() - 1) as u32)
        }
    }
    pub fn get(&self, id: ArenaId) -> &T {
        self.slots[id.0 as usize]
            .as_ref()
            .expect("arena slot used after free")
    }
    pub fn get_mut(&mut self, id: ArenaId) -> &mut T {
        self.slots[id.0 as usize]
            .as_mut()
            .expect("arena slot used after free")
    }
    pub fn remove(&mut self, id: ArenaId) -> T {
        let v = self.slots[id.0 as usize]
            .take()
            .expect("arena slot freed twice");
        self.free.push(id.0);
        self.live -= 1;
        v
    }
    pub fn len(&self) -> usize {
        self.live
    }
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }
    /// Number of slots ever allocated (the peak population).
    pub fn capacity_used(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_slots_are_reused() {
        let mut a = Arena::with_capacity(4);
        let x = a.insert(1);
        let y = a.insert(2);
        assert_eq!(a.remove(x), 1);
        let z = a.insert(3);
        assert_eq!(z, x);
        assert_eq!(*a.get(y), 2);
        assert_eq!(a.capacity_used(), 2);
        assert_eq!(a.len(), 2);
    }
}
