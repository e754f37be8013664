package suggest

import "testing"

func TestNearest(t *testing.T) {
	names := []string{"address", "memory_gb", "labels", "kube_context", "guard"}
	for word, want := range map[string]string{
		"memroy_gb": "memory_gb",
		"adress":    "address",
		"Labels":    "labels",
		"gpu":       "",
		"x":         "",
		"kube":      "",
	} {
		if got := Nearest(word, names); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", word, got, want)
		}
	}
}
