#!/usr/bin/env node
// The `feromonios` command (docs/cli.md). It ships with the platform repository and image, next
// to the bridge and the audit API, and runs from its TypeScript sources like they do.
require('tsx/cjs');
require('../main.ts');
