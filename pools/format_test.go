package pools

import "testing"

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 999: "999 B", 1000: "1.0 kB", 12_400_000: "12.4 MB", 999_949: "999.9 kB",
		999_950: "1.0 MB", 3_140_000_000: "3.1 GB", 5_000_000_000_000_000: "5000.0 TB",
	} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
