//go:build js && wasm

// The WebAssembly entry point. It registers
//
//	globalThis.interopRender(name, template, dataJSON, maxOutput)
//
// which returns {output} or {error, reason} (reason "output-too-large" or "template");
//
//	globalThis.interopJsonnet(name, code, dataJSON, maxOutput)
//
// which evaluates a jsonnet program and returns {output} (the JSON it manifests) or {error, reason},
// alike; and
//
//	globalThis.interopDocuments(docsJSON)
//
// which reads rendered YAML documents as the original did and returns {json} (a JSON array of
// their values) or {error, index?}; then it waits for calls forever.
package main

import (
	"errors"
	"syscall/js"

	"github.com/interoperator/gotemplate/render"
)

// engine exposes a renderer taking (name, text, dataJSON, maxOutput) to JavaScript.
func engine(signature string, run func(name, text, dataJSON string, maxOutput int) (string, error)) js.Func {
	return js.FuncOf(func(this js.Value, args []js.Value) any {
		if len(args) != 4 {
			return map[string]any{"error": signature, "reason": "template"}
		}
		out, err := run(args[0].String(), args[1].String(), args[2].String(), args[3].Int())
		if err != nil {
			var tooLarge *render.OutputTooLargeError
			if errors.As(err, &tooLarge) {
				return map[string]any{"error": err.Error(), "reason": "output-too-large"}
			}
			return map[string]any{"error": err.Error(), "reason": "template"}
		}
		return map[string]any{"output": out}
	})
}

func main() {
	js.Global().Set("interopRender", engine("interopRender(name, template, dataJSON, maxOutput)", render.Render))
	js.Global().Set("interopJsonnet", engine("interopJsonnet(name, code, dataJSON, maxOutput)", render.Jsonnet))
	js.Global().Set("interopDocuments", js.FuncOf(func(this js.Value, args []js.Value) any {
		if len(args) != 1 {
			return map[string]any{"error": "interopDocuments(docsJSON)"}
		}
		out, err := render.Documents(args[0].String())
		if err != nil {
			var doc *render.DocumentError
			if errors.As(err, &doc) {
				return map[string]any{"error": err.Error(), "index": doc.Index}
			}
			return map[string]any{"error": err.Error()}
		}
		return map[string]any{"json": out}
	}))
	select {}
}
