package imagesync

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"poolc.dev/poolc/internal/configschema"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
)

// PluginName is the name the image-sync actuator is built in under.
const PluginName = "image-sync"

// DefaultParallel is how many members the actuator syncs at once unless
// the config's parallel says otherwise.
const DefaultParallel = 4

// ConfigSchema is the CUE schema of the plugin's config block; Config
// documents each setting.
var ConfigSchema = fmt.Sprintf(`{
	source?:  string & =~"^(registry|oci|docker-archive):."
	sources?: [string]: string & =~"^(registry|oci|docker-archive):."
	build?: =~%q
	known_hosts?:   %s
	ssh_key?:       %s
	ssh_user?:      =~"^[a-z_][a-z0-9_-]*$"
	registry_host?: %s
	parallel?: int & >=1 & <=64
	jobs?:     int & >=1 & <=64
	registries?: [string]: {
		plain_http?: bool
		ca_file?:    %s
		cert_file?:  %s
		key_file?:   %s
	}
}`, buildSpelling.Pattern(), configschema.LocalPath, configschema.LocalPath, configschema.Host,
	configschema.LocalPath, configschema.LocalPath, configschema.LocalPath)

// Actuator is the image-sync plugin: it serves the image-sync steps of the
// pod pools whose image_sync names it, and observes which image each of
// their members' registries serves. It is safe for concurrent use.
type Actuator struct {
	version string

	mu      sync.Mutex
	cfg     Config
	workDir string
	members []sdk.Member
	reacher *Reacher
	arts    map[Source]*Artifact
	slots   chan struct{} // one per member synced at once
}

var _ sdk.Actuator = (*Actuator)(nil)

// NewActuator returns the plugin, reporting version.
func NewActuator(version string) *Actuator {
	return &Actuator{version: version, arts: map[Source]*Artifact{}}
}

// Describe names the plugin, its step kind, config schema and what it
// observes: the images of its members, and each step's member afterwards.
func (a *Actuator) Describe(context.Context, sdk.DescribeRequest) sdk.DescribeResponse {
	return sdk.DescribeResponse{Name: PluginName, Version: a.version, StepKinds: sdk.ImageSyncKinds, ConfigSchema: ConfigSchema,
		Capabilities: sdk.Capabilities{Observes: []string{sdk.ObserveImages}, ApplyObserves: true}}
}

