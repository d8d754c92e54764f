import { randomUUID } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { query } from '../../../migrations/testing';
import { registerCleanup } from '../../../test/harness';
import { MONTHS, PER_MONTH, populatedLog, tempDir, TIPOS } from '../../../test/harness/archive';
import { FeromoniosError } from '../../errors';
import { silentLogger } from '../../runtime/logger';
import { EventLogReader, type EventoDoLog } from '../event-log-reader';
import { LogArquivado } from './archived-log';
import { arquivarMes, mesesArquivaveis, mesesDoLog, restaurarMes, verificarMes } from './archiver';
import { abrirDestino, DiretorioLocal, type DestinoArquivo } from './destination';

/**
 * The cold archive (issue #20, docs/archive.md, ADR 0018) on a real PostgreSQL: months written
 * to Parquet, checked, detached and dropped; every read finding the rows wherever they are.
 */

/** Every row of the log as PostgreSQL prints it (all columns), in sequence order. */
const everyRow = (url: string) =>
  query<{ r: string }>(url, 'SELECT l::text AS r FROM core.event_log l ORDER BY sequence_number').then((rows) =>
    rows.map((x) => x.r),
  );

const semMarca = (e: EventoDoLog): EventoDoLog => {
  const { arquivado: _, ...rest } = e;
  return rest;
};

async function all(it: AsyncIterable<EventoDoLog>): Promise<EventoDoLog[]> {
  const out: EventoDoLog[] = [];
  for await (const e of it) out.push(e);
  return out;
}

