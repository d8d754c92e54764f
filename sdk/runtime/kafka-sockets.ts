import net from 'node:net';
import tls from 'node:tls';
import type { ISocketFactory, KafkaConfig } from 'kafkajs';
import { kafkaSecurity, type SegurancaKafka } from './connection-security';
import { patchKafkajsResponseCopy } from './kafkajs-connection';
import { patchKafkajsRecordDecoder } from './kafkajs-decoder';
import { patchKafkajsEncoder } from './kafkajs-encoder';
import { patchKafkajsFetchAhead } from './kafkajs-fetch-ahead';
import { patchKafkajsStoppedFetchers } from './kafkajs-stopped-fetchers';

/**
 * How every Feromônios Kafka client connects (the SDK, the bridge, the CLI): the TLS/SASL of
 * `seguranca` (`kafkaSecurity`) and sockets that hand kafkajs whole responses
 * (`kafkaSocketFactory`). Spread it into `new Kafka({...})`; a new client gets both by using it.
 * The first call also makes kafkajs produce for less, same bytes (`patchKafkajsEncoder`, ADR 0022
 * and its addenda: the encoder's members; before the process's first kafkajs produce, the record
 * encoder, the batch checksum and the produce request written in one pass), replaces its record
 * decoder with one that returns the same records for less (`patchKafkajsRecordDecoder`, ADR 0023;
 * only before the process's first kafkajs fetch), and stops kafkajs from copying each whole
 * response these sockets deliver a second time (`patchKafkajsResponseCopy`, ADR 0025), and makes
 * its consumers fetch the next batches while the current ones are handled, handing the workers the
 * same records (`patchKafkajsFetchAhead`, ADR 0028), and end the fetchers kafkajs starts after a
 * consumer stopped instead of looping on them without yielding (`patchKafkajsStoppedFetchers`,
 * ADR 0030).
 */
export function kafkaConnection(s: SegurancaKafka | undefined): Pick<KafkaConfig, 'ssl' | 'sasl' | 'socketFactory'> {
  patchKafkajsEncoder();
  patchKafkajsRecordDecoder();
  patchKafkajsResponseCopy();
  patchKafkajsFetchAhead();
  patchKafkajsStoppedFetchers();
  return { ...kafkaSecurity(s), socketFactory: kafkaSocketFactory() };
}

/**
 * The sockets every Feromônios Kafka client opens (the SDK, the bridge, the CLI): kafkajs's own
 * (TCP, or TLS with the broker's name as SNI, keep-alive every 60 s) whose `data` listeners receive
 * whole Kafka responses only.
 *
 * Why: kafkajs 2.2.4 keeps the bytes of an unfinished response on its `Connection`, not on the
 * socket, and never drops them. When a connection is reset in the middle of a response (a network
 * fault, a proxy or load balancer giving up, a broker killed), kafkajs reconnects the same
 * `Connection` and prepends those stale bytes to what the new socket receives: every later
 * response is read out of frame, so requests time out on a connection that looks healthy, or the
 * decoder throws out of the socket's `data` handler — an uncaught `RangeError` that ends the
 * process (tulios/kafkajs#715; reproduced by sdk/runtime/kafka-sockets.int.test.ts). Framing the
 * bytes per socket makes a cut response die with its socket.
 *
 * A frame whose size cannot be a response (under the 4 bytes of its correlation id) destroys the
 * socket with a {@link KafkaFrameError}: kafkajs sees a connection error, which it retries on a
 * new connection, rather than decoding garbage.
 */
export function kafkaSocketFactory(): ISocketFactory {
  return ({ host, port, ssl, onConnect }) => {
    const socket = ssl
      ? tls.connect({ host, port, ...(net.isIP(host) ? {} : { servername: host }), ...ssl }, onConnect)
      : net.connect({ host, port }, onConnect);
    socket.setKeepAlive(true, KEEP_ALIVE_MS);
    return deliverWholeResponses(socket);
  };
}

const KEEP_ALIVE_MS = 60_000;

/** A byte stream from a broker that is not a sequence of Kafka responses. */
export class KafkaFrameError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KafkaFrameError';
  }
}

/**
 * Wraps every `data` listener added with `on` (the way kafkajs adds its own) so that it is called
 * once per whole response: the 4-byte size and the bytes it announces. Each listener frames the
 * socket's bytes for itself; nothing outlives the socket.
 */
export function deliverWholeResponses(socket: net.Socket): net.Socket {
  type On = (event: string | symbol, listener: (...args: never[]) => void) => net.Socket;
  const on = socket.on.bind(socket) as On;
  const framedOn: On = (event, listener) => {
    if (event !== 'data') return on(event, listener);
    const frames = new ResponseFrames();
    const deliver = listener as (frame: Buffer) => void;
    return on('data', (chunk: Buffer) => {
      let whole: Buffer[];
      try {
        whole = frames.push(chunk);
      } catch (err) {
        socket.destroy(err as Error);
        return;
      }
      for (const frame of whole) deliver(frame);
    });
  };
  socket.on = framedOn as net.Socket['on'];
  return socket;
}

/** Bytes of a response's size field. */
const SIZE_BYTES = 4;
/** The smallest response: its correlation id. */
const MIN_RESPONSE_BYTES = 4;

/**
 * Splits a broker's byte stream into whole responses. `push` takes the next chunk as it arrived
 * and returns the responses it completed (size field included), in order; a partial one stays
 * buffered. Each response is copied at most once (when it spans chunks); one that lies within a
 * chunk is a view of it.
 */
export class ResponseFrames {
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Bytes to buffer before the next frame can be read: its size field, then the whole frame. */
  private needed = SIZE_BYTES;

  push(chunk: Buffer): Buffer[] {
    if (chunk.length === 0) return [];
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const out: Buffer[] = [];
    while (this.buffered >= this.needed) {
      let buf = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.buffered);
      const size = buf.readInt32BE(0);
      if (size < MIN_RESPONSE_BYTES)
        throw new KafkaFrameError(
          `a broker response announced ${size} bytes; a response holds at least its ${MIN_RESPONSE_BYTES}-byte correlation id`,
        );
      const frameBytes = SIZE_BYTES + size;
      if (buf.length < frameBytes) {
        this.chunks = [buf];
        this.needed = frameBytes;
        break;
      }
      out.push(buf.subarray(0, frameBytes));
      buf = buf.subarray(frameBytes);
      this.chunks = buf.length > 0 ? [buf] : [];
      this.buffered = buf.length;
      this.needed = SIZE_BYTES;
    }
    return out;
  }

  /** Bytes of a response not yet complete. */
  get pending(): number {
    return this.buffered;
  }
}
