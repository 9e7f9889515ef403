/**
 * The differential corpus: templates and data rendered both through our API (WebAssembly in a
 * worker thread) and by native Go, which must agree byte for byte, errors included.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { SFPlan } from '../../../src/resources/types.js';

export interface Case {
  readonly name: string;
  readonly template: string;
  readonly data: Record<string, unknown>;
}

const plan = parse(readFileSync('examples/postgresql/sfplan.yaml', 'utf8')) as SFPlan;
const text = (action: string) => plan.spec.templates.find((t) => t.action === action)!.content!;

const instance = {
  apiVersion: 'osb.servicefabrik.io/v1alpha1',
  kind: 'SFServiceInstance',
  metadata: { name: '0a1b2c', namespace: 'sf-0a1b2c', uid: 'u-1', generation: 1 },
  spec: { serviceId: plan.spec.serviceId, planId: plan.spec.id, parameters: { foo: 'bar', size: 1000000 } },
};
const binding = {
  metadata: { name: 'b-77', namespace: 'sf-0a1b2c' },
  spec: { id: 'b-77', instanceId: '0a1b2c' },
};
const pg = (status?: Record<string, unknown>, meta: Record<string, unknown> = {}) => ({
  apiVersion: 'acid.zalan.do/v1',
  kind: 'postgresql',
  metadata: { name: 'sapcp-0a1b2c', namespace: 'sf-0a1b2c', generation: 3, ...meta },
  spec: {
    teamId: 'sapcp',
    numberOfInstances: 2,
    users: { main: ['superuser', 'createdb'] },
    volume: { size: '20Gi' },
  },
  ...(status ? { status } : {}),
});
const secret = {
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'b-77.sapcp-0a1b2c.credentials.postgresql.acid.zalan.do' },
  data: {
    username: Buffer.from('b_77').toString('base64'),
    password: Buffer.from('s3cr3t!').toString('base64'),
  },
};
const svc = (lb = false) => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'sapcp-0a1b2c' },
  spec: { clusterIP: '10.0.0.12', ports: [{ name: 'postgresql', port: 5432, targetPort: 5432 }] },
  status: lb ? { loadBalancer: { ingress: [{ ip: '1.2.3.4' }] } } : {},
});
/** A clusterSelector template in the original's style: a Kubernetes label selector. */
const clusterSelector = `{{- $planId := "" }}
{{- with .plan.spec.id }} {{ $planId = . }} {{ end }}
{{- $lb := false }}
{{- with .plan.spec.context.enableLoadBalancers }} {{ $lb = . }} {{ end }}
plan={{ $planId }},tier in (shared, dedicated){{ if $lb }},region notin (on-prem){{ end }}`;
const lbPlan = {
  ...plan,
  spec: { ...plan.spec, context: { ...plan.spec.context, enableLoadBalancers: true } },
};

