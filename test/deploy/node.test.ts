/**
 * The deploy suite's node (dev/local/kube-node.ts) runs what a chart needs: a Deployment of an image
 * the harness made is scheduled by kube-scheduler, runs, passes its readiness probe and logs through
 * the apiserver; a ClusterIP Service in front of it answers from the host; and a pod reaches the
 * master apiserver through the `kubernetes` Service with its service-account token.
 */
import http from 'node:http';
import { AppsV1Api, type CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { importImageArchive } from '../../dev/local/kube-node.js';
import { clusterClientFromFile } from '../../src/kube/clients.js';
import { eventually, unique } from '../support/env.js';
import { busyboxImage, deployEnvironment, nodeTool } from '../support/node.js';
import { describeWithTool } from '../support/tools.js';

const IMAGE = 'localhost/interop/test-httpd:1';
const PAGE = 'served by a pod of the deploy suite\n';

/** GET over plain HTTP from the host; resolves with the status and body. */
function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { timeout: 3000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
  });
}

describeWithTool(nodeTool())('a real node on the master', () => {
  const env = deployEnvironment();
  const master = clusterClientFromFile(env.clusters[0]!.id, env.clusters[0]!.kubeconfigPath);
  const core: CoreV1Api = master.core;
  const apps = master.kubeConfig.makeApiClient(AppsV1Api);
  const namespace = unique('deploy-node');
  const labels = { app: 'web' };

  const podsOf = async (): Promise<V1Pod[]> =>
    (await core.listNamespacedPod({ namespace, labelSelector: 'app=web' })).items;

  beforeAll(async () => {
    // GIVEN an image of busybox httpd serving one file, imported into the node's containerd
    const archive = await busyboxImage({
      ref: IMAGE,
      applets: ['sh', 'httpd', 'wget', 'cat'],
      files: { '/www/index.html': PAGE },
      entrypoint: ['/bin/sh', '-c', 'echo "httpd on port 8080"; exec httpd -f -v -p 8080 -h /www'],
    });
    await importImageArchive(env.node!.containerdAddress, archive);
    await core.createNamespace({ body: { metadata: { name: namespace } } });
  });

  afterAll(async () => {
    await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  });

  test('a Deployment of two replicas is scheduled onto the node, runs and gets ready', async () => {
    // WHEN a Deployment with a readiness probe is created
    await apps.createNamespacedDeployment({
      namespace,
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 2,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              containers: [
                {
                  name: 'httpd',
                  image: IMAGE,
                  imagePullPolicy: 'Never',
                  ports: [{ containerPort: 8080 }],
                  readinessProbe: { httpGet: { path: '/index.html', port: 8080 }, periodSeconds: 1 },
                },
              ],
            },
          },
        },
      },
    });

    // THEN both replicas become ready, on the node, each with an address of the pods' range
    const ready = await eventually(
      'two ready replicas',
      async () => {
        const deployment = await apps.readNamespacedDeployment({ name: 'web', namespace });
        return deployment.status?.readyReplicas === 2 ? deployment : undefined;
      },
      60_000,
    );
    expect(ready.status?.availableReplicas).toBe(2);
    const pods = await podsOf();
    expect(pods).toHaveLength(2);
    for (const pod of pods) {
      expect(pod.spec?.nodeName).toBe(env.node!.name);
      expect(pod.status?.podIP).toMatch(/^10\.244\.0\.\d+$/);
    }
  });

  test('the pods log through the apiserver', async () => {
    const [pod] = await podsOf();
    const log = await core.readNamespacedPodLog({ name: pod!.metadata!.name!, namespace });
    expect(log).toContain('httpd on port 8080');
  });

  test('a ClusterIP Service in front of them answers from the host', async () => {
    const service = await core.createNamespacedService({
      namespace,
      body: {
        metadata: { name: 'web' },
        spec: { selector: labels, ports: [{ port: 80, targetPort: 8080 }] },
      },
    });
    const clusterIP = service.spec?.clusterIP;
    expect(clusterIP).toMatch(/^10\.96\./);

    // kube-proxy programs the Service once its endpoints are known
    const answer = await eventually('an answer from the Service', async () => {
      const response = await get(`http://${clusterIP}/index.html`).catch(() => undefined);
      return response?.status === 200 ? response : undefined;
    });
    expect(answer.body).toBe(PAGE);
  });

  test('a pod reaches the master apiserver through the kubernetes Service with its token', async () => {
    // GIVEN a pod that asks the apiserver, at the Service address its environment names, whether
    // it is ready and who it is (a SelfSubjectReview needs no permission beyond authentication)
    const review = JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
    const script = [
      'api="https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"',
      'echo "apiserver at $api"',
      'wget -q -O- --no-check-certificate "$api/readyz"; echo',
      'token=$(cat /var/run/secrets/kubernetes.io/serviceaccount/token)',
      `wget -q -O- --no-check-certificate --header "Authorization: Bearer $token" --header "Content-Type: application/json" --post-data '${review}' "$api/apis/authentication.k8s.io/v1/selfsubjectreviews"`,
    ].join('\n');
    await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'apiserver-probe' },
        spec: {
          restartPolicy: 'Never',
          containers: [
            { name: 'probe', image: IMAGE, imagePullPolicy: 'Never', command: ['/bin/sh', '-c', script] },
          ],
        },
      },
    });

    // WHEN it has run
    const phase = await eventually(
      'the probe pod to finish',
      async () => {
        const pod = await core.readNamespacedPod({ name: 'apiserver-probe', namespace });
        const current = pod.status?.phase;
        return current === 'Succeeded' || current === 'Failed' ? current : undefined;
      },
      60_000,
    );
    const log = await core.readNamespacedPodLog({ name: 'apiserver-probe', namespace });

    // THEN it reached the apiserver at 10.96.0.1:443, found it ready, and was known by its token
    expect({ phase, log }).toMatchObject({ phase: 'Succeeded' });
    expect(log).toContain('apiserver at https://10.96.0.1:443');
    expect(log).toContain('ok');
    expect(log).toMatch(new RegExp(`"username":\\s*"system:serviceaccount:${namespace}:default"`));
  });
});
