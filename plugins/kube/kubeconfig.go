// Package kube sets up the members of a pod pool on Kubernetes clusters
// through client-go: per member a namespace, a ResourceQuota that caps the
// member's Jobs at its capacity, a LimitRange with the pool's pod memory
// limit and the member's registry published in the KEP-1755
// local-registry-hosting ConfigMap. It also observes them, so a plan sees a
// hand-edited quota, and removes exactly what it made.
//
// The cap is the API server's: a ResourceQuota on count/jobs.batch makes
// it refuse a Job over the capacity atomically, whoever creates it, so
// launchers on many hosts are held to it (see package launch).
package kube

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"poolc.dev/poolc/pools"
)

// DefaultTimeout bounds each request to a member's API server, and the
// reachability check made before a context's first use.
const DefaultTimeout = 15 * time.Second

// Kubeconfig holds the kubeconfig poolc was given and one client per
// context, made on first use. It is safe for concurrent use.
type Kubeconfig struct {
	rules   *clientcmd.ClientConfigLoadingRules
	raw     clientcmdapi.Config
	mu      sync.Mutex
	clients map[string]kubernetes.Interface
	configs map[string]*rest.Config // of the clients made
	mds     map[string]metadata.Interface
}

// LoadKubeconfig reads the kubeconfig as kubectl does: path when given,
// else the files in $KUBECONFIG (merged), else ~/.kube/config.
func LoadKubeconfig(path string) (*Kubeconfig, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	raw, err := rules.Load()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return &Kubeconfig{rules: rules, raw: *raw, clients: map[string]kubernetes.Interface{}, configs: map[string]*rest.Config{}, mds: map[string]metadata.Interface{}}, nil
}

// Sources names the files the kubeconfig was read from, for messages.
func (k *Kubeconfig) Sources() string {
	if k.rules.ExplicitPath != "" {
		return k.rules.ExplicitPath
	}
	return strings.Join(k.rules.Precedence, ":")
}

// writeFile is the file a new context goes in, as kubectl picks it: the
// explicit path, else the first existing file of $KUBECONFIG (the last
// when none exists), else ~/.kube/config.
func (k *Kubeconfig) writeFile() string {
	if k.rules.ExplicitPath != "" {
		return k.rules.ExplicitPath
	}
	return k.rules.GetDefaultFilename()
}

// reload reads the kubeconfig files again, after k3d added a context.
func (k *Kubeconfig) reload() error {
	raw, err := k.rules.Load()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	k.mu.Lock()
	k.raw = *raw
	k.mu.Unlock()
	return nil
}

// Contexts lists the kubeconfig's context names, sorted.
func (k *Kubeconfig) Contexts() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]string, 0, len(k.raw.Contexts))
	for n := range k.raw.Contexts {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// HasContext reports whether the kubeconfig defines the context.
func (k *Kubeconfig) HasContext(name string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.raw.Contexts[name]
	return ok
}

// ContextError is the error for a context that is missing from the
// kubeconfig or whose API server does not answer.
type ContextError struct {
	Context string
	// Missing is true when the kubeconfig has no such context.
	Missing bool
	Detail  string
	// Err is the failure of the API server's answer, for its cause.
	Err error
}

// Unwrap returns Err, so that a refused or timed-out connection is seen
// through the error (sdk.CauseOf).
func (e *ContextError) Unwrap() error { return e.Err }

// Error implements error.
func (e *ContextError) Error() string {
	if e.Missing {
		return fmt.Sprintf("kube context %q is not in the kubeconfig (%s)", e.Context, e.Detail)
	}
	return fmt.Sprintf("kube context %q is unreachable: %s", e.Context, e.Detail)
}

// Client returns the client of the named context, checking on first use
// that the context exists and that its API server answers.
func (k *Kubeconfig) Client(ctx context.Context, name string) (kubernetes.Interface, error) {
	k.mu.Lock()
	c, ok := k.clients[name]
	raw := k.raw
	k.mu.Unlock()
	if ok {
		return c, nil
	}
	kctx, ok := raw.Contexts[name]
	if !ok {
		have := k.Contexts()
		detail := k.Sources()
		if len(have) > 0 {
			detail += "; it has " + strings.Join(have, ", ")
		} else {
			detail += "; it has no contexts"
		}
		return nil, &ContextError{Context: name, Missing: true, Detail: detail}
	}
	cfg, err := clientcmd.NewNonInteractiveClientConfig(raw, name, &clientcmd.ConfigOverrides{}, k.rules).ClientConfig()
	if err != nil {
		return nil, &ContextError{Context: name, Detail: err.Error()}
	}
	cfg.Timeout = DefaultTimeout
	// Launchers submit in bursts; the API server, not the client, is the
	// one to say no.
	cfg.QPS, cfg.Burst = 100, 200
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, &ContextError{Context: name, Detail: err.Error()}
	}
	pctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	if err := cs.Discovery().RESTClient().Get().AbsPath("/version").Do(pctx).Error(); err != nil {
		server := ""
		if cl := raw.Clusters[kctx.Cluster]; cl != nil {
			server = cl.Server
		}
		return nil, &ContextError{Context: name, Detail: fmt.Sprintf("server %s: %v", server, err), Err: err}
	}
	k.mu.Lock()
	k.clients[name] = cs
	k.configs[name] = cfg
	k.mu.Unlock()
	return cs, nil
}

// withMetadata returns the typed client of the named context, as Client
// does, and a metadata client (which reads any kind of object by its
// metadata) of the same context.
func (k *Kubeconfig) withMetadata(ctx context.Context, name string) (kubernetes.Interface, metadata.Interface, error) {
	cs, err := k.Client(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if md := k.mds[name]; md != nil {
		return cs, md, nil
	}
	md, err := metadata.NewForConfig(k.configs[name])
	if err != nil {
		return nil, nil, &ContextError{Context: name, Detail: err.Error()}
	}
	k.mds[name] = md
	return cs, md, nil
}

// KubeconfigFile is the kubeconfig file the kube plugin reads when its
// config block sets kubeconfig to setting, for a pool whose files are in
// dir: setting itself, relative to dir unless absolute, or "" when unset
// (then LoadKubeconfig reads $KUBECONFIG, then ~/.kube/config). The
// plugin and the pods commands both decide it here, so they read the same
// file.
func KubeconfigFile(setting, dir string) string {
	if setting == "" || filepath.IsAbs(setting) || dir == "" {
		return setting
	}
	return filepath.Join(dir, setting)
}

// PodPoolKubeconfig is the kubeconfig file of pod pool pp of p, whose
// files are in dir, as its cluster plugin reads it: the kubeconfig of
// the plugin block that pp's cluster names (KubeconfigFile), "" when the
// block sets none or pp's cluster is not declared.
func PodPoolKubeconfig(p *pools.Pool, pp pools.PodPool, dir string) string {
	for _, pl := range p.Plugins {
		if pl.Name != pp.Cluster {
			continue
		}
		if s, ok := pl.Config["kubeconfig"].(string); ok {
			return KubeconfigFile(s, dir)
		}
	}
	return ""
}