const designDocument: Case[] = [
  { name: 'sources: instance', template: text('sources'), data: { instance, plan } },
  { name: 'sources: binding', template: text('sources'), data: { instance, binding, plan } },
  { name: 'sources: no instance', template: text('sources'), data: { plan } },
  { name: 'provision', template: text('provision'), data: { instance, plan } },
  { name: 'provision: load balancers', template: text('provision'), data: { instance, plan: lbPlan } },
  {
    name: 'provision: no plan context',
    template: text('provision'),
    data: { instance, plan: { spec: { id: 'p' } } },
  },
  { name: 'bind', template: text('bind'), data: { instance, binding, plan, postgresql: pg() } },
  { name: 'bind: no postgresql', template: text('bind'), data: { instance, binding, plan } },
  { name: 'unbind', template: text('unbind'), data: { instance, binding, plan, postgresql: pg() } },
  {
    name: 'clusterSelector: label selector',
    template: clusterSelector,
    data: { instance, plan },
  },
  {
    name: 'clusterSelector: load balancers need a region',
    template: clusterSelector,
    data: { instance, plan: lbPlan },
  },
  {
    name: 'clusterSelector: as YAML',
    template:
      '{{- with .plan.spec.context }}clusterId: {{ default "1" .clusterId }}\nlabels: {{ toJson (dict "region" "eu") }}{{ end }}',
    data: { plan },
  },
];
const statuses: [string, Record<string, unknown>][] = [
  ['gone', {}],
  ['no status yet (in progress)', { postgresql: pg() }],
  ['Creating', { postgresql: pg({ PostgresClusterStatus: 'Creating' }) }],
  ['Running', { postgresql: pg({ PostgresClusterStatus: 'Running' }) }],
  [
    'CreateFailed with reason',
    { postgresql: pg({ PostgresClusterStatus: 'CreateFailed', reason: 'disk quota' }) },
  ],
  ['UpdateFailed', { postgresql: pg({ PostgresClusterStatus: 'UpdateFailed' }) }],
  [
    'being deleted',
    { postgresql: pg({ PostgresClusterStatus: 'Running' }, { deletionTimestamp: '2026-11-22T10:00:00Z' }) },
  ],
  ['Running, bound', { postgresql: pg({ PostgresClusterStatus: 'Running' }), secret, svc: svc() }],
  ['Running, bound, no secret yet', { postgresql: pg({ PostgresClusterStatus: 'Running' }), svc: svc() }],
];
for (const [state, sources] of statuses) {
  designDocument.push({
    name: `status: ${state}`,
    template: text('status'),
    data: { instance, binding, plan, ...sources },
  });
}
designDocument.push({
  name: 'status: load balancer ingress',
  template: text('status'),
  data: {
    instance,
    binding,
    plan: lbPlan,
    postgresql: pg({ PostgresClusterStatus: 'Running' }),
    secret,
    svc: svc(true),
  },
});

const values = {
  m: { b: 2, a: 1, c: { d: [1, 2.5, 'x', true, null] } },
  s: ['z', 'y', 'x'],
  n: 42,
  f: 2.5,
  big: 1000000,
  neg: -3,
  t: true,
  str: 'Hello, World',
  empty: '',
  nil: null,
  html: '<a href="x">&</a>',
};
const sources = { src: values };
const sf = { plan: values };

