import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { Readable } from 'node:stream';
import { SingleBar } from 'cli-progress';
import { Command } from 'commander';
import type { Context } from '../context';
import { CliError, EXIT } from '../exit-codes';
import { note } from '../output';
import { list, sequence } from '../parse';

interface ReplayFlags {
  fromSeq: string;
  tipo?: string[];
  to?: string;
  ndjson?: boolean;
}

/**
 * `replay`: the redacted log after a sequence number, streamed from the audit API's NDJSON
 * endpoint to stdout or a file — one line at a time, written with backpressure, so memory stays
 * flat for any range — with a progress bar on stderr.
 */
export function replayCommand(ctx: () => Context): Command {
  return new Command('replay')
    .description('stream the redacted log after a sequence number (NDJSON or one line per event)')
    .requiredOption('--from-seq <n>', 'events with sequence_number above n (a cursor, as replayDeSequence)', sequence)
    .option('--tipo <tipos>', 'only these event types (comma-separated, repeatable)', list)
    .option('--to <file>', 'write to this file instead of stdout')
    .option('--ndjson', 'one JSON event per line (default: a readable line per event)')
    .action(async (f: ReplayFlags) => {
      const c = ctx();
      const api = c.api();
      // the total for the bar: one count per type (exact to 10,000, an estimate above)
      const next = (BigInt(f.fromSeq) + 1n).toString();
      const counts = await Promise.all(
        (f.tipo ?? [undefined]).map((tipo) =>
          api.get<{ total: number; total_exato?: boolean }>('/api/events', { sequence_inicio: next, tipo, limite: 1 }),
        ),
      );
      const total = counts.reduce((n, r) => n + r.total, 0);
      const res = await api.stream('/api/events/replay', {
        apos_sequence: f.fromSeq,
        ...(f.tipo ? { tipos: f.tipo.join(',') } : {}),
      });
      const until = res.headers.get('x-feromonios-ate-sequence') ?? '?';
      const sink = f.to ? createWriteStream(f.to) : c.out.out;
      const bar = new SingleBar({
        stream: c.out.err,
        format: 'replay [{bar}] {value}/{total} events | {eta_formatted} left',
        noTTYOutput: true,
        notTTYSchedule: 1000,
        etaBuffer: 1000,
        hideCursor: false,
      });
      bar.start(total, 0);
      let n = 0;
      let carry = '';
      const write = async (text: string): Promise<void> => {
        if (!sink.write(text)) await once(sink, 'drain');
      };
      try {
        if (!res.body) throw new CliError('the audit API sent no body', EXIT.FAILED);
        for await (const chunk of Readable.fromWeb(res.body)) {
          const lines = (carry + (chunk as Buffer).toString('utf8')).split('\n');
          carry = lines.pop() ?? '';
          let out = '';
          for (const line of lines) {
            if (line === '') continue;
            n++;
            out += f.ndjson ? `${line}\n` : readable(line);
          }
          if (out) await write(out);
          if (n > total) bar.setTotal(n);
          bar.update(n);
        }
        if (carry !== '') throw new CliError('the stream ended inside a line: the replay is incomplete', EXIT.FAILED);
      } catch (err) {
        if (err instanceof CliError) throw err;
        throw new CliError(`the replay stream broke after ${n} events: ${(err as Error).message}`, EXIT.FAILED);
      } finally {
        bar.stop();
        if (f.to) {
          (sink as NodeJS.WritableStream & { end(): void }).end();
          await once(sink, 'finish');
        }
      }
      note(c.out, `replayed ${n} events after sequence ${f.fromSeq} up to ${until}${f.to ? ` into ${f.to}` : ''}`);
    });
}

function readable(line: string): string {
  const e = JSON.parse(line) as {
    sequence_number: string;
    timestamp: string;
    tipo: string;
    origem: string;
    event_id: string;
  };
  return `${e.sequence_number}  ${e.timestamp}  ${e.tipo}  ${e.origem}  ${e.event_id}\n`;
}
