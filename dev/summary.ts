/**
 * What the dev stack prints once it is up: where each part listens, the credentials it made, and
 * a command to try for each (kubectl, curl, the Temporal CLI, our own command line). Pure, so that
 * a test can hold it to every credential and command a user needs.
 */

/** A Basic-auth user and password. */
export interface DevCredentials {
  readonly username: string;
  readonly password: string;
}

/** The running dev stack, as {@link devStackSummary} describes it. */
export interface DevStackFacts {
  readonly temporal: { readonly address: string; readonly namespace: string; readonly uiUrl?: string };
  /** The broker's codec endpoint, which the Web UI decodes payloads with. */
  readonly codec: { readonly port: number; readonly token: string };
  /** The namespace of the catalog and the cluster registry on the master. */
  readonly namespace: string;
  /** The master first, then the sisters. */
  readonly clusters: readonly { readonly id: string; readonly kubeconfigPath: string }[];
  /** `Kind/name` of each installed catalog object. */
  readonly catalog: readonly string[];
  /** The broker's URL: the OSB API under `/v2`, the admin API under `/admin`. */
  readonly brokerUrl: string;
  readonly osb: DevCredentials;
  readonly admin: DevCredentials;
  /** The state folder. */
  readonly workDir: string;
}

/**
 * The command line over the admin API as a shell line: the settings it reads (src/config.ts,
 * `loadAdminClientConfig`) exported, so that later commands in the same shell have them too, then
 * `args` run from the repository's build.
 */
export const adminCliLine = (brokerUrl: string, admin: DevCredentials, args: string): string =>
  `export INTEROP_ADMIN_URL=${brokerUrl} INTEROP_ADMIN_USERNAME=${admin.username} ` +
  `INTEROP_ADMIN_PASSWORD=${admin.password}; node dist/src/cli/main.js ${args}`;

/** The lines printed when the dev stack is up. */
export function devStackSummary(facts: DevStackFacts): string {
  const { temporal, codec, osb, admin, brokerUrl } = facts;
  const [master, ...sisters] = facts.clusters;
  const codecUrl = `http://127.0.0.1:${codec.port}`;
  return [
    '',
    'inter-operator dev stack is up',
    `  Temporal          ${temporal.address} (namespace ${temporal.namespace})`,
    `  Temporal Web UI   ${temporal.uiUrl ?? '(external server)'} (payloads decoded by the codec endpoint)`,
    `  codec endpoint    ${codecUrl} (Bearer ${codec.token}); temporal workflow show --codec-endpoint ${codecUrl} --codec-auth 'Bearer ${codec.token}' -w <id>`,
    `  master cluster    kubectl --kubeconfig ${master?.kubeconfigPath} get sfplans -n ${facts.namespace}`,
    ...sisters.map((s) => `  sister ${s.id.padEnd(10)} kubectl --kubeconfig ${s.kubeconfigPath} get ns`),
    `  catalog           ${facts.catalog.join(', ')}`,
    `  OSB broker        ${brokerUrl} (Basic auth ${osb.username} / ${osb.password})`,
    `  try               curl -u ${osb.username}:${osb.password} -H 'X-Broker-API-Version: 2.17' ${brokerUrl}/v2/catalog`,
    `  admin API         ${brokerUrl}/admin (Basic auth ${admin.username} / ${admin.password})`,
    `  command line      ${adminCliLine(brokerUrl, admin, 'instances list')}  # then: rollout status <plan-id>, --help`,
    `  state and logs    ${facts.workDir}`,
    '',
    'Ctrl-C stops everything.',
  ].join('\n');
}