const corners: [string, string, Record<string, unknown>?][] = [
  // trim markers
  ['trim left', 'a  {{- "b" }}'],
  ['trim right', '{{ "a" -}}   b'],
  ['trim both', 'x \n {{- 1 -}} \n y'],
  ['trim comment', 'a {{- /* c */ -}} b'],
  ['no trim', 'a {{ "b" }} c'],
  ['trim newlines in range', '{{- range .src.s }}\n- {{ . }}\n{{- end }}', sources],
  // with / else
  ['with value', '{{ with .src.str }}{{ . }}{{ end }}', sources],
  ['with empty', '{{ with .src.empty }}yes{{ else }}no{{ end }}', sources],
  ['with nil', '{{ with .src.nil }}yes{{ else }}no{{ end }}', sources],
  ['with missing', '{{ with .src.missing }}yes{{ else }}no{{ end }}', sources],
  ['with zero', '{{ with 0 }}yes{{ else }}no{{ end }}'],
  ['if else if', '{{ if .src.empty }}a{{ else if .src.t }}b{{ else }}c{{ end }}', sources],
  // range
  ['range map sorted', '{{ range $k, $v := .src.m }}{{ $k }}={{ $v }};{{ end }}', sources],
  ['range slice index', '{{ range $i, $v := .src.s }}{{ $i }}:{{ $v }} {{ end }}', sources],
  ['range empty else', '{{ range .src.missing }}x{{ else }}none{{ end }}', sources],
  ['range int', '{{ range $i := until 3 }}{{ $i }}{{ end }}'],
  ['range nested', '{{ range .src.m.c.d }}[{{ . }}]{{ end }}', sources],
  ['range break', '{{ range .src.s }}{{ if eq . "y" }}{{ break }}{{ end }}{{ . }}{{ end }}', sources],
  ['range continue', '{{ range .src.s }}{{ if eq . "y" }}{{ continue }}{{ end }}{{ . }}{{ end }}', sources],
  // variables
  ['variable assign', '{{ $x := 1 }}{{ $x = 2 }}{{ $x }}'],
  [
    'variable scope',
    '{{ $x := "out" }}{{ with .src.str }}{{ $x := "in" }}{{ $x }}{{ end }}{{ $x }}',
    sources,
  ],
  ['variable dollar', '{{ with .src.m }}{{ $.src.str }}{{ end }}', sources],
  ['variable undefined', '{{ $nope }}'],
  // missing keys
  ['missing key', '{{ .nothing }}'],
  ['missing nested key', '{{ .src.nothing }}', sources],
  ['missing through nil', '{{ .src.nil.x }}', sources],
  ['missing on string', '{{ .src.str.x }}', sources],
  ['index missing', '{{ index .src.m "zz" }}', sources],
  ['index out of range', '{{ index .src.s 10 }}', sources],
  // comparisons with Go's number types
  ['eq int int', '{{ eq .src.n 42 }}', sources],
  ['eq float (sf) int', '{{ eq .plan.n 42 }}', sf],
  ['eq float float', '{{ eq .plan.f 2.5 }}', sf],
  ['lt int float', '{{ lt .src.n 2.5 }}', sources],
  ['gt sf big', '{{ gt .plan.big 10.0 }}', sf],
  ['ne strings', '{{ ne .src.str "x" }}', sources],
  ['eq nil', '{{ eq .src.nil nil }}', sources],
  ['and or not', '{{ and .src.t .src.str }} {{ or .src.empty .src.n }} {{ not .src.t }}', sources],
  ['len', '{{ len .src.s }} {{ len .src.m }} {{ len .src.str }}', sources],
  // printing numbers
  ['print sf big', '{{ .plan.big }}', sf],
  ['print src big', '{{ .src.big }}', sources],
  ['print sf float', '{{ .plan.f }} {{ .plan.n }}', sf],
  ['print map', '{{ .src.m }}', sources],
  ['print slice', '{{ .src.s }}', sources],
  ['print nil', '{{ .src.nil }}', sources],
  ['html escape function', '{{ html .src.html }} {{ js .src.html }} {{ urlquery .src.html }}', sources],
  // errors
  ['parse error unclosed', '{{ if }}'],
  ['parse error end', '{{ end }}'],
  ['undefined function', '{{ nosuchfunc 1 }}'],
  ['wrong arg count', '{{ upper "a" "b" }}'],
  ['field on int', '{{ .src.n.x }}', sources],
  ['b64dec invalid', '{{ b64dec "!!!" }}'],
  ['div by zero', '{{ div 1 0 }}'],
  ['fail', '{{ fail "stop here" }}'],
  ['unmarshalJSON invalid', '{{ unmarshalJSON "{" }}'],
  // the inter-operator's own functions
  ['toYaml map', '{{ toYaml .src.m }}', sources],
  ['toYaml sf numbers', '{{ toYaml .plan }}', sf],
  ['toYaml nindent', 'x:{{ toYaml .src.s | nindent 2 }}', sources],
  ['toJson', '{{ toJson .src }}', sources],
  ['toJson sf', '{{ toJson .plan }}', sf],
  ['fromYaml', '{{ (fromYaml "a: [1, 2]\\nb: x").a }}'],
  ['fromYaml error', '{{ (fromYaml "a: [").Error }}'],
  ['fromJson', '{{ (fromJson "{\\"a\\": 1.5}").a }}'],
  ['fromJson error', '{{ (fromJson "{").Error }}'],
  ['toToml', '{{ toToml .src.m }}', sources],
  ['b64enc b64dec', '{{ b64enc "héllo" }} {{ b64dec "aMOpbGxv" }}'],
  ['unmarshalJSON', '{{ (unmarshalJSON "{\\"k\\": [1, 2]}").k }}'],
  ['marshalJSON', '{{ marshalJSON .src.m }}', sources],
  ['mustToJson squote', '{{ mustToJson (dict "a" "it\'s") | squote }}'],
];

const printfVerbs = ['%d', '%s', '%v', '%q', '%x', '%5.2f', '%t', '%T', '%+v', '%08.3f', '%e', '%g'];
const printfValues: [string, string][] = [
  ['int64', '.src.n'],
  ['float64 (sf)', '.plan.n'],
  ['float', '.src.f'],
  ['string', '.src.str'],
  ['bool', '.src.t'],
  ['nil', '.src.nil'],
];
const printfCases: [string, string, Record<string, unknown>][] = printfVerbs.flatMap((verb) =>
  printfValues.map(([what, expr]): [string, string, Record<string, unknown>] => [
    `printf ${verb} ${what}`,
    `{{ printf "${verb}" ${expr} }}`,
    { ...sources, ...sf },
  ]),
);

