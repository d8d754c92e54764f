import type { Circus } from '@jest/types';
import type { EnvironmentContext, JestEnvironmentConfig } from '@jest/environment';
import NodeEnvironment from 'jest-environment-node';
import net from 'node:net';
import path from 'node:path';

/**
 * Every socket opened while a test file runs is tagged with that file and the stack that opened
 * it, so the end-of-run watchdog (global-teardown.ts) can say who leaked a connection instead of
 * only "Socket remote:9092". jest shares core modules with the test code: one patch per process.
 */
let currentFile = '(between files)';
const patched = Symbol.for('feromonios.socket-origin');
const proto = net.Socket.prototype as net.Socket & { [patched]?: boolean };
if (!proto[patched]) {
  proto[patched] = true;
  const connect = proto.connect;
  proto.connect = function (this: net.Socket, ...args: unknown[]) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 60;
    const stack = (new Error().stack ?? '')
      .split('\n')
      .slice(2)
      .filter((line) => !/node_modules\/kafkajs\/src\/(network|cluster\/brokerPool)|node:internal/.test(line))
      .slice(0, 20)
      .join('\n');
    Error.stackTraceLimit = limit;
    (this as net.Socket & { feromoniosOrigin?: string }).feromoniosOrigin = `${currentFile}\n${stack}`;
    return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
  };
}

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
  private readonly file: string;

  constructor(config: JestEnvironmentConfig, context: EnvironmentContext) {
    super(config, context);
    this.file = path.relative(process.cwd(), context.testPath);
  }

  override async setup(): Promise<void> {
    await super.setup();
    currentFile = this.file;
  }

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
    currentFile = `(after ${this.file})`;
    if (this.leaked.length > 0) {
      throw new Error(`test file leaked ${this.leaked.length} connected client(s): ${this.leaked.join(', ')}`);
    }
    if (this.cleanupErrors.length > 0) throw new Error(`harness teardown failed: ${this.cleanupErrors.join('; ')}`);
  }
}
