import path from 'node:path';

/** Repository root (this file lives in `<root>/infra`). */
export const ROOT = path.resolve(__dirname, '..');

/** Git-ignored folder holding downloaded jars, data directories, logs and pid files. */
export const STATE_DIR = process.env.FEROMONIOS_INFRA_DIR ?? path.join(ROOT, '.infra');

export const stateDir = (...parts: string[]): string => path.join(STATE_DIR, ...parts);
