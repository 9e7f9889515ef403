// Package chart renders a Helm chart the way the original inter-operator did, with Helm's own
// chart loader, values coalescing, capabilities and template engine: the chart's templates and
// those of its subcharts, and its crds/, as one multi-document YAML text.
package chart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
)

// Request is what one render needs besides the chart archive.
type Request struct {
	// Values is YAML: merged over the chart's values.yaml as `helm install -f` merges it.
	Values string `json:"values"`
	// Release is the release's name; Namespace its namespace.
	Release   string `json:"release"`
	Namespace string `json:"namespace"`
	// KubeVersion ("v1.31.0") and APIVersions ("apps/v1", "apps/v1/Deployment", ...) are the target
	// cluster's; without them, Helm's defaults (as in `helm template`).
	KubeVersion string   `json:"kubeVersion"`
	APIVersions []string `json:"apiVersions"`
	// KubeMajor and KubeMinor are the cluster's own (`/version`'s major and minor, "31+" on some
	// clusters); read from KubeVersion when empty.
	KubeMajor string `json:"kubeMajor"`
	KubeMinor string `json:"kubeMinor"`
}

// OutputTooLargeError is a render whose output is over its limit.
type OutputTooLargeError struct{ Limit int }

func (e *OutputTooLargeError) Error() string {
	return fmt.Sprintf("the chart's output exceeds the limit of %d bytes", e.Limit)
}

// ChartError is a chart archive that cannot be read.
type ChartError struct{ Err error }

func (e *ChartError) Error() string { return "the chart cannot be loaded: " + e.Err.Error() }
func (e *ChartError) Unwrap() error { return e.Err }

func capabilities(req Request) (*chartutil.Capabilities, error) {
	caps := chartutil.DefaultCapabilities.Copy()
	if req.KubeVersion != "" {
		kube, err := chartutil.ParseKubeVersion(req.KubeVersion)
		if err != nil {
			return nil, fmt.Errorf("the cluster's Kubernetes version %q: %w", req.KubeVersion, err)
		}
		caps.KubeVersion = *kube
		if req.KubeMajor != "" {
			caps.KubeVersion.Major = req.KubeMajor
		}
		if req.KubeMinor != "" {
			caps.KubeVersion.Minor = req.KubeMinor
		}
	}
	if req.APIVersions != nil {
		caps.APIVersions = chartutil.VersionSet(req.APIVersions)
	}
	return caps, nil
}

// Render renders the chart archive (a gzipped tarball) with the request's values, release and
// capabilities, and returns its manifests: every rendered template of the chart and its subcharts
// and every file of their crds/, NOTES.txt and partials (`_*`) left out, in the order of their
// names, each document after a `---` line and a `# Source:` comment. `lookup` finds nothing.
func Render(archive []byte, requestJSON string, maxOutput int) (string, error) {
	var req Request
	if err := json.Unmarshal([]byte(requestJSON), &req); err != nil {
		return "", fmt.Errorf("the render request is not valid: %w", err)
	}
	chrt, err := loader.LoadArchive(bytes.NewReader(archive))
	if err != nil {
		return "", &ChartError{err}
	}
	values, err := chartutil.ReadValues([]byte(req.Values))
	if err != nil {
		return "", fmt.Errorf("the values are not valid YAML: %w", err)
	}
	if err := chartutil.ProcessDependenciesWithMerge(chrt, values); err != nil {
		return "", err
	}
	caps, err := capabilities(req)
	if err != nil {
		return "", err
	}
	if chrt.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(chrt.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return "", fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", chrt.Metadata.KubeVersion, caps.KubeVersion.String())
	}
	options := chartutil.ReleaseOptions{Name: req.Release, Namespace: req.Namespace, Revision: 1, IsInstall: true}
	toRender, err := chartutil.ToRenderValues(chrt, values, options, caps)
	if err != nil {
		return "", err
	}
	var e engine.Engine
	files, err := e.Render(chrt, toRender)
	if err != nil {
		return "", err
	}
	for _, crd := range chrt.CRDObjects() {
		files[crd.Filename] = string(crd.File.Data)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		base := path.Base(name)
		if base == "NOTES.txt" || strings.HasPrefix(base, "_") {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	var out strings.Builder
	for _, name := range names {
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", name, files[name])
		if maxOutput > 0 && out.Len() > maxOutput {
			return "", &OutputTooLargeError{maxOutput}
		}
	}
	return out.String(), nil
}
