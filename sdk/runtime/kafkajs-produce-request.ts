/**
 * kafkajs 2.2.4's produce request (versions 3 to 7, which all reuse version 3's encoding) written
 * in one pass into one buffer (docs/adr/0022-kafkajs-encoder-allocations.md, addendum "The produce
 * request in one pass").
 *
 * kafkajs builds a produce request as a tree of encoders, each copied into its parent: a record's
 * encoder per message (made by spreading the message into a new object), a batch body, a batch with
 * its checksum, the batch with its offset and length, a partition, a topic, the request — every
 * record's bytes copied five times, each encoder growing by doubling copies of its own, and the
 * message timestamps mapped, filtered and sorted as text per partition. With 64 publishers in
 * flight this structure (not the bytes themselves) was ~10 % of the publishing thread.
 *
 * {@link produceRequest} writes the same bytes into one encoder: each record in place (the record
 * encoder's writer, `recordWriter`), each batch's header written once its records are (its length,
 * checksum and sizes known), every field through kafkajs's own `Encoder` methods, in kafkajs's
 * order, so what kafkajs refuses throws kafkajs's error. A request with compression is kafkajs's own
 * (the SDK never compresses). sdk/runtime/kafkajs-produce-request.unit.test.ts compares the two on
 * random requests — topics, partitions, sequences, transactional ids, producer ids, messages with
 * and without timestamps (numbers, texts, garbage), keys, values and headers of every kind.
 *
 * kafkajs binds version 3's request when version 4's module is first loaded — at the process's
 * first produce — so it is replaced in Node's module cache before that (`kafkajsModuleSwap`, after
 * the record encoder and the checksum, which version 3's module binds in turn);
 * `patchKafkajsEncoder` (so `kafkaConnection`) applies it. Applied only to kafkajs
 * {@link KAFKAJS_PRODUCE_REQUEST_VERSION}.
 */

import { crc32c } from './kafkajs-crc32c';
import { kafkajsModuleSwap } from './kafkajs-module-swap';
import { recordWriter, type RecordEncoderClass, type RecordEncoding } from './kafkajs-record-encoder';

/* eslint-disable @typescript-eslint/no-require-imports -- kafkajs's internals are CommonJS, resolved from its package */

/** The kafkajs version the replacement was written and tested against. */
export const KAFKAJS_PRODUCE_REQUEST_VERSION = '2.2.4';

/** A message as kafkajs's producer hands it to the produce request. */
export interface ProduceMessage {
  key?: unknown;
  value?: unknown;
  headers?: Record<string, unknown>;
  timestamp?: unknown;
}

/** The arguments of kafkajs's produce request (version 3). */
export interface ProduceArgs {
  acks: number;
  timeout: number;
  transactionalId?: string | null;
  producerId?: unknown;
  producerEpoch?: number;
  compression?: number;
  topicData: Array<{
    topic: string;
    partitions: Array<{ partition: number; firstSequence?: number; messages: ProduceMessage[] }>;
  }>;
}

/** What kafkajs's connection sends: its `encode` gives an `Encoder`. */
export interface ProduceRequest {
  apiKey: number;
  apiVersion: number;
  apiName: string;
  expectResponse(): boolean;
  encode(): Promise<unknown>;
}

export type ProduceRequestFn = (args: ProduceArgs) => ProduceRequest;

/** kafkajs's `Encoder`: what the one pass writes with (a record's writes, and the request's fixed fields). */
interface RequestEncoding extends RecordEncoding {
  writeString(value: string | null): RequestEncoding;
  writeInt8(value: number): RequestEncoding;
  writeInt16(value: unknown): RequestEncoding;
  writeInt32(value: unknown): RequestEncoding;
  writeInt64(value: unknown): RequestEncoding;
}

interface RequestEncoderClass extends RecordEncoderClass {
  new (): RequestEncoding;
}

/** The record batch's magic byte (v2 batches) and its transactional attribute bit (kafkajs's). */
const MAGIC_BYTE = 2;
const TRANSACTIONAL_MASK = 16;
/** Compression "none" (kafkajs's `CompressionTypes.None`): the only one written here. */
const NO_COMPRESSION = 0;
/** The produce API's key (kafkajs's `apiKeys.Produce`). */
const PRODUCE_API_KEY = 0;

/**
 * kafkajs's produce request (v3) written in one pass by `Encoder` (kafkajs's), `Long` (kafkajs's, for
 * the default producer id), falling back on `original` for a compressed request.
 */
