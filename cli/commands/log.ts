import { Command, Option } from 'commander';
import pg from 'pg';
import {
  abrirDestino,
  arquivarAntigos,
  arquivarMes,
  criarParticaoDoMes,
  garantirParticoesDoLog,
  mesesDoLog,
  restaurarMes,
  verificarMes,
  type ProgressoArquivo,
} from '../../sdk/service';
import type { Context } from '../context';
import { CliError, EXIT } from '../exit-codes';
import { note, printJson, printTable, type Output } from '../output';

interface DbFlags {
  database: string;
}

const databaseOption = (c: Command): Command =>
  c.addOption(new Option('--database <url>', 'PostgreSQL of the log').env('DATABASE_URL').makeOptionMandatory(true));

async function withPool<T>(f: DbFlags, fn: (pool: pg.Pool) => Promise<T>): Promise<T> {
  const pool = new pg.Pool({ connectionString: f.database, max: 2 });
  try {
    return await fn(pool);
  } finally {
    await pool.end();
  }
}

/** Progress on stderr, one line per file (stdout stays data). */
const progress =
  (o: Output) =>
  (p: ProgressoArquivo): void =>
    note(o, `${p.mes} ${p.etapa}${p.arquivo ? ` ${p.arquivo}` : ''} (${p.linhas} rows)`);

/**
 * `log months|partitions|archive|verify|restore` (docs/archive.md): where each month of
 * `core.event_log` is, the months ahead, and the cold archive — months written to Parquet in a
 * local directory or an S3-compatible bucket, checked, and brought back.
 */
export function logCommand(ctx: () => Context): Command {
  const log = new Command('log').description('the log in PostgreSQL: monthly partitions and the cold archive');

  databaseOption(log.command('months').description('every month of the log: in PostgreSQL or archived')).action(
    async (f: DbFlags) => {
      const c = ctx();
      const months = await withPool(f, mesesDoLog);
      if (c.out.json) return printJson(c.out, months);
      printTable(
        c.out,
        ['MONTH', 'WHERE', 'ROWS', 'FILES', 'DESTINATION'],
        months.map((m) => [m.mes, m.onde, m.linhas, m.arquivos, m.destino]),
      );
    },
  );

  databaseOption(
    log
      .command('partitions')
      .description('create the current month and months ahead (what the bridge does every hour), or one month')
      .option('--ahead <n>', 'months ahead of the current one', '3')
      .option('--month <YYYY-MM>', 'create this month (moving its rows out of the DEFAULT partition)'),
  ).action(async (f: DbFlags & { ahead: string; month?: string }) => {
    const c = ctx();
    const n = Number(f.ahead);
    if (!Number.isInteger(n) || n < 0 || n > 36) throw new CliError('--ahead must be 0-36', EXIT.USAGE);
    if (f.month !== undefined && !/^\d{4}-(0[1-9]|1[0-2])$/.test(f.month))
      throw new CliError('--month must be YYYY-MM', EXIT.USAGE);
    const created = await withPool(f, (pool) =>
      f.month ? criarParticaoDoMes(pool, f.month) : garantirParticoesDoLog(pool, n),
    );
    if (c.out.json) return printJson(c.out, { criadas: created });
    note(c.out, created.length ? `created ${created.join(', ')}` : 'every month already exists');
  });

  databaseOption(
    log
      .command('archive')
      .description('write months to Parquet, check them, then drop their partitions')
      .option('--month <YYYY-MM>', 'one month')
      .option('--older-than <months>', 'every month at least this many whole months old')
      .addOption(
        new Option('--to <uri>', 'destination: a directory, file:///dir or s3://bucket/prefix')
          .env('FEROMONIOS_ARCHIVE_URL')
          .makeOptionMandatory(true),
      )
      .option('--rows-per-file <n>', 'rows per Parquet file', '50000'),
  ).action(async (f: DbFlags & { month?: string; olderThan?: string; to: string; rowsPerFile: string }) => {
    const c = ctx();
    if ((f.month === undefined) === (f.olderThan === undefined))
      throw new CliError('give exactly one of --month and --older-than', EXIT.USAGE);
    const destino = abrirDestino(f.to);
    const results = await withPool(f, async (pool) => {
      const o = { pool, destino, linhasPorArquivo: Number(f.rowsPerFile), progresso: progress(c.out) };
      return f.month ? [await arquivarMes(o, f.month)] : arquivarAntigos(o, Number(f.olderThan));
    });
    if (c.out.json) return printJson(c.out, results);
    printTable(
      c.out,
      ['MONTH', 'RESULT', 'ROWS', 'FILES', 'DESTINATION'],
      results.map((r) => [r.mes, r.resultado, r.linhas, r.arquivos, r.destino]),
    );
  });

  databaseOption(
    log
      .command('verify')
      .description("check an archived month's files against its record (exit 7 when one differs)")
      .requiredOption('--month <YYYY-MM>', 'the month'),
  ).action(async (f: DbFlags & { month: string }) => {
    const c = ctx();
    const v = await withPool(f, (pool) => verificarMes({ pool, progresso: progress(c.out) }, f.month));
    if (c.out.json) printJson(c.out, v);
    else
      printTable(
        c.out,
        ['FILE', 'PROBLEM'],
        v.problemas.map((p) => [p.arquivo, p.problema]),
        200,
      );
    if (!v.ok) throw new CliError(`${v.problemas.length} problem(s) in the archive of ${f.month}`, EXIT.CHECK_FAILED);
    if (!c.out.json) note(c.out, `${f.month}: ${v.arquivos} files, ${v.linhas} rows, every one checked`);
  });

  databaseOption(
    log
      .command('restore')
      .description('bring an archived month back into PostgreSQL (the files stay)')
      .requiredOption('--month <YYYY-MM>', 'the month'),
  ).action(async (f: DbFlags & { month: string }) => {
    const c = ctx();
    const r = await withPool(f, (pool) => restaurarMes({ pool, progresso: progress(c.out) }, f.month));
    if (c.out.json) return printJson(c.out, r);
    note(c.out, `${r.mes}: ${r.resultado} (${r.linhas} rows)`);
  });

  return log;
}
