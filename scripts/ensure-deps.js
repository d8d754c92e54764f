#!/usr/bin/env node
// Runs before `npm start` and `npm test`: installs the locked npm dependencies when they are
// missing or older than package-lock.json, so both quick-start commands work on a fresh clone.
const { execSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const marker = path.join(root, 'node_modules', '.package-lock.json');
const lock = path.join(root, 'package-lock.json');
const stale = !fs.existsSync(marker) || fs.statSync(marker).mtimeMs < fs.statSync(lock).mtimeMs;
if (stale) {
  process.stderr.write('[deps] installing npm dependencies (npm ci)\n');
  execSync('npm ci --no-audit --no-fund', { cwd: root, stdio: 'inherit' });
}

// `npm test` needs two Debian packages besides Node: Chromium drives the operators' console
// (test/console.e2e.test.ts; CHROMIUM_PATH points at another browser) and promtool, from the
// prometheus package, checks and unit-tests the alert rules (ops/ops-kit.unit.test.ts). Each is
// installed here when missing and we may (root with apt-get).
const DEBIAN_TOOLS = [
  {
    binary: '/usr/bin/chromium',
    pkg: 'chromium',
    flags: '',
    use: 'the console tests',
    skip: !!process.env.CHROMIUM_PATH,
  },
  {
    binary: '/usr/bin/promtool',
    pkg: 'prometheus',
    flags: '--no-install-recommends',
    use: 'the alert rule tests',
    skip: false,
  },
];
if (process.env.npm_lifecycle_event === 'pretest') {
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  const apt = fs.existsSync('/usr/bin/apt-get');
  for (const t of DEBIAN_TOOLS) {
    if (t.skip || fs.existsSync(t.binary)) continue;
    if (!root || !apt) {
      process.stderr.write(`[deps] no ${t.binary}: ${t.use} will fail (apt-get install ${t.pkg})\n`);
      continue;
    }
    process.stderr.write(`[deps] installing ${t.pkg} for ${t.use} (apt-get install ${t.pkg})\n`);
    const install = `apt-get install -y -q ${t.flags} ${t.pkg}`;
    try {
      execSync(`${install} || (apt-get update -q && ${install})`, {
        stdio: 'inherit',
        env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
        shell: '/bin/sh',
      });
    } catch {
      // the other tiers still run; the tests that need it say what is missing
      process.stderr.write(`[deps] could not install ${t.pkg}: ${t.use} will fail\n`);
    }
  }
}
