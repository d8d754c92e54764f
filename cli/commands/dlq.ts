import { setTimeout as delay } from 'node:timers/promises';
import { SingleBar } from 'cli-progress';
import { Command, Option } from 'commander';
import { MOTIVOS_ESTACIONAMENTO, selecaoInteira, type SelecaoDLQ } from '../../sdk';
import type {
  EntradaDLQ,
  RegistroReprocessamento,
  ResultadoAcaoDLQ,
  ResumoDLQ,
  SimulacaoReprocessamento,
} from '../../sdk';
import type { Context } from '../context';
import { CliError, EXIT } from '../exit-codes';
import { note, printFields, printJson, printTable } from '../output';
import { float, integer, list } from '../parse';

interface SelectionFlags {
  handler?: string;
  ids?: string[];
  fingerprint?: string;
  since?: string;
  until?: string;
}

const withSelection = (c: Command): Command =>
  c
    .option('--handler <name>', 'only entries of this handler (handler_nome)')
    .option('--ids <event_ids>', 'only these events (comma-separated UUIDs)', list)
    .option('--fingerprint <hex>', 'only entries failing this way (erro_fingerprint, see `dlq stats`)')
    .option('--since <instant>', 'last failure at or after this ISO-8601 instant (inclusive)')
    .option('--until <instant>', 'last failure at or before this ISO-8601 instant (inclusive)');

function selection(colonia: string, f: SelectionFlags): SelecaoDLQ {
  return {
    colonia,
    ...(f.handler !== undefined ? { manipulador: f.handler } : {}),
    ...(f.ids !== undefined ? { event_ids: f.ids } : {}),
    ...(f.fingerprint !== undefined ? { fingerprint: f.fingerprint } : {}),
    ...(f.since !== undefined ? { falhou_desde: f.since } : {}),
    ...(f.until !== undefined ? { falhou_ate: f.until } : {}),
  };
}

/** A whole-colony change without `--yes` is refused before anything is sent. */
function confirmWhole(verb: string, colonia: string, f: SelectionFlags & { yes?: boolean; dryRun?: boolean }): void {
  if (f.dryRun || f.yes || !selecaoInteira(selection(colonia, f))) return;
  throw new CliError(
    `refusing to ${verb} every entry of colony ${colonia} without --yes ` +
      '(narrow with --handler/--ids/--fingerprint/--since/--until, or preview with --dry-run)',
    EXIT.NEEDS_CONFIRMATION,
  );
}

