/**
 * Where a benchmark's CPU goes: the CPU time (user + system, from /proc) of this process and of
 * every process it started, grouped by role (Temporal, kube-apiserver, etcd, the worker, ...).
 * Throughput on a shared 2-core machine swings from run to run; CPU time per operation is the
 * steadier figure, and it says which part of the system an operation costs.
 */
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';

/** CPU seconds by role. */
export type CpuByRole = Record<string, number>;

/** Roles by command line, first match wins; anything else started by this process is `other`. */
const ROLES: readonly (readonly [string, RegExp])[] = [
  ['temporal', /\btemporal\b.*\bserver\b/],
  ['kube-apiserver', /kube-apiserver/],
  ['kube-controller-manager', /kube-controller-manager/],
  ['etcd', /\betcd\b/],
  ['worker', /main\.js worker/],
  ['broker', /main\.js broker/],
  ['floor', /floor-server\.js/],
  ['load', /read-load\.js/],
];

const TICKS_PER_SECOND = 100;

interface ProcessInfo {
  readonly pid: number;
  readonly ppid: number;
  readonly ticks: number;
  readonly command: string;
}

function readProcess(pid: number): ProcessInfo | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command, which may hold spaces: state ppid ... utime(14) stime(15).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
    return { pid, ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]), command };
  } catch {
    return undefined; // gone meanwhile
  }
}

/** CPU seconds so far of one process (0 when it is gone). */
export function cpuOfProcess(pid: number): number {
  return (readProcess(pid)?.ticks ?? 0) / TICKS_PER_SECOND;
}

/**
 * CPU seconds so far of this process (role `bench`) and its descendants, by role. Processes that
 * ended are not counted: sample around a phase in which the servers keep running.
 */
export function cpuByRole(): CpuByRole {
  if (os.platform() !== 'linux') return {};
  const all = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map((name) => readProcess(Number(name)))
    .filter((p): p is ProcessInfo => p !== undefined);
  const children = new Map<number, ProcessInfo[]>();
  for (const p of all) {
    const siblings = children.get(p.ppid);
    if (siblings) siblings.push(p);
    else children.set(p.ppid, [p]);
  }
  const totals: CpuByRole = {};
  const visit = (p: ProcessInfo, isRoot: boolean) => {
    const role = isRoot ? 'bench' : (ROLES.find(([, pattern]) => pattern.test(p.command))?.[0] ?? 'other');
    totals[role] = (totals[role] ?? 0) + p.ticks / TICKS_PER_SECOND;
    for (const child of children.get(p.pid) ?? []) visit(child, false);
  };
  const self = all.find((p) => p.pid === process.pid);
  if (self) visit(self, true);
  return totals;
}

/** CPU seconds spent by role between two samples. */
export function cpuSince(before: CpuByRole, after: CpuByRole = cpuByRole()): CpuByRole {
  const spent: CpuByRole = {};
  for (const role of Object.keys(after)) spent[role] = after[role]! - (before[role] ?? 0);
  return spent;
}

/** Adds up samples role by role. */
export function addCpu(a: CpuByRole, b: CpuByRole): CpuByRole {
  const sum: CpuByRole = { ...a };
  for (const [role, seconds] of Object.entries(b)) sum[role] = (sum[role] ?? 0) + seconds;
  return sum;
}

/** `role 12.3 ms` pairs per operation, largest first, and the total. */
export function describeCpu(spent: CpuByRole, operations: number): { total: number; text: string } {
  const perOperation = Object.entries(spent)
    .map(([role, seconds]) => [role, (seconds * 1000) / operations] as const)
    .sort((a, b) => b[1] - a[1]);
  const total = perOperation.reduce((sum, [, ms]) => sum + ms, 0);
  // Roles under 1% of the total are noise (a poll, a timer) and left out of the text.
  const shown = perOperation.filter(([, ms]) => ms >= total / 100);
  const digits = total < 10 ? 3 : 1;
  return { total, text: shown.map(([role, ms]) => `${role} ${ms.toFixed(digits)}`).join(', ') };
}
