import type pg from 'pg';
import { FeromoniosError } from '../../errors';
import { silentLogger, type Logger } from '../../runtime/logger';
import { backoffDelay, sleep } from '../../runtime/retry';
import { withTransaction } from '../../runtime/transaction';
import { listarSegmentos, LogArquivado, type SegmentoArquivado } from './archived-log';
import type { DestinoArquivo, OpcoesS3 } from './destination';
import {
  COLUNAS_ARQUIVO,
  escreverParquet,
  FORMATO_ARQUIVO,
  lerParquet,
  sha256,
  somaDoConteudo,
  type LinhaDoLog,
} from './parquet-file';

/**
 * Archiving, verifying and restoring months of `core.event_log` (docs/archive.md; ADR 0018).
 *
 * `arquivarMes` writes a month's partition to Parquet files and their manifest, reads every
 * one back and checks it (row count, the file's SHA-256, the rows' content checksum) and only
 * then, in one transaction, records the files in `core.event_log_arquivo` and detaches and
 * drops the partition. Any failure before that transaction leaves the partition in place (the
 * run can be repeated: files are rewritten under the same keys). `core.event_ids` keeps the
 * month's ids, so the bridge's de-duplication and DLQ references survive the archive.
 */

/** A month as `YYYY-MM` (UTC), the partition `core.event_log_YYYY_MM`. */
const MES = /^(\d{4})-(0[1-9]|1[0-2])$/;

function mesValido(mes: string): { ano: string; mm: string; particao: string; inicio: string } {
  const m = typeof mes === 'string' ? MES.exec(mes) : null;
  if (!m) throw new FeromoniosError('BAD_REQUEST', `month must be YYYY-MM, got ${JSON.stringify(mes)}`);
  const [, ano, mm] = m as unknown as [string, string, string];
  return { ano, mm, particao: `event_log_${ano}_${mm}`, inicio: `${ano}-${mm}-01` };
}

const mesAtual = (agora: Date): string => agora.toISOString().slice(0, 7);

/** Where a month of the log is. */
export interface MesDoLog {
  mes: string;
  onde: 'postgres' | 'arquivo';
  /** Rows: PostgreSQL's live-row estimate (`pg_stat_user_tables`, no count) or the archive's record. */
  linhas: number;
  /** Archived files (0 in PostgreSQL). */
  arquivos: number;
  destino: string | null;
}

/** Every month of the log, in PostgreSQL or in the archive, oldest first. */
export async function mesesDoLog(pool: pg.Pool): Promise<MesDoLog[]> {
  const [particoes, arquivados] = await Promise.all([
    pool.query<{ mes: string; linhas: number }>(
      `SELECT substr(c.relname, 11, 4) || '-' || substr(c.relname, 16, 2) AS mes, coalesce(s.n_live_tup, 0)::int AS linhas
         FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
         LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
        WHERE i.inhparent = 'core.event_log'::regclass AND c.relname ~ '^event_log_[0-9]{4}_[0-9]{2}$'`,
    ),
    pool.query<{ mes: string; linhas: number; arquivos: number; destino: string }>(
      `SELECT to_char(mes, 'YYYY-MM') AS mes, sum(linhas)::int AS linhas, count(*)::int AS arquivos, min(destino) AS destino
         FROM core.event_log_arquivo GROUP BY mes`,
    ),
  ]);
  const out: MesDoLog[] = [
    ...particoes.rows.map((r) => ({
      mes: r.mes,
      onde: 'postgres' as const,
      linhas: r.linhas,
      arquivos: 0,
      destino: null,
    })),
    ...arquivados.rows.map((r) => ({ ...r, onde: 'arquivo' as const })),
  ];
  return out.sort((a, b) => a.mes.localeCompare(b.mes));
}

/**
 * Months still in PostgreSQL that are at least `idadeMeses` whole months old (1: every month
 * before the current one) — what `arquivarAntigos` archives.
 */