export function dlqCommand(ctx: () => Context): Command {
  const dlq = new Command('dlq').description("the colonies' dead-letter queues: inspect, reprocess, park, reopen");

  dlq
    .command('stats')
    .description('entries per colony and state, and the most frequent open failures')
    .action(async () => {
      const c = ctx();
      const r = await c.api().get<ResumoDLQ>('/api/events/dlq/resumo');
      if (c.out.json) return printJson(c.out, r);
      printTable(
        c.out,
        ['COLONY', 'PENDENTE', 'RETRYING', 'RESOLVED', 'FAILED_PERMANENT'],
        r.colonias.map((x) => [
          x.colonia,
          x.por_status.pendente,
          x.por_status.retrying,
          x.por_status.resolved,
          x.por_status.failed_permanent,
        ]),
      );
      const failures = r.colonias.flatMap((x) =>
        x.falhas.map((f) => [x.colonia, f.erro_fingerprint, f.entradas, f.handler_nome, f.mensagem_erro]),
      );
      if (failures.length > 0) {
        c.out.out.write('\nopen failures by fingerprint:\n');
        printTable(c.out, ['COLONY', 'FINGERPRINT', 'ENTRIES', 'HANDLER', 'ERROR'], failures);
      }
      c.out.out.write(`\n${r.total_abertas} open entr${r.total_abertas === 1 ? 'y' : 'ies'}\n`);
    });

  withSelection(
    dlq
      .command('list')
      .description("a colony's entries (any state), oldest first")
      .argument('<colonia>', 'colony code')
      .addOption(
        new Option('--status <state>', 'only this state').choices([
          'pendente',
          'retrying',
          'resolved',
          'failed_permanent',
        ]),
      ),
  )
    .option('--limit <n>', 'page size (at most 500)', integer(1, 500), 100)
    .option('--offset <n>', 'skip this many', integer(0, 1e9), 0)
    .action(async (colonia: string, f: SelectionFlags & { status?: string; limit: number; offset: number }) => {
      const c = ctx();
      if (f.ids) throw new CliError('dlq list takes no --ids: use `dlq show <event_id>`', EXIT.USAGE);
      const r = await c.api().get<{ linhas: EntradaDLQ[]; total: number }>('/api/events/dlq/entradas', {
        ...(selection(colonia, f) as Omit<SelecaoDLQ, 'event_ids'>), // single-valued fields only (no --ids here)
        status: f.status,
        limite: f.limit,
        deslocamento: f.offset,
      });
      if (c.out.json) return printJson(c.out, r);
      printTable(
        c.out,
        ['EVENT_ID', 'SEQ', 'STATUS', 'TRIES', 'ROUNDS', 'FINGERPRINT', 'LAST_FAILURE', 'HANDLER', 'ERROR'],
        r.linhas.map((e) => [
          e.event_id,
          e.sequence_number,
          e.status,
          e.tentativas,
          e.reprocessamentos,
          e.erro_fingerprint,
          e.ultima_tentativa,
          e.handler_nome,
          e.motivo ? `${e.mensagem_erro} [${e.motivo}]` : e.mensagem_erro,
        ]),
      );
      note(c.out, `${r.linhas.length} of ${r.total}`);
    });

  dlq
    .command('show')
    .description("one event's DLQ entries (every colony), its redacted log row and every action that took it")
    .argument('<event_id>', 'event UUID')
    .action(async (eventId: string) => {
      const c = ctx();
      const r = await c.api().get<{
        evento: { tipo: string; origem: string; sequence_number: string } | null;
        entradas: EntradaDLQ[];
        acoes: RegistroReprocessamento[];
      }>(`/api/events/dlq/entradas/${encodeURIComponent(eventId)}`);
      if (c.out.json) return printJson(c.out, r);
      printFields(c.out, [
        ['event_id', eventId],
        ['tipo', r.evento?.tipo],
        ['origem', r.evento?.origem],
        ['sequence', r.evento?.sequence_number],
      ]);
      c.out.out.write('\n');
      printTable(
        c.out,
        ['COLONY', 'STATUS', 'TRIES', 'ROUNDS', 'FINGERPRINT', 'HANDLER', 'ERROR', 'REASON'],
        r.entradas.map((e) => [
          e.colonia,
          e.status,
          e.tentativas,
          e.reprocessamentos,
          e.erro_fingerprint,
          e.handler_nome,
          e.mensagem_erro,
          e.motivo,
        ]),
      );
      c.out.out.write('\n');
      printTable(
        c.out,
        ['WHEN', 'ACTION', 'DRY_RUN', 'BY', 'RESULT', 'DETAIL'],
        r.acoes.map((a) => [a.solicitado_em, a.acao, a.simulacao, a.solicitante, a.resultado, a.detalhe]),
      );
    });

  withSelection(
    dlq
      .command('reprocess')
      .description('send entries back to the colony (paced, loop-guarded, audited)')
      .argument('<colonia>', 'colony code'),
  )
    .option('--max <n>', 'at most this many entries (1-10000, default 1000)', integer(1, 10_000))
    .option(
      '--rate <events_per_second>',
      'redrive rate (0.1-10000 events/s; default: as fast as possible)',
      float(0.1, 10_000),
    )
    .option('--dry-run', 'show what would be sent (and whether with the full payload) and change nothing')
    .option('--yes', 'confirm a whole-colony reprocess (no narrowing option)')
    .option('--no-wait', 'return once the request is accepted instead of following its progress')
    .action(
      async (
        colonia: string,
        f: SelectionFlags & { max?: number; rate?: number; dryRun?: boolean; yes?: boolean; wait: boolean },
      ) => {
        const c = ctx();
        confirmWhole('reprocess', colonia, f);
        const api = c.api();
        const body = {
          ...selection(colonia, f),
          ...(f.max !== undefined ? { max: f.max } : {}),
          ...(f.rate !== undefined ? { taxa: f.rate } : {}),
          ...(f.dryRun ? { dry_run: true } : {}),
        };
        if (f.dryRun) {
          const { body: plan } = await api.post<SimulacaoReprocessamento>('/api/events/dlq/reprocessamentos', body);
          if (c.out.json) return printJson(c.out, plan);
          printTable(
            c.out,
            ['EVENT_ID', 'PAYLOAD'],
            plan.eventos.map((e) => [
              e.event_id,
              e.payload === 'original' ? 'original (full, from the DLQ topic)' : 'redacted log copy',
            ]),
          );
          for (const id of plan.guardados_ids) c.out.out.write(`${id}  would be parked by the loop guard\n`);
          note(
            c.out,
            `dry run ${plan.pedido_id}: would send ${plan.reprocessariam} (${plan.originais} original, ${plan.redigidos} redacted), ` +
              `park ${plan.guardados}, leave ${plan.restantes} pending; nothing changed`,
          );
          return;
        }
        const { body: claim } = await api.post<{
          pedido_id: string;
          selecionados: number;
          guardados: number;
          restantes: number;
          duracao_estimada_ms: number;
        }>('/api/events/dlq/reprocessamentos', body);
        note(
          c.out,
          `request ${claim.pedido_id}: ${claim.selecionados} to send` +
            (f.rate ? ` at ${f.rate}/s (~${Math.ceil(claim.duracao_estimada_ms / 1000)} s)` : '') +
            `, ${claim.guardados} parked by the loop guard, ${claim.restantes} left pending`,
        );
        if (!f.wait) return c.out.json ? printJson(c.out, claim) : undefined;
        const row = await follow(c, claim.pedido_id, claim.selecionados);
        if (c.out.json) printJson(c.out, row);
        else
          printFields(c.out, [
            ['request', row.id],
            ['result', row.resultado],
            ['sent', row.reprocessados],
            ['original payloads', row.originais],
            ['redacted copies', row.redigidos],
            ['parked by guard', row.guardados],
            ['detail', row.detalhe],
          ]);
        if (row.resultado !== 'concluido')
          throw new CliError(`request ${row.id} ended ${row.resultado}: ${row.detalhe ?? ''}`, EXIT.FAILED);
      },
    );

  withSelection(
    dlq
      .command('park')
      .description('mark pending entries failed_permanent with a reason (reopen undoes it)')
      .argument('<colonia>', 'colony code'),
  )
    .addOption(
      new Option('--reason <code>', 'why (a code: free text could name a citizen)')
        .choices([...MOTIVOS_ESTACIONAMENTO])
        .makeOptionMandatory(),
    )
    .option('--ref <ticket>', 'ticket reference, e.g. OPS-77 (required with --reason outro)')
    .option('--max <n>', 'at most this many entries', integer(1, 10_000))
    .option('--dry-run', 'show which entries would be parked, change nothing')
    .option('--yes', 'confirm parking every pending entry of the colony')
    .action(
      (
        colonia: string,
        f: SelectionFlags & { reason: string; ref?: string; max?: number; dryRun?: boolean; yes?: boolean },
      ) => transition(ctx(), 'estacionar', colonia, f, { motivo: f.reason, ...(f.ref ? { referencia: f.ref } : {}) }),
    );

  withSelection(
    dlq
      .command('reopen')
      .description('put failed_permanent entries back to pendente, with a fresh loop-guard budget')
      .argument('<colonia>', 'colony code'),
  )
    .option('--max <n>', 'at most this many entries', integer(1, 10_000))
    .option('--dry-run', 'show which entries would be reopened, change nothing')
    .option('--yes', 'confirm reopening every failed_permanent entry of the colony')
    .action((colonia: string, f: SelectionFlags & { max?: number; dryRun?: boolean; yes?: boolean }) =>
      transition(ctx(), 'reabrir', colonia, f, {}),
    );

  dlq
    .command('history')
    .description('the audit trail of DLQ actions (reprocess, park, reopen, dry runs), newest first')
    .argument('[colonia]', 'only this colony')
    .addOption(new Option('--action <acao>', 'only this action').choices(['reprocessar', 'estacionar', 'reabrir']))
    .option('--event-id <uuid>', 'only actions that took this event')
    .option('--limit <n>', 'page size (at most 500)', integer(1, 500), 50)
    .action(async (colonia: string | undefined, f: { action?: string; eventId?: string; limit: number }) => {
      const c = ctx();
      const r = await c
        .api()
        .get<{ linhas: RegistroReprocessamento[]; total: number }>('/api/events/dlq/reprocessamentos', {
          colonia,
          acao: f.action,
          event_id: f.eventId,
          limite: f.limit,
        });
      if (c.out.json) return printJson(c.out, r);
      printTable(
        c.out,
        ['WHEN', 'ID', 'COLONY', 'ACTION', 'DRY_RUN', 'BY', 'RESULT', 'SENT', 'CHANGED', 'PARKED_BY_GUARD', 'ASKED'],
        r.linhas.map((a) => [
          a.solicitado_em,
          a.id,
          a.colonia,
          a.acao,
          a.simulacao,
          a.solicitante,
          a.resultado,
          a.reprocessados,
          a.afetados,
          a.guardados,
          a.parametros,
        ]),
        80,
      );
      note(c.out, `${r.linhas.length} of ${r.total}`);
    });

  return dlq;
}

