import fc from 'fast-check';
import {
  KAFKAJS_CONNECTION_VERSION,
  patchKafkajsResponseCopy,
  patchProcessData,
  restoreKafkajsResponseCopy,
  restoreProcessData,
  type ConnectionBuffering,
} from './kafkajs-connection';
import { kafkaConnection, ResponseFrames } from './kafka-sockets';

/* eslint-disable @typescript-eslint/no-require-imports */

interface Fulfilled {
  correlationId: number;
  size: number;
  payload: Buffer;
}

/** kafkajs's `Connection.prototype`, as loaded (the one every client in this process shares). */
const kafkajsConnectionPrototype = (): ConnectionBuffering =>
  (require('kafkajs/src/network/connection') as { prototype: ConnectionBuffering }).prototype;

/**
 * A kafkajs `Connection` reduced to what `processData` touches, on `proto` (kafkajs's prototype,
 * or an object inheriting from it that the test patches): its buffering state as kafkajs's
 * constructor leaves it, and a request queue that records what each response fulfils.
 */
function connection(proto: ConnectionBuffering): { conn: ConnectionBuffering; fulfilled: Fulfilled[] } {
  const fulfilled: Fulfilled[] = [];
  const conn = Object.assign(Object.create(proto) as ConnectionBuffering, {
    chunks: [],
    bytesBuffered: 0,
    bytesNeeded: 4,
    authHandlers: null,
    requestQueue: { fulfillRequest: (r: Fulfilled) => fulfilled.push(r) },
  });
  return { conn, fulfilled };
}

/** A Kafka response: its size, its correlation id, the body. */
function response(correlationId: number, body: Buffer): Buffer {
  const out = Buffer.alloc(8 + body.length);
  out.writeInt32BE(4 + body.length, 0);
  out.writeInt32BE(correlationId, 4);
  body.copy(out, 8);
  return out;
}

/** A prototype of its own that inherits kafkajs's and is patched (kafkajs's own stays as released). */
function patchedPrototype(): ConnectionBuffering {
  const proto = Object.create(kafkajsConnectionPrototype()) as ConnectionBuffering;
  patchProcessData(proto);
  return proto;
}

const bodies = fc.array(fc.uint8Array({ maxLength: 300 }), { minLength: 1, maxLength: 8 });

