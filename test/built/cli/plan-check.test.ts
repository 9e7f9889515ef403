/**
 * `interoperator plan check`, run as built (dist/src/cli/main.js): a good plan exits 0, a bad one
 * exits 1 with a line a finding, an unreadable file exits 2.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

describe('interoperator plan check', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'plan-check-cli-'));
  const cli = (...args: string[]) =>
    spawnSync(process.execPath, ['dist/src/cli/main.js', 'plan', 'check', ...args], {
      encoding: 'utf8',
      timeout: 60_000,
    });

  test('GIVEN the certificates example and its service WHEN checked THEN exit 0 and the summary says no error', () => {
    const res = cli('-f', 'examples/certificates/sfplan.yaml', '-f', 'examples/certificates/sfservice.yaml');
    expect([res.status, res.stderr]).toEqual([0, '']);
    expect(res.stdout.trimEnd().split('\n').pop()).toMatch(
      /^plan private-ca \(5b0f7c2e-2d8a-4e61-9a3f-0c6b1e2d4a11\): 0 errors, \d+ warnings?$/,
    );
  });

  const bad = path.join(dir, 'bad.yaml');
  writeFileSync(
    bad,
    [
      'apiVersion: osb.servicefabrik.io/v1alpha1',
      'kind: SFPlan',
      'metadata: {name: p-1}',
      'spec:',
      '  id: p-1',
      '  name: bad',
      '  serviceId: s-1',
      '  description: a plan with mistakes',
      '  templates:',
      '    - {action: provision, type: gotemplate, content: "kind: {{ .instance "}',
      '    - {action: status, type: gotemplate, content: "provision: {state: Running}"}',
      '',
    ].join('\n'),
  );

  test('GIVEN a plan with mistakes WHEN checked THEN exit 1, a line a finding and the summary', () => {
    const res = cli('-f', bad);
    const lines = res.stdout.trimEnd().split('\n');
    expect(res.status).toBe(1);
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^error: provision: does not render over the sample instance/),
        expect.stringMatching(/^error: status: the provision section .* says state "Running"/),
      ]),
    );
    expect(lines.pop()).toMatch(/^plan bad \(p-1\): [1-9]\d* errors?, \d+ warnings?$/);
  });

  test('GIVEN -o json WHEN checked THEN the findings as JSON', () => {
    const res = cli('-f', bad, '-o', 'json');
    const report = JSON.parse(res.stdout) as { name: string; errors: number; findings: unknown[] };
    expect(res.status).toBe(1);
    expect(report).toMatchObject({ name: 'bad', id: 'p-1' });
    expect(report.findings).toContainEqual({
      severity: 'error',
      action: 'status',
      message: expect.stringMatching(/says state "Running"/) as string,
    });
  });

  test('GIVEN a file that cannot be read WHEN checked THEN exit 2 with why', () => {
    const res = cli('-f', path.join(dir, 'missing.yaml'));
    expect(res.status).toBe(2);
    expect(res.stderr).toMatch(/cannot read the file .*missing\.yaml/);
  });
});
