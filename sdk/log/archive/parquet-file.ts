import { createHash } from 'node:crypto';
import type * as HyparquetModule from 'hyparquet';
import type * as HyparquetWriterModule from 'hyparquet-writer';
import { FeromoniosError } from '../../errors';

type Hyparquet = typeof HyparquetModule;
type HyparquetWriter = typeof HyparquetWriterModule;
import type { LogRow } from '../event-log-reader';

/**
 * One archived month's rows in Parquet (docs/archive.md, "File format"; ADR 0018): every column
 * of `core.event_log`, nothing else — the payload as PostgreSQL holds it, already redacted by the
 * bridge. Files are written and read whole in memory (`hyparquet-writer` / `hyparquet`, pure
 * JavaScript), in row groups of `LINHAS_POR_GRUPO`, rows in `sequence_number` order.
 */
/*
 * The Parquet library is ESM-only: loaded on first use (Node >= 20.19 requires ES modules), so a
 * colony that never reads an archived month never loads it.
 */
/* eslint-disable @typescript-eslint/no-require-imports */
const leitor = (): Hyparquet => require('hyparquet') as Hyparquet;
const escritor = (): HyparquetWriter => require('hyparquet-writer') as HyparquetWriter;
/* eslint-enable @typescript-eslint/no-require-imports */

export const FORMATO_ARQUIVO = 'feromonios.event_log.v1';
export const LINHAS_POR_GRUPO = 10_000;

/** A log row with the columns only restore needs (where the bridge read it in Kafka). */
export interface LinhaDoLog extends LogRow {
  /**
   * The payload as PostgreSQL printed it (`payload::text`): what the file stores and restore
   * writes back, so no number or key changes on the way (a JavaScript round trip could).
   */
  payload_json?: string;
  kafka_topic: string | null;
  kafka_partition: number | null;
  kafka_offset: string | null;
}

/** The columns the archive selects from `core.event_log` (uuids and bigints as text). */
export const COLUNAS_ARQUIVO = `sequence_number::text AS sequence_number, event_id::text AS event_id, tipo, versao_schema,
  timestamp, origem, correlacao_id::text AS correlacao_id, causation_id::text AS causation_id,
  tenant_id::text AS tenant_id, payload, payload::text AS payload_json, criado_em, kafka_topic, kafka_partition, kafka_offset::text AS kafka_offset`;

/**
 * A row's canonical form for the content checksum: the same on the rows read from PostgreSQL
 * and on the rows read back from the file, so a lossy round trip (a column, a digit, a key of the
 * payload) changes the sum.
 */
const canonica = (r: LinhaDoLog): string =>
  JSON.stringify([
    r.sequence_number,
    r.event_id,
    r.tipo,
    r.versao_schema,
    r.timestamp.toISOString(),
    r.origem,
    r.correlacao_id,
    r.causation_id,
    r.tenant_id,
    r.payload_json ?? JSON.stringify(r.payload),
    r.criado_em.toISOString(),
    r.kafka_topic,
    r.kafka_partition,
    r.kafka_offset,
  ]);

/** SHA-256 over the rows' canonical forms, in order. */
export function somaDoConteudo(rows: readonly LinhaDoLog[]): string {
  const h = createHash('sha256');
  for (const r of rows) h.update(canonica(r)).update('\n');
  return h.digest('hex');
}

export const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** The rows (in sequence order) as one Parquet file, in row groups of `linhasPorGrupo`. */
export function escreverParquet(rows: readonly LinhaDoLog[], linhasPorGrupo = LINHAS_POR_GRUPO): Uint8Array {
  const col = <K extends keyof LinhaDoLog>(k: K): Array<LinhaDoLog[K]> => rows.map((r) => r[k]);
  const buffer = escritor().parquetWriteBuffer({
    columnData: [
      { name: 'sequence_number', data: rows.map((r) => BigInt(r.sequence_number)), type: 'INT64', nullable: false },
      { name: 'event_id', data: col('event_id'), type: 'STRING', nullable: false },
      { name: 'tipo', data: col('tipo'), type: 'STRING', nullable: false },
      { name: 'versao_schema', data: col('versao_schema'), type: 'STRING', nullable: false },
      { name: 'timestamp', data: col('timestamp'), type: 'TIMESTAMP', nullable: false },
      { name: 'origem', data: col('origem'), type: 'STRING', nullable: false },
      { name: 'correlacao_id', data: col('correlacao_id'), type: 'STRING', nullable: true },
      { name: 'causation_id', data: col('causation_id'), type: 'STRING', nullable: true },
      { name: 'tenant_id', data: col('tenant_id'), type: 'STRING', nullable: true },
      // as text, exactly as PostgreSQL printed it
      {
        name: 'payload',
        data: rows.map((r) => r.payload_json ?? JSON.stringify(r.payload)),
        type: 'STRING',
        nullable: false,
      },
      { name: 'criado_em', data: col('criado_em'), type: 'TIMESTAMP', nullable: false },
      { name: 'kafka_topic', data: col('kafka_topic'), type: 'STRING', nullable: true },
      { name: 'kafka_partition', data: col('kafka_partition'), type: 'INT32', nullable: true },
      {
        name: 'kafka_offset',
        data: rows.map((r) => (r.kafka_offset === null ? null : BigInt(r.kafka_offset))),
        type: 'INT64',
        nullable: true,
      },
    ],
    rowGroupSize: linhasPorGrupo,
    kvMetadata: [{ key: 'feromonios.formato', value: FORMATO_ARQUIVO }],
  });
  return new Uint8Array(buffer);
}

