import type { Response } from 'express';
import type { EventBus, Logger } from '../sdk';

/** Bytes gathered before one write: fewer syscalls, still a flat memory profile. */
const FLUSH_BYTES = 64 * 1024;

/**
 * `GET /api/events/replay`: the redacted log as NDJSON (one `EventoDoLog` per line, sequence
 * numbers as strings), events with `sequence_number > apos`, in sequence order, up to the
 * highest sequence at the start (`X-Feromonios-Ate-Sequence`), so the stream ends even while
 * the log grows. Read in batches of 1000 and written with backpressure: memory stays flat
 * however long the range. A failure mid-stream aborts the response (the client sees a
 * truncated chunked body, never a silently short file); a client that goes away stops the read.
 */
export async function streamReplay(
  bus: EventBus,
  res: Response,
  apos: bigint,
  tipos: string[] | undefined,
  logger: Logger,
): Promise<void> {
  const ate = await bus.obterMaiorSequence();
  res.status(200);
  res.setHeader('Content-Type', 'application/x-ndjson; charset=utf-8');
  res.setHeader('X-Feromonios-Ate-Sequence', ate.toString());
  let gone = false;
  res.on('close', () => (gone = true));
  let buffer = '';
  let sent = 0;
  const flush = async (): Promise<void> => {
    if (buffer === '') return;
    const ok = res.write(buffer);
    buffer = '';
    if (!ok && !gone) await drainOrClose(res);
  };
  try {
    for await (const evento of bus.replayStream(apos, tipos)) {
      if (gone || evento.sequence_number > ate) break;
      buffer += JSON.stringify(evento, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)) + '\n';
      sent++;
      if (buffer.length >= FLUSH_BYTES) await flush();
    }
    await flush();
    res.end();
    logger.info('replay streamed', {
      apos_sequence: apos.toString(),
      ate_sequence: ate.toString(),
      eventos: sent,
      interrompido: gone,
    });
  } catch (err) {
    logger.error('replay failed mid-stream', {
      apos_sequence: apos.toString(),
      eventos: sent,
      error: err instanceof Error ? err.message : String(err),
    });
    if (!res.headersSent) throw err;
    res.destroy(err instanceof Error ? err : new Error(String(err)));
  }
}

/** Resolves on the next `drain` or `close`, leaving no listener behind. */
function drainOrClose(res: Response): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
