import { HandlerTimeoutError } from '../errors';

/**
 * Runs one handler attempt under its deadline — the one protected call both buses use
 * (`EventBus`'s subscriber and `InMemoryEventBus`). `run` gets a signal that aborts when
 * `timeoutMs` passes (the attempt then rejects with `HandlerTimeoutError`) or when `closing`
 * aborts (the bus is shutting down). A synchronous throw in `run` rejects like an async one.
 * The timer is always cleared: nothing outlives the attempt.
 */
export async function withHandlerTimeout<T>(
  nome: string,
  timeoutMs: number,
  closing: AbortSignal,
  run: (signal: AbortSignal) => Promise<T> | T,
): Promise<T> {
  const ctl = new AbortController();
  const onClose = (): void => ctl.abort();
  closing.addEventListener('abort', onClose);
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      Promise.resolve().then(() => run(ctl.signal)),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          ctl.abort();
          reject(new HandlerTimeoutError(nome, timeoutMs));
        }, timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
    closing.removeEventListener('abort', onClose);
  }
}
