import type pg from 'pg';
import { FeromoniosError } from '../../errors';
import { abrirDestino, opcoesS3DoAmbiente, type DestinoArquivo, type OpcoesS3 } from './destination';
import { lerParquet, sha256, type LinhaDoLog } from './parquet-file';

/** One archived file as `core.event_log_arquivo` (and the month's manifest) describes it. */
export interface SegmentoArquivado {
  /** `YYYY-MM` (UTC month of `criado_em`). */
  mes: string;
  arquivo: string;
  destino: string;
  linhas: number;
  sequence_min: bigint;
  sequence_max: bigint;
  timestamp_min: Date;
  timestamp_max: Date;
  criado_em_min: Date;
  criado_em_max: Date;
  tipos: string[];
  origens: string[];
  bytes: number;
  sha256: string;
  conteudo_sha256: string;
}

interface SegmentoRow {
  mes: string;
  arquivo: string;
  destino: string;
  linhas: number;
  sequence_min: string;
  sequence_max: string;
  timestamp_min: Date;
  timestamp_max: Date;
  criado_em_min: Date;
  criado_em_max: Date;
  tipos: string[];
  origens: string[];
  bytes: string;
  sha256: string;
  conteudo_sha256: string;
}

/** The archived files, in sequence order (optionally of one month). */
export async function listarSegmentos(
  db: Pick<pg.Pool, 'query'> | pg.PoolClient,
  mes?: string,
): Promise<SegmentoArquivado[]> {
  const { rows } = await db.query<SegmentoRow>(
    `SELECT to_char(mes, 'YYYY-MM') AS mes, arquivo, destino, linhas, sequence_min::text AS sequence_min,
            sequence_max::text AS sequence_max, timestamp_min, timestamp_max, criado_em_min, criado_em_max,
            tipos, origens, bytes::text AS bytes, sha256, conteudo_sha256
       FROM core.event_log_arquivo ${mes ? "WHERE mes = to_date($1, 'YYYY-MM')" : ''}
      ORDER BY sequence_min, arquivo`,
    mes ? [mes] : [],
  );
  return rows.map((r) => ({
    ...r,
    sequence_min: BigInt(r.sequence_min),
    sequence_max: BigInt(r.sequence_max),
    bytes: Number(r.bytes),
  }));
}

/** Segments of two listings (taken before and after a read of PostgreSQL), each file once. */
export function uniao(a: readonly SegmentoArquivado[], b: readonly SegmentoArquivado[]): SegmentoArquivado[] {
  const out = new Map<string, SegmentoArquivado>();
  for (const s of [...a, ...b]) out.set(`${s.destino} ${s.arquivo}`, s);
  return [...out.values()].sort((x, y) =>
    x.sequence_min < y.sequence_min ? -1 : x.sequence_min > y.sequence_min ? 1 : 0,
  );
}

export interface OpcoesLeituraArquivo {
  /** S3 settings for `s3://` destinations; default: the environment (`FEROMONIOS_ARCHIVE_S3_*`). */
  s3?: OpcoesS3;
  /** Decoded files kept in memory (least recently used out first); default 4. */
  arquivosEmMemoria?: number;
}

/**
 * Reads archived files for the log's readers: fetches a file from its destination, checks its
 * SHA-256 against the manifest (`ARCHIVE_CORRUPT` when it differs), decodes it and keeps the
 * last few decoded files, so a replay reading batch after batch decodes each file once.
 */
export class LogArquivado {
  private readonly destinos = new Map<string, DestinoArquivo>();
  private readonly cache = new Map<string, Promise<LinhaDoLog[]>>();
  private readonly max: number;
  private readonly s3: OpcoesS3;

  constructor(opcoes: OpcoesLeituraArquivo = {}) {
    this.max = Math.max(1, opcoes.arquivosEmMemoria ?? 4);
    this.s3 = opcoes.s3 ?? opcoesS3DoAmbiente();
  }

  destino(uri: string): DestinoArquivo {
    let d = this.destinos.get(uri);
    if (!d) this.destinos.set(uri, (d = abrirDestino(uri, this.s3)));
    return d;
  }

  /** The file's rows in sequence order. */
  linhas(seg: SegmentoArquivado): Promise<LinhaDoLog[]> {
    const k = `${seg.destino} ${seg.arquivo} ${seg.sha256}`;
    const hit = this.cache.get(k);
    if (hit) {
      this.cache.delete(k);
      this.cache.set(k, hit);
      return hit;
    }
    const p = this.carregar(seg);
    this.cache.set(k, p);
    p.catch(() => this.cache.delete(k));
    while (this.cache.size > this.max) this.cache.delete(this.cache.keys().next().value as string);
    return p;
  }

  private async carregar(seg: SegmentoArquivado): Promise<LinhaDoLog[]> {
    const onde = `${seg.destino}/${seg.arquivo}`;
    const bytes = await this.destino(seg.destino).ler(seg.arquivo);
    const soma = sha256(bytes);
    if (soma !== seg.sha256)
      throw new FeromoniosError(
        'ARCHIVE_CORRUPT',
        `archive file ${onde}: SHA-256 ${soma} differs from the manifest's ${seg.sha256}`,
      );
    const rows = await lerParquet(bytes, onde);
    if (rows.length !== seg.linhas)
      throw new FeromoniosError(
        'ARCHIVE_CORRUPT',
        `archive file ${onde}: ${rows.length} rows, the manifest says ${seg.linhas}`,
      );
    return rows;
  }
}
