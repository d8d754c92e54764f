/**
 * kafkajs 2.2.4's response buffering, made to stop copying every whole response a second time
 * (docs/adr/0025-kafkajs-response-copy.md).
 *
 * A kafkajs `Connection` keeps the bytes of a response still arriving in `chunks`, and concatenates
 * them into one buffer when the response is complete (`processData`). After each response it sets
 * `chunks` to `[what followed it]` — an empty buffer when nothing did, which is always the case
 * for Feromônios sockets: they hand kafkajs whole responses, one per `data` event
 * (`kafkaSocketFactory`). So the next response arrives as `[empty, response]`, two chunks, and
 * `Buffer.concat` copies it into a fresh buffer of its size. For a fetch response (up to
 * `maxBytes`, 10 MB) that is a fresh allocation the kernel maps page by page: in a profile of a
 * colony reading a backlog, kafkajs's copy was ~4 % of the thread, beside the ~5.6 % of the
 * copy that assembles the response from the socket's reads (the one that has to happen), and the
 * garbage collections that external memory triggers.
 *
 * The patch wraps `Connection.prototype.processData`: when the connection holds no bytes
 * (`bytesBuffered === 0`: every buffered chunk is empty), it drops those empty chunks before
 * kafkajs's own code runs. A response delivered whole is then `chunks[0]`, read in place. Nothing
 * else changes: the same bytes are decoded, in the same order, and a response that does arrive in
 * pieces (kafkajs's own sockets) is concatenated as before. Applied only to kafkajs
 * {@link KAFKAJS_CONNECTION_VERSION}; any other is left as it is.
 */

import { kafkajsPrototypeWrap } from './kafkajs-prototype-wrap';

/** The kafkajs version the patch was written and tested against. */
export const KAFKAJS_CONNECTION_VERSION = '2.2.4';

/** The parts of kafkajs's `Connection` (`kafkajs/src/network/connection`) the patch reads. */
export interface ConnectionBuffering {
  chunks: Buffer[];
  bytesBuffered: number;
  processData: (this: ConnectionBuffering, rawData: Buffer) => unknown;
}

type ProcessData = ConnectionBuffering['processData'];

const responseCopy = kafkajsPrototypeWrap<ConnectionBuffering, 'processData'>({
  version: KAFKAJS_CONNECTION_VERSION,
  module: 'kafkajs/src/network/connection',
  member: 'processData',
  wrapper: (original: ProcessData): ProcessData =>
    function processData(this: ConnectionBuffering, rawData: Buffer): unknown {
      // nothing buffered: whatever `chunks` holds is empty (the remainder of the last response)
      if (this.bytesBuffered === 0 && this.chunks.length > 0) this.chunks = [];
      return original.call(this, rawData);
    },
});

/**
 * Wraps `processData` of `proto` (a `Connection.prototype`); a second call does nothing.
 * Exported for the tests, which patch a copy of the class and compare it with a pristine one.
 */
export const patchProcessData = (proto: ConnectionBuffering): void => responseCopy.wrap(proto);

/** Puts back the `processData` that {@link patchProcessData} wrapped. */
export const restoreProcessData = (proto: ConnectionBuffering): void => responseCopy.unwrap(proto);

/**
 * Stops kafkajs from copying a whole response again (see the module's description). Called by
 * `kafkaConnection` when a Feromônios client is created; a second call does nothing. Returns
 * whether kafkajs's connections now run with it.
 */
export function patchKafkajsResponseCopy(): boolean {
  return responseCopy.patch();
}

/**
 * kafkajs's own `processData` back, until the next {@link patchKafkajsResponseCopy}. For the consume
 * benchmark, which measures plain kafkajs as released beside the SDK in one process.
 */
export function restoreKafkajsResponseCopy(): void {
  responseCopy.restore();
}
