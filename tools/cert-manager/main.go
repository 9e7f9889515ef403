// Command cert-manager-controller runs cert-manager's own control loops from its Go module: the
// Issuer and ClusterIssuer loops, the Certificate loops, the CertificateRequest approver and the
// self-signed and CA signers. cert-manager's command lives in a module of its own that the module
// proxy does not serve, so this is the part of that command the tests need: no leader election,
// no webhook, no metrics or health servers, one process per cluster.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/klog/v2"

	"github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

func main() {
	klog.InitFlags(nil)
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster to reconcile")
	namespace := flag.String("namespace", "", "namespace to reconcile (default: all)")
	clusterResourceNamespace := flag.String("cluster-resource-namespace", "cert-manager",
		"namespace of the Secrets that ClusterIssuers refer to")
	ownerRef := flag.Bool("enable-certificate-owner-ref", false,
		"make each Certificate the owner of its Secret, so that the Secret goes with it")
	workers := flag.Int("concurrent-workers", 5, "workers per control loop")
	enabled := flag.String("controllers", "*", "comma-separated control loops to run ('*' for all built in)")
	minBackoff := flag.Duration("certificate-request-minimum-backoff-duration", time.Hour,
		"first wait before a failed issuance is tried again")
	flag.Parse()

	if err := run(*kubeconfig, *namespace, *clusterResourceNamespace, *ownerRef, *workers, *enabled, *minBackoff); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager-controller:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, namespace, clusterResourceNamespace string, ownerRef bool, workers int, enabled string, minBackoff time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	klog.EnableContextualLogging(true)
	ctx = logf.NewContext(ctx, logf.Log)

	known := controller.Known()
	names, err := selectControllers(known, enabled)
	if err != nil {
		return err
	}

	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		Kubeconfig:    kubeconfig,
		Namespace:     namespace,
		IssuerOptions: controller.IssuerOptions{ClusterResourceNamespace: clusterResourceNamespace},
		CertificateOptions: controller.CertificateOptions{
			EnableOwnerRef:                           ownerRef,
			CertificateRequestMinimumBackoffDuration: minBackoff,
			CertificateRequestMaximumBackoffDuration: 32 * minBackoff,
		},
	})
	if err != nil {
		return err
	}
	base, err := factory.Build()
	if err != nil {
		return err
	}

	g, ctx := errgroup.WithContext(ctx)
	for _, name := range names {
		loop, err := known[name](factory)
		if err != nil {
			return fmt.Errorf("building control loop %s: %w", name, err)
		}
		g.Go(func() error { return loop.Run(workers, ctx) })
	}
	fmt.Fprintf(os.Stderr, "cert-manager-controller: running %s\n", strings.Join(names, ","))
	base.SharedInformerFactory.Start(ctx.Done())
	base.KubeSharedInformerFactory.Start(ctx.Done())
	base.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	err = g.Wait()
	base.HTTP01ResourceMetadataInformersFactory.Shutdown()
	base.KubeSharedInformerFactory.Shutdown()
	base.SharedInformerFactory.Shutdown()
	if err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// selectControllers resolves the --controllers list: '*' for every registered loop, a trailing
// '*' for a prefix ('certificates-*'), else exact names.
func selectControllers(known map[string]controller.Constructor, enabled string) ([]string, error) {
	chosen := map[string]bool{}
	for _, want := range strings.Split(enabled, ",") {
		want = strings.TrimSpace(want)
		if want == "" {
			continue
		}
		matched := false
		for name := range known {
			if want == "*" || name == want || (strings.HasSuffix(want, "*") && strings.HasPrefix(name, strings.TrimSuffix(want, "*"))) {
				chosen[name] = true
				matched = true
			}
		}
		if !matched {
			return nil, fmt.Errorf("unknown control loop %q", want)
		}
	}
	names := make([]string, 0, len(chosen))
	for name := range chosen {
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return nil, fmt.Errorf("no control loop selected")
	}
	return names, nil
}
