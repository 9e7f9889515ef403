import {
  KEEP_ON_OFFBOARDING_ANNOTATION,
  keptOnOffboarding,
  kubeconfigSecretToDelete,
} from '../../../src/clusters/offboarding.js';

const cluster = (name: string, secretRef?: string) => ({
  metadata: { name },
  spec: secretRef ? { secretRef } : {},
});

describe('the kubeconfig Secret an offboarded cluster takes with it', () => {
  test.each([
    [
      'its own Secret',
      cluster('2', 'cluster-2-kubeconfig'),
      [cluster('1'), cluster('3', 'cluster-3-kubeconfig')],
      'cluster-2-kubeconfig',
    ],
    ['itself among the registered', cluster('2', 's'), [cluster('2', 's')], 's'],
    [
      'a Secret another cluster names too',
      cluster('2', 'shared'),
      [cluster('2', 'shared'), cluster('3', 'shared')],
      undefined,
    ],
    [
      'no Secret (a worker of its own reaches it)',
      cluster('2'),
      [cluster('3', 'cluster-3-kubeconfig')],
      undefined,
    ],
  ])('%s', (_, leaving, registered, expected) => {
    expect(kubeconfigSecretToDelete(leaving, registered)).toBe(expected);
  });

  test('a Secret annotated to be kept is kept; any other value of the annotation keeps nothing', () => {
    expect(keptOnOffboarding({ [KEEP_ON_OFFBOARDING_ANNOTATION]: 'true' })).toBe(true);
    expect(keptOnOffboarding({ [KEEP_ON_OFFBOARDING_ANNOTATION]: 'yes' })).toBe(false);
    expect(keptOnOffboarding(undefined)).toBe(false);
  });
});
