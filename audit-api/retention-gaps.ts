import type pg from 'pg';

/** A retention gap as the audit API lists it (offsets as strings: Kafka offsets are 64-bit). */
export interface LacunaListada {
  id: string;
  grupo: string;
  topico: string;
  particao: number;
  desde: string;
  ate: string;
  inicio_do_log: string;
  registros: number;
  detectada_em: string;
}

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
