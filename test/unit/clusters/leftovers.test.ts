import { isLeftover } from '../../../src/clusters/leftovers.js';

describe('what a returning cluster still holds of instances placed elsewhere', () => {
  test('GIVEN no master record THEN its copy is left over', () => {
    expect(isLeftover('lost', undefined)).toBe(true);
  });

  test('GIVEN a record naming another cluster THEN left over, unless a move of the instance is in flight', () => {
    expect(isLeftover('lost', { spec: { clusterId: '1' } })).toBe(true);
    const moving = {
      spec: { clusterId: '1' },
      status: { lastAction: { operation: 'move', state: 'in progress' } },
    };
    expect(isLeftover('lost', moving)).toBe(false);
    const moved = {
      spec: { clusterId: '1' },
      status: { lastAction: { operation: 'move', state: 'succeeded' } },
    };
    expect(isLeftover('lost', moved)).toBe(true);
  });

  test('GIVEN a record naming this cluster, or none yet THEN it is not', () => {
    expect(isLeftover('lost', { spec: { clusterId: 'lost' } })).toBe(false);
    expect(isLeftover('lost', { spec: {} })).toBe(false);
  });
});
