import {
  asRecorded,
  isRolloutUpdate,
  rolloutRequestHash,
  type InstanceRequest,
} from '../../../src/workflows/messages.js';

const rollout: InstanceRequest = {
  instanceId: 'i-1',
  serviceId: 'svc',
  planId: 'plan-a',
  organizationGuid: 'org',
  spaceGuid: 'space',
  context: { platform: 'cloudfoundry', instance_name: 'old-name' },
  parameters: { size: 'small' },
  maintenanceInfo: { version: '2.0.0' },
  previousValues: { serviceId: 'svc', planId: 'plan-a' },
  requestHash: rolloutRequestHash('rev-2'),
  deadlineSeconds: 600,
  requestedBy: { platform: 'interoperator', identity: { rollout: 'rev-2' } },
};

describe('rollout update requests', () => {
  it('are told from a platform’s by their request hash', () => {
    expect(isRolloutUpdate(rollout)).toBe(true);
    expect(isRolloutUpdate({ requestHash: 'a3f9c2' })).toBe(false);
    expect(isRolloutUpdate({ requestHash: '' })).toBe(false);
  });

  it('take the plan, parameters and context the record holds when the update starts', () => {
    const recorded: InstanceRequest = {
      instanceId: 'i-1',
      serviceId: 'svc',
      planId: 'plan-b',
      organizationGuid: 'org',
      spaceGuid: 'space',
      context: { platform: 'cloudfoundry', instance_name: 'renamed' },
      parameters: { size: 'large' },
      maintenanceInfo: { version: '1.0.0' },
      requestHash: 'platform-digest',
      deadlineSeconds: 30,
    };
    expect(asRecorded(rollout, recorded)).toEqual({
      instanceId: 'i-1',
      serviceId: 'svc',
      planId: 'plan-b',
      organizationGuid: 'org',
      spaceGuid: 'space',
      context: { platform: 'cloudfoundry', instance_name: 'renamed' },
      parameters: { size: 'large' },
      // The record's digest: what a platform's repeat of its request is compared with stays its own.
      requestHash: 'platform-digest',
      // The rollout's own: the plan's maintenance info, the rest of its envelope, who asked.
      maintenanceInfo: { version: '2.0.0' },
      previousValues: { serviceId: 'svc', planId: 'plan-b' },
      deadlineSeconds: 600,
      requestedBy: { platform: 'interoperator', identity: { rollout: 'rev-2' } },
    });
  });

  it('drop parameters the record no longer holds', () => {
    const recorded: InstanceRequest = {
      instanceId: 'i-1',
      serviceId: 'svc',
      planId: 'plan-a',
      requestHash: 'platform-digest',
      deadlineSeconds: 30,
    };
    const request = asRecorded(rollout, recorded);
    expect(request).not.toHaveProperty('parameters');
    expect(request).not.toHaveProperty('context');
    expect(request).not.toHaveProperty('organizationGuid');
    expect(request.requestHash).toBe('platform-digest');
  });

  it('keep the rollout’s digest when the record has none', () => {
    const recorded: InstanceRequest = {
      instanceId: 'i-1',
      serviceId: 'svc',
      planId: 'plan-a',
      requestHash: '',
      deadlineSeconds: 30,
    };
    expect(asRecorded(rollout, recorded).requestHash).toBe(rolloutRequestHash('rev-2'));
  });
});
