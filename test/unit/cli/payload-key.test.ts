/**
 * `interoperator payload-key derive --cluster ID`: the keys of a cluster's own worker, derived from
 * the master keys in INTEROP_PAYLOAD_KEYS and printed as that worker's INTEROP_PAYLOAD_KEYS; and
 * what it refuses.
 */
import { EXIT, runCli, type CliIo } from '../../../src/cli/program.js';
import { loadConfig } from '../../../src/config.js';
import { EncryptionCodec, parsePayloadKeys } from '../../../src/temporal/codec.js';
import { payloadConverter } from '../../../src/temporal/payload-converter.js';
import { forCluster } from '../../../src/workflows/for-cluster.js';

const MASTER = `k2:${Buffer.alloc(32, 2).toString('base64')},k1:${Buffer.alloc(32, 1).toString('base64')}`;

async function cli(argv: string[], payloadKeys?: string) {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    adminConfig: {},
    rendererConfig: {},
    ...(payloadKeys !== undefined ? { payloadKeys } : {}),
  };
  const status = await runCli(argv, io);
  return { status, stdout, stderr };
}

describe('payload-key derive', () => {
  test('GIVEN the master keys WHEN derived for cluster 2 THEN its keys, in order, which the worker of cluster 2 takes and decrypts its steps with', async () => {
    const { status, stdout } = await cli(['payload-key', 'derive', '--cluster', '2'], MASTER);
    expect(status).toBe(EXIT.ok);
    const derived = stdout.trim();
    expect(parsePayloadKeys(derived).map((k) => k.id)).toEqual(['k2@2', 'k1@2']);
    expect(derived.split(',')[1]).toBe('k1@2:ecx4xedKiChVFuzHxUq1EHzfd5IlF4DDYjq8iYdNjoo=');
    const worker = loadConfig('worker', { INTEROP_PAYLOAD_KEYS: derived, INTEROP_CLUSTER_ID: '2' });
    const landscape = new EncryptionCodec(parsePayloadKeys(MASTER));
    const step = await landscape.encode([payloadConverter.toPayload(forCluster('2', { a: 1 }))]);
    const [read] = await new EncryptionCodec(worker.temporal.payloadKeys).decode(step);
    expect(payloadConverter.fromPayload(read!)).toEqual({ a: 1 });
  });

  test.each([
    ['no INTEROP_PAYLOAD_KEYS', ['--cluster', '2'], undefined, /INTEROP_PAYLOAD_KEYS is not set/],
    ['no cluster', [], MASTER, /required option '--cluster <id>'/],
    ['keys that are not keys', ['--cluster', '2'], 'k1:short', /"k1" must be 32 bytes/],
    [
      'keys derived already',
      ['--cluster', '3'],
      `k1@2:${Buffer.alloc(32, 1).toString('base64')}`,
      /key "k1@2" is a key derived for cluster 2/,
    ],
  ])('GIVEN %s THEN a usage error saying why, and no key printed', async (_, args, keys, why) => {
    const { status, stdout, stderr } = await cli(['payload-key', 'derive', ...args], keys);
    expect(status).toBe(EXIT.usage);
    expect(stdout).toBe('');
    expect(stderr).toMatch(why);
  });
});
