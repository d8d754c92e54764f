/**
 * `feromonios` (docs/cli.md): the platform team's command line. Run it as `npx feromonios …`
 * in this repository or the platform image. Exit codes: cli/exit-codes.ts.
 */
import { runCli } from './program';

runCli(process.argv.slice(2), { out: process.stdout, err: process.stderr, env: process.env }).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
