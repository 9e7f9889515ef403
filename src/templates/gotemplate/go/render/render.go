// Package render executes Go text/templates with sprig and the inter-operator's own functions,
// as the Service Fabrik inter-operator does. It is compiled to WebAssembly for the broker and
// natively for the differential tests and the benchmark, so both run exactly this code.
package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"text/template"
)

// OutputTooLargeError is returned when a render writes more than its output limit.
type OutputTooLargeError struct {
	// Engine names the language in the message. @default "template" (Go's text/template)
	Engine string
	Name   string
	Limit  int
}

func (e *OutputTooLargeError) Error() string {
	engine := e.Engine
	if engine == "" {
		engine = "template"
	}
	return fmt.Sprintf("%s: %s: output exceeds the limit of %d bytes", engine, e.Name, e.Limit)
}

// errOutputLimit stops text/template at the first write past the limit; text/template returns a
// writer's error unwrapped, so Render can recognise it.
var errOutputLimit = errors.New("output limit reached")

// sfResources are the inter-operator's own resources. The original passes them to templates
// through encoding/json (every number a float64); every other top-level key is a Kubernetes
// object, which the original passes as an unstructured object (integers int64).
var sfResources = map[string]bool{"instance": true, "binding": true, "plan": true, "service": true}

// Render executes the template `text`, named `name` (as Go's error messages show it), over the
// JSON object `dataJSON`, writing at most maxOutput bytes (0: no limit). Errors keep Go's words.
func Render(name, text, dataJSON string, maxOutput int) (out string, err error) {
	defer func() {
		// text/template re-panics runtime errors of its own; they must not take the process down.
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("template: %s: %v", name, r)
		}
	}()
	data, err := Decode(dataJSON)
	if err != nil {
		return "", err
	}
	tmpl, err := parse(name, text)
	if err != nil {
		return "", err
	}
	w := &limitedBuffer{max: maxOutput}
	if err := tmpl.Execute(w, data); err != nil {
		if errors.Is(err, errOutputLimit) {
			return "", &OutputTooLargeError{Name: name, Limit: maxOutput}
		}
		return "", err
	}
	return w.buf.String(), nil
}

// Parsed templates, by name and text: a plan has a handful of templates, rendered again and again.
// Executing a parsed template does not change it.
var (
	parsed   = map[string]*template.Template{}
	parsedMu sync.Mutex
	funcs    = FuncMap()
)

const parsedEntries = 64

func parse(name, text string) (*template.Template, error) {
	key := name + "\x00" + text
	parsedMu.Lock()
	tmpl, ok := parsed[key]
	parsedMu.Unlock()
	if ok {
		return tmpl, nil
	}
	// No Option("missingkey=..."): the original uses Go's default, so a missing map key prints
	// "<no value>".
	tmpl, err := template.New(name).Funcs(funcs).Parse(text)
	if err != nil {
		return nil, err
	}
	parsedMu.Lock()
	if len(parsed) >= parsedEntries {
		clear(parsed)
	}
	parsed[key] = tmpl
	parsedMu.Unlock()
	return tmpl, nil
}

type limitedBuffer struct {
	buf bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if l.max > 0 && l.buf.Len()+len(p) > l.max {
		return 0, errOutputLimit
	}
	return l.buf.Write(p)
}

// Decode turns the template data (a JSON object) into what the original's templates see: the SF
// resources as encoding/json decodes them into interface{} (numbers float64), every other key as
// an unstructured Kubernetes object (integers int64). One pass keeps every number's text; each key
// then gets its numbers typed.
func Decode(dataJSON string) (map[string]interface{}, error) {
	dec := json.NewDecoder(strings.NewReader(dataJSON))
	dec.UseNumber()
	var data map[string]interface{}
	if err := dec.Decode(&data); err != nil {
		return nil, fmt.Errorf("template data is not a JSON object: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("template data is not a JSON object: more than one value")
	}
	for key, value := range data {
		if sfResources[key] {
			data[key] = numbers(value, float)
		} else {
			data[key] = numbers(value, unstructuredNumber)
		}
	}
	return data, nil
}

// float is encoding/json's decoding of a number into interface{}.
func float(n json.Number) interface{} {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return string(n)
	}
	return f
}

// unstructuredNumber is k8s.io/apimachinery's unstructured JSON decoding of a number: integers
// int64, every other number float64.
func unstructuredNumber(n json.Number) interface{} {
	if i, err := n.Int64(); err == nil {
		return i
	}
	return float(n)
}

// numbers replaces every json.Number in v, in place, by what `typed` makes of it.
func numbers(v interface{}, typed func(json.Number) interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		for k, e := range t {
			t[k] = numbers(e, typed)
		}
		return t
	case []interface{}:
		for i, e := range t {
			t[i] = numbers(e, typed)
		}
		return t
	case json.Number:
		return typed(t)
	default:
		return v
	}
}