export async function mesesArquivaveis(pool: pg.Pool, idadeMeses: number, agora = new Date()): Promise<string[]> {
  if (!Number.isInteger(idadeMeses) || idadeMeses < 1)
    throw new FeromoniosError('BAD_REQUEST', `age must be a whole number of months >= 1, got ${idadeMeses}`);
  const limite = new Date(Date.UTC(agora.getUTCFullYear(), agora.getUTCMonth() - idadeMeses + 1, 1));
  return (await mesesDoLog(pool)).filter((m) => m.onde === 'postgres' && m.mes < mesAtual(limite)).map((m) => m.mes);
}

export interface ProgressoArquivo {
  mes: string;
  etapa: 'arquivo' | 'manifesto' | 'particao-removida' | 'restaurado' | 'verificado';
  arquivo?: string;
  linhas: number;
}

export interface OpcoesArquivamento {
  pool: pg.Pool;
  destino: DestinoArquivo;
  /** Rows per Parquet file (default 50,000: about 25 MB of decoded rows in a reader's memory). */
  linhasPorArquivo?: number;
  /** Rows per row group, the unit a reader decodes (default 10,000). */
  linhasPorGrupo?: number;
  /** Attempts of each write or read-back before the month's archive fails (default 4). */
  tentativas?: number;
  /** First wait between attempts (doubles each time; default 500 ms). */
  esperaInicialMs?: number;
  logger?: Logger;
  progresso?: (p: ProgressoArquivo) => void;
  agora?: () => Date;
}

export interface ArquivoDoManifesto {
  arquivo: string;
  linhas: number;
  sequence_min: string;
  sequence_max: string;
  timestamp_min: string;
  timestamp_max: string;
  criado_em_min: string;
  criado_em_max: string;
  tipos: string[];
  origens: string[];
  bytes: number;
  sha256: string;
  conteudo_sha256: string;
}

/** `event_log/YYYY/MM/manifest.json`: the month's files, for the readers and for a restore. */
export interface Manifesto {
  formato: typeof FORMATO_ARQUIVO;
  mes: string;
  particao: string;
  linhas: number;
  sequence_min: string;
  sequence_max: string;
  arquivado_em: string;
  arquivos: ArquivoDoManifesto[];
}

export interface ResultadoArquivamento {
  mes: string;
  /** `arquivado` now; `ja-arquivado` when the month was already in the archive (nothing done). */
  resultado: 'arquivado' | 'ja-arquivado';
  linhas: number;
  arquivos: number;
  destino: string;
}

const chaveDoMes = (ano: string, mm: string): string => `event_log/${ano}/${mm}`;

/**
 * A month whose events still have open DLQ entries (`pendente`, `retrying`) is not archived:
 * reprocessing sends the logged event back, so it must stay in PostgreSQL until the entries are
 * resolved, reprocessed or parked (`failed_permanent`).
 */
async function semDlqAberta(db: pg.PoolClient, particao: string, mes: string): Promise<void> {
  const { rows } = await db.query<{ n: number; colonias: string[] | null }>(
    `SELECT count(*)::int AS n, array_agg(DISTINCT d.colonia) AS colonias
       FROM core.dead_letter_queue d JOIN core.${particao} e ON e.event_id = d.event_id
      WHERE d.status IN ('pendente', 'retrying')`,
  );
  const n = rows[0]?.n ?? 0;
  if (n > 0)
    throw new FeromoniosError(
      'BAD_REQUEST',
      `month ${mes} has ${n} open DLQ entr${n === 1 ? 'y' : 'ies'} (${(rows[0]?.colonias ?? []).join(', ')}): reprocess or park them before archiving it`,
    );
}

async function comTentativas<T>(o: OpcoesArquivamento, what: string, fn: () => Promise<T>): Promise<T> {
  const max = Math.max(1, o.tentativas ?? 4);
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (attempt >= max || !(err instanceof FeromoniosError && err.retriable)) throw err;
      const wait = backoffDelay(attempt, { initialMs: o.esperaInicialMs ?? 500, maxMs: 10_000 });
      (o.logger ?? silentLogger).warn('archive write failed, retrying', {
        what,
        attempt,
        wait_ms: wait,
        erro: err.message,
      });
      await sleep(wait);
    }
  }
}

const iso = (d: Date): string => d.toISOString();

