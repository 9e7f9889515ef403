/**
 * `label-selector`: only clusters whose labels match the instance's cluster selector (the plan's
 * `clusterSelector` template, rendered). A blank or absent selector matches every cluster.
 */
import {
  formatLabelSelector,
  parseLabelSelector,
  selectorMismatch,
  type LabelSelector,
} from '../label-selector.js';
import { invalid, SUCCESS, unschedulable, type Cycle, type Plugin } from '../types.js';

export const NAME = 'label-selector';

const selector = (cycle: Cycle) => cycle.data.get(NAME) as LabelSelector;

export function labelSelector(): Plugin {
  return {
    name: NAME,
    preFilter(cycle) {
      try {
        cycle.data.set(NAME, parseLabelSelector(cycle.request.clusterSelector ?? ''));
        return SUCCESS;
      } catch (err) {
        return invalid(`clusterSelector: ${err instanceof Error ? err.message : String(err)}`);
      }
    },
    filter(cycle, cluster) {
      const why = selectorMismatch(selector(cycle), cluster.labels);
      return why ? unschedulable(why) : SUCCESS;
    },
    explain(cycle) {
      const parsed = selector(cycle);
      return parsed.length > 0 ? `matches ${formatLabelSelector(parsed)}` : undefined;
    },
  };
}
