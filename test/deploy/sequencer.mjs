/**
 * The deploy suite's order: the chart's test first, since it checks that `helm install` creates the
 * chart's CRDs on a master that has none (test/deploy/global-setup.mjs installs none); the other
 * files, which run the broker themselves, install them where they are missing. Then by path.
 */
import Sequencer from '@jest/test-sequencer';

const FIRST = '/test/deploy/chart.test.ts';

const Base = Sequencer.default ?? Sequencer;

export default class DeploySequencer extends Base {
  sort(tests) {
    const rank = (test) => (test.path.endsWith(FIRST) ? 0 : 1);
    return [...tests].sort((a, b) => rank(a) - rank(b) || a.path.localeCompare(b.path));
  }
}