function entradaDoManifesto(arquivo: string, rows: LinhaDoLog[], bytes: Uint8Array): ArquivoDoManifesto {
  const ts = rows.map((r) => r.timestamp.getTime());
  const cr = rows.map((r) => r.criado_em.getTime());
  const first = rows[0] as LinhaDoLog;
  const last = rows.at(-1) as LinhaDoLog;
  return {
    arquivo,
    linhas: rows.length,
    sequence_min: first.sequence_number,
    sequence_max: last.sequence_number,
    timestamp_min: iso(new Date(Math.min(...ts))),
    timestamp_max: iso(new Date(Math.max(...ts))),
    criado_em_min: iso(new Date(Math.min(...cr))),
    criado_em_max: iso(new Date(Math.max(...cr))),
    tipos: [...new Set(rows.map((r) => r.tipo))].sort(),
    origens: [...new Set(rows.map((r) => r.origem))].sort(),
    bytes: bytes.byteLength,
    sha256: sha256(bytes),
    conteudo_sha256: somaDoConteudo(rows),
  };
}

/** Writes one file and reads it back until the copy is checked (bytes, rows, content). */
async function gravarConferido(o: OpcoesArquivamento, chave: string, rows: LinhaDoLog[]): Promise<ArquivoDoManifesto> {
  const bytes = escreverParquet(rows, o.linhasPorGrupo);
  const entrada = entradaDoManifesto(chave, rows, bytes);
  await comTentativas(o, chave, async () => {
    await o.destino.gravar(chave, bytes);
    const copia = await o.destino.ler(chave);
    const problema =
      sha256(copia) !== entrada.sha256
        ? 'the copy read back has another SHA-256'
        : somaDoConteudo(await lerParquet(copia, `${o.destino.uri}/${chave}`)) !== entrada.conteudo_sha256
          ? 'the rows read back differ from the rows written'
          : undefined;
    if (problema)
      throw new FeromoniosError('ARCHIVE_UNAVAILABLE', `archive ${o.destino.uri}: ${chave}: ${problema}`, {
        retriable: true,
      });
  });
  return entrada;
}

/**
 * Archives one month (`YYYY-MM`): see the module's comment. The current month (still being
 * written) and future months are refused; a month already archived returns `ja-arquivado`.
 * Throws `ARCHIVE_UNAVAILABLE` when the destination keeps failing (partition left in place).
 */
