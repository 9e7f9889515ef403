import { bindAdditionsRemoval, bindingsOwnPart } from '../../../src/resources/bind-additions.js';
import type { KubeObject } from '../../../src/resources/types.js';

const postgresql = (spec: Record<string, unknown>, extra: Partial<KubeObject> = {}): KubeObject => ({
  apiVersion: 'acid.zalan.do/v1',
  kind: 'postgresql',
  metadata: { name: 'sapcp-1', namespace: 'sf-1' },
  spec,
  ...extra,
});

describe('bindAdditionsRemoval', () => {
  const provisioned = postgresql({
    teamId: 'sapcp',
    users: { main: ['superuser', 'createdb'] },
    databases: { main: 'main' },
  });

  test("the login a bind added to the instance's object is taken out, nothing else", () => {
    const bound = postgresql({
      teamId: 'sapcp',
      users: { main: ['superuser', 'createdb'], b_1: ['superuser'] },
      databases: { main: 'main' },
    });
    expect(bindAdditionsRemoval(bound, provisioned)).toEqual({ spec: { users: { b_1: null } } });
  });

  test('keys the provision renders stay whatever value the bind gave them', () => {
    const bound = postgresql({ teamId: 'other', users: { main: ['login'] }, databases: { main: 'x' } });
    expect(bindAdditionsRemoval(bound, provisioned)).toBeUndefined();
  });

  test('a whole section only the bind renders goes, at any depth', () => {
    const bound = postgresql({
      teamId: 'sapcp',
      users: { main: ['superuser', 'createdb'] },
      databases: { main: 'main' },
      connectionPooler: { mode: 'session' },
    });
    expect(bindAdditionsRemoval(bound, provisioned)).toEqual({ spec: { connectionPooler: null } });
    const data = (d: Record<string, string>) =>
      ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: d }) as KubeObject;
    expect(bindAdditionsRemoval(data({ a: '1', b: '2' }), data({ a: '1' }))).toEqual({ data: { b: null } });
  });

  test('metadata, status and lists are never taken out', () => {
    const bound = postgresql(
      { teamId: 'sapcp', users: { main: ['superuser', 'createdb', 'extra'] }, databases: { main: 'main' } },
      {
        metadata: { name: 'sapcp-1', namespace: 'sf-1', annotations: { bound: 'yes' } },
        status: { phase: 'x' },
      } as Partial<KubeObject>,
    );
    expect(bindAdditionsRemoval(bound, provisioned)).toBeUndefined();
  });

  test('an object the provision does not render is not the instance’s: nothing to take out', () => {
    expect(bindAdditionsRemoval(postgresql({ users: { b_1: [] } }), undefined)).toBeUndefined();
  });

  test('a key the provision renders as a value and the bind as a map stays', () => {
    const bound = postgresql({ teamId: { nested: 'x' } });
    expect(bindAdditionsRemoval(bound, postgresql({ teamId: 'sapcp' }))).toBeUndefined();
  });

  test('a key named __proto__, as rendered JSON may hold, is taken out like any other and changes no prototype', () => {
    const bound = JSON.parse(
      '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"__proto__":{"polluted":"yes"},"kept":"1"}}',
    ) as KubeObject;
    const removal = bindAdditionsRemoval(bound, { ...bound, data: { kept: '1' } } as KubeObject);
    expect(JSON.stringify(removal)).toBe('{"data":{"__proto__":null}}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('bindingsOwnPart', () => {
  /** The postgresql as read, with `users`, as the design document's templates render it (status and all). */
  const read = (users: Record<string, string[]>): KubeObject => ({
    apiVersion: 'acid.zalan.do/v1',
    kind: 'postgresql',
    metadata: { name: 'sapcp-i', namespace: 'sf-i', resourceVersion: '42', uid: 'u', generation: 3 },
    spec: { teamId: 'sapcp', numberOfInstances: 1, users, postgresql: { version: '9.6' } },
    status: { PostgresClusterStatus: 'Running' },
  });

  test('GIVEN a bind that renders the whole object with its user added, and an unbind that renders it without THEN the bind owns its user alone', () => {
    const bound = read({ main: ['superuser'], a: ['superuser'], b: ['superuser'] });
    const unbound = read({ main: ['superuser'], a: ['superuser'] });
    expect(bindingsOwnPart(bound, unbound)).toEqual({
      apiVersion: 'acid.zalan.do/v1',
      kind: 'postgresql',
      metadata: { name: 'sapcp-i', namespace: 'sf-i', resourceVersion: '42' },
      spec: { users: { b: ['superuser'] } },
    });
  });

  test('GIVEN that unbind and bind THEN the unbind owns nothing: the user it leaves out goes', () => {
    const bound = read({ main: ['superuser'], b: ['superuser'] });
    const unbound = read({ main: ['superuser'] });
    expect(bindingsOwnPart(unbound, bound)).toEqual({
      apiVersion: 'acid.zalan.do/v1',
      kind: 'postgresql',
      metadata: { name: 'sapcp-i', namespace: 'sf-i', resourceVersion: '42' },
    });
  });

  test('GIVEN a value the bind renders otherwise than the unbind (a list whole) THEN the bind owns it', () => {
    const bound = read({ main: ['superuser', 'createdb'] });
    const unbound = read({ main: ['superuser'] });
    expect(bindingsOwnPart(bound, unbound).spec).toEqual({ users: { main: ['superuser', 'createdb'] } });
  });

  test('GIVEN a bind that renders its user alone and an unbind that renders the name alone THEN the bind owns all it renders', () => {
    const bound: KubeObject = {
      apiVersion: 'acid.zalan.do/v1',
      kind: 'postgresql',
      metadata: { name: 'mpg-i' },
      spec: { users: { b: ['superuser'] } },
    };
    const unbound: KubeObject = {
      apiVersion: 'acid.zalan.do/v1',
      kind: 'postgresql',
      metadata: { name: 'mpg-i' },
    };
    expect(bindingsOwnPart(bound, unbound)).toEqual(bound);
    expect(bindingsOwnPart(bound, undefined)).toBe(bound);
  });

  test('GIVEN keys such as __proto__ THEN they stay plain data', () => {
    const bound = JSON.parse(
      '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"__proto__":{"x":"1"}}}',
    ) as KubeObject;
    const unbound = JSON.parse(
      '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{}}',
    ) as KubeObject;
    const own = bindingsOwnPart(bound, unbound) as unknown as { data: Record<string, unknown> };
    expect(Object.hasOwn(own.data, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });
});
