package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"

	"poolc.dev/poolc/internal/configschema"
	"poolc.dev/poolc/plugins/sdk"
)

// PluginName is the name the kube actuator is built in under.
const PluginName = "kube"

// ConfigSchema is the CUE schema of the plugin's config block:
// kubeconfig is the file to read (relative to the pool's directory;
// default: $KUBECONFIG, then ~/.kube/config), drain_on_remove lets
// member-remove delete the pool's Jobs that still run instead of
// refusing, delete_foreign_on_remove lets it delete a namespace poolc
// made that holds objects poolc did not make (kept otherwise).
const ConfigSchema = `{
	kubeconfig?:               ` + configschema.LocalPath + `
	drain_on_remove?:          bool
	delete_foreign_on_remove?: bool
}`

type actuatorConfig struct {
	Kubeconfig            string `json:"kubeconfig"`
	DrainOnRemove         bool   `json:"drain_on_remove"`
	DeleteForeignOnRemove bool   `json:"delete_foreign_on_remove"`
}

func (c actuatorConfig) removeOptions() RemoveOptions {
	return RemoveOptions{Drain: c.DrainOnRemove, DeleteForeign: c.DeleteForeignOnRemove}
}

// Actuator is the kube plugin: it carries out the member-ensure and
// member-remove steps of the pod pools whose cluster names it, and
// observes their members. It is safe for concurrent use.
type Actuator struct {
	version string

	mu  sync.Mutex
	cfg actuatorConfig
	k   *Kubeconfig
	// observed are the members Observe reports: the inventory's, then
	// those leaving the pool (until their member-remove has run).
	observed []sdk.Member
	leaving  int // how many of observed, at its end, are leaving
}

var _ sdk.Actuator = (*Actuator)(nil)

// NewActuator returns the plugin, reporting version.
func NewActuator(version string) *Actuator { return &Actuator{version: version} }

// Describe names the plugin, its step kinds, config schema and what it
// observes: its members, and each step's member afterwards.
func (a *Actuator) Describe(context.Context, sdk.DescribeRequest) sdk.DescribeResponse {
	return sdk.DescribeResponse{Name: PluginName, Version: a.version, StepKinds: sdk.ClusterKinds, ConfigSchema: ConfigSchema,
		Capabilities: sdk.Capabilities{Observes: []string{sdk.ObserveMembers}, ApplyObserves: true}}
}

