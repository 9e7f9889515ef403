// Command service-fabrik-render renders Service Fabrik's sample plans with Service Fabrik's own
// inter-operator code and writes what it rendered, as the expected outputs of
// test/unit/templates/service-fabrik-samples.test.ts. It is built inside a copy of Service
// Fabrik's interoperator module (render.sh makes it), so it uses that module's code as it is:
// its typed records, its renderer factory and renderers (gotemplate and helm) and its resource
// manager (sources, expected resources, status), over a controller-runtime fake client that
// holds the sample's records and objects.
//
// Usage: service-fabrik-render <sample dir>...
//
// A sample dir holds sample.yaml (below), the files it names, and gets expected/ written:
//
//	plan: plan.yaml          # the SFPlan
//	service: service.yaml    # the SFService
//	instance: instance.yaml  # the SFServiceInstance
//	binding: binding.yaml    # the SFServiceBinding
//	cluster: cluster.yaml    # the objects in the instance's namespace (YAML documents)
//	templates:               # added to the plan's templates, each `content` read from `file`
//	- {action: provision, type: gotemplate, file: provision.yaml}
//	- {action: provision, type: helm, chart: chart.tgz, file: values.yaml}  # chart served over HTTP
//
// For the instance (no binding) the provision, sources and status templates render; for the
// binding the bind, unbind, sources and status templates: each as
// expected/<instance|binding>.<action>.txt (one rendered file) or .files.json (a helm chart's
// files by name), or .error.txt when Service Fabrik fails it. provision, bind and unbind also
// give .objects.json: the objects Service Fabrik would apply (ComputeExpectedResources); status
// gives .status.json: the status Service Fabrik reads (ComputeStatus).
package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	osbv1alpha1 "github.com/cloudfoundry-incubator/service-fabrik-broker/interoperator/api/osb/v1alpha1"
	"github.com/cloudfoundry-incubator/service-fabrik-broker/interoperator/internal/dynamic"
	"github.com/cloudfoundry-incubator/service-fabrik-broker/interoperator/internal/resources"
	"github.com/cloudfoundry-incubator/service-fabrik-broker/interoperator/pkg/constants"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"
)

type sampleTemplate struct {
	Action string `json:"action"`
	Type   string `json:"type"`
	File   string `json:"file,omitempty"`
	Chart  string `json:"chart,omitempty"`
}

