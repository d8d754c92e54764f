/* eslint-disable @typescript-eslint/no-require-imports -- kafkajs's internals are CommonJS, resolved from its package */

/**
 * The check every kafkajs module swap (sdk/runtime/kafkajs-module-swap.ts) owes: in a process
 * where the module that binds the swapped function is already loaded (kafkajs produced or fetched
 * before the patch), `patch` refuses and leaves kafkajs's own function where it was. Runs in a
 * fresh module registry: `binder` is loaded first, then `load` gives the patch function of a fresh
 * copy of the SDK module under test (`require` it inside `load`, relative to the test file).
 */
export function expectOriginalKeptOnceBound(o: { binder: string; module: string; load: () => () => boolean }): void {
  jest.isolateModules(() => {
    const binder = require(o.binder) as unknown;
    const patch = o.load();
    const path = require.resolve(o.module);
    const before = require.cache[path]?.exports as unknown;
    expect(patch()).toBe(false);
    expect(require.cache[path]?.exports).toBe(before);
    expect(require(o.binder)).toBe(binder);
  });
}
/* eslint-enable @typescript-eslint/no-require-imports */
