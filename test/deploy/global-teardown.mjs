/** Stops what global-setup.mjs started. */
import { stopAll } from './global-setup.mjs';

export default async function globalTeardown() {
  await stopAll();
}
