package kube

import (
	"fmt"
	"net"

	"sigs.k8s.io/yaml"
)

// RegistryHosting is the KEP-1755 LocalRegistryHostingV1 document that
// kube-public/local-registry-hosting holds: where the cluster's local
// registry is reached from the host, from the container runtime and from
// inside the cluster.
type RegistryHosting struct {
	Host                     string `json:"host,omitempty"`
	HostFromContainerRuntime string `json:"hostFromContainerRuntime,omitempty"`
	HostFromClusterNetwork   string `json:"hostFromClusterNetwork,omitempty"`
	Help                     string `json:"help,omitempty"`
}

// hostingFor is the document poolc publishes for a NAME:PORT registry, as
// k3d lays it out: the cluster reaches the registry by its container name,
// the member's host on localhost at the same port.
func hostingFor(registry string) RegistryHosting {
	_, port, _ := net.SplitHostPort(registry)
	return RegistryHosting{
		Host:                     "localhost:" + port,
		HostFromContainerRuntime: registry,
		HostFromClusterNetwork:   registry,
	}
}

// Registry is the NAME:PORT the document says the cluster pulls from:
// hostFromClusterNetwork, else hostFromContainerRuntime, else host.
func (h RegistryHosting) Registry() string {
	for _, s := range []string{h.HostFromClusterNetwork, h.HostFromContainerRuntime, h.Host} {
		if s != "" {
			return s
		}
	}
	return ""
}

// ParseRegistryHosting reads a LocalRegistryHostingV1 document (YAML or
// JSON). Unknown fields are ignored, as KEP-1755 asks of readers.
func ParseRegistryHosting(doc []byte) (RegistryHosting, error) {
	var h RegistryHosting
	if err := yaml.Unmarshal(doc, &h); err != nil {
		return RegistryHosting{}, fmt.Errorf("%s: %w", RegistryKey, err)
	}
	return h, nil
}

// Render returns the document as YAML.
func (h RegistryHosting) Render() string {
	b, err := yaml.Marshal(h)
	if err != nil { // a struct of strings always marshals
		panic(err)
	}
	return string(b)
}
