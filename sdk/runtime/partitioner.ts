import { randomBytes } from 'node:crypto';
import type { ICustomPartitioner } from 'kafkajs';

/**
 * The partitioner of every Feromônios producer: Kafka's default for a keyed record (Java
 * clients', Redpanda tooling's, kafkajs's `Partitioners.DefaultPartitioner`) — murmur2 of the
 * key's bytes, made positive, modulo the topic's partition count — so an event goes to the same
 * partition whoever produces it.
 *
 * kafkajs computes murmur2 with its `Long` class, a `BigInt` per step (a 36-character key is
 * ~60 `BigInt` operations and objects): ~6 % of a process publishing with 64 calls in flight. The
 * hash is 32-bit integer arithmetic in Java; {@link murmur2} does it with `Math.imul` and gives
 * the same value for every key (sdk/runtime/partitioner.unit.test.ts compares it with kafkajs's on
 * random keys and with Kafka's own test vectors).
 *
 * Behaviour is kafkajs's default partitioner's: a message's own `partition` wins; a key picks
 * the partition among all of the topic's (not only those with a leader); no key, round-robin over
 * the partitions with a leader, from a random start per topic.
 */

/** UTF-8 of a string key, written here when it fits (a key is hashed, never kept). */
const scratch = Buffer.allocUnsafe(1024);

/**
 * Kafka's murmur2 (`org.apache.kafka.common.utils.Utils.murmur2`) of `key`'s bytes — a string's
 * UTF-8, anything else but a `Buffer` as `String(key)`, as kafkajs hashes it — as a signed 32-bit
 * integer.
 */
export function murmur2(key: unknown): number {
  let data: Buffer;
  let length: number;
  if (Buffer.isBuffer(key)) {
    data = key;
    length = key.length;
  } else {
    const text = String(key);
    if (text.length * 3 <= scratch.length) {
      data = scratch;
      length = scratch.write(text);
    } else {
      data = Buffer.from(text);
      length = data.length;
    }
  }
  const m = 0x5bd1e995;
  let h = 0x9747b28c ^ length;
  const length4 = length & ~3;
  for (let i = 0; i < length4; i += 4) {
    let k =
      (data[i] as number) |
      ((data[i + 1] as number) << 8) |
      ((data[i + 2] as number) << 16) |
      ((data[i + 3] as number) << 24);
    k = Math.imul(k, m);
    k ^= k >>> 24;
    k = Math.imul(k, m);
    h = Math.imul(h, m) ^ k;
  }
  const tail = length & 3; // the last one to three bytes, as Java's switch falls through them
  if (tail === 3) h ^= (data[length4 + 2] as number) << 16;
  if (tail >= 2) h ^= (data[length4 + 1] as number) << 8;
  if (tail >= 1) h = Math.imul(h ^ (data[length4] as number), m);
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h | 0;
}

/** A fresh partitioner (its round-robin counters are its own), as kafkajs's `createPartitioner` makes one. */
export const murmur2Partitioner: ICustomPartitioner = () => {
  const counters = new Map<string, number>();
  const next = (topic: string): number => {
    const n = ((counters.get(topic) ?? randomBytes(4).readUInt32BE(0)) + 1) >>> 0;
    counters.set(topic, n);
    return n & 0x7fffffff;
  };
  return ({ topic, partitionMetadata, message }) => {
    if (message.partition !== null && message.partition !== undefined) return message.partition;
    if (message.key !== null && message.key !== undefined)
      return (murmur2(message.key) & 0x7fffffff) % partitionMetadata.length;
    const available = partitionMetadata.filter((p) => p.leader >= 0);
    if (available.length > 0) return (available[next(topic) % available.length] as { partitionId: number }).partitionId;
    return next(topic) % partitionMetadata.length; // none has a leader: one without, as kafkajs does
  };
};