export function produceRequest(
  Encoder: RequestEncoderClass,
  Long: { fromInt(n: number): unknown },
  original: ProduceRequestFn,
): ProduceRequestFn {
  const writeRecord = recordWriter(Encoder);

  /** One partition's record set (kafkajs's `partitionsEncoder` and `RecordBatch`), at the end of `e`. */
  const writePartition = (
    e: RequestEncoding,
    { partition, messages, firstSequence }: { partition: number; firstSequence?: number; messages: ProduceMessage[] },
    transactionalId: string | null,
    producerId: unknown,
    producerEpoch: number,
  ): void => {
    const dateNow = Date.now();
    let firstTimestamp: unknown = dateNow;
    let maxTimestamp: unknown = dateNow;
    if (messages.some((m) => m.timestamp != null)) {
      // kafkajs's own choice, text sort included
      const timestamps = messages
        .map((m) => m.timestamp)
        .filter((t) => t != null)
        .sort();
      firstTimestamp = timestamps[0];
      maxTimestamp = timestamps[timestamps.length - 1];
    }
    e.writeInt32(partition);
    const sizeAt = e.offset;
    // the batch's fixed part — size, first offset, length, leader epoch, magic, checksum, attributes,
    // last offset delta, timestamps, producer id and epoch, first sequence, record count — is
    // written once the records are (kafkajs writes the records first, then these, in this order)
    const batchHeader = 4 + 8 + 4 + 4 + 1 + 4 + 2 + 4 + 8 + 8 + 8 + 2 + 4 + 4;
    e.ensureAvailable(batchHeader);
    e.offset += batchHeader;
    for (let i = 0; i < messages.length; i++) {
      const m = messages[i] as ProduceMessage;
      // kafkajs's own delta: a text timestamp is subtracted as JavaScript does it
      const timestampDelta = ((m.timestamp || dateNow) as number) - (firstTimestamp as number);
      writeRecord(e, m.key, m.value, m.headers === undefined ? {} : m.headers, i, timestampDelta);
    }
    const end = e.offset;
    e.offset = sizeAt + 4;
    e.writeInt64(0) // first offset
      .writeInt32(end - sizeAt - 4 - 8 - 4) // the batch's length, after it
      .writeInt32(0) // partition leader epoch
      .writeInt8(MAGIC_BYTE);
    const crcAt = e.offset;
    e.offset += 4;
    const bodyAt = e.offset;
    e.writeInt16(NO_COMPRESSION | (transactionalId ? TRANSACTIONAL_MASK : 0))
      .writeInt32(messages.length - 1) // last offset delta
      .writeInt64(firstTimestamp)
      .writeInt64(maxTimestamp)
      .writeInt64(producerId)
      .writeInt16(producerEpoch)
      .writeInt32(firstSequence === undefined ? 0 : firstSequence)
      .writeInt32(messages.length);
    e.offset = sizeAt;
    e.writeInt32(end - sizeAt - 4); // the record set's size
    e.buf.writeUInt32BE(crc32c(e.buf.subarray(bodyAt, end)), crcAt);
    e.offset = end;
  };

  return (args) => {
    if ((args.compression ?? NO_COMPRESSION) !== NO_COMPRESSION) return original(args);
    const { acks, timeout, transactionalId = null, producerId = Long.fromInt(-1), producerEpoch = 0, topicData } = args;
    return {
      apiKey: PRODUCE_API_KEY,
      apiVersion: 3,
      apiName: 'Produce',
      expectResponse: () => acks !== 0,
      // eslint-disable-next-line @typescript-eslint/require-await -- kafkajs awaits it, as its own
      encode: async () => {
        const e = new Encoder();
        e.writeString(transactionalId).writeInt16(acks).writeInt32(timeout).writeInt32(topicData.length);
        for (const { topic, partitions } of topicData) {
          e.writeString(topic).writeInt32(partitions.length);
          for (const p of partitions) writePartition(e, p, transactionalId, producerId, producerEpoch);
        }
        return e;
      },
    };
  };
}

/** kafkajs's produce request (v3), swapped in the module cache before version 4's binds it. */
const swap = kafkajsModuleSwap<ProduceArgs, undefined>({
  version: KAFKAJS_PRODUCE_REQUEST_VERSION,
  module: 'kafkajs/src/protocol/requests/produce/v3/request',
  boundBy: 'kafkajs/src/protocol/requests/produce/v4/request',
  replacement: (original) =>
    produceRequest(
      require('kafkajs/src/protocol/encoder') as RequestEncoderClass,
      require('kafkajs/src/utils/long') as { fromInt(n: number): unknown },
      original as ProduceRequestFn,
    ),
});

/**
 * Puts {@link produceRequest} in place of kafkajs's produce request in Node's module cache, when
 * kafkajs is version {@link KAFKAJS_PRODUCE_REQUEST_VERSION} and has not produced yet. Returns
 * whether kafkajs encodes produce requests with it. Called by `patchKafkajsEncoder`, after the
 * record encoder and the checksum (loading kafkajs's request here binds them); calling it again
 * does nothing (or undoes a restore).
 */
export function patchKafkajsProduceRequest(): boolean {
  return swap.patch();
}

/** kafkajs's own produce request back, until the next {@link patchKafkajsProduceRequest} (the publish benchmark's "as released"). */
export function restoreKafkajsProduceRequest(): void {
  swap.restore();
}
/* eslint-enable @typescript-eslint/no-require-imports */
