// render-native renders templates with the same Go code as the WebAssembly module, natively: the
// reference of the differential tests and of the render benchmark.
//
//	render-native           reads JSON lines {"name","template","data","maxOutput"} on stdin
//	                        (data: the template data as a JSON text) and writes one JSON line
//	                        {"output"} or {"error"} per case on stdout
//	render-native -bench N  reads one case, renders it N times in process, and prints the
//	                        nanoseconds per render
//	render-native -jsonnet  the same, evaluating jsonnet programs (render.Jsonnet)
//	render-native -documents
//	                        reads JSON lines {"docs": [YAML texts]} and writes one JSON line
//	                        {"json"} or {"error", "index"?} per case: render.Documents, natively
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/interoperator/gotemplate/render"
)

type documentsCase struct {
	Docs []string `json:"docs"`
}

type renderCase struct {
	Name      string `json:"name"`
	Template  string `json:"template"`
	Data      string `json:"data"`
	MaxOutput int    `json:"maxOutput"`
}

func main() {
	bench := flag.Int("bench", 0, "render the first case N times and print the nanoseconds per render")
	documents := flag.Bool("documents", false, "read YAML documents as render.Documents does")
	useJsonnet := flag.Bool("jsonnet", false, "evaluate jsonnet programs (render.Jsonnet)")
	flag.Parse()
	run := render.Render
	if *useJsonnet {
		run = render.Jsonnet
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	dec := json.NewDecoder(bufio.NewReader(os.Stdin))
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	if *documents {
		for {
			var c documentsCase
			if err := dec.Decode(&c); err != nil {
				return
			}
			docs, _ := json.Marshal(c.Docs)
			res, err := render.Documents(string(docs))
			var docErr *render.DocumentError
			switch {
			case errors.As(err, &docErr):
				_ = enc.Encode(map[string]any{"error": err.Error(), "index": docErr.Index})
			case err != nil:
				_ = enc.Encode(map[string]any{"error": err.Error()})
			default:
				_ = enc.Encode(map[string]any{"json": res})
			}
			_ = out.Flush()
		}
	}
	for {
		var c renderCase
		if err := dec.Decode(&c); err != nil {
			return
		}
		if *bench > 0 {
			start := time.Now()
			for i := 0; i < *bench; i++ {
				if _, err := run(c.Name, c.Template, c.Data, c.MaxOutput); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
			}
			fmt.Fprintln(out, time.Since(start).Nanoseconds()/int64(*bench))
			return
		}
		res, err := run(c.Name, c.Template, c.Data, c.MaxOutput)
		if err != nil {
			_ = enc.Encode(map[string]string{"error": err.Error()})
		} else {
			_ = enc.Encode(map[string]string{"output": res})
		}
		_ = out.Flush()
	}
}
