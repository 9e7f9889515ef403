/**
 * Why a render failed.
 * - `template`: the template itself (syntax, execution, invalid YAML, a function that failed);
 * - `timeout`, `output-too-large`, `input-too-large`, `out-of-memory`: a limit of the renderer;
 * - `source`: its text could not be read (`contentEncoded` not base64, `url` not fetched);
 * - `unsupported`: a template type that cannot be rendered (unknown, or helm for an action other than
 *   provision and bind);
 * - `unavailable`: the renderer is not built, closed, or its threads do not start.
 */
export type TemplateErrorReason =
  | 'template'
  | 'timeout'
  | 'output-too-large'
  | 'input-too-large'
  | 'out-of-memory'
  | 'source'
  | 'unsupported'
  | 'unavailable';

/**
 * A render that failed. `message` keeps the engine's own words for template errors (Go's
 * `template: provision:3:12: executing "provision" at <.foo.bar>: ...`). Classify by `name` and
 * `reason`, not `instanceof`, across module copies.
 */
export class TemplateError extends Error {
  constructor(
    message: string,
    /** Why the render failed. @default 'template' */
    readonly reason: TemplateErrorReason = 'template',
  ) {
    super(message);
    this.name = 'TemplateError';
  }
}
