/**
 * `schedulable`: the filter every scheduler runs first. Only running clusters that are not
 * cordoned, have our CRDs and whose record can be read take new instances.
 */
import { invalid, SUCCESS, unschedulable, type Plugin, type PluginOptions } from '../types.js';

export const NAME = 'schedulable';

export function schedulable({ acceptPending = false }: PluginOptions = {}): Plugin {
  return {
    name: NAME,
    filter(_cycle, cluster) {
      if (cluster.problem) return invalid(cluster.problem);
      switch (cluster.phase) {
        case 'terminated':
          return unschedulable('terminated');
        case 'offline':
          return unschedulable('offline');
        case 'pending':
          if (!acceptPending) return unschedulable('not probed yet');
          break;
      }
      if (cluster.schedulingDisabled) return unschedulable('cordoned');
      // Why is on its SFCluster's CrdsInstalled condition; the placement summary stays one line.
      if (cluster.withoutCrds) return unschedulable('our CRDs are not installed');
      return SUCCESS;
    },
  };
}