export async function arquivarMes(o: OpcoesArquivamento, mes: string): Promise<ResultadoArquivamento> {
  const { ano, mm, particao } = mesValido(mes);
  const logger = o.logger ?? silentLogger;
  const agora = (o.agora ?? (() => new Date()))();
  if (mes >= mesAtual(agora))
    throw new FeromoniosError('BAD_REQUEST', `month ${mes} is not over yet: only past months are archived`);
  const porArquivo = o.linhasPorArquivo ?? 50_000;
  if (!Number.isInteger(porArquivo) || porArquivo < 1 || porArquivo > 1_000_000)
    throw new FeromoniosError('BAD_REQUEST', `rows per file must be an integer 1-1,000,000, got ${o.linhasPorArquivo}`);
  const porGrupo = o.linhasPorGrupo ?? 10_000;
  if (!Number.isInteger(porGrupo) || porGrupo < 1 || porGrupo > 1_000_000)
    throw new FeromoniosError(
      'BAD_REQUEST',
      `rows per row group must be an integer 1-1,000,000, got ${o.linhasPorGrupo}`,
    );
  const lock = await o.pool.connect();
  try {
    // one archive or restore at a time, whoever runs it
    await lock.query("SELECT pg_advisory_lock(hashtext('core.event_log archive'))");
    const existe = await lock.query<{ r: string | null }>('SELECT to_regclass($1)::text AS r', [`core.${particao}`]);
    if (!existe.rows[0]?.r) {
      const segs = await listarSegmentos(lock, mes);
      if (segs.length === 0)
        throw new FeromoniosError(
          'NOT_FOUND',
          `month ${mes}: no partition ${particao} and no archive (rows of a month without a partition wait in core.event_log_padrao: \`feromonios log partitions --month ${mes}\` moves them)`,
        );
      return {
        mes,
        resultado: 'ja-arquivado',
        linhas: segs.reduce((n, s) => n + s.linhas, 0),
        arquivos: segs.length,
        destino: segs[0]?.destino ?? '',
      };
    }
    await semDlqAberta(lock, particao, mes);
    const base = chaveDoMes(ano, mm);
    const arquivos: ArquivoDoManifesto[] = [];
    let cursor = '-1';
    let total = 0;
    for (let i = 1; ; i++) {
      const { rows } = await lock.query<LinhaDoLog>(
        `SELECT ${COLUNAS_ARQUIVO} FROM core.${particao} WHERE sequence_number > $1::bigint ORDER BY ${particao}.sequence_number LIMIT $2`,
        [cursor, porArquivo],
      );
      if (rows.length === 0) break;
      const chave = `${base}/part-${String(i).padStart(5, '0')}.parquet`;
      arquivos.push(await gravarConferido(o, chave, rows));
      total += rows.length;
      cursor = (rows.at(-1) as LinhaDoLog).sequence_number;
      o.progresso?.({ mes, etapa: 'arquivo', arquivo: chave, linhas: total });
      logger.info('archive file written', { mes, arquivo: chave, linhas: rows.length, total });
      if (rows.length < porArquivo) break;
    }
    if (arquivos.length === 0) {
      // an empty month: nothing to keep, the partition goes
      await withTransaction(o.pool, async (c) => {
        await c.query(`ALTER TABLE core.event_log DETACH PARTITION core.${particao}`);
        await c.query(`DROP TABLE core.${particao}`);
      });
      return { mes, resultado: 'arquivado', linhas: 0, arquivos: 0, destino: o.destino.uri };
    }
    const manifesto: Manifesto = {
      formato: FORMATO_ARQUIVO,
      mes,
      particao,
      linhas: total,
      sequence_min: (arquivos[0] as ArquivoDoManifesto).sequence_min,
      sequence_max: (arquivos.at(-1) as ArquivoDoManifesto).sequence_max,
      arquivado_em: agora.toISOString(),
      arquivos,
    };
    const texto = new TextEncoder().encode(`${JSON.stringify(manifesto, null, 2)}\n`);
    await comTentativas(o, `${base}/manifest.json`, async () => {
      await o.destino.gravar(`${base}/manifest.json`, texto);
      if (sha256(await o.destino.ler(`${base}/manifest.json`)) !== sha256(texto))
        throw new FeromoniosError('ARCHIVE_UNAVAILABLE', `archive ${o.destino.uri}: manifest read back differs`, {
          retriable: true,
        });
    });
    o.progresso?.({ mes, etapa: 'manifesto', linhas: total });
    await withTransaction(o.pool, async (c) => {
      // nothing may change the month between the copy and the drop
      await c.query(`LOCK TABLE core.${particao} IN SHARE MODE`);
      const { rows } = await c.query<{ n: string; max: string | null }>(
        `SELECT count(*)::text AS n, max(sequence_number)::text AS max FROM core.${particao}`,
      );
      await semDlqAberta(c, particao, mes);
      if (Number(rows[0]?.n) !== total || rows[0]?.max !== manifesto.sequence_max)
        throw new FeromoniosError(
          'ARCHIVE_UNAVAILABLE',
          `month ${mes} changed while it was archived (${rows[0]?.n} rows now, ${total} written): run the archive again`,
          { retriable: true },
        );
      for (const a of arquivos)
        await c.query(
          `INSERT INTO core.event_log_arquivo (mes, arquivo, destino, linhas, sequence_min, sequence_max, timestamp_min,
             timestamp_max, criado_em_min, criado_em_max, tipos, origens, bytes, sha256, conteudo_sha256)
           VALUES ($1::date, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
          [
            `${mes}-01`,
            a.arquivo,
            o.destino.uri,
            a.linhas,
            a.sequence_min,
            a.sequence_max,
            a.timestamp_min,
            a.timestamp_max,
            a.criado_em_min,
            a.criado_em_max,
            a.tipos,
            a.origens,
            a.bytes,
            a.sha256,
            a.conteudo_sha256,
          ],
        );
      await c.query(`ALTER TABLE core.event_log DETACH PARTITION core.${particao}`);
      await c.query(`DROP TABLE core.${particao}`);
    });
    o.progresso?.({ mes, etapa: 'particao-removida', linhas: total });
    logger.info('month archived', { mes, linhas: total, arquivos: arquivos.length, destino: o.destino.uri });
    return { mes, resultado: 'arquivado', linhas: total, arquivos: arquivos.length, destino: o.destino.uri };
  } finally {
    await lock.query("SELECT pg_advisory_unlock(hashtext('core.event_log archive'))").catch(() => undefined);
    lock.release();
  }
}

/** Archives every month at least `idadeMeses` old (`mesesArquivaveis`), oldest first. */
export async function arquivarAntigos(o: OpcoesArquivamento, idadeMeses: number): Promise<ResultadoArquivamento[]> {
  const out: ResultadoArquivamento[] = [];
  for (const mes of await mesesArquivaveis(o.pool, idadeMeses, (o.agora ?? (() => new Date()))()))
    out.push(await arquivarMes(o, mes));
  return out;
}

export interface ProblemaDoArquivo {
  arquivo: string;
  problema: string;
}

export interface VerificacaoDoMes {
  mes: string;
  ok: boolean;
  arquivos: number;
  linhas: number;
  problemas: ProblemaDoArquivo[];
}

export interface OpcoesLeituraManutencao {
  pool: pg.Pool;
  s3?: OpcoesS3;
  logger?: Logger;
  progresso?: (p: ProgressoArquivo) => void;
}

/**
 * Checks an archived month against its record: every file present, its SHA-256, its row count
 * and content checksum, and the destination's `manifest.json` naming the same files.
 */
export async function verificarMes(o: OpcoesLeituraManutencao, mes: string): Promise<VerificacaoDoMes> {
  const { ano, mm } = mesValido(mes);
  const segs = await listarSegmentos(o.pool, mes);
  if (segs.length === 0) throw new FeromoniosError('NOT_FOUND', `month ${mes} is not archived`);
  const leitor = new LogArquivado({ ...(o.s3 ? { s3: o.s3 } : {}), arquivosEmMemoria: 1 });
  const problemas: ProblemaDoArquivo[] = [];
  for (const s of segs) {
    try {
      const rows = await leitor.linhas(s);
      if (somaDoConteudo(rows) !== s.conteudo_sha256)
        problemas.push({ arquivo: s.arquivo, problema: 'content checksum differs from the manifest' });
    } catch (err) {
      problemas.push({ arquivo: s.arquivo, problema: err instanceof Error ? err.message : String(err) });
    }
    o.progresso?.({ mes, etapa: 'verificado', arquivo: s.arquivo, linhas: s.linhas });
  }
  const chave = `${chaveDoMes(ano, mm)}/manifest.json`;
  try {
    const m = JSON.parse(
      new TextDecoder().decode(await leitor.destino((segs[0] as SegmentoArquivado).destino).ler(chave)),
    ) as Manifesto;
    const nomes = (l: Array<{ arquivo: string; sha256: string }>): string =>
      l
        .map((a) => `${a.arquivo}:${a.sha256}`)
        .sort()
        .join(',');
    if (m.formato !== FORMATO_ARQUIVO || m.mes !== mes || nomes(m.arquivos) !== nomes(segs))
      problemas.push({ arquivo: chave, problema: 'manifest.json does not list the recorded files' });
  } catch (err) {
    problemas.push({ arquivo: chave, problema: err instanceof Error ? err.message : String(err) });
  }
  return {
    mes,
    ok: problemas.length === 0,
    arquivos: segs.length,
    linhas: segs.reduce((n, s) => n + s.linhas, 0),
    problemas,
  };
}

export interface ResultadoRestauracao {
  mes: string;
  resultado: 'restaurado' | 'ja-no-postgres';
  linhas: number;
}

const LOTE_RESTAURACAO = 5_000;
/** What restore writes into the partition: each column, its PostgreSQL array type, its value. */
const COLUNAS_RESTAURADAS: ReadonlyArray<[coluna: string, tipo: string, valor: (r: LinhaDoLog) => unknown]> = [
  ['sequence_number', 'bigint', (r) => r.sequence_number],
  ['event_id', 'uuid', (r) => r.event_id],
  ['tipo', 'text', (r) => r.tipo],
  ['versao_schema', 'text', (r) => r.versao_schema],
  ['timestamp', 'timestamptz', (r) => r.timestamp.toISOString()],
  ['origem', 'text', (r) => r.origem],
  ['correlacao_id', 'uuid', (r) => r.correlacao_id],
  ['causation_id', 'uuid', (r) => r.causation_id],
  ['tenant_id', 'uuid', (r) => r.tenant_id],
  ['payload', 'jsonb', (r) => r.payload_json ?? JSON.stringify(r.payload)],
  ['criado_em', 'timestamptz', (r) => r.criado_em.toISOString()],
  ['kafka_topic', 'text', (r) => r.kafka_topic],
  ['kafka_partition', 'int', (r) => r.kafka_partition],
  ['kafka_offset', 'bigint', (r) => r.kafka_offset],
];
const INSERIR_RESTAURADAS = (particao: string): string =>
  `INSERT INTO core.${particao} (${COLUNAS_RESTAURADAS.map(([c]) => c).join(', ')})
   SELECT * FROM unnest(${COLUNAS_RESTAURADAS.map(([, t], i) => `$${i + 1}::${t}[]`).join(', ')})`;

/**
 * Brings an archived month back into PostgreSQL: checks every file (as `verificarMes`), then in
 * one transaction creates the month's partition, inserts the rows with their original sequence
 * numbers, re-registers any id `core.event_ids` lacks, and deletes the month's archive record.
 * The files stay in the destination (archiving the month again rewrites them).
 */
export async function restaurarMes(o: OpcoesLeituraManutencao, mes: string): Promise<ResultadoRestauracao> {
  const { particao, inicio } = mesValido(mes);
  const lock = await o.pool.connect();
  try {
    await lock.query("SELECT pg_advisory_lock(hashtext('core.event_log archive'))");
    const segs = await listarSegmentos(lock, mes);
    if (segs.length === 0) {
      const existe = await lock.query<{ r: string | null }>('SELECT to_regclass($1)::text AS r', [`core.${particao}`]);
      if (existe.rows[0]?.r) return { mes, resultado: 'ja-no-postgres', linhas: 0 };
      throw new FeromoniosError('NOT_FOUND', `month ${mes} is neither archived nor in PostgreSQL`);
    }
    const leitor = new LogArquivado({ ...(o.s3 ? { s3: o.s3 } : {}), arquivosEmMemoria: 1 });
    const arquivos: LinhaDoLog[][] = [];
    for (const s of segs) {
      const rows = await leitor.linhas(s);
      if (somaDoConteudo(rows) !== s.conteudo_sha256)
        throw new FeromoniosError('ARCHIVE_CORRUPT', `archive file ${s.arquivo}: content checksum differs`);
      arquivos.push(rows);
    }
    const linhas = await withTransaction(o.pool, async (c) => {
      await c.query('SELECT core.criar_particao_event_log($1::date)', [inicio]);
      let n = 0;
      for (const rows of arquivos)
        for (let i = 0; i < rows.length; i += LOTE_RESTAURACAO) {
          const lote = rows.slice(i, i + LOTE_RESTAURACAO);
          // into the partition itself: the log's trigger would register ids core.event_ids still holds
          await c.query(
            INSERIR_RESTAURADAS(particao),
            COLUNAS_RESTAURADAS.map(([, , valor]) => lote.map(valor)),
          );
          n += lote.length;
        }
      await c.query(
        `INSERT INTO core.event_ids (event_id, sequence_number, criado_em)
              SELECT event_id, sequence_number, criado_em FROM core.${particao} ON CONFLICT (event_id) DO NOTHING`,
      );
      await c.query("DELETE FROM core.event_log_arquivo WHERE mes = to_date($1, 'YYYY-MM')", [mes]);
      return n;
    });
    o.progresso?.({ mes, etapa: 'restaurado', linhas });
    (o.logger ?? silentLogger).info('month restored', { mes, linhas });
    return { mes, resultado: 'restaurado', linhas };
  } finally {
    await lock.query("SELECT pg_advisory_unlock(hashtext('core.event_log archive'))").catch(() => undefined);
    lock.release();
  }
}