// Configure reads the config block, checks every member can be reached
// as configured and makes the SSH pool.
func (a *Actuator) Configure(_ context.Context, req sdk.ConfigureRequest) sdk.ConfigureResponse {
	var cfg Config
	if ds := sdk.DecodeConfig(ConfigSchema, req.ConfigJSON, &cfg); ds.HasErrors() {
		return sdk.ConfigureResponse{Diagnostics: ds}
	}
	for img, s := range cfg.Sources {
		if _, err := ParseSource(s); err != nil {
			return sdk.ConfigureResponse{Diagnostics: sdk.Errorf([]string{"sources", img}, err.Error())}
		}
	}
	if cfg.Source != "" {
		if _, err := ParseSource(cfg.Source); err != nil {
			return sdk.ConfigureResponse{Diagnostics: sdk.Errorf([]string{"source"}, err.Error())}
		}
	}
	for reg := range cfg.Registries {
		if _, err := cfg.SourceTransport(reg, req.WorkDir); err != nil {
			return sdk.ConfigureResponse{Diagnostics: sdk.Errorf([]string{"registries", reg}, err.Error())}
		}
	}
	r, err := NewReacher(cfg, req.WorkDir)
	if err != nil {
		return sdk.ConfigureResponse{Diagnostics: sdk.Errorf([]string{"known_hosts"}, err.Error())}
	}
	var ds sdk.Diagnostics
	for _, m := range req.Inventory.Members {
		if m.Registry == "" {
			continue // a member without a registry gets no image-sync step
		}
		t, err := memberTarget(m, m.Image)
		if err == nil {
			_, err = r.Destination(t)
		}
		if err != nil {
			ds = append(ds, sdk.Diagnostic{Severity: sdk.Error, Summary: fmt.Sprintf("pod_pool %q: %v", m.PodPool, err)})
		}
	}
	if ds.HasErrors() {
		r.Close()
		return sdk.ConfigureResponse{Diagnostics: ds}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.reacher != nil {
		a.reacher.Close()
	}
	a.cfg, a.workDir, a.members, a.reacher = cfg, req.WorkDir, req.Inventory.Members, r
	a.arts = map[Source]*Artifact{}
	parallel := cfg.Parallel
	if parallel <= 0 {
		parallel = DefaultParallel
	}
	a.slots = make(chan struct{}, parallel)
	return sdk.ConfigureResponse{}
}

// Observe reports, for each member with a registry, the pool's image as
// NAME@DIGEST when the member's registry serves it (the digest the pool
// pins, or that of the configured source), and the member without an
// image otherwise. Beside each member it reports the image as the
// member's registry sees it (Fleet.Images): the digest it resolves to
// and, when the source could be read, the bytes a sync would send. A
// member whose registry cannot be asked is reported unobserved (a
// registry target), with the cause, so poolc plans nothing on it; a
// source that cannot be read is a warning (the bytes to send are then
// unknown), never left out silently.
func (a *Actuator) Observe(ctx context.Context, _ sdk.ObserveRequest) sdk.ObserveResponse {
	a.mu.Lock()
	members, slots := a.members, a.slots
	a.mu.Unlock()
	type seen struct {
		member sdk.Member
		obs    observation
		err    error
	}
	var all []*seen
	var wg sync.WaitGroup
	for _, m := range members {
		if m.Registry == "" {
			continue
		}
		s := &seen{member: m}
		all = append(all, s)
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			s.obs, s.err = a.observe(ctx, m)
		})
	}
	wg.Wait()
	var resp sdk.ObserveResponse
	for _, s := range all {
		m := s.member
		var source *SourceError
		if errors.As(s.err, &source) {
			// The registry is not what failed: the image the pool names
			// has no digest to compare with, a warning for the plan (the
			// sync planned then fails saying the same).
			resp.Diagnostics = append(resp.Diagnostics, sdk.Diagnostic{Severity: sdk.Warning,
				Summary: fmt.Sprintf("pod_pool %q member %s: %v", m.PodPool, m.Context, source)})
			continue
		}
		if s.err != nil {
			// Unknown, not empty: poolc keeps the image it recorded.
			resp.Fleet.Unobserved = append(resp.Fleet.Unobserved, sdk.Unobserved{Kind: sdk.TargetRegistry, PodPool: m.PodPool, Context: m.Context,
				Cause: sdk.CauseOf(s.err), Detail: s.err.Error()})
			continue
		}
		if e := s.obs.srcErr; e != nil {
			resp.Diagnostics = append(resp.Diagnostics, sdk.Diagnostic{Severity: sdk.Warning,
				Summary: fmt.Sprintf("pod_pool %q member %s: the bytes an image-sync sends are unknown: %v", m.PodPool, m.Context, e)})
		}
		obs := m
		obs.Image = ""
		held := s.obs.st.Holding(s.obs.want)
		if held {
			obs.Image = pools.ImageName(m.Image) + "@" + s.obs.want.String()
		}
		resp.Fleet.Members = append(resp.Fleet.Members, obs)
		img := sdk.MemberImage{PodPool: m.PodPool, Context: m.Context, Image: m.Image, Digest: s.obs.want.String()}
		switch {
		case held:
		case s.obs.inspected:
			img.MissingBytes = s.obs.st.BytesToMove
		default:
			continue // what a sync would send is not known
		}
		resp.Fleet.Images = append(resp.Fleet.Images, img)
	}
	return resp
}

// observation is what observe finds at one member: the registry's
// status, the digest the pool's image should have there and whether the
// source was compared with the registry (st's bytes to move are known),
// or why not.
type observation struct {
	st        Status
	want      v1.Hash
	inspected bool
	srcErr    error // why the source could not be compared
}

// observe asks m's registry about the pool's image: the digest wanted
// (pinned, or the source's) and whether it is served.
func (a *Actuator) observe(ctx context.Context, m sdk.Member) (observation, error) {
	t, err := memberTarget(m, m.Image)
	if err != nil {
		return observation{}, err
	}
	d, err := a.destination(t)
	if err != nil {
		return observation{}, err
	}
	art, err := a.artifact(ctx, m.Image)
	pin := pools.ImageDigest(m.Image)
	if pin == "" {
		if err != nil {
			return observation{}, &SourceError{Err: err}
		}
		st, err := Observe(ctx, art, d, nil)
		return observation{st: st, want: art.Digest, inspected: true}, err
	}
	want, perr := v1.NewHash(pin)
	if perr != nil {
		return observation{}, perr
	}
	var srcErr error
	switch {
	case err != nil:
		srcErr = err
		art = nil
	case art.Digest != want:
		srcErr = &PinError{Want: want.String(), Got: art.Digest.String()}
		art = nil
	}
	// Without the pinned image at the source what the registry holds is
	// still known, the bytes to move are not: srcErr says why.
	st, err := Observe(ctx, art, d, []v1.Hash{want})
	return observation{st: st, want: want, inspected: art != nil, srcErr: srcErr}, err
}

