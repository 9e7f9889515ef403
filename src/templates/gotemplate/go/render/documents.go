package render

import (
	"encoding/json"
	"fmt"

	yaml "sigs.k8s.io/yaml/goyaml.v2"
)

// Documents reads rendered YAML documents the way the original inter-operator read them: each
// with yaml.v2 into an untyped value (so `yes`, `on` and `y` are booleans, `0777` is octal, a
// timestamp stays a string), map keys as fmt.Sprint prints them; and returns the values as one
// JSON array. docsJSON is a JSON array of document texts (split by the caller). A document that
// is not YAML, or holds a value JSON cannot carry (.inf, .nan), fails with its index.
func Documents(docsJSON string) (string, error) {
	var docs []string
	if err := json.Unmarshal([]byte(docsJSON), &docs); err != nil {
		return "", fmt.Errorf("documents: %v", err)
	}
	values := make([]interface{}, len(docs))
	for i, doc := range docs {
		var body interface{}
		if err := yaml.Unmarshal([]byte(doc), &body); err != nil {
			return "", &DocumentError{Index: i, Err: err}
		}
		values[i] = stringKeys(body)
	}
	out, err := json.Marshal(values)
	if err != nil {
		return "", fmt.Errorf("a document holds a value JSON cannot carry: %v", err)
	}
	return string(out), nil
}

// DocumentError says which document is not YAML.
type DocumentError struct {
	Index int
	Err   error
}

func (e *DocumentError) Error() string { return e.Err.Error() }

// stringKeys turns yaml.v2's map[interface{}]interface{} into map[string]interface{}, keys printed
// with fmt.Sprint, as the original did before handing objects to Kubernetes.
func stringKeys(v interface{}) interface{} {
	switch x := v.(type) {
	case map[interface{}]interface{}:
		m := make(map[string]interface{}, len(x))
		for k, v2 := range x {
			if s, ok := k.(string); ok {
				m[s] = stringKeys(v2)
			} else {
				m[fmt.Sprint(k)] = stringKeys(v2)
			}
		}
		return m
	case []interface{}:
		for i, v2 := range x {
			x[i] = stringKeys(v2)
		}
	}
	return v
}
