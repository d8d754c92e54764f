/**
 * A partition's staged frontier carried with the events lane's committed offset (ADR 0027).
 *
 * The bridge commits an event partition's offset once the records below it are staged ("staged
 * up to here", ADR 0009); with it, as the offset's metadata, it sends the publish time of the last
 * record it staged below that offset — the partition's frontier, which the sequencer's cut by
 * publish time needs (ADR 0021). The sequencer reads both in the `OffsetFetch` it makes anyway,
 * instead of scanning `core.event_staging` for each partition's last row every time it looks for
 * a cut.
 *
 * Metadata it cannot read — none (an older bridge, an operator's offset reset, kafkajs's
 * `setOffsets`), another tool's text, a damaged or impossible value — gives no frontier: the
 * sequencer then finds it in staging, as before.
 */

import { MAX_DATE_MS, type StagedRow } from './log-lines';

const PREFIX = 'feromonios.fronteira=';

/** The commit metadata for a frontier at `publishedAtMs` (milliseconds since the epoch, a whole number ≥ 0). */
export function frontierMetadata(publishedAtMs: number): string {
  if (!Number.isSafeInteger(publishedAtMs) || publishedAtMs < 0 || publishedAtMs > MAX_DATE_MS)
    throw new RangeError(`a staged frontier is a whole number of milliseconds from 0 to ${MAX_DATE_MS}`);
  return `${PREFIX}${publishedAtMs}`;
}

/**
 * The frontier a committed offset's metadata carries, in milliseconds since the epoch; `undefined`
 * for metadata that is not exactly what `frontierMetadata` writes.
 */
export function frontierOf(metadata: string | null | undefined): number | undefined {
  if (typeof metadata !== 'string' || !metadata.startsWith(PREFIX)) return undefined;
  const digits = metadata.slice(PREFIX.length);
  if (!/^(0|[1-9]\d{0,15})$/.test(digits)) return undefined;
  const ms = Number(digits);
  return ms <= MAX_DATE_MS ? ms : undefined;
}

/**
 * The frontier a staged chunk leaves: the publish time (as staged) of the last of `good` that was
 * staged — not among `refused`, which PostgreSQL refused and which went to quarantine — in
 * milliseconds; `undefined` when none was.
 */
export function stagedFrontier(
  good: ReadonlyArray<{ row: Pick<StagedRow, 'event_id' | 'publicado_em'> }>,
  refused: ReadonlyArray<{ eventId: string }>,
): number | undefined {
  const out = refused.length === 0 ? undefined : new Set(refused.map((r) => r.eventId));
  for (let i = good.length - 1; i >= 0; i--) {
    const row = (good[i] as (typeof good)[number]).row;
    if (!out?.has(row.event_id)) return Date.parse(row.publicado_em);
  }
  return undefined;
}
