/**
 * Where each bounded map's oldest entries are read from: one live iterator per map, kept
 * between calls. A `Map` iterates in insertion order and its iterators see later changes, so
 * the iterator that evicted the last oldest entry stands just before the next one. Starting
 * a new iterator for every eviction (`map.keys().next()`) is not O(1) in V8: a deleted entry
 * stays a hole at the front of the table until the next rehash, and every new iterator walks
 * over all of them — with a window of 10,000 that was thousands of holes per insert, ~3 µs
 * per delivered event in a colony (BENCHMARKS.md, "Consume a backlog").
 */
const oldest = new WeakMap<Map<unknown, unknown>, Iterator<unknown>>();

/**
 * Sets `key` in `map` as its newest entry and forgets the oldest entries past `max` (a `Map`
 * iterates in insertion order). The bounded memories of the SDK and the bridge use it: recent
 * event ids, the counters of failed publishes, the sessions' last written counters, estimates.
 * Amortized O(1) per call, whatever else deletes from or clears the map meanwhile.
 */
export function setNewest<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > max) {
    const m = map as Map<unknown, unknown>;
    let it = oldest.get(m);
    let next = it?.next();
    if (!it || !next || next.done) {
      // first eviction, or the iterator ran off the end (the map was emptied): a fresh one
      it = m.keys();
      oldest.set(m, it);
      next = it.next();
    }
    map.delete(next.value as K);
  }
}
