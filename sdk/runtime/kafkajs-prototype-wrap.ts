/**
 * The one mechanism by which the SDK wraps a member of a kafkajs class's prototype (ADR 0025:
 * `Connection.prototype.processData`; ADR 0028: `ConsumerGroup.prototype.fetch`) — the sibling of
 * `kafkajsModuleSwap`, which replaces module functions another module binds at load.
 *
 * A prototype member is read at each call, so the wrap can go in and come out at any time: every
 * instance, old or new, runs what the prototype holds then. Applied only to the kafkajs version
 * the wrapper was written and tested against; under another, or a kafkajs laid out otherwise, left
 * as it is.
 */

/* eslint-disable @typescript-eslint/no-require-imports -- kafkajs's internals are CommonJS, resolved from its package */

export interface PrototypeWrap<P> {
  /** Wraps the member of `proto` (exported for the tests, which wrap a copy of the class); a second call does nothing. */
  wrap(proto: P): void;
  /** Puts back the member {@link wrap} replaced. */
  unwrap(proto: P): void;
  /** Wraps kafkajs's own class; returns whether kafkajs now runs the wrapper. */
  patch(): boolean;
  /** kafkajs's own member back, until the next {@link patch} (the benchmarks' "as released"). */
  restore(): void;
}

export function kafkajsPrototypeWrap<P extends object, K extends keyof P>(spec: {
  /** The kafkajs version the wrapper was written and tested against. */
  version: string;
  /** The module exporting the class, e.g. `kafkajs/src/network/connection`. */
  module: string;
  /** The member of its prototype that is wrapped. */
  member: K;
  /** Builds the wrapper of kafkajs's own member. */
  wrapper: (original: P[K]) => P[K];
}): PrototypeWrap<P> {
  const originals = new WeakMap<P, P[K]>();
  const kafkajsPrototype = (): P | undefined => {
    try {
      const { version } = require('kafkajs/package.json') as { version: string };
      if (version !== spec.version) return undefined;
      const cls = require(spec.module) as { prototype?: P };
      return typeof cls.prototype?.[spec.member] === 'function' ? cls.prototype : undefined;
    } catch {
      return undefined; // a kafkajs laid out otherwise: left as it is
    }
  };
  const w: PrototypeWrap<P> = {
    wrap(proto) {
      if (originals.has(proto)) return;
      const original = proto[spec.member];
      originals.set(proto, original);
      proto[spec.member] = spec.wrapper(original);
    },
    unwrap(proto) {
      if (!originals.has(proto)) return;
      proto[spec.member] = originals.get(proto) as P[K];
      originals.delete(proto);
    },
    patch() {
      const proto = kafkajsPrototype();
      if (!proto) return false;
      w.wrap(proto);
      return true;
    },
    restore() {
      const proto = kafkajsPrototype();
      if (proto) w.unwrap(proto);
    },
  };
  return w;
}
/* eslint-enable @typescript-eslint/no-require-imports */
