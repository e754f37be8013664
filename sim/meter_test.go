package sim

import (
	"testing"
	"time"
)

func TestMeterAveragesTheWholeMinutesOfTheWindow(t *testing.T) {
	m := newMeter(10 * time.Minute)
	next := time.Duration(0) // arrivals: 3 a minute for 20 minutes
	for _, c := range []struct {
		at   time.Duration
		want float64
	}{
		{30 * time.Second, 0},                  // no whole minute yet
		{2*time.Minute + 30*time.Second, 0.6},  // two minutes so far, eight unseen
		{10 * time.Minute, 3},                  // on the minute
		{19*time.Minute + 59*time.Second, 3},   // the minute in progress is left out
		{25 * time.Minute, 1.5},                // minutes 15 to 24: five with arrivals
		{25*time.Minute + 30*time.Second, 1.5}, // the same minutes
		{2 * time.Hour, 0},                     // long after
	} {
		for ; next < c.at && next < 20*time.Minute; next += 20 * time.Second {
			m.add(0, next)
		}
		if r := m.rate(0, c.at); r != c.want {
			t.Errorf("rate at %v = %v, want %v", c.at, r, c.want)
		}
	}
	if r := m.rate(3, time.Hour); r != 0 {
		t.Errorf("rate of an alias with no arrivals = %v, want 0", r)
	}
}

func TestAOneMinuteMeterReadsTheLastMinute(t *testing.T) {
	m := newMeter(time.Minute)
	for k := range 20 {
		m.add(0, time.Minute+time.Duration(k)*3*time.Second) // 20 in minute 1
	}
	for _, at := range []time.Duration{2 * time.Minute, 2*time.Minute + 30*time.Second} {
		if r := m.rate(0, at); r != 20 {
			t.Errorf("rate at %v = %v, want 20", at, r)
		}
	}
	if r := m.rate(0, 3*time.Minute); r != 0 {
		t.Errorf("rate at 3m = %v, want 0", r)
	}
}
