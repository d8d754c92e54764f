import type pg from 'pg';
import { FeromoniosError } from '../../errors';
import { setNewest } from '../../runtime/bounded-map';
import { abrirDestino, opcoesS3DoAmbiente, type DestinoArquivo, type OpcoesS3 } from './destination';
import { gruposDoParquet, lerParquet, sha256, type GrupoDeLinhas, type LinhaDoLog } from './parquet-file';

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

/** A segment as PostgreSQL returns it (bigints as text). */
export type SegmentoRow = Omit<SegmentoArquivado, 'sequence_min' | 'sequence_max' | 'bytes'> & {
  sequence_min: string;
  sequence_max: string;
  bytes: string;
};

/** The query listing every archived file, in sequence order (no parameters: it can travel with others). */
export const SQL_SEGMENTOS = sqlSegmentos('');

function sqlSegmentos(where: string): string {
  return `SELECT to_char(mes, 'YYYY-MM') AS mes, arquivo, destino, linhas, sequence_min::text AS sequence_min,
                 sequence_max::text AS sequence_max, timestamp_min, timestamp_max, criado_em_min, criado_em_max,
                 tipos, origens, bytes::text AS bytes, sha256, conteudo_sha256
            FROM core.event_log_arquivo ${where}
           ORDER BY event_log_arquivo.sequence_min, arquivo`;
}

/** The segments of rows selected by `SQL_SEGMENTOS`. */
export function segmentosDasLinhas(rows: readonly SegmentoRow[]): SegmentoArquivado[] {
  return rows.map((r) => ({
    ...r,
    sequence_min: BigInt(r.sequence_min),
    sequence_max: BigInt(r.sequence_max),
    bytes: Number(r.bytes),
  }));
}

/** The archived files, in sequence order (optionally of one month). */
export async function listarSegmentos(
  db: Pick<pg.Pool, 'query'> | pg.PoolClient,
  mes?: string,
): Promise<SegmentoArquivado[]> {
  const { rows } = mes
    ? await db.query<SegmentoRow>(sqlSegmentos("WHERE mes = to_date($1, 'YYYY-MM')"), [mes])
    : await db.query<SegmentoRow>(SQL_SEGMENTOS);
  return segmentosDasLinhas(rows);
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
  /** Files kept in memory as fetched and checked bytes (least recently used out first); default 2. */
  arquivosEmMemoria?: number;
  /** Decoded row groups (10,000 rows each) kept in memory; default 4. */
  gruposEmMemoria?: number;
}

interface ArquivoCarregado {
  bytes: ArrayBuffer;
  grupos: GrupoDeLinhas[];
}

/** A small LRU of promises (a failed load is forgotten, so the next read tries again). */
class Lru<V> {
  private readonly m = new Map<string, Promise<V>>();
  constructor(private readonly max: number) {}

  get(k: string, load: () => Promise<V>): Promise<V> {
    const hit = this.m.get(k);
    if (hit) {
      this.m.delete(k);
      this.m.set(k, hit);
      return hit;
    }
    const p = load();
    setNewest(this.m, k, p, this.max);
    p.catch(() => this.m.delete(k));
    return p;
  }
}

/**
 * Reads archived files for the log's readers: fetches a file from its destination, checks its
 * SHA-256 and row count against the record (`ARCHIVE_CORRUPT` when they differ), and decodes
 * only the row groups a read reaches. The last few files (compressed bytes) and decoded row
 * groups stay in memory, so a replay reading batch after batch fetches each file once and
 * holds at most `gruposEmMemoria` × 10,000 decoded rows, whatever the size of the archive.
 */
export class LogArquivado {
  private readonly destinos = new Map<string, DestinoArquivo>();
  private readonly arquivos: Lru<ArquivoCarregado>;
  private readonly decodificados: Lru<LinhaDoLog[]>;
  private readonly s3: OpcoesS3;

  constructor(opcoes: OpcoesLeituraArquivo = {}) {
    this.arquivos = new Lru(Math.max(1, opcoes.arquivosEmMemoria ?? 2));
    this.decodificados = new Lru(Math.max(1, opcoes.gruposEmMemoria ?? 4));
    this.s3 = opcoes.s3 ?? opcoesS3DoAmbiente();
  }

  destino(uri: string): DestinoArquivo {
    let d = this.destinos.get(uri);
    if (!d) this.destinos.set(uri, (d = abrirDestino(uri, this.s3)));
    return d;
  }

  private chave(seg: SegmentoArquivado): string {
    return `${seg.destino} ${seg.arquivo} ${seg.sha256}`;
  }

  private carregado(seg: SegmentoArquivado): Promise<ArquivoCarregado> {
    return this.arquivos.get(this.chave(seg), () => this.carregar(seg));
  }

  /** The file's row groups (sequence ranges), fetching and checking it if needed. */
  async grupos(seg: SegmentoArquivado): Promise<GrupoDeLinhas[]> {
    return (await this.carregado(seg)).grupos;
  }

  /** The rows of one row group, in sequence order. */
  linhasDoGrupo(seg: SegmentoArquivado, g: GrupoDeLinhas): Promise<LinhaDoLog[]> {
    return this.decodificados.get(`${this.chave(seg)} ${g.inicio}`, async () =>
      lerParquet((await this.carregado(seg)).bytes, `${seg.destino}/${seg.arquivo}`, g),
    );
  }

  /** Every row of the file in sequence order (decoded now, not kept: verify and restore). */
  async linhas(seg: SegmentoArquivado): Promise<LinhaDoLog[]> {
    const rows = await lerParquet((await this.carregado(seg)).bytes, `${seg.destino}/${seg.arquivo}`);
    if (rows.length !== seg.linhas)
      throw new FeromoniosError(
        'ARCHIVE_CORRUPT',
        `archive file ${seg.destino}/${seg.arquivo}: ${rows.length} rows, the manifest says ${seg.linhas}`,
      );
    return rows;
  }

  private async carregar(seg: SegmentoArquivado): Promise<ArquivoCarregado> {
    const onde = `${seg.destino}/${seg.arquivo}`;
    const bytes = await this.destino(seg.destino).ler(seg.arquivo);
    const soma = sha256(bytes);
    if (soma !== seg.sha256)
      throw new FeromoniosError(
        'ARCHIVE_CORRUPT',
        `archive file ${onde}: SHA-256 ${soma} differs from the manifest's ${seg.sha256}`,
      );
    const ab = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    const grupos = gruposDoParquet(ab, onde);
    const n = grupos.at(-1)?.fim ?? 0;
    if (n !== seg.linhas)
      throw new FeromoniosError('ARCHIVE_CORRUPT', `archive file ${onde}: ${n} rows, the manifest says ${seg.linhas}`);
    return { bytes: ab, grupos };
  }
}
