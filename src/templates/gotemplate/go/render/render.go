// Package render executes Go text/templates with sprig and the inter-operator's own functions,
// exactly as the Service Fabrik inter-operator does. It is compiled to WebAssembly for the
// broker and natively for the differential tests, so both run the same code.
package render

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/template"

	"github.com/BurntSushi/toml"
	"github.com/Masterminds/sprig/v3"
	"sigs.k8s.io/yaml"
)

// ErrOutputTooLarge is returned when a render writes more than its output limit.
var ErrOutputTooLarge = errors.New("output too large")

// sfResources are decoded the way encoding/json decodes them (every number a float64); all
// other top-level keys are Kubernetes objects, decoded as unstructured objects (integers int64).
var sfResources = map[string]bool{"instance": true, "binding": true, "plan": true, "service": true}

// Render executes the template `text`, named `name`, over the JSON object `dataJSON`, writing at
// most maxOutput bytes (0: no limit).
func Render(name, text, dataJSON string, maxOutput int) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("template: %s: %v", name, r)
		}
	}()
	data, err := decode(dataJSON)
	if err != nil {
		return "", err
	}
	tmpl, err := template.New(name).Funcs(FuncMap()).Parse(text)
	if err != nil {
		return "", err
	}
	w := &limitedBuffer{max: maxOutput}
	if err := tmpl.Execute(w, data); err != nil {
		if errors.Is(err, ErrOutputTooLarge) {
			return "", fmt.Errorf("template: %s: output exceeds %d bytes", name, maxOutput)
		}
		return "", err
	}
	return w.buf.String(), nil
}

type limitedBuffer struct {
	buf bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if l.max > 0 && l.buf.Len()+len(p) > l.max {
		return 0, ErrOutputTooLarge
	}
	return l.buf.Write(p)
}

func decode(dataJSON string) (map[string]interface{}, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(dataJSON), &raw); err != nil {
		return nil, fmt.Errorf("template data is not a JSON object: %v", err)
	}
	data := make(map[string]interface{}, len(raw))
	for key, value := range raw {
		if sfResources[key] {
			var v interface{}
			if err := json.Unmarshal(value, &v); err != nil {
				return nil, fmt.Errorf("template data %q: %v", key, err)
			}
			data[key] = v
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(value))
		dec.UseNumber()
		var v interface{}
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("template data %q: %v", key, err)
		}
		data[key] = unstructured(v)
	}
	return data, nil
}

// unstructured converts json.Numbers as k8s.io/apimachinery's unstructured decoding does:
// integers to int64, everything else to float64.
func unstructured(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		for k, e := range t {
			t[k] = unstructured(e)
		}
		return t
	case []interface{}:
		for i, e := range t {
			t[i] = unstructured(e)
		}
		return t
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		if f, err := t.Float64(); err == nil {
			return f
		}
		return t.String()
	default:
		return v
	}
}

// FuncMap is sprig's text function map plus the inter-operator's functions.
func FuncMap() template.FuncMap {
	f := sprig.TxtFuncMap()
	extra := template.FuncMap{
		"toToml":        toTOML,
		"toYaml":        toYAML,
		"fromYaml":      fromYAML,
		"toJson":        toJSON,
		"fromJson":      fromJSON,
		"b64enc":        b64enc,
		"b64dec":        b64dec,
		"unmarshalJSON": unmarshalJSON,
		"marshalJSON":   marshalJSON,
	}
	for k, v := range extra {
		f[k] = v
	}
	return f
}

func toTOML(v interface{}) string {
	b := bytes.NewBuffer(nil)
	if err := toml.NewEncoder(b).Encode(v); err != nil {
		return err.Error()
	}
	return b.String()
}

func toYAML(v interface{}) string {
	data, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

func fromYAML(str string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(str), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func toJSON(v interface{}) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(data)
}

func fromJSON(str string) map[string]interface{} {
	m := make(map[string]interface{})
	if err := json.Unmarshal([]byte(str), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func b64enc(s string) string {
	return base64.StdEncoding.EncodeToString([]byte(s))
}

func b64dec(s string) (string, error) {
	data, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", err
	}
	return string(data), nil
}

func unmarshalJSON(s string) (map[string]interface{}, error) {
	m := make(map[string]interface{})
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, err
	}
	return m, nil
}

func marshalJSON(m map[string]interface{}) (string, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	return string(data), nil
}
