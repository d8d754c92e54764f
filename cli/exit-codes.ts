/**
 * What `feromonios` exits with (docs/cli.md, "Exit codes"). Scripts branch on these, never on
 * the text.
 */
export const EXIT = {
  /** Done. */
  OK: 0,
  /** Failed: a service error (5xx), a network error, a request that ended `falhou`. */
  FAILED: 1,
  /** Bad usage: unknown command or option, a value the CLI or the API refused (400). */
  USAGE: 2,
  /** Refused without confirmation: a whole-colony or destructive action needs `--yes`. */
  NEEDS_CONFIRMATION: 3,
  /** Not found (404): no such event, entry, action or topic. */
  NOT_FOUND: 4,
  /** Not allowed (401/403): token missing, invalid, expired, or without an operator role. */
  UNAUTHORIZED: 5,
  /** Throttled (429): try again after the time the message gives. */
  THROTTLED: 6,
  /** A check failed: `schemas check`/`schemas diff` found an incompatible version. */
  CHECK_FAILED: 7,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error the CLI reports as one line on stderr (`error: …`) and exits with `code`. */
export class CliError extends Error {
  override name = 'CliError';
  constructor(
    message: string,
    readonly code: ExitCode,
  ) {
    super(message);
  }
}
