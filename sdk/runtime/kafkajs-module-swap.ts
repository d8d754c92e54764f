/**
 * The one mechanism by which the SDK puts a function of its own in place of a kafkajs module
 * function that another kafkajs module binds when it is loaded (docs/adr/0023-kafkajs-record-decoder.md):
 * the record decoder (bound by the record-batch decoder, at the process's first fetch), the
 * record encoder, the batch checksum and the produce request itself (bound at the first produce;
 * ADR 0022's addenda).
 *
 * The export of the module is replaced in Node's module cache before its binder is loaded, by a
 * function that forwards to the active one — the replacement, or kafkajs's own after `restore`
 * (the benchmarks measure plain kafkajs as released beside the SDK in one process). If the binder
 * is already loaded it holds the original: nothing is replaced and kafkajs keeps working. Applied
 * only to the kafkajs version the replacement was written and tested against; under another, or a
 * kafkajs laid out otherwise, or a loader without Node's module cache, left as it is.
 */

/* eslint-disable @typescript-eslint/no-require-imports -- kafkajs's internals are CommonJS, resolved from its package */

/** A kafkajs module function of at most two arguments (the forwarder passes exactly two). */
type Swappable<A, B> = (a: A, b: B) => unknown;

export interface ModuleSwap {
  /** Puts the replacement in place; returns whether kafkajs runs it. A second call changes nothing (or undoes `restore`). */
  patch(): boolean;
  /** kafkajs's own function back, until the next `patch`. */
  restore(): void;
}

export function kafkajsModuleSwap<A, B>(spec: {
  /** The kafkajs version the replacement was written and tested against. */
  version: string;
  /** The module whose export is replaced, e.g. `kafkajs/src/protocol/recordBatch/record/v0/decoder`. */
  module: string;
  /** The module that binds it when loaded: once it is in the cache, it is too late. */
  boundBy: string;
  /** Builds the replacement (at the first `patch` that installs it), given kafkajs's own to fall back on. */
  replacement: (original: Swappable<A, B>) => Swappable<A, B>;
}): ModuleSwap {
  let installed: { original: Swappable<A, B>; replacement: Swappable<A, B> } | undefined;
  let active: Swappable<A, B> | undefined;
  return {
    patch() {
      try {
        const { version } = require('kafkajs/package.json') as { version: string };
        if (version !== spec.version) return false;
        if (installed) {
          active = installed.replacement;
          return true;
        }
        const cache = require.cache;
        if (cache[require.resolve(spec.boundBy)]) return false; // already bound: kafkajs holds the original
        const path = require.resolve(spec.module);
        const original = require(path) as Swappable<A, B>; // kafkajs's own, into the cache
        const mod = cache[path];
        if (!mod) return false; // a loader without Node's module cache: left as it is
        const replacement = spec.replacement(original);
        installed = { original, replacement };
        active = replacement;
        const forward: Swappable<A, B> = (a, b) => (active as Swappable<A, B>)(a, b);
        mod.exports = forward;
        return true;
      } catch {
        return false; // a kafkajs laid out otherwise: left as it is
      }
    },
    restore() {
      if (installed) active = installed.original;
    },
  };
}
/* eslint-enable @typescript-eslint/no-require-imports */
