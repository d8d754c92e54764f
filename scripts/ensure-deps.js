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

// `npm test` drives the operators' console in a headless Chromium (test/console.e2e.test.ts):
// Debian's package, installed here when missing and we may (root with apt-get); CHROMIUM_PATH
// points at another browser.
if (
  process.env.npm_lifecycle_event === 'pretest' &&
  !process.env.CHROMIUM_PATH &&
  !fs.existsSync('/usr/bin/chromium')
) {
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  const apt = fs.existsSync('/usr/bin/apt-get');
  if (root && apt) {
    process.stderr.write('[deps] installing Chromium for the console tests (apt-get install chromium)\n');
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    try {
      execSync('apt-get install -y -q chromium || (apt-get update -q && apt-get install -y -q chromium)', {
        stdio: 'inherit',
        env,
        shell: '/bin/sh',
      });
    } catch {
      // the other tiers still run; the console test says what is missing
      process.stderr.write('[deps] could not install Chromium: the console tests will fail\n');
    }
  } else {
    process.stderr.write(
      '[deps] no Chromium at /usr/bin/chromium: the console tests will fail (apt-get install chromium, or set CHROMIUM_PATH)\n',
    );
  }
}
