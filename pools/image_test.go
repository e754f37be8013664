package pools

import (
	"strings"
	"testing"
)

func TestImageSatisfies(t *testing.T) {
	const d, e = "sha256:" + "aa", "sha256:" + "bb"
	for _, tc := range []struct {
		have, want string
		ok         bool
	}{
		{"app@" + d, "app@" + d, true},
		{"app@" + e, "app@" + d, false},
		{"app:v1@" + d, "app:v1", true}, // a tag as synced
		{"app:v2@" + d, "app:v1", false},
		{"app@" + d, "app:v1", false},
		{"", "app:v1", false},
		{"app:v1", "app:v1", true},
		{"app:v1", "app:v1@" + d, false}, // a pin is only met by its digest
	} {
		if got := ImageSatisfies(tc.have, tc.want); got != tc.ok {
			t.Errorf("ImageSatisfies(%q, %q) = %v, want %v", tc.have, tc.want, got, tc.ok)
		}
	}
}

func TestImageRepository(t *testing.T) {
	for in, want := range map[string]string{
		"elanous-harness":   "elanous-harness",
		"elanous-harness:7": "elanous-harness",
		"org/harness@sha256:" + strings.Repeat("a", 64): "org/harness",
		"registry.example:5000/org/harness:1":           "org/harness",
		"localhost/h":                                   "h",
	} {
		if got, err := ImageRepository(in); err != nil || got != want {
			t.Errorf("ImageRepository(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "UPPER", "a//b"} {
		if got, err := ImageRepository(bad); err == nil {
			t.Errorf("ImageRepository(%q) = %q", bad, got)
		}
	}
}

// A Job runs the member registry's copy of the image the state records
// as synced there, and the image as given when there is none, or when
// the member holds another image than the pool's.
func TestRegistryImage(t *testing.T) {
	d := "sha256:" + strings.Repeat("c", 64)
	m := MemberState{PodPool: "harness", Context: "b", Registry: "k3d-reg-b:5051", Image: "elanous-harness:v1@" + d}
	for _, tc := range []struct {
		registry, image, want, out string
	}{
		{"k3d-reg-b:5051", "elanous-harness:v1@" + d, "elanous-harness:v1", "k3d-reg-b:5051/elanous-harness@" + d},
		{"k3d-reg-b:5051", "ghcr.example/org/h@" + d, "ghcr.example/org/h@" + d, "k3d-reg-b:5051/org/h@" + d},
		{"k3d-reg-b:5051", "elanous-harness:v1@" + d, "elanous-harness:v2", ""},
		{"k3d-reg-b:5051", "", "elanous-harness:v1", ""},
		{"k3d-reg-b:5051", "elanous-harness:v1", "elanous-harness:v1", ""},
		{"", "elanous-harness:v1@" + d, "elanous-harness:v1", ""},
	} {
		m.Registry, m.Image = tc.registry, tc.image
		if got := m.RegistryImage(tc.want); got != tc.out {
			t.Errorf("%+v RegistryImage(%q) = %q, want %q", m, tc.want, got, tc.out)
		}
	}
}
