// This file is copied into a copy of Service Fabrik's interoperator module, as
// internal/resources/export_samples.go, by tools/service-fabrik-render/render.sh: it only
// exposes, for that tool, what the package's own unexported functions render. Nothing here
// renders on its own.

package resources

import (
	osbv1alpha1 "github.com/cloudfoundry-incubator/service-fabrik-broker/interoperator/api/osb/v1alpha1"
	"github.com/cloudfoundry-incubator/service-fabrik-broker/interoperator/internal/dynamic"
	"github.com/cloudfoundry-incubator/service-fabrik-broker/interoperator/internal/renderer"
	rendererFactory "github.com/cloudfoundry-incubator/service-fabrik-broker/interoperator/internal/renderer/factory"
	"k8s.io/apimachinery/pkg/types"
	kubernetes "sigs.k8s.io/controller-runtime/pkg/client"
)

// SampleFiles renders the plan's template for action as the inter-operator does for the
// records named (fetchResources, then renderTemplate: the sources fetched first) and returns
// the rendered files by name.
func SampleFiles(c kubernetes.Client, instanceID, bindingID, serviceID, planID, namespace, action string) (map[string]string, error) {
	instance, binding, service, plan, err := fetchResources(c, instanceID, bindingID, serviceID, planID, namespace)
	if err != nil {
		return nil, err
	}
	output, err := renderTemplate(c, instance, binding, service, plan, action)
	if err != nil {
		return nil, err
	}
	return filesOf(output)
}

// SampleSources renders the plan's sources template over what computeInputObjects gives it
// (the records through dynamic.ObjectToMapInterface), the way computeInputObjects renders it.
func SampleSources(c kubernetes.Client, instanceID, bindingID, serviceID, planID, namespace string) (map[string]string, error) {
	instance, binding, service, plan, err := fetchResources(c, instanceID, bindingID, serviceID, planID, namespace)
	if err != nil {
		return nil, err
	}
	values := make(map[string]interface{})
	for key, obj := range map[string]interface{}{"service": service, "plan": plan, "instance": instance} {
		if values[key], err = dynamic.ObjectToMapInterface(obj); err != nil {
			return nil, err
		}
	}
	if binding != nil {
		if values["binding"], err = dynamic.ObjectToMapInterface(binding); err != nil {
			return nil, err
		}
	}
	template, err := plan.GetTemplate(osbv1alpha1.SourcesAction)
	if err != nil {
		return nil, err
	}
	r, err := rendererFactory.GetRenderer(template.Type, nil)
	if err != nil {
		return nil, err
	}
	name := types.NamespacedName{Namespace: instance.GetNamespace(), Name: instance.GetName()}
	input, err := rendererFactory.GetRendererInputFromSources(template, name, values)
	if err != nil {
		return nil, err
	}
	output, err := r.Render(input)
	if err != nil {
		return nil, err
	}
	return filesOf(output)
}

func filesOf(output renderer.Output) (map[string]string, error) {
	names, err := output.ListFiles()
	if err != nil {
		return nil, err
	}
	files := make(map[string]string, len(names))
	for _, name := range names {
		if files[name], err = output.FileContent(name); err != nil {
			return nil, err
		}
	}
	return files, nil
}