type Decoded = Record<string, unknown>;

const texto = (v: unknown): string | null =>
  v === null || v === undefined
    ? null
    : typeof v === 'string'
      ? v
      : typeof v === 'bigint' || typeof v === 'number'
        ? String(v)
        : JSON.stringify(v);

/** A row group of an archived file: rows `[inicio, fim)` of the file, their sequence range. */
export interface GrupoDeLinhas {
  inicio: number;
  fim: number;
  sequence_min: bigint;
  sequence_max: bigint;
}

const corrupt = (onde: string, cause: unknown): FeromoniosError =>
  new FeromoniosError('ARCHIVE_CORRUPT', `archive file ${onde} is not readable Parquet: ${String(cause)}`, { cause });

const arrayBuffer = (bytes: Uint8Array): ArrayBuffer =>
  bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;

/**
 * The file's row groups from its footer, with the sequence range of each (the column statistics
 * `escreverParquet` writes) — so a reader decodes only the groups a range reaches.
 */
export function gruposDoParquet(bytes: Uint8Array | ArrayBuffer, onde: string): GrupoDeLinhas[] {
  try {
    const meta = leitor().parquetMetadata(bytes instanceof Uint8Array ? arrayBuffer(bytes) : bytes);
    const out: GrupoDeLinhas[] = [];
    let inicio = 0;
    for (const rg of meta.row_groups) {
      const n = Number(rg.num_rows);
      const st = rg.columns[0]?.meta_data?.statistics;
      const min = st?.min_value;
      const max = st?.max_value;
      if (typeof min !== 'bigint' || typeof max !== 'bigint') throw new Error('row group without sequence statistics');
      out.push({ inicio, fim: inicio + n, sequence_min: min, sequence_max: max });
      inicio += n;
    }
    return out;
  } catch (cause) {
    throw corrupt(onde, cause);
  }
}

/**
 * The rows of a file written by `escreverParquet` (all, or rows `[inicio, fim)`);
 * `ARCHIVE_CORRUPT` when it is not one.
 */
export async function lerParquet(
  bytes: Uint8Array | ArrayBuffer,
  onde: string,
  faixa?: { inicio: number; fim: number },
): Promise<LinhaDoLog[]> {
  let objs: Decoded[];
  try {
    const file = bytes instanceof Uint8Array ? arrayBuffer(bytes) : bytes;
    objs = (await leitor().parquetReadObjects({
      file,
      ...(faixa ? { rowStart: faixa.inicio, rowEnd: faixa.fim } : {}),
    })) as Decoded[];
  } catch (cause) {
    throw corrupt(onde, cause);
  }
  return objs.map((o) => ({
    sequence_number: String(o.sequence_number),
    event_id: String(o.event_id),
    tipo: String(o.tipo),
    versao_schema: String(o.versao_schema),
    timestamp: o.timestamp as Date,
    origem: String(o.origem),
    correlacao_id: texto(o.correlacao_id),
    causation_id: texto(o.causation_id),
    tenant_id: texto(o.tenant_id),
    payload: JSON.parse(String(o.payload)) as Record<string, unknown>,
    payload_json: String(o.payload),
    criado_em: o.criado_em as Date,
    kafka_topic: texto(o.kafka_topic),
    kafka_partition: o.kafka_partition === null || o.kafka_partition === undefined ? null : Number(o.kafka_partition),
    kafka_offset: texto(o.kafka_offset),
  }));
}