type sample struct {
	Plan      string           `json:"plan"`
	Service   string           `json:"service"`
	Instance  string           `json:"instance"`
	Binding   string           `json:"binding"`
	Cluster   string           `json:"cluster"`
	Templates []sampleTemplate `json:"templates"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: service-fabrik-render <sample dir>...")
		os.Exit(2)
	}
	for _, dir := range os.Args[1:] {
		if err := renderSample(dir); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", dir, err)
			os.Exit(1)
		}
	}
}

func readYAML(dir, file string, into interface{}) error {
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return err
	}
	return yaml.Unmarshal(data, into)
}

func renderSample(dir string) error {
	var s sample
	if err := readYAML(dir, "sample.yaml", &s); err != nil {
		return err
	}
	plan := &osbv1alpha1.SFPlan{}
	service := &osbv1alpha1.SFService{}
	instance := &osbv1alpha1.SFServiceInstance{}
	binding := &osbv1alpha1.SFServiceBinding{}
	for file, into := range map[string]interface{}{s.Plan: plan, s.Service: service, s.Instance: instance, s.Binding: binding} {
		if err := readYAML(dir, file, into); err != nil {
			return fmt.Errorf("%s: %v", file, err)
		}
	}
	for _, t := range s.Templates {
		spec := osbv1alpha1.TemplateSpec{Action: t.Action, Type: t.Type}
		if t.File != "" {
			content, err := os.ReadFile(filepath.Join(dir, t.File))
			if err != nil {
				return err
			}
			spec.Content = string(content)
		}
		if t.Chart != "" {
			chart, err := os.ReadFile(filepath.Join(dir, t.Chart))
			if err != nil {
				return err
			}
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/gzip")
				_, _ = w.Write(chart)
			}))
			defer server.Close()
			spec.URL = server.URL + "/" + filepath.Base(t.Chart)
		}
		plan.Spec.Templates = append(plan.Spec.Templates, spec)
	}
	// The catalog is where the inter-operator looks it up (services.FindServiceInfo).
	plan.SetNamespace(constants.InteroperatorNamespace)
	service.SetNamespace(constants.InteroperatorNamespace)

	clusterText, err := os.ReadFile(filepath.Join(dir, s.Cluster))
	if err != nil {
		return err
	}
	objects, err := dynamic.StringToUnstructured(string(clusterText))
	if err != nil {
		return fmt.Errorf("%s: %v", s.Cluster, err)
	}

	scheme := runtime.NewScheme()
	if err := osbv1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, kind := range []string{"SFService", "SFPlan", "SFServiceInstance", "SFServiceBinding"} {
		mapper.Add(osbv1alpha1.GroupVersion.WithKind(kind), meta.RESTScopeNamespace)
	}
	initial := []client.Object{plan, service, instance, binding}
	for _, obj := range objects {
		mapper.Add(schema.FromAPIVersionAndKind(obj.GetAPIVersion(), obj.GetKind()), meta.RESTScopeNamespace)
		initial = append(initial, obj)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).WithObjects(initial...).Build()

	out := filepath.Join(dir, "expected")
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	manager := resources.New()
	namespace := instance.GetNamespace()
	serviceID, planID := instance.Spec.ServiceID, instance.Spec.PlanID
	has := func(action string) bool {
		_, err := plan.GetTemplate(action)
		return err == nil
	}
	for _, ctx := range []struct {
		name, bindingID string
		actions         []string
	}{
		{"instance", "", []string{"provision", "sources", "status"}},
		{"binding", binding.GetName(), []string{"bind", "unbind", "sources", "status"}},
	} {
		for _, action := range ctx.actions {
			if !has(action) {
				continue
			}
			base := filepath.Join(out, ctx.name+"."+action)
			var files map[string]string
			if action == "sources" {
				files, err = resources.SampleSources(c, instance.GetName(), ctx.bindingID, serviceID, planID, namespace)
			} else {
				files, err = resources.SampleFiles(c, instance.GetName(), ctx.bindingID, serviceID, planID, namespace, action)
			}
			if err != nil {
				if err := write(base+".error.txt", err.Error()+"\n"); err != nil {
					return err
				}
				continue
			}
			if text, ok := files["main"]; ok && len(files) == 1 {
				err = write(base+".txt", text)
			} else {
				err = writeJSON(base+".files.json", files)
			}
			if err != nil {
				return err
			}
			switch action {
			case "provision", "bind", "unbind":
				expected, err := manager.ComputeExpectedResources(c, instance.GetName(), ctx.bindingID, serviceID, planID, action, namespace)
				if err != nil {
					err = write(base+".objects.error.txt", err.Error()+"\n")
				} else {
					objs := make([]interface{}, 0, len(expected))
					for _, obj := range expected {
						objs = append(objs, obj.Object)
					}
					err = writeJSON(base+".objects.json", objs)
				}
				if err != nil {
					return err
				}
			case "status":
				status, err := manager.ComputeStatus(c, instance.GetName(), ctx.bindingID, serviceID, planID, "", namespace)
				if err != nil {
					err = write(base+".status.error.txt", err.Error()+"\n")
				} else {
					err = writeJSON(base+".status.json", status)
				}
				if err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func write(path, text string) error {
	return os.WriteFile(path, []byte(text), 0o644)
}

func writeJSON(path string, v interface{}) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return write(path, strings.TrimRight(string(data), "\n")+"\n")
}
