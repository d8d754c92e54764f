import type { Logger, ReprocessamentoIniciado } from '../sdk';

/**
 * The reprocessing requests this process is still sending (a paced request outlives its HTTP
 * exchange). At shutdown `stopAll` stops them: each puts its unsent entries back to `pendente`
 * and closes its audit row as `falhou` (`INTERRUPTED`), so nothing is left `retrying` for the
 * expiry to find.
 */
export class RunningRequests {
  private readonly running = new Map<string, { stop: AbortController; done: Promise<unknown> }>();

  constructor(private readonly logger: Logger) {}

  async start(begin: (sinal: AbortSignal) => Promise<ReprocessamentoIniciado>): Promise<ReprocessamentoIniciado> {
    const stop = new AbortController();
    const started = await begin(stop.signal);
    const done = started.concluido.then(
      () => undefined,
      (err: unknown) =>
        this.logger.warn('DLQ reprocessing request ended with an error', {
          pedido_id: started.pedido_id,
          colonia: started.colonia,
          error: err instanceof Error ? err.message : String(err),
        }),
    );
    this.running.set(started.pedido_id, { stop, done });
    void done.finally(() => this.running.delete(started.pedido_id));
    return started;
  }

  /** Stops every running request and waits until each has released what it did not send. */
  async stopAll(): Promise<void> {
    const all = [...this.running.values()];
    for (const r of all) r.stop.abort();
    await Promise.all(all.map((r) => r.done));
  }
}
