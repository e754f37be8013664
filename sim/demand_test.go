package sim

import (
	"math"
	"testing"
	"time"
)

// Arrivals follow the day shape: the night runs at a fifth of the
// working day's rate.
func TestDailyShape(t *testing.T) {
	s := newSource(Demand{Alias: "chat", RatePerMinute: 60, Shape: "daily", ServiceSeconds: 2}, 0, 1, 0)
	count := func(from, to time.Duration) float64 {
		n, at := 0, from
		for {
			next, _, ok := s.next(at, to)
			if !ok {
				return float64(n)
			}
			n, at = n+1, next
		}
	}
	night, day := count(time.Hour, 5*time.Hour), count(10*time.Hour, 14*time.Hour)
	if day < 4*60*60*0.95 || day > 4*60*60*1.05 {
		t.Errorf("%v arrivals in four working hours at 60 a minute", day)
	}
	if ratio := night / day; math.Abs(ratio-0.2) > 0.02 {
		t.Errorf("night/day = %.3f, want 0.2", ratio)
	}
	for h := 0.0; h < 24; h += 0.25 {
		a, b := dayShape(time.Duration(h*float64(time.Hour))), dayShape(time.Duration((h+0.25)*float64(time.Hour)))
		if math.Abs(a-b) > 0.15 {
			t.Errorf("the day shape jumps from %.2f to %.2f at %.2fh", a, b, h)
		}
	}
}

// A burst multiplies the rate while it lasts.
func TestBurst(t *testing.T) {
	s := newSource(Demand{Alias: "chat", RatePerMinute: 10, Shape: "flat",
		Bursts: []Burst{{At: time.Hour, Duration: time.Hour, Factor: 5}}}, 0, 1, 0)
	var before, during, after int
	for at := time.Duration(0); ; {
		next, _, ok := s.next(at, 3*time.Hour)
		if !ok {
			break
		}
		switch {
		case next < time.Hour:
			before++
		case next < 2*time.Hour:
			during++
		default:
			after++
		}
		at = next
	}
	if r := float64(during) / float64(before+after) * 2; r < 4.5 || r > 5.5 {
		t.Errorf("%d arrivals in the burst hour, %d and %d around it: factor %.2f, want 5", during, before, after, r)
	}
}
