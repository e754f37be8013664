package imagesync

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
)

func TestParseSSHHost(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want SSHHost
		err  bool
	}{
		{in: "node-b", want: SSHHost{Host: "node-b"}},
		{in: "ops@node-b:2222", want: SSHHost{User: "ops", Host: "node-b", Port: 2222}},
		{in: "10.0.0.7:22", want: SSHHost{Host: "10.0.0.7", Port: 22}},
		{in: "[fe80::1]:2200", want: SSHHost{Host: "fe80::1", Port: 2200}},
		{in: "fe80::1", want: SSHHost{Host: "fe80::1"}},
		{in: "", err: true},
		{in: "@node", err: true},
		{in: "node:0", err: true},
		{in: "node:99999", err: true},
		{in: "node:x", err: true},
		{in: "a b", err: true},
		{in: "u@", err: true},
	} {
		got, err := ParseSSHHost(tc.in)
		if tc.err != (err != nil) || (!tc.err && got != tc.want) {
			t.Errorf("ParseSSHHost(%q) = %+v, %v", tc.in, got, err)
		}
	}
}

func FuzzParseSSHHost(f *testing.F) {
	for _, s := range []string{"node", "u@h:22", "[::1]:22", "::1", "u@@h", "h:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseSSHHost(s)
		if err != nil {
			return
		}
		back, err := ParseSSHHost(h.String())
		if err != nil || back != h {
			t.Fatalf("%q parsed to %+v, prints %q, reads back %+v, %v", s, h, h.String(), back, err)
		}
	})
}

func TestReacherDestinations(t *testing.T) {
	reg := newTestRegistry(t)
	r, err := NewReacher(Config{}, "")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(reg.addr(), ":")
	// No SSH host: the registry's port on RegistryHost, named as pods
	// name it.
	d, err := r.Destination(MemberTarget{Name: "local", Registry: "k3d-local-registry:" + port, Repository: "harness"})
	if err != nil {
		t.Fatal(err)
	}
	art := artifactOf(t, imageOf(t, layers(t, 1, 4096), nil))
	if res := Sync(context.Background(), art, d, Options{}); res.Err != nil || res.Reference != "k3d-local-registry:"+port+"/harness@"+art.Digest.String() {
		t.Fatalf("%+v", res)
	}
	for _, m := range []MemberTarget{
		{Name: "a", SSHHost: "node-b", Registry: "k3d-r:5000"},
		{Name: "b", Registry: ""},
		{Name: "c", Registry: "k3d-r"},
		{Name: "d", SSHHost: "bad host", Registry: "k3d-r:5000"},
	} {
		if _, err := r.Destination(m); err == nil {
			t.Errorf("member %+v: no error", m)
		}
	}
	if _, err := r.Destination(MemberTarget{Name: "a", SSHHost: "node-b", Registry: "k3d-r:5000"}); err == nil || !strings.Contains(err.Error(), "known_hosts") {
		t.Errorf("SSH without known_hosts: %v", err)
	}
}

func TestSourceFor(t *testing.T) {
	cfg := Config{Source: "oci:build/oci", Sources: map[string]string{"other": "docker-archive:/abs/other.tar"}}
	for _, tc := range []struct {
		cfg   Config
		image string
		want  Source
		err   string
	}{
		{cfg, "elanous-harness", Source{Kind: SourceOCILayout, Path: "/pool/build/oci"}, ""},
		{cfg, "other@sha256:" + strings.Repeat("a", 64), Source{Kind: SourceDockerArchive, Path: "/abs/other.tar"}, ""},
		{Config{}, "127.0.0.1:5000/ci/harness:7", Source{Kind: SourceRegistry, Ref: "127.0.0.1:5000/ci/harness:7"}, ""},
		{Config{}, "elanous-harness", Source{}, "no source for image"},
		{Config{Source: "bogus"}, "x", Source{}, "want"},
	} {
		got, err := tc.cfg.SourceFor(tc.image, "/pool")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("SourceFor(%q) = %+v, %v; want error %q", tc.image, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("SourceFor(%q) = %+v, %v; want %+v", tc.image, got, err, tc.want)
		}
	}
}

// String returns the host in the form ParseSSHHost reads.
func (h SSHHost) String() string {
	s := h.Host
	if h.Port != 0 {
		s = net.JoinHostPort(h.Host, strconv.Itoa(h.Port))
	}
	if h.User != "" {
		s = h.User + "@" + s
	}
	return s
}
