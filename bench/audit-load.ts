/**
 * Load generator for the audit API benchmark, run as a separate process so the client's work
 * does not share the server's event loop: `tsx bench/audit-load.ts <json>` where the argument is
 * `{ urls: string[], token, seconds, concurrency }`. Prints one JSON line: requests/s, p50, p99, errors.
 */
import { percentile } from './stats';

async function main(): Promise<void> {
  const o = JSON.parse(process.argv[2] ?? '{}') as {
    urls: string[];
    token: string;
    seconds: number;
    concurrency: number;
  };
  const lat: number[] = [];
  let errors = 0;
  let i = 0;
  const end = Date.now() + o.seconds * 1000;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: o.concurrency }, async () => {
      while (Date.now() < end) {
        const url = o.urls[i++ % o.urls.length] as string;
        const s = performance.now();
        const res = await fetch(url, { headers: { authorization: `Bearer ${o.token}` } });
        await res.arrayBuffer();
        lat.push(performance.now() - s);
        if (res.status !== 200) errors++;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  process.stdout.write(
    JSON.stringify({
      rps: lat.length / seconds,
      p50: percentile(lat, 50),
      p99: percentile(lat, 99),
      n: lat.length,
      errors,
    }) + '\n',
  );
}

void main();
