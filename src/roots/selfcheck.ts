/**
 * `main.js selfcheck`: checks, without any server, that a build (an image, a dist/ folder) holds
 * what the processes load: both workflow bundles compile, and the WebAssembly renderers render a
 * gotemplate and a helm template (with a small chart made here). Returns what it checked, one line
 * each; throws on the first failure.
 */
import { readFileSync } from 'node:fs';
import { Script } from 'node:vm';
import { gzipSync } from 'node:zlib';
import { closeRenderer, renderObjects } from '../templates/index.js';
import { workflowBundle } from './workflow-bundle.js';

/** What the templates of the check render over. */
const DATA = { instance: { metadata: { name: 'selfcheck', namespace: 'default' }, spec: { size: 2 } } };

/** The check's chart: one ConfigMap naming its release and the size from the values. */
const CHART: Readonly<Record<string, string>> = {
  'selfcheck/Chart.yaml': 'apiVersion: v2\nname: selfcheck\nversion: 0.1.0\n',
  'selfcheck/values.yaml': 'size: 1\n',
  'selfcheck/templates/configmap.yaml':
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  size: {{ .Values.size | quote }}\n',
};

export async function selfCheck(): Promise<string[]> {
  const checked: string[] = [];
  for (const traced of [false, true]) {
    const { codePath } = workflowBundle(traced);
    // Compiled, not run: running the workflow code is the Temporal worker's business.
    new Script(readFileSync(codePath, 'utf8'), { filename: codePath });
    checked.push(`workflow bundle compiles: ${codePath}`);
  }
  try {
    const [secret] = await renderObjects(
      {
        action: 'provision',
        type: 'gotemplate',
        content:
          'apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .instance.metadata.name }}\nstringData:\n  size: {{ .instance.spec.size | quote }}\n',
      },
      'provision',
      DATA,
    );
    expectObject(secret, 'Secret', 'selfcheck', 'gotemplate');
    checked.push('gotemplate renders (WebAssembly)');
    const [configMap] = await renderObjects(
      { action: 'provision', type: 'helm', content: 'size: {{ .instance.spec.size }}\n' },
      'provision',
      DATA,
      { chart: tarGz(CHART) },
    );
    expectObject(configMap, 'ConfigMap', undefined, 'helm');
    if ((configMap as { data?: { size?: string } }).data?.size !== '2')
      throw new Error(`the helm render did not take its values: ${JSON.stringify(configMap)}`);
    checked.push('helm renders (WebAssembly)');
  } finally {
    await closeRenderer();
  }
  return checked;
}

function expectObject(object: unknown, kind: string, name: string | undefined, engine: string): void {
  const o = object as { kind?: string; metadata?: { name?: string } } | undefined;
  if (o?.kind !== kind || (name !== undefined && o.metadata?.name !== name))
    throw new Error(`the ${engine} render gave ${JSON.stringify(object)}, not the ${kind} expected`);
}

/** A gzipped tar (ustar) of the given text files, as `helm package` writes a chart. */
export function tarGz(files: Readonly<Record<string, string>>): Buffer {
  const blocks: Buffer[] = [];
  const octal = (n: number, width: number) => `${n.toString(8).padStart(width - 1, '0')}\0`;
  for (const [name, text] of Object.entries(files)) {
    const body = Buffer.from(text);
    const header = Buffer.alloc(512);
    header.write(name, 0, 100);
    header.write(octal(0o644, 8), 100);
    header.write(octal(0, 8), 108);
    header.write(octal(0, 8), 116);
    header.write(octal(body.length, 12), 124);
    header.write(octal(0, 12), 136);
    header.write(' '.repeat(8), 148);
    header.write('0', 156);
    header.write('ustar\0' + '00', 257);
    const sum = header.reduce((total, byte) => total + byte, 0);
    header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
    blocks.push(header, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(blocks));
}
