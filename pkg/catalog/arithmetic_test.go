package catalog

import (
	"math"
	"strings"
	"testing"
)

// Integer arithmetic stops where PostgreSQL's bigint errs, rather than
// wrapping round to a value (and a table name) the database never saw.
func TestArithmetic(t *testing.T) {
	const maxI, minI = math.MaxInt64, math.MinInt64
	cases := []struct {
		op   string
		x, y int64
		want int64
		err  string
	}{
		{"+", 2, 3, 5, ""},
		{"+", maxI, 1, 0, "out of range"},
		{"+", minI, -1, 0, "out of range"},
		{"+", maxI, minI, -1, ""},
		{"-", minI, 1, 0, "out of range"},
		{"-", 0, minI, 0, "out of range"},
		{"-", -1, maxI, minI, ""},
		{"*", 1 << 32, 1 << 31, 0, "out of range"},
		{"*", -1, minI, 0, "out of range"},
		{"*", minI, -1, 0, "out of range"},
		{"*", minI, 1, minI, ""},
		{"*", 0, minI, 0, ""},
		{"/", minI, -1, 0, "out of range"},
		{"%", minI, -1, 0, ""},
		{"/", 7, 0, 0, "division by zero"},
		{"%", 7, 0, 0, "division by zero"},
		{"/", -7, 2, -3, ""},
		{"%", -7, 2, -1, ""},
	}
	for _, tc := range cases {
		v, err := arithmetic(tc.op, tc.x, tc.y)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%d %s %d = %v, %v; want an error naming %q", tc.x, tc.op, tc.y, v, err, tc.err)
			}
		case err != nil:
			t.Errorf("%d %s %d: %v", tc.x, tc.op, tc.y, err)
		default:
			if got, _ := v.asInt(); got != tc.want {
				t.Errorf("%d %s %d = %d, want %d", tc.x, tc.op, tc.y, got, tc.want)
			}
		}
	}
}
