//go:build tools

// Package tools pins the Kubernetes commands this module builds: the control plane's
// (kube-apiserver, kube-controller-manager) and a node's (kubelet, kube-proxy, kube-scheduler).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
