import net from 'node:net';
import fc from 'fast-check';
import { deliverWholeResponses, KafkaFrameError, ResponseFrames } from './kafka-sockets';

/** A response as a broker frames it: the 4-byte big-endian size, then the body. */
const frame = (body: Uint8Array): Buffer => {
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.length);
  return Buffer.concat([size, body]);
};

/** `bytes` cut at the given points (sorted, deduplicated, within the buffer). */
const splitAt = (bytes: Buffer, cuts: number[]): Buffer[] => {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let from = 0;
  for (const p of [...points, bytes.length]) {
    out.push(bytes.subarray(from, p)); // empty chunks included: they must change nothing
    from = p;
  }
  return out;
};

describe('ResponseFrames', () => {
  it('returns exactly the responses sent, in order, however the stream is chunked', () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ minLength: 4, maxLength: 300 }), { maxLength: 8 }),
        fc.array(fc.nat(), { maxLength: 30 }),
        (bodies, cuts) => {
          const frames = bodies.map(frame);
          const framer = new ResponseFrames();
          const got = splitAt(Buffer.concat(frames), cuts).flatMap((c) => framer.push(c));
          expect(got.map((b) => b.toString('hex'))).toEqual(frames.map((b) => b.toString('hex')));
          expect(framer.pending).toBe(0);
        },
      ),
    );
  });

  it('keeps an unfinished response buffered and returns nothing of it', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 4, maxLength: 300 }), fc.nat(), (body, cut) => {
        const bytes = frame(body);
        const keep = cut % bytes.length; // never the whole frame
        const framer = new ResponseFrames();
        expect(framer.push(bytes.subarray(0, keep))).toEqual([]);
        expect(framer.pending).toBe(keep);
        expect(framer.push(bytes.subarray(keep)).map((b) => b.toString('hex'))).toEqual([bytes.toString('hex')]);
      }),
    );
  });

  it.each([
    ['a negative size', -1],
    ['a zero size', 0],
    ['a size under the correlation id', 3],
    ['the smallest negative size', -0x80000000],
  ])('refuses %s with a typed error naming it', (_what, size) => {
    const bytes = Buffer.alloc(12);
    bytes.writeInt32BE(size);
    expect(() => new ResponseFrames().push(bytes)).toThrow(KafkaFrameError);
    expect(() => new ResponseFrames().push(bytes)).toThrow(`announced ${size} bytes`);
  });

  it('on arbitrary bytes (a hostile or broken peer) returns only well-formed frames or throws KafkaFrameError', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 400 }), fc.array(fc.nat(), { maxLength: 20 }), (bytes, cuts) => {
        const framer = new ResponseFrames();
        const frames: Buffer[] = [];
        let thrown: unknown;
        try {
          for (const c of splitAt(Buffer.from(bytes), cuts)) frames.push(...framer.push(c));
        } catch (err) {
          thrown = err;
        }
        expect(thrown === undefined || thrown instanceof KafkaFrameError).toBe(true);
        // every frame handed on is whole: a size of at least 4, and exactly that many bytes after it
        expect(frames.filter((f) => f.readInt32BE(0) < 4 || f.length !== 4 + f.readInt32BE(0))).toEqual([]);
        // until a refusal, nothing lost and nothing invented
        const accounted = frames.reduce((n, f) => n + f.length, 0) + framer.pending;
        expect(thrown !== undefined || accounted === bytes.length).toBe(true);
      }),
    );
  });

  it('refuses a bad size that follows good responses in the same chunk, once they were read', () => {
    const bad = Buffer.alloc(4);
    bad.writeInt32BE(2);
    const framer = new ResponseFrames();
    expect(() => framer.push(Buffer.concat([frame(Buffer.from('abcd')), bad]))).toThrow(KafkaFrameError);
  });
});

describe('deliverWholeResponses', () => {
  it('calls a data listener once per whole response and leaves other events alone', () => {
    const socket = deliverWholeResponses(new net.Socket());
    const got: string[] = [];
    const ends: number[] = [];
    socket.on('data', (b: Buffer) => got.push(b.subarray(4).toString()));
    socket.on('end', () => ends.push(1));
    const bytes = Buffer.concat([frame(Buffer.from('first')), frame(Buffer.from('second'))]);
    socket.emit('data', bytes.subarray(0, 3));
    socket.emit('data', bytes.subarray(3, 7));
    expect(got).toEqual([]);
    socket.emit('data', bytes.subarray(7, 12)); // the end of the first, the start of the second
    expect(got).toEqual(['first']);
    socket.emit('data', bytes.subarray(12));
    socket.emit('end');
    expect(got).toEqual(['first', 'second']);
    expect(ends).toEqual([1]);
    socket.destroy();
  });

  it('destroys the socket with the framing error instead of handing garbage on', async () => {
    const socket = deliverWholeResponses(new net.Socket());
    const got: Buffer[] = [];
    socket.on('data', (b: Buffer) => got.push(b));
    const error = new Promise<Error>((resolve) => socket.on('error', resolve));
    socket.emit('data', Buffer.from([0, 0, 0, 1, 9, 9, 9, 9]));
    expect(await error).toBeInstanceOf(KafkaFrameError);
    expect(socket.destroyed).toBe(true);
    expect(got).toEqual([]);
  });
});
