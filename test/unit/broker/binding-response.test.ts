/** A binding's response with the times its record keeps from its plan's bindingLifetime. Pure. */
import { withRecordedTimes } from '../../../src/broker/records.js';
import type { BindingResponse } from '../../../src/osb/service-broker.js';
import type { SFServiceBinding } from '../../../src/resources/types.js';

const record = (times: { expiresAt?: string; renewBefore?: string } = {}): SFServiceBinding => ({
  apiVersion: 'osb.servicefabrik.io/v1alpha1',
  kind: 'SFServiceBinding',
  metadata: { name: 'b-1', namespace: 'sf-i-1' },
  spec: { id: 'b-1', instanceId: 'i-1', serviceId: 's-1', planId: 'p-1', ...times },
});
const EXPIRES = '2026-12-24T21:00:00.250Z';
const RENEW = '2026-12-17T21:00:00.250Z';
const credentials = { username: 'u', password: 'p' };

describe('withRecordedTimes', () => {
  test.each<[string, BindingResponse, SFServiceBinding, BindingResponse]>([
    [
      'a record with both times, a template without metadata',
      { credentials },
      record({ expiresAt: EXPIRES, renewBefore: RENEW }),
      { credentials, metadata: { expires_at: EXPIRES, renew_before: RENEW } },
    ],
    [
      'a record with both times, a template with its own (the record wins, other metadata stays)',
      {
        credentials,
        metadata: {
          expires_at: '2030-01-01T00:00:00Z',
          renew_before: '2029-01-01T00:00:00Z',
          tier: 'a',
        } as never,
      },
      record({ expiresAt: EXPIRES, renewBefore: RENEW }),
      { credentials, metadata: { tier: 'a', expires_at: EXPIRES, renew_before: RENEW } as never },
    ],
    [
      'a record with an expiry alone, a template with a renew_before (dropped: it may be past the expiry)',
      { credentials, metadata: { renew_before: '2031-01-01T00:00:00Z' } },
      record({ expiresAt: EXPIRES }),
      { credentials, metadata: { expires_at: EXPIRES } },
    ],
    [
      'a record without times (a plan without bindingLifetime): the template’s metadata as it is',
      { credentials, metadata: { expires_at: '2030-01-01T00:00:00Z' } },
      record(),
      { credentials, metadata: { expires_at: '2030-01-01T00:00:00Z' } },
    ],
    ['a record without times, an empty response', {}, record(), {}],
    [
      'a record with times and no response Secret (yet)',
      {},
      record({ expiresAt: EXPIRES, renewBefore: RENEW }),
      { metadata: { expires_at: EXPIRES, renew_before: RENEW } },
    ],
  ])('GIVEN %s THEN the response', (_n, response, binding, expected) => {
    expect(withRecordedTimes(response, binding.spec)).toEqual(expected);
  });
});
