package walkie

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Money writes an amount in US dollars with enough digits to be read: a
// turn can cost a hundredth of a cent, and "$0.00" of a budget says
// nothing. Below a dollar it keeps four significant digits and at least
// cents ($0.60, $0.0137, $0.0009); from a dollar on, cents.
func Money(usd float64) string {
	if usd >= 1 || usd <= 0 {
		return fmt.Sprintf("$%.2f", usd)
	}
	decimals := max(2, 3-int(math.Floor(math.Log10(usd))))
	s := strconv.FormatFloat(usd, 'f', decimals, 64)
	for dot := strings.IndexByte(s, '.'); len(s) > dot+3 && s[len(s)-1] == '0'; {
		s = s[:len(s)-1]
	}
	return "$" + s
}
