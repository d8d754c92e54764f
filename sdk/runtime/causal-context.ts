import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The event a handler is handling, for everything that handler publishes (docs/ordering.md,
 * "Causation"). `inscrever` handlers run inside it on both buses; `publicar`, `publicarLote`
 * and `publicarNaTransacao` called from there — directly or from any promise, timer or
 * callback the handler started — default `correlacao_id`, `causation_id` and `tenant_id` from it, and the
 * `traceparent` they write continues the handler's trace.
 */
export interface ContextoCausal {
  /** The event being handled: the `causation_id` of what is published meanwhile. */
  event_id: string;
  /** Its flow: the `correlacao_id` of what is published meanwhile. */
  correlacao_id: string | null;
  /** Its tenant: the `tenant_id` of what is published meanwhile (absent = none). */
  tenant_id?: string | null;
  /** The handler's trace context (its consumer span, or the event's own `traceparent`). */
  traceparent?: string;
}

const storage = new AsyncLocalStorage<ContextoCausal>();

/** Runs `fn` (a handler call) with `contexto` as the causal context of everything it starts. */
export function comContextoCausal<T>(contexto: ContextoCausal, fn: () => T): T {
  return storage.run(contexto, fn);
}

/** The causal context of the running code: the event being handled, if any. */
export function contextoCausal(): ContextoCausal | undefined {
  return storage.getStore();
}
