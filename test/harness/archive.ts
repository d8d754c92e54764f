import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { migrateLatest } from '../../migrations';
import { emptyDatabase, query } from '../../migrations/testing';
import { EventLogReader, LogArquivado, silentLogger } from '../../sdk/service';
import { registerCleanup } from './index';

/** Helpers of the archive's tests (sdk/log/archive, the CLI's `log` verbs, the benchmark). */

export const MONTHS = ['2026-07', '2026-08', '2026-09'];
export const PER_MONTH = 90;
export const TIPOS = ['demanda.recebida', 'demanda.normalizada', 'demanda.categorizada'];

export interface Db {
  url: string;
  pool: pg.Pool;
  reader: EventLogReader;
  fluxo: string;
}

/** A log over three past months and the current one: 4 × 90 rows, one flow across all months. */
export async function populatedLog(): Promise<Db> {
  const url = await emptyDatabase();
  await migrateLatest(url);
  const fluxo = randomUUID();
  const now = new Date();
  const current = now.toISOString().slice(0, 7);
  for (const mes of MONTHS) await query(url, `SELECT core.criar_particao_event_log('${mes}-01')`);
  for (const [m, mes] of [...MONTHS, current].entries()) {
    const values: string[] = [];
    for (let i = 0; i < PER_MONTH; i++) {
      const day = String(1 + (i % 27)).padStart(2, '0');
      const at =
        mes === current
          ? now.toISOString()
          : `${mes}-${day}T10:${String(i % 60).padStart(2, '0')}:00.${String(i % 100).padStart(2, '0')}Z`;
      const correlacao = i % 30 === 0 ? `'${fluxo}'` : `'${randomUUID()}'`;
      const tenant = i % 4 === 0 ? `'${randomUUID()}'` : 'NULL';
      const kafka = i % 5 === 0 ? 'NULL, NULL, NULL' : `'feromonios.evento.x', ${i % 3}, ${m * 1000 + i}`;
      values.push(
        `('${randomUUID()}', '${TIPOS[i % 3]}', '1.0.${i % 2}', '${at}', 'D-${(i % 3) + 1}', ${correlacao}, ${
          i % 7 === 0 ? `'${randomUUID()}'` : 'NULL'
        }, ${tenant}, '${JSON.stringify({
          demanda_id: `d-${m}-${i}`,
          texto: 'é "aspas" \\ barra',
          nested: { n: i, l: [1, null, 'x'] },
          cpf: '[REDACTED]',
        })
          .replace(/'/g, "''")
          .replace(/}$/, `, "grande": 123456789012345678901234567890.000001${i}}`)}', '${at}', ${kafka})`,
      );
    }
    await query(
      url,
      `INSERT INTO core.event_log (event_id, tipo, versao_schema, timestamp, origem, correlacao_id, causation_id, tenant_id, payload, criado_em, kafka_topic, kafka_partition, kafka_offset)
       VALUES ${values.join(',\n')}`,
    );
  }
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  registerCleanup(() => pool.end());
  return { url, pool, reader: new EventLogReader(pool, silentLogger, new LogArquivado()), fluxo };
}

export async function tempDir(): Promise<string> {
  const d = await fs.mkdtemp(path.join(os.tmpdir(), 'feromonios-archive-'));
  registerCleanup(() => fs.rm(d, { recursive: true, force: true }));
  return d;
}
