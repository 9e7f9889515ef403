/** `master`: only the master cluster; the `default` scheduler, for a landscape of one cluster. */
import { MASTER_CLUSTER_ID } from '../../resources/types.js';
import { SUCCESS, unschedulable, type Plugin, type PluginOptions } from '../types.js';

export const NAME = 'master';

export function master({ masterClusterId = MASTER_CLUSTER_ID }: PluginOptions = {}): Plugin {
  return {
    name: NAME,
    filter: (_cycle, cluster) =>
      cluster.id === masterClusterId ? SUCCESS : unschedulable(`not the master (${masterClusterId})`),
    explain: () => 'the master',
  };
}
