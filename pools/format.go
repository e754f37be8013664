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

// Bytes formats a count of bytes in decimal units with one decimal, as a
// transfer reads: "512 B", "12.4 MB", "3.1 GB".
func Bytes(n int64) string {
	const unit = 1000
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	units := []string{"B", "kB", "MB", "GB", "TB"}
	x, i := float64(n), 0
	// Divide while the rounded figure would read 1000 or more.
	for math.Round(x*10)/10 >= unit && i < len(units)-1 {
		x /= unit
		i++
	}
	return strconv.FormatFloat(math.Round(x*10)/10, 'f', 1, 64) + " " + units[i]
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