async function transition(
  c: Context,
  acao: 'estacionar' | 'reabrir',
  colonia: string,
  f: SelectionFlags & { max?: number; dryRun?: boolean; yes?: boolean },
  extra: Record<string, unknown>,
): Promise<void> {
  confirmWhole(acao === 'estacionar' ? 'park' : 'reopen', colonia, f);
  const { body } = await c.api().post<ResultadoAcaoDLQ>(`/api/events/dlq/${acao}`, {
    ...selection(colonia, f),
    ...extra,
    ...(f.max !== undefined ? { max: f.max } : {}),
    ...(f.dryRun ? { dry_run: true } : {}),
  });
  if (c.out.json) return printJson(c.out, body);
  for (const id of body.event_ids) c.out.out.write(`${id}\n`);
  const verb = acao === 'estacionar' ? 'park' : 'reopen';
  note(
    c.out,
    body.simulacao
      ? `dry run ${body.pedido_id}: would ${verb} ${body.event_ids.length}; nothing changed`
      : `${body.pedido_id}: ${verb === 'park' ? 'parked' : 'reopened'} ${body.afetados}`,
  );
}

/** Polls the request's audit row, with a progress bar on stderr, until it is no longer in progress. */
async function follow(c: Context, id: string, total: number): Promise<RegistroReprocessamento> {
  const api = c.api();
  const bar = new SingleBar({
    stream: c.out.err,
    format: 'reprocessing [{bar}] {value}/{total} sent | {eta_formatted} left',
    noTTYOutput: true,
    notTTYSchedule: 1000,
    hideCursor: false,
  });
  bar.start(total, 0);
  try {
    for (;;) {
      const row = await api.get<RegistroReprocessamento>(`/api/events/dlq/reprocessamentos/${id}`);
      bar.update(row.reprocessados);
      if (row.resultado !== 'em_andamento') return row;
      await delay(500);
    }
  } finally {
    bar.stop();
  }
}
