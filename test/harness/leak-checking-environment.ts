import type { Circus } from '@jest/types';
import NodeEnvironment from 'jest-environment-node';

interface HarnessGlobals {
  /** Teardowns of resources the harness created (databases, kafkajs clients), run in reverse. */
  __feromoniosCleanups?: Array<() => Promise<void>>;
  /** Clients a test opened and must close itself (buses, consumers); leftovers fail the file. */
  __feromoniosOpenClients?: Map<string, unknown>;
}

/**
 * The node environment plus the harness's end-of-file work. When the file's tests and every
 * `afterAll` have run (circus `run_finish`, while modules can still load), it runs the
 * teardowns the helpers registered; then it fails the file if a client the test tracked is
 * still connected, naming it: a leaked consumer keeps rebalancing the groups of later files.
 */
export default class LeakCheckingEnvironment extends NodeEnvironment {
  private leaked: string[] = [];
  private cleanupErrors: string[] = [];

  async handleTestEvent(event: Circus.Event): Promise<void> {
    if (event.name !== 'run_finish') return;
    const g = this.global as HarnessGlobals;
    this.leaked = g.__feromoniosOpenClients ? [...g.__feromoniosOpenClients.keys()] : [];
    for (const cleanup of (g.__feromoniosCleanups ?? []).reverse()) {
      const t0 = Date.now();
      try {
        await cleanup();
      } catch (err) {
        this.cleanupErrors.push(String(err));
      }
      if (process.env.HARNESS_TIMING && Date.now() - t0 > 1000)
        process.stderr.write(`[harness] slow cleanup ${Date.now() - t0} ms: ${cleanup.toString().slice(0, 80)}\n`);
    }
    g.__feromoniosCleanups = [];
  }

  override async teardown(): Promise<void> {
    await super.teardown();
    if (this.leaked.length > 0) {
      throw new Error(`test file leaked ${this.leaked.length} connected client(s): ${this.leaked.join(', ')}`);
    }
    if (this.cleanupErrors.length > 0) throw new Error(`harness teardown failed: ${this.cleanupErrors.join('; ')}`);
  }
}
