package plural

import "testing"

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		noun string
		want string
	}{
		{1, "step", "1 step"},
		{2, "step", "2 steps"},
		{0, "step", "0 steps"},
		{1, "alias", "1 alias"},
		{2, "alias", "2 aliases"},
		{3, "box", "3 boxes"},
		{2, "match", "2 matches"},
		{2, "entry", "2 entries"},
		{2, "day", "2 days"},
		{1, "pod pool", "1 pod pool"},
		{2, "pod pool", "2 pod pools"},
		{2, "difference", "2 differences"},
		{-1, "second", "-1 second"},
	} {
		if got := Count(c.n, c.noun); got != c.want {
			t.Errorf("Count(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
}

func TestAgree(t *testing.T) {
	if got := Agree(1, "is", "are"); got != "is" {
		t.Errorf("Agree(1) = %q", got)
	}
	if got := Agree(2, "is", "are"); got != "are" {
		t.Errorf("Agree(2) = %q", got)
	}
	if got := Agree(0, "is", "are"); got != "are" {
		t.Errorf("Agree(0) = %q", got)
	}
}