// Apply syncs the step's image to its member's registry and returns the
// member with the image as NAME@DIGEST, the digest the registry serves.
func (a *Actuator) Apply(ctx context.Context, req sdk.ApplyRequest, progress sdk.ProgressFunc) sdk.ApplyResponse {
	s := req.Step.ImageSync
	if req.Step.Kind != sdk.KindImageSync || s == nil {
		return sdk.ApplyResponse{Diagnostics: sdk.Errorf(nil, fmt.Sprintf("image-sync cannot carry out a %s step", req.Step.Kind))}
	}
	fail := func(err error) sdk.ApplyResponse {
		return sdk.ApplyResponse{Retryable: Retryable(err), Diagnostics: sdk.Errorf(nil, err.Error())}
	}
	t, err := memberTarget(s.Member, s.Image)
	if err != nil {
		return fail(err)
	}
	d, err := a.destination(t)
	if err != nil {
		return fail(err)
	}
	art, err := a.artifact(ctx, s.Image)
	if err != nil {
		return fail(err)
	}
	a.mu.Lock()
	opts := Options{Jobs: a.cfg.Jobs, Build: a.cfg.Build, Want: s.Digest}
	slots := a.slots
	a.mu.Unlock()
	select {
	case slots <- struct{}{}:
		defer func() { <-slots }()
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	opts.Progress = func(p Progress) {
		if progress == nil {
			return
		}
		frac := 1.0
		if p.Total > 0 {
			frac = float64(p.Sent) / float64(p.Total)
		}
		// The bytes say it all: poolc shows "12.4 MB of 30.1 MB sent".
		progress(sdk.Progress{Fraction: frac, BytesDone: p.Sent, BytesTotal: p.Total})
	}
	res := Sync(ctx, art, d, opts)
	if res.Err != nil {
		return fail(res.Err)
	}
	if progress != nil {
		progress(sdk.Progress{Fraction: 1, Message: fmt.Sprintf("%s: %s (tag %s): %d blobs sent (%d bytes of the image's %d), %d mounted, %d present",
			res.Member, res.Reference, res.Tag, res.BlobsSent, res.BytesSent, art.TotalBytes(), res.BlobsMounted, res.BlobsPresent)})
	}
	obs := s.Member
	obs.Image = pools.ImageName(s.Image) + "@" + res.Digest.String()
	return sdk.ApplyResponse{Observed: &sdk.Fleet{Members: []sdk.Member{obs}}}
}

func (a *Actuator) destination(t MemberTarget) (Destination, error) {
	a.mu.Lock()
	r := a.reacher
	a.mu.Unlock()
	if r == nil {
		return Destination{}, fmt.Errorf("image-sync is not configured")
	}
	return r.Destination(t)
}

// artifact loads the source of image once per configuration. Its blobs
// are read later under each sync's own context (Artifact.Open), so the
// call that loaded it (an Observe that has since returned) may end.
func (a *Actuator) artifact(ctx context.Context, image string) (*Artifact, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	src, err := a.cfg.SourceFor(image, a.workDir)
	if err != nil {
		return nil, err
	}
	if art := a.arts[src]; art != nil {
		return art, nil
	}
	var t SourceTransport
	if src.Kind == SourceRegistry {
		ref, err := parseReference(src.Ref)
		if err != nil {
			return nil, err
		}
		if t, err = a.cfg.SourceTransport(ref.Context().RegistryStr(), a.workDir); err != nil {
			return nil, err
		}
	}
	art, err := Load(ctx, src, t)
	if err != nil {
		return nil, err
	}
	a.arts[src] = art
	return art, nil
}

// memberTarget is the MemberTarget of m for image.
func memberTarget(m sdk.Member, image string) (MemberTarget, error) {
	repo, err := pools.ImageRepository(image)
	if err != nil {
		return MemberTarget{}, fmt.Errorf("member %s: %w", m.Context, err)
	}
	host := m.SSHHost
	if host != "" && m.SSHPort != 0 {
		host = net.JoinHostPort(host, strconv.Itoa(m.SSHPort))
	}
	return MemberTarget{Name: m.Context, SSHHost: host, Registry: m.Registry, Repository: repo}, nil
}
