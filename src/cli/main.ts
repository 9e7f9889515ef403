#!/usr/bin/env node
/**
 * The `interoperator` command line (program.ts): the service owner's `template render`, and the
 * operator's commands over the admin API. `interoperator --help` lists them.
 */
import { loadAdminClientConfig, loadRendererConfig } from '../config.js';
import { runCli } from './program.js';

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  adminConfig: loadAdminClientConfig(),
  rendererConfig: loadRendererConfig(),
});
