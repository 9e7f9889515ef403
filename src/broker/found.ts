/**
 * A record read by its name. Installations that share a master see each other's records by name
 * (the name comes from the OSB id alone), but one never answers for, nor operates on, another's.
 */
export interface Found<T> {
  /** The record, when it is this installation's (resources/record-labels.ts, `isOwnedBy`); absent otherwise. */
  readonly record?: T;
  /** Whether a record of that name is there, but another installation's. */
  readonly elsewhere: boolean;
}
