import type pg from 'pg';
import type { LacunaDeRetencao } from '../sdk/service';

/** A retention gap as the audit API lists it: the detector's record, with its row id and when it was found. */
export type LacunaListada = LacunaDeRetencao & { id: string; detectada_em: string };

/** The latest retention gaps the bridge recorded (`core.lacunas_retencao`), newest first, at most 500. */
export async function listarLacunas(pool: pg.Pool): Promise<LacunaListada[]> {
  const { rows } = await pool.query<Omit<LacunaListada, 'detectada_em'> & { detectada_em: Date }>(
    `SELECT id::text, grupo, topico, particao, desde::text, ate::text, inicio_do_log::text, registros::int, detectada_em
       FROM core.lacunas_retencao
      ORDER BY detectada_em DESC, id DESC
      LIMIT 500`,
  );
  return rows.map((r) => ({ ...r, detectada_em: r.detectada_em.toISOString() }));
}
