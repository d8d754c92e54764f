import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** Raised when a tool the infra scripts need (java, mvn) is missing or too old. */
export class ToolchainError extends Error {
  override name = 'ToolchainError';
}

function javaMajor(javaBin: string): number | null {
  // `java -version` prints on stderr.
  const res = spawnSync(javaBin, ['-version'], { encoding: 'utf8' });
  if (res.error) return null;
  return parseJavaMajor(`${res.stderr}${res.stdout}`);
}

/** Parses the major version out of `java -version` output (`"17.0.15"` → 17, `"1.8.0"` → 8). */
export function parseJavaMajor(versionOutput: string): number | null {
  const m = /version "(\d+)(?:\.(\d+))?/.exec(versionOutput);
  if (!m?.[1]) return null;
  const first = Number(m[1]);
  return first === 1 && m[2] ? Number(m[2]) : first;
}

/**
 * Finds a `java` binary of at least `minMajor`: `$JAVA_HOME`, then `java` on the PATH, then
 * every JDK under /usr/lib/jvm (Kafka needs 17; Apicurio 3.3 needs 21).
 */
export function findJava(minMajor: number): string {
  const candidates: string[] = [];
  if (process.env.JAVA_HOME) candidates.push(path.join(process.env.JAVA_HOME, 'bin', 'java'));
  candidates.push('java');
  const jvmDir = '/usr/lib/jvm';
  if (fs.existsSync(jvmDir)) {
    for (const d of fs.readdirSync(jvmDir).sort().reverse()) candidates.push(path.join(jvmDir, d, 'bin', 'java'));
  }
  const seen: string[] = [];
  for (const bin of candidates) {
    const major = javaMajor(bin);
    if (major === null) continue;
    seen.push(`${bin} (${major})`);
    if (major >= minMajor) return bin;
  }
  throw new ToolchainError(
    `Java ${minMajor}+ is required but was not found (looked at JAVA_HOME, PATH and /usr/lib/jvm; found: ${
      seen.join(', ') || 'none'
    }). Install a JDK, e.g. 'apt-get install openjdk-17-jdk-headless', or set JAVA_HOME.`,
  );
}

export function requireMaven(): string {
  try {
    execFileSync('mvn', ['-v'], { stdio: 'ignore' });
    return 'mvn';
  } catch {
    throw new ToolchainError(
      "Apache Maven ('mvn') is required to fetch the Kafka and Apicurio jars from Maven Central but was not found on the PATH. Install it, e.g. 'apt-get install maven'.",
    );
  }
}

/** Runs Maven in batch mode from `cwd`, streaming a short progress note. */
export function runMaven(cwd: string, args: string[]): void {
  const mvn = requireMaven();
  process.stderr.write(`[infra] mvn ${args.join(' ')} (first run downloads from Maven Central)\n`);
  execFileSync(mvn, ['-B', '-q', ...args], { cwd, stdio: ['ignore', 'inherit', 'inherit'] });
}
