#!/usr/bin/env node
/**
 * The service owner's command: `interoperator template render TEMPLATE_FILE DATA_FILE
 * [--type gotemplate|mustache] [--action NAME]`. Renders one template over a JSON or YAML data file
 * (top-level keys `instance`, `plan`, `service`, `binding` and any source objects) and prints the
 * output byte for byte; on error prints it on stderr and exits 1.
 */
import { readFileSync } from 'node:fs';
import { TEMPLATE_ACTIONS, type TemplateAction, type TemplateType } from '../resources/types.js';
import { closeRenderer, parseDataFile, renderTemplate } from '../templates/index.js';

const USAGE = `usage: interoperator template render TEMPLATE_FILE DATA_FILE [--type gotemplate|mustache] [--action ${TEMPLATE_ACTIONS.join('|')}]`;

async function main(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const option = (name: string) => {
    const i = argv.indexOf(name);
    if (i < 0) return undefined;
    const value = argv[i + 1];
    argv.splice(i, 2);
    return value;
  };
  const type = (option('--type') ?? 'gotemplate') as TemplateType;
  const action = (option('--action') ?? 'provision') as TemplateAction;
  const [group, command, templateFile, dataFile, ...rest] = argv;
  if (group !== 'template' || command !== 'render' || !templateFile || !dataFile || rest.length > 0) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  if (type !== 'gotemplate' && type !== 'mustache') {
    process.stderr.write(`--type must be gotemplate or mustache\n${USAGE}\n`);
    return 2;
  }
  try {
    const content = readFileSync(templateFile, 'utf8');
    const data = parseDataFile(readFileSync(dataFile, 'utf8'));
    if (!data || typeof data !== 'object' || Array.isArray(data))
      throw new Error('the data file must hold an object');
    const output = await renderTemplate({ action, type, content }, action, data as Record<string, unknown>);
    process.stdout.write(output);
    return 0;
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  } finally {
    await closeRenderer();
  }
}

process.exitCode = await main(process.argv.slice(2));