const sprig: [string, string, Record<string, unknown>?][] = [
  ['upper lower title', '{{ upper "ab" }} {{ lower "AB" }} {{ title "hello world" }}'],
  [
    'default',
    '{{ default "d" .src.empty }} {{ default "d" .src.str }} {{ default 5 .src.missing }}',
    sources,
  ],
  ['empty', '{{ empty .src.empty }} {{ empty .src.n }} {{ empty .src.m }}', sources],
  ['coalesce', '{{ coalesce .src.missing .src.empty "c" }}', sources],
  ['list dict', '{{ list 1 "a" 2.5 }} {{ dict "k" "v" }}'],
  [
    'set unset hasKey',
    '{{ $d := dict "a" 1 }}{{ $_ := set $d "b" 2 }}{{ $_ := unset $d "a" }}{{ hasKey $d "a" }} {{ $d }}',
  ],
  ['keys sortAlpha', '{{ keys .src.m | sortAlpha }}', sources],
  ['join split', '{{ join "," .src.s }} {{ (split "," "a,b")._1 }}', sources],
  ['trim replace', '{{ trim "  x  " }}|{{ replace "a" "b" "banana" }}|{{ trimSuffix "-x" "a-x" }}'],
  ['quote squote', '{{ quote "a\\"b" }} {{ squote "x" }}'],
  ['indent nindent', '{{ indent 2 "a\\nb" }}|{{ nindent 2 "c" }}'],
  ['sha256sum', '{{ sha256sum "abc" }}'],
  ['int64 float64', '{{ int64 "42" }} {{ float64 "2.5" }} {{ int .plan.f }}', sf],
  ['math', '{{ add 1 2 }} {{ sub 5 7 }} {{ mul 3 4 }} {{ div 7 2 }} {{ mod 7 3 }} {{ max 1 9 3 }}'],
  ['math with sf floats', '{{ add .plan.n 1 }} {{ mul .plan.f 2 }}', sf],
  [
    'contains hasPrefix',
    '{{ contains "ell" "hello" }} {{ hasPrefix "he" "hello" }} {{ hasSuffix "lo" "hello" }}',
  ],
  ['regexMatch regexReplaceAll', '{{ regexMatch "^a.c$" "abc" }} {{ regexReplaceAll "[0-9]+" "a12b3" "#" }}'],
  ['toString atoi', '{{ toString 12 }} {{ atoi "7" }}'],
  ['first last rest', '{{ first .src.s }} {{ last .src.s }} {{ rest .src.s }}', sources],
  ['uniq without', '{{ uniq (list 1 1 2) }} {{ without (list 1 2 3) 2 }}'],
  ['ternary', '{{ ternary "y" "n" true }} {{ ternary "y" "n" false }}'],
  ['semverCompare', '{{ semverCompare ">=1.2" "1.3.0" }}'],
  ['pluck get', '{{ get .src.m "a" }} {{ pluck "a" .src.m }}', sources],
  ['deepCopy merge', '{{ merge (dict "a" 1) (dict "a" 2 "b" 3) }}'],
  ['splitList', '{{ splitList "," "a,b,c" }}'],
  ['printf with dict', '{{ printf "%v-%v" (dict "a" 1) (list 1) }}'],
  ['cat nospace', '{{ cat "a" "b" 1 }} {{ nospace "a b c" }}'],
  ['trunc abbrev', '{{ trunc 3 "abcdef" }} {{ abbrev 5 "abcdefgh" }}'],
  ['repeat', '{{ repeat 3 "ab" }}'],
  ['typeOf kindOf', '{{ typeOf .src.n }} {{ kindOf .plan.n }} {{ typeOf .src.m }}', { ...sources, ...sf }],
];

