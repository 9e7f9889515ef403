//go:build js && wasm

// The WebAssembly entry point: registers globalThis.interopRender(name, template, dataJSON,
// maxOutput) returning {output} or {error}, then waits forever.
package main

import (
	"syscall/js"

	"github.com/interoperator/gotemplate/render"
)

func main() {
	js.Global().Set("interopRender", js.FuncOf(func(this js.Value, args []js.Value) any {
		if len(args) < 4 {
			return map[string]any{"error": "interopRender(name, template, dataJSON, maxOutput)"}
		}
		out, err := render.Render(args[0].String(), args[1].String(), args[2].String(), args[3].Int())
		if err != nil {
			return map[string]any{"error": err.Error()}
		}
		return map[string]any{"output": out}
	}))
	select {}
}