describe("kafkajs's response buffering, patched (docs/adr/0025-kafkajs-response-copy.md)", () => {
  it(`is written for the kafkajs installed (${KAFKAJS_CONNECTION_VERSION})`, () => {
    expect((require('kafkajs/package.json') as { version: string }).version).toBe(KAFKAJS_CONNECTION_VERSION);
  });

  it('reads a response delivered whole in place — released kafkajs copies every one after the first', () => {
    const frames = [
      response(1, Buffer.from('first')),
      response(2, Buffer.from('second')),
      response(3, Buffer.alloc(0)),
    ];
    const patched = connection(patchedPrototype());
    const released = connection(kafkajsConnectionPrototype());
    for (const f of frames) {
      patched.conn.processData(f);
      released.conn.processData(f);
    }
    // the payload a request receives is a view of the very buffer the socket delivered: no copy
    expect(patched.fulfilled.map((r, i) => r.payload.buffer === frames[i]?.buffer)).toEqual([true, true, true]);
    // kafkajs as released: the remainder it keeps (empty) makes each later response two chunks, concatenated
    expect(released.fulfilled.map((r, i) => r.payload.buffer === frames[i]?.buffer)).toEqual([true, false, false]);
    expect(patched.fulfilled.map((r) => [r.correlationId, r.payload.toString()])).toEqual([
      [1, 'first'],
      [2, 'second'],
      [3, ''],
    ]);
  });

  it('fulfils the same requests with the same bytes as kafkajs, whole responses or any split of them (property)', () => {
    fc.assert(
      fc.property(bodies, fc.array(fc.nat(), { maxLength: 20 }), (bs, cuts) => {
        const stream = Buffer.concat(bs.map((b, i) => response(i + 1, Buffer.from(b))));
        // the stream as Feromônios sockets deliver it (whole responses), and cut anywhere (kafkajs's own sockets)
        const frames = new ResponseFrames().push(stream);
        const at = [...new Set(cuts.map((c) => c % (stream.length + 1)))].sort((a, b) => a - b);
        const pieces = [0, ...at].map((from, k) => stream.subarray(from, k < at.length ? at[k] : stream.length));
        for (const delivery of [frames, pieces]) {
          const patched = connection(patchedPrototype());
          const released = connection(kafkajsConnectionPrototype());
          for (const d of delivery) {
            patched.conn.processData(d);
            released.conn.processData(d);
          }
          const seen = (f: Fulfilled[]) => f.map((r) => [r.correlationId, r.size, r.payload.toString('hex')]);
          expect(seen(patched.fulfilled)).toEqual(seen(released.fulfilled));
          expect(patched.fulfilled).toHaveLength(bs.length);
          expect(patched.conn.bytesBuffered).toBe(released.conn.bytesBuffered);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('does with bytes that are no Kafka response what kafkajs does: the same requests fulfilled, the same error (property)', () => {
    // a hostile or broken peer: sizes negative, huge or short, garbage after a good response
    const outcome = (proto: ConnectionBuffering, pieces: Buffer[]) => {
      const c = connection(proto);
      let error: string | undefined;
      try {
        for (const p of pieces) c.conn.processData(p);
      } catch (err) {
        error = `${(err as Error).name}: ${(err as Error).message}`;
      }
      const fulfilled = c.fulfilled.map((r) => [r.correlationId, r.size, r.payload.toString('hex')]);
      return { fulfilled, error, buffered: error ? undefined : c.conn.bytesBuffered };
    };
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a)),
            fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }).map((n) => {
              const b = Buffer.alloc(4);
              b.writeInt32BE(n);
              return b;
            }),
            bodies.map((bs) => Buffer.concat(bs.map((b, i) => response(i, Buffer.from(b))))),
          ),
          { maxLength: 6 },
        ),
        (pieces) => {
          expect(outcome(patchedPrototype(), pieces)).toEqual(outcome(kafkajsConnectionPrototype(), pieces));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('keeps a response that arrives in pieces until it is whole, whatever came before it', () => {
    const patched = connection(patchedPrototype());
    const frame = response(7, Buffer.from('in three pieces'));
    patched.conn.processData(response(6, Buffer.from('whole')));
    patched.conn.processData(frame.subarray(0, 3)); // not even the size yet
    patched.conn.processData(frame.subarray(3, 10));
    expect(patched.fulfilled.map((r) => r.correlationId)).toEqual([6]);
    expect(patched.conn.bytesBuffered).toBe(10);
    patched.conn.processData(frame.subarray(10));
    expect(patched.fulfilled.map((r) => [r.correlationId, r.payload.toString()])).toEqual([
      [6, 'whole'],
      [7, 'in three pieces'],
    ]);
    expect(patched.conn.bytesBuffered).toBe(0);
  });

  it('is applied once, and restoring puts back the very function it wrapped', () => {
    const proto = Object.create(kafkajsConnectionPrototype()) as ConnectionBuffering;
    const original = proto.processData;
    patchProcessData(proto);
    const once = proto.processData;
    patchProcessData(proto);
    expect(proto.processData).toBe(once);
    expect(once).not.toBe(original);
    restoreProcessData(proto);
    expect(proto.processData).toBe(original);
  });

  it('is applied to the kafkajs every client shares by kafkaConnection, and can be taken back', () => {
    const frames = [response(1, Buffer.from('a')), response(2, Buffer.from('b'))];
    const copied = (): boolean => {
      const c = connection(kafkajsConnectionPrototype());
      for (const f of frames) c.conn.processData(f);
      return c.fulfilled[1]?.payload.buffer !== frames[1]?.buffer;
    };
    restoreKafkajsResponseCopy();
    expect(copied()).toBe(true);
    kafkaConnection(undefined);
    expect(copied()).toBe(false);
    restoreKafkajsResponseCopy();
    expect(copied()).toBe(true);
    expect(patchKafkajsResponseCopy()).toBe(true);
    expect(copied()).toBe(false);
  });
});
/* eslint-enable @typescript-eslint/no-require-imports */
