package charts

import (
	"slices"
	"testing"
	"time"
)

func TestLengthsAreWholeTenths(t *testing.T) {
	for _, tt := range []struct {
		v    u
		want string
	}{{0, "0"}, {5, "0.5"}, {10, "1"}, {1234, "123.4"}, {-15, "-1.5"}, {-5, "-0.5"}} {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("u(%d) = %q, want %q", tt.v, got, tt.want)
		}
	}
	// A third of 100 units is 33.3, whatever the machine's floating point.
	if got := scale(1, 3, px(100)); got != 333 {
		t.Errorf("a third of 100 units is %v", got)
	}
	if got := scale(5, 0, px(100)); got != 0 {
		t.Errorf("a scale of nothing puts 5 at %v", got)
	}
}

func TestElapsedAndTicks(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{{0, "0"}, {1500 * time.Millisecond, "1.5s"}, {45 * time.Second, "45s"}, {time.Minute, "1m"}, {90 * time.Second, "1m30s"},
		{2*time.Hour + 5*time.Minute, "2h05m"}, {3 * time.Hour, "3h"}, {50 * time.Hour, "2d"}} {
		if got := elapsed(tt.d); got != tt.want {
			t.Errorf("elapsed(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
	for _, tt := range []struct{ span, step time.Duration }{
		{5 * time.Second, time.Second}, {25 * time.Minute, 5 * time.Minute}, {40 * time.Minute, 10 * time.Minute},
		{5 * time.Hour, time.Hour}, {3 * 24 * time.Hour, 12 * time.Hour}, {30 * 24 * time.Hour, 6 * 24 * time.Hour},
	} {
		step := tickStep(tt.span)
		if step != tt.step {
			t.Errorf("tickStep(%v) = %v, want %v", tt.span, step, tt.step)
		}
		if tt.span/step > 6 {
			t.Errorf("tickStep(%v) marks it %d times", tt.span, tt.span/step)
		}
	}
}

func TestCostBins(t *testing.T) {
	for _, tt := range []struct {
		most int64 // micro-dollars
		step int64
		bins int
	}{
		{0, 10_000, 1},
		{190_000, 50_000, 4},    // $0.19 in $0.05 steps
		{200_000, 50_000, 5},    // $0.20 lands in a bar of its own
		{3_400_000, 500_000, 7}, // $3.40 in $0.50 steps
		{7, 1, 8},
	} {
		step, bins := costBins(tt.most)
		if step != tt.step || bins != tt.bins {
			t.Errorf("costBins(%d) = %d, %d; want %d, %d", tt.most, step, bins, tt.step, tt.bins)
		}
		if int64(bins)*step <= tt.most {
			t.Errorf("costBins(%d): %d bins of %d leave the most out", tt.most, bins, step)
		}
	}
}

// A bar's parts fill their share of the room: every part with a trial
// shows, and the bar never overflows.
func TestSegments(t *testing.T) {
	for _, tt := range []struct {
		parts      []int
		most, room int
		want       []int
	}{
		{[]int{3}, 3, 60, []int{60}},
		{[]int{2, 1}, 3, 60, []int{40, 20}},
		{[]int{1}, 100, 60, []int{1}},              // one trial of a hundred still shows
		{[]int{98, 1, 1}, 100, 10, []int{8, 1, 1}}, // and never past the room
	} {
		var ps []Part
		for _, n := range tt.parts {
			ps = append(ps, Part{Status: "x", Trials: n})
		}
		if got := segments(ps, tt.most, tt.room); !slices.Equal(got, tt.want) {
			t.Errorf("segments(%v of %d in %d) = %v, want %v", tt.parts, tt.most, tt.room, got, tt.want)
		}
	}
}
