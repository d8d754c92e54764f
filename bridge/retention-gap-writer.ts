import type pg from 'pg';
import type { LacunaDeRetencao } from '../sdk/service';

/** Records a retention gap in `core.lacunas_retencao`, once per (group, partition, start offset). */
export async function recordRetentionGap(pool: pg.Pool, g: LacunaDeRetencao): Promise<void> {
  await pool.query(
    `INSERT INTO core.lacunas_retencao (grupo, topico, particao, desde, ate, inicio_do_log, registros)
     VALUES ($1, $2, $3, $4::bigint, $5::bigint, $6::bigint, $7)
     ON CONFLICT (grupo, topico, particao, desde) DO NOTHING`,
    [g.grupo, g.topico, g.particao, g.desde, g.ate, g.inicio_do_log, g.registros],
  );
}
