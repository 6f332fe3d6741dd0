#!/usr/bin/env node
import { fileURLToPath } from 'node:url';
import { run } from '../dist/src/cli/main.js';

await run({ root: fileURLToPath(new URL('..', import.meta.url)) });
