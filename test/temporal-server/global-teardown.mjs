/** Stops the servers that global-setup.mjs started. */
export default async function globalTeardown() {
  await globalThis.__interopTemporalServerEnvironment?.stop();
}
