import { Command, CommanderError, Option } from 'commander';
import { brokerSecurityFailure, FeromoniosError, type ResumoDLQ } from '../sdk';
import { aclsCommand } from './commands/acls';
import { dlqCommand } from './commands/dlq';
import { eventsCommand } from './commands/events';
import { logCommand } from './commands/log';
import { replayCommand } from './commands/replay';
import { schemasCommand } from './commands/schemas';
import { topicsCommand } from './commands/topics';
import { Context, type GlobalOptions } from './context';
import { CliError, EXIT, type ExitCode } from './exit-codes';

export interface Io {
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
  env: Record<string, string | undefined>;
}

/** Commands whose first argument is a colony code (completed from the DLQ summary). */
const COLONY_ARGUMENT = ['dlq list', 'dlq reprocess', 'dlq park', 'dlq reopen', 'dlq history', 'topics remove-colony'];

/** The `feromonios` program (docs/cli.md). */
export function buildProgram(io: Io): Command {
  const env = io.env;
  let context: Context | undefined;
  const program = new Command('feromonios')
    .description(
      'Feromônios for the platform team: DLQ reprocessing, audit queries, replay, schemas, topics, ACLs, the log archive',
    )
    .version('0.1.0')
    .addOption(
      new Option('--api <url>', 'audit API base URL')
        .env('FEROMONIOS_API_URL')
        .default(env.FEROMONIOS_API_URL ?? 'http://127.0.0.1:8080'),
    )
    .addOption(
      new Option('--token <jwt>', 'operator token (prefer the variable: flags show in `ps`)').env('FEROMONIOS_TOKEN'),
    )
    .addOption(
      new Option('--brokers <list>', 'Kafka bootstrap servers, comma-separated')
        .env('KAFKA_BROKERS')
        .default(env.KAFKA_BROKERS ?? '127.0.0.1:9092'),
    )
    .addOption(
      new Option('--registry <url>', 'schema registry base URL (Confluent API)')
        .env('SCHEMA_REGISTRY_URL')
        .default(env.SCHEMA_REGISTRY_URL ?? 'http://127.0.0.1:8081/apis/ccompat/v7'),
    )
    .addOption(
      new Option('--namespace <ns>', 'topic namespace')
        .env('FEROMONIOS_TOPIC_NAMESPACE')
        .default(env.FEROMONIOS_TOPIC_NAMESPACE ?? 'feromonios'),
    )
    .option('--json', 'machine-readable output: one JSON document on stdout')
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput({
      writeOut: (s) => io.out.write(s),
      writeErr: (s) => io.err.write(s),
    })
    .exitOverride();

  const ctx = (): Context => (context ??= new Context(program.opts<GlobalOptions>(), io));
  for (const c of [
    aclsCommand(ctx),
    dlqCommand(ctx),
    eventsCommand(ctx),
    logCommand(ctx),
    replayCommand(ctx),
    schemasCommand(ctx),
    topicsCommand(ctx),
  ])
    program.addCommand(c);

  program
    .command('completion')
    .description('print a bash completion script: eval "$(feromonios completion)"')
    .action(() => {
      io.out.write(bashCompletion(program));
    });

  program
    .command('__colonias', { hidden: true })
    .description('colony codes known to the DLQ (for completion)')
    .action(async () => {
      try {
        const r = await ctx().api().get<ResumoDLQ>('/api/events/dlq/resumo');
        io.out.write(r.colonias.map((c) => c.colonia).join('\n') + '\n');
      } catch {
        // completion stays silent
      }
    });

  for (const c of allCommands(program)) c.exitOverride().configureOutput(program.configureOutput());
  return program;
}

/** Runs the CLI; resolves with the exit code (never throws). */
export async function runCli(argv: string[], io: Io): Promise<ExitCode> {
  const program = buildProgram(io);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT.OK;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end with code 0; everything else commander refuses is usage
      return err.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
    }
    const { message, code } = describe(err);
    io.err.write(`error: ${message}\n`);
    return code;
  }
}

function describe(err: unknown): { message: string; code: ExitCode } {
  if (err instanceof CliError) return { message: err.message, code: err.code };
  // a credential or an ACL the broker refused (kafkajs wraps it): typed, with its cause, exit 5
  const security = brokerSecurityFailure(err);
  if (security)
    return { message: `${security.code} (${security.causa}): ${security.message}`, code: EXIT.UNAUTHORIZED };
  if (err instanceof FeromoniosError) {
    const code =
      err.code === 'BAD_REQUEST' || err.code === 'CONFIG_INVALID' || err.code === 'CATALOG_INVALID'
        ? EXIT.USAGE
        : err.code === 'NOT_FOUND'
          ? EXIT.NOT_FOUND
          : EXIT.FAILED;
    return { message: `${err.code}: ${err.message}`, code };
  }
  return { message: err instanceof Error ? err.message : String(err), code: EXIT.FAILED };
}

function allCommands(c: Command): Command[] {
  return c.commands.flatMap((s) => [s, ...allCommands(s)]);
}

/** Commands and options from the program itself; colony codes from the audit API (`__colonias`). */
function bashCompletion(program: Command): string {
  const visible = (c: Command) => c.commands.filter((s) => !(s as unknown as { _hidden?: boolean })._hidden);
  const top = visible(program).map((c) => c.name());
  const subs = visible(program)
    .filter((c) => c.commands.length > 0)
    .map(
      (c) =>
        `    ${c.name()}) subs="${visible(c)
          .map((s) => s.name())
          .join(' ')}" ;;`,
    )
    .join('\n');
  const colony = COLONY_ARGUMENT.map((p) => `"${p}"`).join('|');
  return `# feromonios bash completion: eval "$(feromonios completion)"
_feromonios() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" subs=""
  if [ "$COMP_CWORD" -eq 1 ]; then COMPREPLY=($(compgen -W "${top.join(' ')}" -- "$cur")); return; fi
  case "\${COMP_WORDS[1]}" in
${subs}
  esac
  if [ "$COMP_CWORD" -eq 2 ] && [ -n "$subs" ]; then COMPREPLY=($(compgen -W "$subs" -- "$cur")); return; fi
  if [ "$COMP_CWORD" -eq 3 ] && [[ "$cur" != -* ]]; then
    case "\${COMP_WORDS[1]} \${COMP_WORDS[2]}" in
      ${colony}) COMPREPLY=($(compgen -W "$(feromonios __colonias 2>/dev/null)" -- "$cur")); return ;;
    esac
  fi
  COMPREPLY=($(compgen -f -- "$cur"))
}
complete -F _feromonios feromonios
`;
}
