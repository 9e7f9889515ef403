import { migrationOf, type MigratingPlan } from '../../../src/resources/migration.js';

const plan = (
  migrate: unknown,
  actions: string[] = ['provision', 'status', 'x-backup', 'x-restore'],
): MigratingPlan =>
  ({
    spec: {
      name: 'small',
      templates: actions.map((action) => ({ action })),
      ...(migrate !== undefined ? { migrate } : {}),
    },
  }) as MigratingPlan;

describe('how a plan’s instances move', () => {
  test('GIVEN no migrate section THEN they never move: the broker does not guess', () => {
    expect(migrationOf(plan(undefined))).toEqual({
      refusal: 'plan small does not say how its instances move (its spec.migrate)',
    });
  });

  test('GIVEN movable false THEN the reason is told', () => {
    expect(migrationOf(plan({ movable: false, reason: 'local disks' }))).toEqual({
      refusal: 'plan small says its instances cannot move: local disks',
    });
    expect(migrationOf(plan({ movable: false }))).toEqual({
      refusal: 'plan small says its instances cannot move',
    });
  });

  test('GIVEN a backup and a restore among its custom actions THEN the move runs them; evacuation is opt-in', () => {
    expect(migrationOf(plan({ backup: 'x-backup', restore: 'x-restore' }))).toEqual({
      migration: { backup: 'x-backup', restore: 'x-restore', evacuate: false },
    });
    expect(migrationOf(plan({ evacuate: true }))).toEqual({ migration: { evacuate: true } });
  });

  test('GIVEN an action the plan does not have, or a restore without a backup THEN refused, saying which', () => {
    expect(migrationOf(plan({ backup: 'x-snapshot' }))).toEqual({
      refusal:
        'plan small names "x-snapshot" as its backup, which is none of its custom actions (x-backup, x-restore)',
    });
    expect(migrationOf(plan({ backup: 'provision' }))).toMatchObject({
      refusal: expect.stringContaining('"provision"'),
    });
    expect(migrationOf(plan({ restore: 'x-restore' }))).toEqual({
      refusal: 'plan small names a restore but no backup to restore from',
    });
  });
});