// Configure reads the config block and the kubeconfig, and checks every
// member could be set up. A context the kubeconfig lacks is not an error
// here: member-ensure may create it (k3d) or say why it cannot.
func (a *Actuator) Configure(_ context.Context, req sdk.ConfigureRequest) sdk.ConfigureResponse {
	var cfg actuatorConfig
	if ds := sdk.DecodeConfig(ConfigSchema, req.ConfigJSON, &cfg); ds.HasErrors() {
		return sdk.ConfigureResponse{Diagnostics: ds}
	}
	var ds sdk.Diagnostics
	for _, m := range req.Inventory.Members {
		if err := fromSDK(m).Check(); err != nil {
			ds = append(ds, sdk.Diagnostic{Severity: sdk.Error, Summary: fmt.Sprintf("pod_pool %q: %v", m.PodPool, err)})
		}
	}
	k, err := LoadKubeconfig(KubeconfigFile(cfg.Kubeconfig, req.WorkDir))
	if err != nil {
		ds = append(ds, sdk.Errorf([]string{"kubeconfig"}, err.Error())...)
	}
	if ds.HasErrors() {
		return sdk.ConfigureResponse{Diagnostics: ds}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cfg, a.k = cfg, k
	a.observed = append(slices.Clone(req.Inventory.Members), req.Inventory.Leaving...)
	a.leaving = len(req.Inventory.Leaving)
	return sdk.ConfigureResponse{}
}

func fromSDK(m sdk.Member) Member {
	return Member{Pool: m.PodPool, Context: m.Context, Namespace: m.Namespace, Capacity: m.Capacity, Registry: m.Registry, PodMemoryGB: m.PodMemoryGB}
}

// Observe reports each member whose namespace exists, the inventory's
// and those leaving the pool (so a member dropped from the config is
// still seen, and removed), as its cluster holds it: the quota's Job
// limit as the capacity, the LimitRange's memory as the pod memory and
// the published registry, so any of them edited or deleted by hand shows
// as a change; never an image (the image-sync plugin reads registries).
// For each leaving member a warning says what its member-remove will
// delete and keep. A member whose cluster cannot be observed is reported
// unobserved, with the cause, so poolc plans nothing on it.
func (a *Actuator) Observe(ctx context.Context, _ sdk.ObserveRequest) sdk.ObserveResponse {
	a.mu.Lock()
	k, members, leaving, cfg := a.k, a.observed, a.leaving, a.cfg
	a.mu.Unlock()
	var resp sdk.ObserveResponse
	if k == nil {
		resp.Diagnostics = sdk.Errorf(nil, "the kube plugin is not configured")
		return resp
	}
	for i, m := range members {
		o, err := k.Observe(ctx, fromSDK(m))
		if err != nil {
			// Unknown, not absent: poolc keeps the member it recorded.
			resp.Fleet.Unobserved = append(resp.Fleet.Unobserved, sdk.Unobserved{Kind: sdk.TargetMember, PodPool: m.PodPool, Context: m.Context,
				Cause: sdk.CauseOf(err), Detail: err.Error()})
			continue
		}
		got, ok := observedMember(m, o)
		if !ok {
			continue
		}
		resp.Fleet.Members = append(resp.Fleet.Members, got)
		if i >= len(members)-leaving {
			resp.Diagnostics = append(resp.Diagnostics, removalNotice(ctx, k, m, cfg))
		}
	}
	return resp
}

// removalNotice says, for the plan, what the member-remove of leaving
// member m will delete and keep, as read from its cluster now.
func removalNotice(ctx context.Context, k *Kubeconfig, m sdk.Member, cfg actuatorConfig) sdk.Diagnostic {
	rm, err := k.PlanRemove(ctx, fromSDK(m), cfg.removeOptions())
	if err != nil {
		return sdk.Diagnostic{Severity: sdk.Warning, Summary: fmt.Sprintf("member-remove of %s (pod_pool %q): what it would delete cannot be read: %v", m.Context, m.PodPool, err)}
	}
	return sdk.Diagnostic{Severity: sdk.Warning, Summary: fmt.Sprintf("member-remove of %s (pod_pool %q) %s", m.Context, m.PodPool, rm)}
}

// observedMember is m as o saw it; ok is false when the namespace is
// missing. A field Ensure would change differs from m's; one it would
// leave (a registry ConfigMap someone else publishes) keeps m's value.
func observedMember(m sdk.Member, o Observed) (sdk.Member, bool) {
	if !o.NamespaceExists {
		return sdk.Member{}, false
	}
	got := m
	got.Image = "" // an image-sync plugin observes images, by reading the registry
	got.Capacity = 0
	if o.Quota != nil && !o.Quota.Extra {
		got.Capacity = int(o.Quota.Hard)
	}
	got.PodMemoryGB = 0
	if want, ok := fromSDK(m).PodMemory(); ok && want.String() == o.PodMemory {
		got.PodMemoryGB = m.PodMemoryGB
	} else if q, err := resource.ParseQuantity(o.PodMemory); err == nil {
		got.PodMemoryGB = q.AsApproximateFloat64() / 1e9
	}
	switch {
	case o.RegistryOurs:
		got.Registry = o.Registry
	case o.Registry == "":
		got.Registry = ""
	default: // published by k3d or kind: Ensure leaves it, so no change
		got.Registry = m.Registry
	}
	return got, true
}

// Apply carries out a member-ensure or member-remove step, reporting each
// object it changed as progress and what it left alone as warnings. An
// unreachable cluster is retryable; a member-remove refused because Jobs
// still run is not.
func (a *Actuator) Apply(ctx context.Context, req sdk.ApplyRequest, progress sdk.ProgressFunc) sdk.ApplyResponse {
	a.mu.Lock()
	k, cfg := a.k, a.cfg
	a.mu.Unlock()
	s := req.Step
	if k == nil {
		return sdk.ApplyResponse{Diagnostics: sdk.Errorf(nil, "the kube plugin is not configured")}
	}
	if s.Member == nil {
		return sdk.ApplyResponse{Diagnostics: sdk.Errorf(nil, fmt.Sprintf("step %s (%s) has no member", s.ID, s.Kind))}
	}
	m := fromSDK(*s.Member)
	var (
		r   Result
		err error
	)
	switch s.Kind {
	case sdk.KindMemberEnsure:
		r, err = k.Ensure(ctx, m)
	case sdk.KindMemberRemove:
		r, err = k.Remove(ctx, m, cfg.removeOptions())
	default:
		return sdk.ApplyResponse{Diagnostics: sdk.Errorf(nil, fmt.Sprintf("the kube plugin does not carry out %s steps", s.Kind))}
	}
	for _, c := range r.Changed {
		progress(sdk.Progress{Message: c, Fraction: -1})
	}
	var resp sdk.ApplyResponse
	for _, w := range r.Warnings {
		resp.Diagnostics = append(resp.Diagnostics, sdk.Diagnostic{Severity: sdk.Warning, Summary: w})
	}
	if err != nil {
		var ce *ContextError
		resp.Retryable = errors.As(err, &ce) && !ce.Missing
		resp.Diagnostics = append(resp.Diagnostics, sdk.Diagnostic{Severity: sdk.Error, Summary: err.Error()})
		return resp
	}
	resp.Observed = &sdk.Fleet{}
	if s.Kind == sdk.KindMemberEnsure {
		o, err := k.Observe(ctx, m)
		if err != nil {
			resp.Diagnostics = append(resp.Diagnostics, sdk.Diagnostic{Severity: sdk.Warning, Summary: err.Error()})
			resp.Observed = nil
			return resp
		}
		if got, ok := observedMember(*s.Member, o); ok {
			resp.Observed.Members = []sdk.Member{got}
		}
	}
	return resp
}
