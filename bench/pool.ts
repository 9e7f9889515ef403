/** Runs `task` `count` times, `concurrency` at a time; returns the seconds it took. */
export async function pool(
  count: number,
  concurrency: number,
  task: (i: number) => Promise<void>,
): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await task(next++);
    }),
  );
  return (performance.now() - started) / 1000;
}