describe('the archive of the log', () => {
  it('archives two months; replay, lookups, the trace and filtered pages read them as before, marked archived', async () => {
    const db = await populatedLog();
    const dir = await tempDir();
    const before = await db.reader.replayDeSequence(0);
    expect(before).toHaveLength(4 * PER_MONTH);
    const trace = await db.reader.consultarEventos({ correlacao_id: db.fluxo, limite: 500 });
    const page = await db.reader.consultarEventos({ tipo: TIPOS[1], limite: 7 });

    expect(await mesesArquivaveis(db.pool, 3)).toEqual(MONTHS.filter((m) => m < monthsAgo(2)));
    const progress: string[] = [];
    const destino = new DiretorioLocal(dir);
    for (const mes of MONTHS.slice(0, 2)) {
      const r = await arquivarMes(
        {
          pool: db.pool,
          destino,
          linhasPorArquivo: 40,
          linhasPorGrupo: 7,
          progresso: (p) => progress.push(`${p.mes} ${p.etapa}`),
        },
        mes,
      );
      expect(r).toEqual({ mes, resultado: 'arquivado', linhas: PER_MONTH, arquivos: 3, destino: destino.uri });
    }
    expect(progress).toContain('2026-07 particao-removida');
    expect(progress.filter((p) => p === '2026-08 arquivo')).toHaveLength(3);
    // the partitions are gone; the files and manifests are there
    expect(await query(db.url, "SELECT to_regclass('core.event_log_2026_07')::text AS r")).toEqual([{ r: null }]);
    expect((await fs.readdir(path.join(dir, 'event_log/2026/08'))).sort()).toEqual([
      'manifest.json',
      'part-00001.parquet',
      'part-00002.parquet',
      'part-00003.parquet',
    ]);
    expect((await everyRow(db.url)).length).toBe(2 * PER_MONTH);
    const months = await mesesDoLog(db.pool);
    expect(months.filter((m) => m.onde === 'arquivo').map((m) => [m.mes, m.linhas, m.arquivos])).toEqual([
      ['2026-07', PER_MONTH, 3],
      ['2026-08', PER_MONTH, 3],
    ]);

    // replay from 0: exactly the same rows in the same order; the archived ones marked
    const after = await db.reader.replayDeSequence(0);
    expect(after.map(semMarca)).toEqual(before);
    expect(after.filter((e) => e.arquivado === true)).toHaveLength(2 * PER_MONTH);
    expect(after.slice(0, 2 * PER_MONTH).every((e) => e.arquivado === true)).toBe(true);
    expect((await all(db.reader.replayStream(0))).map(semMarca)).toEqual(before);
    // from the middle of an archived file, of some types
    const mid = before[55]!.sequence_number;
    expect((await db.reader.replayDeSequence(mid, [TIPOS[2]!])).map(semMarca)).toEqual(
      before.filter((e) => e.sequence_number > mid && e.tipo === TIPOS[2]),
    );

    // by id, and its Kafka position
    const old = before[3]!;
    expect(await db.reader.obterEventoPorId(old.event_id)).toEqual({ ...old, arquivado: true });
    const withKafka = before.find((e, i) => i < PER_MONTH && i % 5 !== 0)!;
    expect(await db.reader.obterPosicaoKafka(withKafka.event_id)).toMatchObject({ topic: 'feromonios.evento.x' });
    expect(await db.reader.obterEventoPorId(randomUUID())).toBeNull();
    expect(await db.reader.obterMaiorSequence()).toBe(before.at(-1)!.sequence_number);

    // the trace (one flow across four months) and a filtered page, the same as before
    const traceAfter = await db.reader.consultarEventos({ correlacao_id: db.fluxo, limite: 500 });
    expect({ ...traceAfter, linhas: traceAfter.linhas.map(semMarca) }).toEqual(trace);
    expect(traceAfter.linhas.filter((e) => e.arquivado)).toHaveLength(6);
    const pageAfter = await db.reader.consultarEventos({ tipo: TIPOS[1], limite: 7 });
    expect({ ...pageAfter, linhas: pageAfter.linhas.map(semMarca) }).toEqual(page);
    // keyset paging through the archive into PostgreSQL: every row of the type once, in order
    const paged: EventoDoLog[] = [];
    let cursor: string | null | undefined;
    do {
      const p = await db.reader.consultarEventos({
        tipo: TIPOS[1],
        limite: 13,
        ...(cursor ? { apos_sequence: cursor } : {}),
      });
      expect(p.total).toBe(4 * 30);
      paged.push(...p.linhas);
      cursor = p.proximo_cursor;
    } while (cursor);
    expect(paged.map(semMarca)).toEqual(before.filter((e) => e.tipo === TIPOS[1]));
    // offsets across the boundary, and a time window inside an archived month
    const off = await db.reader.consultarEventos({ deslocamento: 170, limite: 20 });
    expect(off.linhas.map(semMarca)).toEqual(before.slice(170, 190));
    expect(off.total).toBe(4 * PER_MONTH);
    const window = await db.reader.consultarEventos({
      timestamp_inicio: '2026-08-05T00:00:00Z',
      timestamp_fim: '2026-08-09T23:59:59Z',
      limite: 500,
    });
    expect(window.linhas.map(semMarca)).toEqual(
      before.filter((e) => e.timestamp >= '2026-08-05T00:00:00' && e.timestamp < '2026-08-10'),
    );

    // de-duplication survives: an archived event_id cannot be logged again
    await expect(
      query(
        db.url,
        `INSERT INTO core.event_log (event_id, tipo, origem, payload) VALUES ('${old.event_id}', 't', 'D-1', '{}')`,
      ),
    ).rejects.toMatchObject({ code: '23505', constraint: 'event_ids_pkey' });

    // archiving again is a no-op; the current month is refused
    expect(await arquivarMes({ pool: db.pool, destino }, '2026-07')).toMatchObject({ resultado: 'ja-arquivado' });
    await expect(arquivarMes({ pool: db.pool, destino }, new Date().toISOString().slice(0, 7))).rejects.toMatchObject({
      code: 'BAD_REQUEST',
    });
    await expect(arquivarMes({ pool: db.pool, destino }, '2026-13')).rejects.toMatchObject({ code: 'BAD_REQUEST' });
  });

  it('readers replaying and paging throughout archives and restores see every row once, in order', async () => {
    const db = await populatedLog();
    const dir = await tempDir();
    const destino = new DiretorioLocal(dir);
    const before = await db.reader.replayDeSequence(0);
    let running = true;
    let reads = 0;
    const mismatches: string[] = [];
    // pages of consultarEventos, by keyset (k = 2) and by deslocamento (k = 3): a reader that last
    // saw no archive cuts its page with OFFSET, and must read again when a month was archived
    const paged = async (reader: EventLogReader, k: number): Promise<EventoDoLog[]> => {
      const out: EventoDoLog[] = [];
      for (let cursor: string | undefined, n = 0; ; n++) {
        const page = await reader.consultarEventos(
          k === 2 ? { limite: 37, ...(cursor ? { apos_sequence: cursor } : {}) } : { limite: 37, deslocamento: n * 37 },
        );
        out.push(...page.linhas);
        if (page.total !== before.length || !page.total_exato) mismatches.push(`total ${page.total}`);
        if (page.linhas.length < 37) return out;
        cursor = page.proximo_cursor ?? undefined;
      }
    };
    const readers = [0, 1, 2, 3].map(async (k) => {
      // its own reader: its own cache of files
      const reader = new EventLogReader(
        db.pool,
        silentLogger,
        new LogArquivado({ arquivosEmMemoria: 1, gruposEmMemoria: 1 }),
      );
      while (running) {
        const got =
          k === 0
            ? await reader.replayDeSequence(0)
            : k === 1
              ? await all(reader.replayStream(0))
              : await paged(reader, k);
        const seqs = got.map((e) => e.sequence_number);
        if (
          JSON.stringify(got.map(semMarca), (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)) !==
          JSON.stringify(before, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))
        )
          mismatches.push(`read ${reads}: ${seqs.length} rows`);
        reads++;
      }
    });
    for (let round = 0; round < 3; round++) {
      for (const mes of MONTHS)
        await arquivarMes({ pool: db.pool, destino, linhasPorArquivo: 35, linhasPorGrupo: 6 }, mes);
      for (const mes of MONTHS) await restaurarMes({ pool: db.pool }, mes);
    }
    running = false;
    await Promise.all(readers);
    expect(reads).toBeGreaterThan(6);
    expect(mismatches).toEqual([]);
  });

  it('replays months whose sequence ranges interleave, over files whose first sequence numbers differ in digits', async () => {
    const db = await populatedLog();
    // rows logged into a past month after later months were written: 2026-08's range spans 2026-09's
    await query(
      db.url,
      `INSERT INTO core.event_log (event_id, tipo, origem, payload, criado_em)
       SELECT gen_random_uuid(), 'demanda.recebida', 'D-1', jsonb_build_object('g', g), '2026-08-15T00:00:00Z'::timestamptz + g * interval '1 second'
         FROM generate_series(1, 5000) g`,
    );
    await query(
      db.url,
      `INSERT INTO core.event_log (event_id, tipo, origem, payload) SELECT gen_random_uuid(), 'demanda.recebida', 'D-1', '{}' FROM generate_series(1, 3000) g`,
    );
    const before = await db.reader.replayDeSequence(0);
    const destino = new DiretorioLocal(await tempDir());
    for (const mes of MONTHS)
      await arquivarMes({ pool: db.pool, destino, linhasPorArquivo: 1500, linhasPorGrupo: 300 }, mes);
    const reader = new EventLogReader(db.pool, silentLogger, new LogArquivado());
    expect((await all(reader.replayStream(0))).map(semMarca)).toEqual(before);
    expect((await reader.replayDeSequence(0)).map(semMarca)).toEqual(before);
    const page = await reader.consultarEventos({ tipo: 'demanda.recebida', deslocamento: 1200, limite: 50 });
    expect(page.linhas.map(semMarca)).toEqual(before.filter((e) => e.tipo === 'demanda.recebida').slice(1200, 1250));
  });

  it('verifies an archive, and refuses to read a file that changed', async () => {
    const db = await populatedLog();
    const dir = await tempDir();
    await arquivarMes({ pool: db.pool, destino: new DiretorioLocal(dir), linhasPorArquivo: 50 }, '2026-07');
    expect(await verificarMes({ pool: db.pool }, '2026-07')).toEqual({
      mes: '2026-07',
      ok: true,
      arquivos: 2,
      linhas: PER_MONTH,
      problemas: [],
    });
    // one byte flipped in the second file
    const f = path.join(dir, 'event_log/2026/07/part-00002.parquet');
    const bytes = await fs.readFile(f);
    bytes[100] = bytes[100]! ^ 0xff;
    await fs.writeFile(f, bytes);
    const v = await verificarMes({ pool: db.pool }, '2026-07');
    expect(v.ok).toBe(false);
    expect(v.problemas).toEqual([
      { arquivo: 'event_log/2026/07/part-00002.parquet', problema: expect.stringMatching(/SHA-256/) as unknown },
    ]);
    await expect(new EventLogReader(db.pool, silentLogger).replayDeSequence(0)).rejects.toMatchObject({
      code: 'ARCHIVE_CORRUPT',
    });
    await expect(restaurarMes({ pool: db.pool }, '2026-07')).rejects.toMatchObject({ code: 'ARCHIVE_CORRUPT' });
    await expect(verificarMes({ pool: db.pool }, '2026-09')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('a destination that fails mid-way leaves the partition in place; a transient failure is retried', async () => {
    const db = await populatedLog();
    const dir = await tempDir();
    const before = await everyRow(db.url);
    const local = new DiretorioLocal(dir);
    // after the first file, the month's directory becomes a file: every later write fails (ENOTDIR, even as root)
    const monthDir = path.join(dir, 'event_log/2026/07');
    await expect(
      arquivarMes(
        {
          pool: db.pool,
          destino: local,
          linhasPorArquivo: 40,
          tentativas: 3,
          esperaInicialMs: 5,
          progresso: (p) => {
            if (p.etapa === 'arquivo' && p.linhas === 40) {
              rmSync(monthDir, { recursive: true });
              writeFileSync(monthDir, 'not a directory');
            }
          },
        },
        '2026-07',
      ),
    ).rejects.toMatchObject({ code: 'ARCHIVE_UNAVAILABLE', message: expect.stringMatching(/part-00002/) as unknown });
    expect(await everyRow(db.url)).toEqual(before);
    expect(await query(db.url, 'SELECT count(*)::int AS n FROM core.event_log_arquivo')).toEqual([{ n: 0 }]);
    expect((await db.reader.replayDeSequence(0)).some((e) => e.arquivado)).toBe(false);

    // the destination repaired: the same command archives the month
    await fs.rm(monthDir, { force: true });
    let failures = 0;
    const flaky: DestinoArquivo = {
      uri: local.uri,
      gravar: async (k, b) => {
        if (k.endsWith('part-00002.parquet') && failures === 0 && ++failures)
          throw new FeromoniosError('ARCHIVE_UNAVAILABLE', 'simulated outage', { retriable: true });
        return local.gravar(k, b);
      },
      ler: (k) => local.ler(k),
    };
    expect(
      await arquivarMes({ pool: db.pool, destino: flaky, linhasPorArquivo: 40, esperaInicialMs: 5 }, '2026-07'),
    ).toMatchObject({ resultado: 'arquivado', linhas: PER_MONTH, arquivos: 3 });
    expect(failures).toBe(1); // failed once, retried, written
    expect((await verificarMes({ pool: db.pool }, '2026-07')).ok).toBe(true);
  });

  it('keeps a month with open DLQ entries in PostgreSQL until they are resolved or parked', async () => {
    const db = await populatedLog();
    const destino = new DiretorioLocal(await tempDir());
    await query(
      db.url,
      `INSERT INTO core.dead_letter_queue (event_id, sequence_number, colonia, mensagem_erro)
       SELECT event_id, sequence_number, 'D-4', 'boom' FROM core.event_log_2026_07 ORDER BY sequence_number LIMIT 2`,
    );
    await expect(arquivarMes({ pool: db.pool, destino }, '2026-07')).rejects.toMatchObject({
      code: 'BAD_REQUEST',
      message: expect.stringMatching(/2 open DLQ entries \(D-4\)/) as unknown,
    });
    expect(await query(db.url, 'SELECT count(*)::int AS n FROM core.event_log_2026_07')).toEqual([{ n: PER_MONTH }]);
    await query(db.url, "UPDATE core.dead_letter_queue SET status = 'failed_permanent', resolvido_em = now()");
    expect(await arquivarMes({ pool: db.pool, destino }, '2026-07')).toMatchObject({ resultado: 'arquivado' });
    // the parked entries keep their reference (core.event_ids), their event is read from the archive
    const [entry] = await query<{ event_id: string }>(
      db.url,
      'SELECT event_id::text FROM core.dead_letter_queue LIMIT 1',
    );
    expect(await db.reader.obterEventoPorId(entry!.event_id)).toMatchObject({ arquivado: true });
  });

  it('restores a month: the same rows in PostgreSQL, the record gone, and it can be archived again', async () => {
    const db = await populatedLog();
    const dir = await tempDir();
    const before = await everyRow(db.url);
    const ids = await query(db.url, 'SELECT count(*)::int AS n FROM core.event_ids');
    const destino = abrirDestino(dir);
    await arquivarMes({ pool: db.pool, destino, linhasPorArquivo: 25 }, '2026-08');
    expect(await restaurarMes({ pool: db.pool }, '2026-08')).toEqual({
      mes: '2026-08',
      resultado: 'restaurado',
      linhas: PER_MONTH,
    });
    expect(await everyRow(db.url)).toEqual(before);
    expect(await query(db.url, 'SELECT count(*)::int AS n FROM core.event_ids')).toEqual(ids);
    expect(await query(db.url, 'SELECT count(*)::int AS n FROM core.event_log_arquivo')).toEqual([{ n: 0 }]);
    expect((await db.reader.replayDeSequence(0)).some((e) => e.arquivado)).toBe(false);
    expect(await restaurarMes({ pool: db.pool }, '2026-08')).toMatchObject({ resultado: 'ja-no-postgres' });
    expect(await arquivarMes({ pool: db.pool, destino }, '2026-08')).toMatchObject({ resultado: 'arquivado' });
    expect((await db.reader.replayDeSequence(0)).filter((e) => e.arquivado)).toHaveLength(PER_MONTH);
  });

  it('archives to an S3-compatible bucket and reads from it', async () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const S3rver = require('s3rver') as new (o: object) => {
      run(): Promise<{ port: number }>;
      close(): Promise<void>;
    };
    const server = new S3rver({
      port: 0,
      address: '127.0.0.1',
      silent: true,
      directory: await tempDir(),
      configureBuckets: [{ name: 'feromonios-arquivo' }],
    });
    const { port } = await server.run();
    registerCleanup(() => server.close());
    const s3 = { endpoint: `http://127.0.0.1:${port}`, accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
    const db = await populatedLog();
    const before = await db.reader.replayDeSequence(0);
    const destino = abrirDestino('s3://feromonios-arquivo/log', s3);
    expect(await arquivarMes({ pool: db.pool, destino, linhasPorArquivo: 60 }, '2026-09')).toMatchObject({
      resultado: 'arquivado',
      arquivos: 2,
      destino: 's3://feromonios-arquivo/log',
    });
    const reader = new EventLogReader(db.pool, silentLogger, new LogArquivado({ s3 }));
    expect((await reader.replayDeSequence(0)).map(semMarca)).toEqual(before);
    expect(await verificarMes({ pool: db.pool, s3 }, '2026-09')).toMatchObject({ ok: true, arquivos: 2 });
    expect(await restaurarMes({ pool: db.pool, s3 }, '2026-09')).toMatchObject({ linhas: PER_MONTH });
  });
});

/** `YYYY-MM` of `n` months before the current one (UTC). */
function monthsAgo(n: number): string {
  const d = new Date();
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - n, 1)).toISOString().slice(0, 7);
}
