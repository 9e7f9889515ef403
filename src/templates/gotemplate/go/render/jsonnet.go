package render

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	jsonnet "github.com/google/go-jsonnet"
)

// jsonnetRecords are the keys of the template data that are external variables of their own, null
// when the action has none (a provision has no binding), so std.extVar('binding') never fails.
// Every other key is a source object, found under the external variable `sources`.
var jsonnetRecords = []string{"instance", "binding", "plan", "service", "action"}

// Jsonnet evaluates the jsonnet program `code`, named `name` (as its errors show it), over the
// JSON object `dataJSON`, and returns the JSON it manifests. The records are external variables
// (std.extVar('instance')); the source objects are one more, `sources`, an object by their keys
// holding those that exist ({} when none). Output over maxOutput bytes (0: no limit) fails with an
// OutputTooLargeError. Imports are refused: a template is one self-contained program.
func Jsonnet(name, code, dataJSON string, maxOutput int) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("jsonnet: %s: %v", name, r)
		}
	}()
	var data map[string]json.RawMessage
	if err := json.Unmarshal([]byte(dataJSON), &data); err != nil {
		return "", fmt.Errorf("template data is not a JSON object: %v", err)
	}
	if data == nil {
		data = map[string]json.RawMessage{}
	}
	vm := jsonnet.MakeVM()
	vm.Importer(noImports{})
	vm.SetTraceOut(io.Discard)
	vm.ErrorFormatter = oneLineErrors{}
	// JSON is jsonnet: each value is passed as the code of its variable, evaluated only if read.
	for _, key := range jsonnetRecords {
		value, ok := data[key]
		if !ok {
			value = json.RawMessage("null")
		}
		vm.ExtCode(key, string(value))
		delete(data, key)
	}
	sources, err := json.Marshal(data)
	if err != nil {
		return "", fmt.Errorf("template data: %v", err)
	}
	vm.ExtCode("sources", string(sources))
	out, err = vm.EvaluateAnonymousSnippet(name, code)
	if err != nil {
		return "", fmt.Errorf("jsonnet: %s", err.Error())
	}
	if maxOutput > 0 && len(out) > maxOutput {
		return "", &OutputTooLargeError{Engine: "jsonnet", Name: name, Limit: maxOutput}
	}
	return out, nil
}

// noImports refuses import, importstr and importbin: templates read only their data.
type noImports struct{}

func (noImports) Import(_, importedPath string) (jsonnet.Contents, string, error) {
	return jsonnet.Contents{}, "", fmt.Errorf("imports are not available to plan templates (%s)", importedPath)
}

// oneLineErrors formats an error as one line, with where it happened, as Go's template errors
// read: `provision:3:12-20: Field does not exist: spec` rather than jsonnet's multi-line stack
// trace (errors become an operation's description).
type oneLineErrors struct{}

func (oneLineErrors) Format(err error) string {
	if rt, ok := err.(jsonnet.RuntimeError); ok {
		// The innermost frame is the last.
		for i := len(rt.StackTrace) - 1; i >= 0; i-- {
			if loc := rt.StackTrace[i].Loc; loc.IsSet() {
				return loc.String() + ": " + oneLine(rt.Msg)
			}
		}
		return oneLine(rt.Msg)
	}
	return oneLine(err.Error())
}

func (oneLineErrors) SetMaxStackTraceSize(int) {}

func (oneLineErrors) SetColorFormatter(jsonnet.ColorFormatter) {}

// oneLine keeps the first line of a message: a static error is followed by the source line.
func oneLine(msg string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
	return strings.TrimSpace(first)
}
