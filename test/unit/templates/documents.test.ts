/**
 * Multi-document YAML split as Kubernetes' YAML reader splits it (pure; reading the documents runs
 * in the render threads: test/built/templates/documents.test.ts).
 */
import { splitDocuments } from '../../../src/templates/index.js';

describe('splitDocuments', () => {
  test.each([
    ['one document', 'a: 1\n', ['a: 1\n']],
    ['a leading separator', '---\na: 1\n', ['\na: 1\n']],
    [
      'separators with spaces and comments',
      'a: 1\n---  \nb: 2\n--- # next\nc: 3\n',
      ['a: 1\n', '\nb: 2\n', '\nc: 3\n'],
    ],
    [
      'empty and comment-only documents dropped',
      'a: 1\n---\n\n---\n# only a comment\n---\nb: 2\n',
      ['a: 1\n', '\nb: 2\n'],
    ],
    ['nothing at all', '\n---\n---\n', []],
    ['CRLF line ends', 'a: 1\r\n---\r\nb: 2\r\n', ['a: 1\r\n', '\nb: 2\r\n']],
    ['--- inside a line is no separator', 'a: "x --- y"\nb: ---\n', ['a: "x --- y"\nb: ---\n']],
    ['an indented --- is no separator', 'a: |\n  ---\n  text\n', ['a: |\n  ---\n  text\n']],
  ])('%s', (_, text, docs) => {
    expect(splitDocuments(text)).toEqual(docs);
  });
});
