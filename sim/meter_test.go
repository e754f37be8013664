package sim

import (
	"testing"
	"time"
)

func TestMeterAveragesTheWindowAndForgetsOlderMinutes(t *testing.T) {
	m := newMeter(10 * time.Minute)
	for k := range 30 {
		m.add(0, time.Duration(k)*time.Minute/3) // 3 a minute for 10 minutes
	}
	if r := m.rate(0, 9*time.Minute+59*time.Second); r != 3 {
		t.Errorf("rate over the first ten minutes = %v, want 3", r)
	}
	if r := m.rate(0, 14*time.Minute+59*time.Second); r != 1.5 {
		t.Errorf("rate five minutes after the arrivals stopped = %v, want 1.5", r)
	}
	if r := m.rate(0, 2*time.Hour); r != 0 {
		t.Errorf("rate long after = %v, want 0", r)
	}
	if r := m.rate(3, time.Hour); r != 0 {
		t.Errorf("rate of an alias with no arrivals = %v, want 0", r)
	}
}
