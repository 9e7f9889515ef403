package render

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"

	"github.com/BurntSushi/toml"
	"github.com/Masterminds/sprig/v3"
	"sigs.k8s.io/yaml"
)

// FuncMap is sprig's text function map plus the inter-operator's own functions, which replace
// sprig's functions of the same name, with the original's semantics (helm's, for the YAML, JSON
// and TOML ones).
func FuncMap() template.FuncMap {
	f := sprig.TxtFuncMap()
	own := template.FuncMap{
		"b64enc":        b64enc,
		"b64dec":        b64dec,
		"unmarshalJSON": unmarshalJSON,
		"marshalJSON":   marshalJSON,
		"toToml":        toTOML,
		"toYaml":        toYAML,
		"fromYaml":      fromYAML,
		"toJson":        toJSON,
		"fromJson":      fromJSON,
	}
	for name, fn := range own {
		f[name] = fn
	}
	return f
}

func b64enc(s string) string {
	return base64.StdEncoding.EncodeToString([]byte(s))
}

// b64dec fails the render on input that is not standard, padded base64.
func b64dec(s string) (string, error) {
	data, err := base64.StdEncoding.DecodeString(s)
	return string(data), err
}

func unmarshalJSON(s string) (map[string]interface{}, error) {
	m := make(map[string]interface{})
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("failed to unmarshal %s. %v", s, err)
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

// toTOML returns the error's text in place of the TOML when v cannot be encoded.
func toTOML(v interface{}) string {
	b := bytes.NewBuffer(nil)
	if err := toml.NewEncoder(b).Encode(v); err != nil {
		return err.Error()
	}
	return b.String()
}

// toYAML returns "" when v cannot be encoded, and never ends with a newline.
func toYAML(v interface{}) string {
	data, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

// fromYAML puts a parse error under the "Error" key of the map it returns.
func fromYAML(str string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(str), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

// toJSON returns "" when v cannot be encoded.
func toJSON(v interface{}) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(data)
}

// fromJSON puts a parse error under the "Error" key of the map it returns.
func fromJSON(str string) map[string]interface{} {
	m := make(map[string]interface{})
	if err := json.Unmarshal([]byte(str), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}
