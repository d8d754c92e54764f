/**
 * Sets `key` in `map` as its newest entry and forgets the oldest entries past `max` (a `Map`
 * iterates in insertion order). The bounded memories of the SDK and the bridge use it: recent
 * event ids, the counters of failed publishes, the sessions' last written counters, estimates.
 */
export function setNewest<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > max) map.delete(map.keys().next().value as K);
}
