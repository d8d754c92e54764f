import { execFileSync } from 'node:child_process';
import path from 'node:path';
import fc from 'fast-check';
import type { IHeaders } from 'kafkajs';
import { headerString } from '../sdk/wire';
import { packRecords, unpackRecord } from './decode-thread';
import { DECODED_HEADERS, type RecordIn } from './record-decoding';

/**
 * What crosses to the decode thread: `unpackRecord(packRecords(records))` must give the decoding
 * the same value bytes and the same header text (`headerString`) for every header it reads,
 * whatever the records hold — values and headers inside one fetch buffer (kafkajs's records, the
 * region copied once) or scattered, null values, repeated headers (arrays), headers given as text,
 * null or empty, names the decoding never reads.
 */
describe('packRecords / unpackRecord (the decode thread’s records)', () => {
  const bytes = fc.uint8Array({ maxLength: 40 });
  const headerValue = fc.oneof(
    bytes.map((b) => ({ b })),
    fc.string({ unit: 'binary', maxLength: 12 }).map((s) => ({ s })),
    fc.constant(null),
    fc.array(
      fc.oneof(
        bytes.map((b) => ({ b })),
        fc.string({ maxLength: 6 }).map((s) => ({ s })),
      ),
      { minLength: 1, maxLength: 3 },
    ),
  );
  const name = fc.oneof(fc.constantFrom(...DECODED_HEADERS), fc.string({ maxLength: 8 }));
  const record = fc.record({
    value: fc.option(bytes, { nil: null }),
    headers: fc.dictionary(name, headerValue, { maxKeys: 8 }),
    offset: fc.bigInt({ min: 0n, max: 2n ** 62n }).map(String),
    timestamp: fc.oneof(fc.nat().map(String), fc.constant('-1')),
  });
  type Spec = { b: Uint8Array } | { s: string };

  /** Builds the records: every byte piece a view of one shared buffer (as a fetch response's), or each a buffer of its own. */
  function build(specs: Array<typeof record extends fc.Arbitrary<infer T> ? T : never>, shared: boolean): RecordIn[] {
    const pieces: Uint8Array[] = [];
    const collect = (v: unknown) => {
      if (v && typeof v === 'object' && 'b' in v) pieces.push((v as { b: Uint8Array }).b);
    };
    for (const r of specs) {
      if (r.value) pieces.push(r.value);
      for (const v of Object.values(r.headers)) (Array.isArray(v) ? v : [v]).forEach(collect);
    }
    const all = Buffer.concat([Buffer.from('junk before'), ...pieces.map((p) => Buffer.from(p)), Buffer.from('after')]);
    let at = 'junk before'.length;
    const place = (b: Uint8Array): Buffer => {
      if (!shared) return Buffer.from(b);
      const view = all.subarray(at, at + b.length);
      at += b.length;
      return view;
    };
    const headerOf = (v: Spec | null | Spec[]): Buffer | string | null | Array<Buffer | string> => {
      if (v === null) return null;
      if (Array.isArray(v)) return v.map((x) => ('b' in x ? place(x.b) : x.s));
      return 'b' in v ? place(v.b) : v.s;
    };
    return specs.map((r) => {
      const value = r.value ? place(r.value) : null;
      const headers: IHeaders = {};
      for (const [k, v] of Object.entries(r.headers))
        Object.defineProperty(headers, k, {
          value: headerOf(v as Spec | null | Spec[]),
          enumerable: true,
          writable: true,
        });
      return { value, headers, offset: r.offset, timestamp: r.timestamp };
    });
  }

  it.each([
    ['in one shared buffer', true],
    ['each in a buffer of its own', false],
  ])('gives back what the decoding reads, records %s', (_label, shared) => {
    fc.assert(
      fc.property(fc.array(record, { maxLength: 12 }), (specs) => {
        const records = build(specs, shared);
        const packed = packRecords(records);
        // the packed bytes are a buffer of their own, whole: transferable without taking the fetch buffer along
        expect(packed.bytes.byteOffset).toBe(0);
        expect(packed.bytes.buffer.byteLength).toBe(packed.bytes.byteLength);
        const copy = Buffer.from(packed.bytes); // as the thread sees it after the transfer
        records.forEach((r, i) => {
          const u = unpackRecord(packed, copy, i);
          expect(u.value === null ? null : Buffer.from(u.value)).toEqual(
            r.value === null ? null : Buffer.from(r.value),
          );
          expect(u.offset).toBe(r.offset);
          expect(u.timestamp).toBe(r.timestamp);
          for (const h of DECODED_HEADERS) expect(headerString(u.headers, h)).toBe(headerString(r.headers, h));
        });
      }),
      { numRuns: 300 },
    );
  });

  it('copies a shared region once when the records lie together, and only what they use when they do not', () => {
    const big = Buffer.alloc(1024 * 1024, 7);
    const together = [0, 1, 2].map((i) => ({
      value: big.subarray(100 * i, 100 * i + 90),
      headers: { ce_id: big.subarray(100 * i + 90, 100 * i + 100) },
      offset: String(i),
      timestamp: '0',
    }));
    expect(packRecords(together).bytes.byteLength).toBe(300);
    // two records a megabyte apart in one buffer: the pieces, not the megabyte between them
    const apart = [together[0] as RecordIn, { ...(together[1] as RecordIn), value: big.subarray(1024 * 1024 - 90) }];
    expect(packRecords(apart).bytes.byteLength).toBe(90 + 10 + 90 + 10);
  });
});

describe('what the decode thread loads', () => {
  it('the wire contract and the log lines, none of the bridge’s Kafka, PostgreSQL, metrics or tracing modules', () => {
    // as the thread starts (threadSource): tsx, then this module, in a process of its own
    const script = `require(${JSON.stringify(require.resolve('tsx/cjs/api'))}).register();
      require(${JSON.stringify(path.join(__dirname, 'decode-thread.ts'))});
      const packages = new Set(Object.keys(require.cache).flatMap((k) => {
        const m = /node_modules\\/((?:@[^/]+\\/)?[^/]+)/.exec(k);
        return m ? [m[1]] : [];
      }));
      process.stdout.write(JSON.stringify([...packages].sort()));`;
    const loaded = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' })) as string[];
    expect(loaded).toContain('ajv'); // the catalog's validators: the check is of what it loads, not of nothing
    const heavy = loaded.filter((p) => /^(kafkajs|pg|pg-pool|prom-client|@opentelemetry\/.*)$/.test(p));
    expect(heavy).toEqual([]);
  });
});
