/**
 * Tests that need a tool from outside the repository (helm, a compose client): `make test` builds
 * or installs each one first (Makefile, tools/). Where a tool is missing, its tests are skipped
 * with a warning that says how to get it; under CI=true they fail instead, so that a CI run that
 * passes has run every test.
 */

/** What a test needs, and how to get it when it is missing. */
export interface Tool {
  /** The tool as the test runs it (a path or a command), or undefined when there is none. */
  readonly found: string | readonly string[] | undefined;
  /** Its name, e.g. `helm`. */
  readonly name: string;
  /** How to get it, e.g. `tools/build-binaries.sh helm builds it`. */
  readonly install: string;
}

type Body = () => void;
type TestFn = jest.ProvidesCallback;

const underCi = () => process.env.CI === 'true';
const missing = (tool: Tool) => `no ${tool.name} at hand: ${tool.install}`;

function warnSkipped(tool: Tool, what: string): void {
  console.warn(`${missing(tool)}; ${what} skipped (under CI=true, failed)`);
}

/**
 * `describe` when the tool is at hand. Without it, one test stands for the body, which may run
 * the tool as its tests are collected and is therefore left out: skipped with a warning, or under
 * CI a failing one.
 */
export function describeWithTool(tool: Tool): (name: string, body: Body) => void {
  if (tool.found) return (name, body) => describe(name, body);
  const placeholder = `needs ${tool.name}`;
  if (underCi())
    return (name) =>
      describe(name, () => {
        test(placeholder, () => {
          throw new Error(missing(tool));
        });
      });
  return (name) => {
    warnSkipped(tool, `"${name}"`);
    describe(name, () => test.skip(placeholder, () => undefined));
  };
}

/** `test` when the tool is at hand; without it, `test.skip` with a warning, or under CI a failing test. */
export function testWithTool(tool: Tool): (name: string, fn: TestFn, timeout?: number) => void {
  if (tool.found) return (name, fn, timeout) => test(name, fn, timeout);
  if (underCi())
    return (name) =>
      test(name, () => {
        throw new Error(missing(tool));
      });
  return (name, fn, timeout) => {
    warnSkipped(tool, `"${name}"`);
    test.skip(name, fn, timeout);
  };
}
