/** Why a render failed: the template itself, or one of the limits that protect the process. */
export type TemplateErrorReason =
  'template' | 'timeout' | 'output-too-large' | 'input-too-large' | 'unsupported' | 'source';

/** A render that failed; `message` keeps Go's own wording for template errors. */
export class TemplateError extends Error {
  constructor(
    message: string,
    readonly reason: TemplateErrorReason = 'template',
  ) {
    super(message);
    this.name = 'TemplateError';
  }
}