const numbers = {
  small: 0.1,
  huge: 1e21,
  tiny: 1.5e-7,
  negZero: -0,
  // Beyond 2^53: JavaScript already rounds it, on both sides alike.
  unsafe: Number('9007199254740993'),
  whole: 1.0,
  exp: 123456789,
  half: 0.5,
};
const numberCases: [string, string, Record<string, unknown>][] = Object.keys(numbers).flatMap(
  (key): [string, string, Record<string, unknown>][] => [
    [
      `number ${key} as a source`,
      `{{ .src.${key} }} {{ printf "%T %v" .src.${key} .src.${key} }}`,
      { src: numbers },
    ],
    [
      `number ${key} in the plan`,
      `{{ .plan.${key} }} {{ printf "%T %v" .plan.${key} .plan.${key} }}`,
      { plan: numbers },
    ],
  ],
);

const more: [string, string, Record<string, unknown>?][] = [
  // define, template, block
  ['define and template', '{{ define "x" }}[{{ . }}]{{ end }}{{ template "x" "a" }}{{ template "x" 2 }}'],
  ['block default', '{{ block "b" .src.str }}<{{ . }}>{{ end }}', sources],
  ['template undefined', '{{ template "nope" }}'],
  [
    'recursive template',
    '{{ define "r" }}{{ if . }}{{ . }}{{ template "r" (sub . 1) }}{{ end }}{{ end }}{{ template "r" 3 }}',
  ],
  // syntax
  ['comment', 'a{{/* comment */}}b'],
  ['raw string', '{{ `a"b\\c` }}'],
  ['parenthesised pipeline', '{{ (printf "%s-%s" "a" "b") | upper }}'],
  ['chained pipes', '{{ "x" | printf "%s%s" "y" | quote | upper }}'],
  ['crlf template', 'a: {{ 1 }}\r\nb: {{- " 2" }}\r\n'],
  ['unicode', '{{ "héllo wörld ✓" | upper }} {{ len "✓" }}'],
  ['unterminated action', 'a {{ .x'],
  ['unexpected token', '{{ 1 2 }}'],
  ['bad variable', '{{ $x = 1 }}'],
  ['range over int (Go 1.22)', '{{ range 3 }}{{ . }}{{ end }}'],
  ['else with (Go 1.23)', '{{ with .src.missing }}a{{ else with .src.str }}{{ . }}{{ end }}', sources],
  ['with assignment', '{{ with $x := .src.str }}{{ $x }}{{ end }}', sources],
  ['range with dollar', '{{ range .src.s }}{{ $.src.n }}{{ end }}', sources],
  [
    'range over map of maps',
    '{{ range $k, $v := .src }}{{ $k }};{{ end }}',
    { src: { b: { x: 1 }, a: { y: 2 } } },
  ],
  ['range over sf map', '{{ range $k, $v := .plan }}{{ $k }}={{ $v }};{{ end }}', sf],
  // comparisons that fail
  ['eq incompatible', '{{ eq .src.n "42" }}', sources],
  ['lt string int', '{{ lt "a" 1 }}'],
  ['eq many', '{{ eq .src.n 1 2 42 }} {{ eq .src.str "a" "b" }}', sources],
  ['eq int64 float64 mixed', '{{ eq .src.n .plan.n }}', { ...sources, ...sf }],
  ['lt int64 float64 mixed', '{{ lt .src.f .plan.n }}', { ...sources, ...sf }],
  ['and short circuit', '{{ and false (fail "never") }} {{ or true (fail "never") }}'],
  ['not missing', '{{ not .missing }}'],
  // builtins that fail
  ['len of nil', '{{ len .src.nil }}', sources],
  ['len of int', '{{ len 3 }}'],
  ['call non-function', '{{ call .src.n }}', sources],
  ['index of int', '{{ index 3 1 }}'],
  ['index nested', '{{ index .src.m "c" "d" 1 }}', sources],
  ['slice', '{{ slice .src.str 0 5 }} {{ slice .src.s 1 }}', sources],
  ['slice out of range', '{{ slice .src.s 2 9 }}', sources],
  ['printf extra and missing', '{{ printf "%d" 1 2 }} {{ printf "%d %d" 1 }}'],
  ['print println', '{{ print 1 "a" 2 }}|{{ println "x" 3 }}|'],
  ['nil function argument', '{{ upper nil }}'],
  // the inter-operator's functions at their edges
  ['b64dec partial', '{{ b64dec "YWJj!" }}'],
  ['b64dec invalid utf-8', '{{ b64dec "/w==" | len }}'],
  ['b64dec unpadded', '{{ b64dec "YQ" }}'],
  ['unmarshalJSON array', '{{ unmarshalJSON "[1]" }}'],
  ['marshalJSON not a map', '{{ marshalJSON "x" }}'],
  ['marshalJSON sources', '{{ marshalJSON .src }}', { src: { n: 1, f: 1.5, s: ['a'] } }],
  ['toToml list', '{{ toToml .src.s }}', sources],
  ['toToml numbers', '{{ toToml .src }}', { src: { n: 1, f: 1.5, big: 1000000 } }],
  [
    'toYaml scalars',
    '{{ toYaml "yes" }}|{{ toYaml "on" }}|{{ toYaml "a: b" }}|{{ toYaml "1.0" }}|{{ toYaml "" }}',
  ],
  ['toYaml multiline', '{{ toYaml (dict "k" "line1\\nline2" "q" "it\'s \\"x\\"") }}'],
  ['toYaml nil', '{{ toYaml nil }}|{{ toYaml .missing }}'],
  ['toYaml big numbers', '{{ toYaml .plan }}|{{ toYaml .src }}', { plan: numbers, src: numbers }],
  ['toJson nil', '{{ toJson nil }}|{{ toJson .src.html }}', sources],
  ['fromYaml list', '{{ fromYaml "- a\\n- b" }}'],
  ['fromJson numbers', '{{ (fromJson "{\\"n\\": 1000000}").n }}'],
  [
    'fromYaml numbers',
    '{{ $m := fromYaml "n: 1000000\\nf: 0.5" }}{{ $m.n }} {{ printf "%T" $m.n }} {{ $m.f }}',
  ],
  ['mustToJson error', '{{ mustToJson .src }}', sources],
  // sprig corners
  ['adler32sum', '{{ adler32sum "0a1b2c" }} {{ printf "in-%s" (adler32sum "0a1b2c") }}'],
  ['sha1sum b32enc', '{{ sha1sum "x" }} {{ b32enc "x" }} {{ b32dec "PA======" }}'],
  ['dig', '{{ dig "m" "c" "d" "none" .src }}', sources],
  ['pick omit', '{{ pick .src.m "a" }} {{ omit .src.m "a" "c" }}', sources],
  [
    'has compact reverse',
    '{{ has "y" .src.s }} {{ compact (list "" "a" nil "b") }} {{ reverse .src.s }}',
    sources,
  ],
  ['case conversions', '{{ snakecase "FooBar" }} {{ camelcase "foo_bar" }} {{ kebabcase "FooBar" }}'],
  [
    'camelcase of mixed case (sprig v3.2.3)',
    '{{ camelcase "fooBar" }} {{ camelcase "some-mixed case_string" }}',
  ],
  ['round floor ceil', '{{ round 2.567 2 }} {{ floor 2.5 }} {{ ceil 2.1 }} {{ addf 1.5 2 }}'],
  ['seq until untilStep', '{{ seq 3 }} {{ until 2 }} {{ untilStep 0 10 4 }}'],
  ['required', '{{ required "a value is required" .missing }}'],
  [
    'empty default on sf float zero',
    '{{ default 5 .plan.zero }} {{ empty .plan.zero }}',
    { plan: { zero: 0 } },
  ],
  ['regexFind semver', '{{ regexFind "[0-9]+" "ab12cd" }} {{ (semver "1.2.3").Minor }}'],
  ['toStrings sortAlpha numbers', '{{ toStrings (list 3 1 2) | sortAlpha }}'],
  ['int of sf float', '{{ int .plan.big }} {{ int64 .plan.f }} {{ float64 .src.n }}', { ...sources, ...sf }],
  ['printf %d of sf float', '{{ printf "%d" .plan.big }}', sf],
  ['include is not sprig', '{{ include "x" . }}'],
  [
    'proto keys are data',
    '{{ index .src "__proto__" }} {{ index .src "constructor" }}',
    {
      src: JSON.parse('{"__proto__": "p", "constructor": "c"}') as Record<string, unknown>,
    },
  ],
];

export const CORPUS: Case[] = [
  ...designDocument,
  ...[...corners, ...printfCases, ...sprig, ...numberCases, ...more].map(([name, template, data]) => ({
    name,
    template,
    data: data ?? {},
  })),
];
