#!/usr/bin/env node
// Builds the colony package @feromonios/sdk into sdk/dist (docs/adr/0008-sdk-package-and-layout.md):
// CommonJS + .d.ts from tsc, an ESM wrapper (.mjs + .d.mts) per entry point naming the same
// exports, and the event schemas copied in, where the catalog finds them relative to itself.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const sdk = path.join(root, 'sdk');
const dist = path.join(sdk, 'dist');
const started = Date.now();

fs.rmSync(dist, { recursive: true, force: true });
execFileSync(
  process.execPath,
  [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', path.join(sdk, 'tsconfig.build.json')],
  {
    stdio: 'inherit',
  },
);
fs.cpSync(path.join(root, 'schemas'), path.join(dist, 'schemas'), { recursive: true });

const require = createRequire(import.meta.url);
const entries = Object.entries(JSON.parse(fs.readFileSync(path.join(sdk, 'package.json'), 'utf8')).exports).filter(
  ([, target]) => typeof target === 'object',
);
for (const [name, target] of entries) {
  const cjs = path.join(sdk, target.require.default);
  const names = Object.keys(require(cjs)).filter((n) => n !== '__esModule' && n !== 'default');
  const base = `./${path.basename(cjs)}`;
  fs.writeFileSync(
    path.join(sdk, target.import.default),
    `// ESM entry of @feromonios/sdk${name.slice(1)}: the CommonJS build, under the same names.\n` +
      `import cjs from '${base}';\n\nexport const {\n${names.map((n) => `  ${n},`).join('\n')}\n} = cjs;\n`,
  );
  fs.writeFileSync(path.join(sdk, target.import.types), `export * from '${base}';\n`);
}
const count = (dir) =>
  fs
    .readdirSync(dir, { withFileTypes: true })
    .reduce((n, e) => n + (e.isDirectory() ? count(path.join(dir, e.name)) : 1), 0);
console.error(`@feromonios/sdk built in ${Date.now() - started} ms: ${count(dist)} files in sdk/dist`);
