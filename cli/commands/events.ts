import { Command } from 'commander';
import type { EventoDoLog, ResultadoPaginado } from '../../sdk';
import type { Context } from '../context';
import { CliError, EXIT } from '../exit-codes';
import { note, printFields, printJson, printTable } from '../output';
import { integer, sequence } from '../parse';

type Page = ResultadoPaginado<EventoDoLog>;

const eventRows = (rows: EventoDoLog[]) =>
  rows.map((e) => [e.sequence_number, e.timestamp, e.tipo, e.origem, e.event_id, e.causation_id ?? '-']);
const EVENT_HEADERS = ['SEQ', 'TIMESTAMP', 'TIPO', 'ORIGEM', 'EVENT_ID', 'CAUSATION_ID'];

export function eventsCommand(ctx: () => Context): Command {
  const events = new Command('events').description('the redacted event log (audit queries)');

  events
    .command('search')
    .description('events matching every filter given, in sequence order')
    .option('--tipo <tipo>', 'event type')
    .option('--origem <colonia>', 'publishing colony')
    .option('--correlacao <uuid>', 'correlation id')
    .option('--tenant <uuid>', 'tenant id')
    .option('--since <instant>', 'event timestamp at or after (ISO-8601)')
    .option('--until <instant>', 'event timestamp at or before (ISO-8601)')
    .option('--from-seq <n>', 'sequence_number at or above', sequence)
    .option('--to-seq <n>', 'sequence_number at or below', sequence)
    .option('--after <seq>', "next page: events after this sequence_number (the previous page's cursor)", sequence)
    .option('--limit <n>', 'page size (at most 500)', integer(1, 500), 100)
    .option('--offset <n>', 'skip this many (slow when deep: prefer --after)', integer(0, 1e9), 0)
    .action(async (f: Record<string, string | number | undefined>) => {
      const c = ctx();
      const r = await c.api().get<Page>('/api/events', {
        tipo: f.tipo,
        origem: f.origem,
        correlacao_id: f.correlacao,
        tenant_id: f.tenant,
        timestamp_inicio: f.since,
        timestamp_fim: f.until,
        sequence_inicio: f.fromSeq,
        sequence_fim: f.toSeq,
        apos_sequence: f.after,
        limite: f.limit,
        deslocamento: f.offset,
      });
      if (c.out.json) return printJson(c.out, r);
      printTable(c.out, EVENT_HEADERS, eventRows(r.linhas));
      note(
        c.out,
        `${r.linhas.length} of ${r.total_exato ? '' : '~'}${r.total}` +
          (r.proximo_cursor ? ` — next page: --after ${r.proximo_cursor}` : ''),
      );
    });

  events
    .command('get')
    .description('one event (redacted payload)')
    .argument('<event_id>', 'event UUID')
    .action(async (id: string) => {
      const c = ctx();
      const e = await c.api().get<EventoDoLog>(`/api/events/${encodeURIComponent(id)}`);
      if (c.out.json) return printJson(c.out, e);
      printFields(c.out, [
        ['event_id', e.event_id],
        ['sequence', e.sequence_number],
        ['tipo', `${e.tipo} ${e.versao_schema}`],
        ['origem', e.origem],
        ['timestamp', e.timestamp],
        ['correlacao_id', e.correlacao_id],
        ['causation_id', e.causation_id],
        ['tenant_id', e.tenant_id],
        ['payload', e.payload],
      ]);
    });

  events
    .command('trace')
    .description('every event of one correlation, cause before effect')
    .argument('<correlacao_id>', 'correlation UUID')
    .action(async (id: string) => {
      const c = ctx();
      const r = await c.api().get<Page>(`/api/events/trace/${encodeURIComponent(id)}`);
      if (c.out.json) return printJson(c.out, r);
      if (r.linhas.length === 0) throw new CliError(`no event with correlacao_id ${id}`, EXIT.NOT_FOUND);
      const depth = new Map<string, number>();
      for (const e of r.linhas) depth.set(e.event_id, e.causation_id ? (depth.get(e.causation_id) ?? 0) + 1 : 0);
      printTable(
        c.out,
        ['SEQ', 'TIMESTAMP', 'EVENT'],
        r.linhas.map((e) => [
          e.sequence_number,
          e.timestamp,
          `${'  '.repeat(depth.get(e.event_id) ?? 0)}${e.tipo} (${e.origem}) ${e.event_id}`,
        ]),
        120,
      );
    });

  return events;
}
