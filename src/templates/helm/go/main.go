//go:build js && wasm

// The WebAssembly entry point. It registers
//
//	globalThis.interopHelm(name, chartBase64, requestJSON, maxOutput)
//
// which returns {output} or {error, reason} (reason "output-too-large", "source" for a chart that
// cannot be loaded, or "template"); then it waits for calls forever.
package main

import (
	"encoding/base64"
	"errors"
	"syscall/js"

	"github.com/interoperator/helmtemplate/chart"
)

func main() {
	js.Global().Set("interopHelm", js.FuncOf(func(this js.Value, args []js.Value) any {
		if len(args) != 4 {
			return map[string]any{"error": "interopHelm(name, chartBase64, requestJSON, maxOutput)", "reason": "template"}
		}
		name := args[0].String()
		archive, err := base64.StdEncoding.DecodeString(args[1].String())
		if err != nil {
			return map[string]any{"error": "helm: " + name + ": the chart is not base64", "reason": "source"}
		}
		out, err := chart.Render(archive, args[2].String(), args[3].Int())
		if err != nil {
			var tooLarge *chart.OutputTooLargeError
			var load *chart.ChartError
			switch {
			case errors.As(err, &tooLarge):
				return map[string]any{"error": "helm: " + name + ": " + err.Error(), "reason": "output-too-large"}
			case errors.As(err, &load):
				return map[string]any{"error": "helm: " + name + ": " + err.Error(), "reason": "source"}
			}
			return map[string]any{"error": "helm: " + name + ": " + err.Error(), "reason": "template"}
		}
		return map[string]any{"output": out}
	}))
	select {}
}
