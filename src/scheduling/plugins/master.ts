/** `master`: only the master cluster; the `default` scheduler, for a landscape of one cluster. */
import { MASTER_CLUSTER_ID } from '../../resources/types.js';
import { SUCCESS, unschedulable, type Plugin } from '../types.js';

export const NAME = 'master';

export interface MasterArgs {
  /** The master cluster's id. @default MASTER_CLUSTER_ID ('1') */
  readonly masterClusterId?: string;
}

export function master({ masterClusterId = MASTER_CLUSTER_ID }: MasterArgs = {}): Plugin {
  return {
    name: NAME,
    filter: (_cycle, cluster) =>
      cluster.id === masterClusterId ? SUCCESS : unschedulable(`not the master (${masterClusterId})`),
    explain: () => 'the master',
  };
}
