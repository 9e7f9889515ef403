#!/usr/bin/env node
/**
 * The service owner's command line.
 *
 *   interoperator template render TEMPLATE_FILE DATA_FILE [--type gotemplate|mustache] [--action NAME]
 *
 * renders one template over a JSON or YAML data file (top-level keys `instance`, `plan`,
 * `service`, `binding` and any source objects) exactly as the broker does, and prints the output
 * byte for byte on stdout. A failed render prints its error on stderr and exits 1; a wrong command
 * line prints the usage and exits 2.
 */
import { readFileSync } from 'node:fs';
import { loadRendererConfig } from '../config.js';
import type { TemplateAction, TemplateType } from '../resources/types.js';
import { closeRenderer, configureRenderer, parseDataFile, renderTemplate } from '../templates/index.js';

const USAGE = `usage: interoperator template render TEMPLATE_FILE DATA_FILE [--type gotemplate|mustache] [--action NAME]

Renders TEMPLATE_FILE over DATA_FILE as the inter-operator renders plan templates, and prints the
output on stdout; a failed render prints its error on stderr and exits 1.

  DATA_FILE        JSON or YAML object: instance, plan, service, binding and source objects by key
  --type TYPE      gotemplate (default) or mustache
  --action NAME    the action the template serves, as errors name it (default: provision)
  -h, --help       this help
`;

/** Exit statuses: 0 rendered, 1 the render failed, 2 the command line is wrong. */
const EXIT = { ok: 0, failed: 1, usage: 2 } as const;
type Exit = (typeof EXIT)[keyof typeof EXIT];

interface Command {
  readonly templateFile: string;
  readonly dataFile: string;
  readonly type: TemplateType;
  readonly action: string;
}

/** The render command, `--help`, or what is wrong with the command line. */
function parseArgs(argv: readonly string[]): Command | 'help' | { readonly error: string } {
  const positional: string[] = [];
  const options = new Map<string, string>();
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i]!;
    if (arg === '--help' || arg === '-h') return 'help';
    const option = /^--(type|action)(?:=(.*))?$/.exec(arg);
    if (option) {
      const value = option[2] ?? argv[++i];
      if (value === undefined || value === '') return { error: `--${option[1]} needs a value` };
      options.set(option[1]!, value);
    } else if (arg.startsWith('-') && arg !== '-') {
      return { error: `unknown option ${arg}` };
    } else {
      positional.push(arg);
    }
  }
  const [group, command, templateFile, dataFile, ...rest] = positional;
  if (group !== 'template' || command !== 'render') {
    return {
      error: positional.length ? `unknown command ${positional.slice(0, 2).join(' ')}` : 'no command',
    };
  }
  if (!templateFile || !dataFile || rest.length > 0)
    return { error: 'template render needs TEMPLATE_FILE DATA_FILE' };
  const type = options.get('type') ?? 'gotemplate';
  if (type !== 'gotemplate' && type !== 'mustache') return { error: '--type must be gotemplate or mustache' };
  return { templateFile, dataFile, type, action: options.get('action') ?? 'provision' };
}

function read(file: string, what: string): string {
  try {
    return readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read the ${what} ${file}: ${(err as Error).message}`);
  }
}

async function main(argv: readonly string[]): Promise<Exit> {
  const parsed = parseArgs(argv);
  if (parsed === 'help') {
    process.stdout.write(USAGE);
    return EXIT.ok;
  }
  if ('error' in parsed) {
    process.stderr.write(`interoperator: ${parsed.error}\n${USAGE}`);
    return EXIT.usage;
  }
  try {
    const { wasmFile } = loadRendererConfig();
    if (wasmFile) await configureRenderer({ wasmFile });
    const content = read(parsed.templateFile, 'template file');
    const data = parseDataFile(read(parsed.dataFile, 'data file'));
    // The action only names the template in errors; any name is fine here.
    const action = parsed.action as TemplateAction;
    process.stdout.write(await renderTemplate({ action, type: parsed.type, content }, action, data));
    return EXIT.ok;
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    return EXIT.failed;
  } finally {
    await closeRenderer();
  }
}

process.exitCode = await main(process.argv.slice(2));
