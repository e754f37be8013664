package pools

import (
	"math"
	"strconv"
)

// GB formats a memory or disk size for people: at most two decimals, no
// trailing zeros, and the unit ("115.2 GB").
func GB(x float64) string {
	return Num(x) + " GB"
}

// Num formats a number with at most two decimals and no trailing zeros, so
// float arithmetic such as 128*(1-0.9) prints as 12.8.
func Num(x float64) string {
	r := math.Round(x*100) / 100
	if r == 0 {
		r = 0 // no "-0"
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

func itoa(i int) string { return strconv.Itoa(i) }
