/** `least-utilized`: the fewer instances a cluster holds, the higher it scores. */
import type { Plugin } from '../types.js';

export const NAME = 'least-utilized';

export function leastUtilized(): Plugin {
  return {
    name: NAME,
    score: (_cycle, cluster) => cluster.instances,
    /** Fewest instances score 100, most score 0, linearly between; all alike score 100. */
    normalizeScores(_cycle, counts) {
      let min = Infinity;
      let max = -Infinity;
      for (const n of counts) {
        if (n < min) min = n;
        if (n > max) max = n;
      }
      return counts.map((n) => (max === min ? 100 : (100 * (max - n)) / (max - min)));
    },
    explain: (_cycle, cluster) => `${cluster.instances} instance${cluster.instances === 1 ? '' : 's'}`,
  };
}
