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
