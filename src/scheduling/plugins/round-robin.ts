/**
 * `round-robin`: the eligible clusters take turns in id order. The turn goes to the first
 * eligible cluster after the one chosen last (`SchedulingState.lastClusterId`), wrapping around;
 * without a last choice, to the first. Clusters joining or leaving do not reset the turns.
 */
import { compareKeys, idKey } from '../framework.js';
import type { Cycle, Plugin } from '../types.js';

export const NAME = 'round-robin';

interface Turns {
  /** Index (among the feasible, in id order) of the cluster whose turn it is. */
  readonly next: number;
  readonly count: number;
  readonly index: ReadonlyMap<string, number>;
}

const turns = (cycle: Cycle) => cycle.data.get(NAME) as Turns;

export function roundRobin(): Plugin {
  return {
    name: NAME,
    preScore(cycle, feasible) {
      const last = cycle.state.lastClusterId;
      const lastKey = last === undefined ? undefined : idKey(last);
      const after = lastKey ? feasible.findIndex((c) => compareKeys(idKey(c.id), lastKey) > 0) : -1;
      cycle.data.set(NAME, {
        next: after < 0 ? 0 : after,
        count: feasible.length,
        index: new Map(feasible.map((c, i) => [c.id, i])),
      } satisfies Turns);
    },
    /** 100 for the cluster whose turn it is, then less for each turn further away. */
    score(cycle, cluster) {
      const { next, count, index } = turns(cycle);
      if (count === 1) return 100;
      const wait = (index.get(cluster.id)! - next + count) % count;
      return (100 * (count - 1 - wait)) / (count - 1);
    },
    explain(cycle, cluster) {
      const { next, count, index } = turns(cycle);
      const wait = (index.get(cluster.id)! - next + count) % count;
      if (wait !== 0) return `turn in ${wait}`;
      const last = cycle.state.lastClusterId;
      return last === undefined ? 'first turn' : `next turn after ${last}`;
    },
  };
}
